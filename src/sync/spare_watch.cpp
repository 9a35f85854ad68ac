// A pool host's watch over its spare copies: inotify on each spare's directories, its stamps
// checked once the watch is on (by a thread that runs only when the CPUs are idle), and a
// socket where a job's ferryd asks whether the spare it is about to take is untouched.
#include "ferry/sync/spare_watch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "copy_stamps.hpp"
#include "ferry/common/posix_handles.hpp"
#include "inotify_watch.hpp"

namespace ferry {

namespace {

// The spares folder: a spare kept (its stamps moved in last), taken or removed.
constexpr uint32_t kSparesFolder = IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE |
                                   IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

// How long a ferryd waits for the watch's answer, and the watch for its question, before it
// does without (the ferryd checks the stamps itself).
constexpr int kAnswerMs = 200;

// The socket's abstract name: the user's and the cache's own (a user may keep several caches).
sockaddr_un watch_address(const std::string& base, socklen_t& len) {
  const uint64_t h = sync_detail::fnv1a(base);
  char name[64];
  const int n =
      std::snprintf(name, sizeof name, "ferry-spare-watch-%u-%016llx",
                    static_cast<unsigned>(::geteuid()), static_cast<unsigned long long>(h));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path + 1, name, static_cast<size_t>(n));  // sun_path[0] 0: abstract
  len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + static_cast<size_t>(n));
  return a;
}

bool same_user(int fd) {
  ucred c{};
  socklen_t l = sizeof c;
  return ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &l) == 0 && c.uid == ::geteuid();
}

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

struct SpareWatch::Impl {
  enum class State : uint8_t { kChecking, kUntouched, kChanged };
  struct Spare {
    std::vector<int> wds;
    uint64_t check = 0;  ///< its check's number
    State state = State::kChecking;
  };
  struct Check {
    uint64_t id = 0;
    std::string name;
    FileCache::CopyStamps stamps;
  };
  struct Checked {
    uint64_t id = 0;
    uint64_t untouched = 0;
  };

  std::string base;
  std::string dir;  ///< base/spares
  UniqueFd notify, listener, stop_read, stop_write, done_read, done_write;
  int dir_wd = -1;
  std::map<std::string, Spare, std::less<>> spares;
  std::unordered_map<int, std::string> by_wd;
  uint64_t next_check = 0;
  bool idle_checks = true;

  std::mutex m;  // guards checks and stopping, the checker's queue
  std::condition_variable cv;
  std::deque<Check> checks;
  bool stopping = false;

  std::thread loop;
  std::thread checker;

  bool open() {
    socklen_t len = 0;
    const sockaddr_un a = watch_address(base, len);
    listener.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!listener || ::bind(listener.get(), reinterpret_cast<const sockaddr*>(&a), len) != 0 ||
        ::listen(listener.get(), 16) != 0)
      return false;  // another process serves this cache here (EADDRINUSE), or no socket
    notify.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    int p[2], q[2];
    if (!notify || ::pipe2(p, O_CLOEXEC) != 0) return false;
    stop_read.reset(p[0]);
    stop_write.reset(p[1]);
    if (::pipe2(q, O_CLOEXEC | O_NONBLOCK) != 0) return false;
    done_read.reset(q[0]);
    done_write.reset(q[1]);
    watch_folder();
    loop = std::thread([this] { run(); });
    checker = std::thread([this] { check_spares(); });
    return true;
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(m);
      stopping = true;
    }
    cv.notify_all();
    const char c = 0;
    [[maybe_unused]] const ssize_t w = ::write(stop_write.get(), &c, 1);
    if (loop.joinable()) loop.join();
    if (checker.joinable()) checker.join();
  }

  // The spares folder watched, and the spares in it taken in. Until a job keeps the first
  // spare there is no folder: tried again at each question.
  void watch_folder() {
    if (dir_wd >= 0) return;
    dir_wd = ::inotify_add_watch(notify.get(), dir.c_str(), kSparesFolder);
    if (dir_wd < 0) return;
    DIR* d = ::opendir(dir.c_str());
    while (const dirent* e = d ? ::readdir(d) : nullptr) {
      const std::string n = e->d_name;
      if (ends_with(n, ".stamps")) add(n.substr(0, n.size() - 7));
    }
    if (d) ::closedir(d);
  }

  void run() {
    for (;;) {
      pollfd fds[4] = {{stop_read.get(), POLLIN, 0},
                       {notify.get(), POLLIN, 0},
                       {done_read.get(), POLLIN, 0},
                       {listener.get(), POLLIN, 0}};
      if (::poll(fds, 4, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[0].revents != 0) return;
      if (fds[1].revents != 0) read_events();
      if (fds[2].revents != 0) read_checked();
      if (fds[3].revents != 0) answer();
    }
  }

  // A spare kept (its stamps are in place last): watched, each directory, then checked.
  void add(const std::string& name) {
    drop(name);
    Check c;
    c.name = name;
    c.stamps = sync_detail::read_stamps(dir + "/" + name + ".stamps");
    if (c.stamps.empty()) return;
    const std::string top = dir + "/" + name;
    Spare s;
    const int wd = ::inotify_add_watch(notify.get(), top.c_str(), sync_detail::kWatchedChanges);
    if (wd < 0) return;  // gone already, or no more watches to be had: not watched
    s.wds.push_back(wd);
    for (size_t i = 0; i < c.stamps.size(); ++i) {
      const std::string_view line = c.stamps[i];
      if (!sync_detail::stamp_line_is_directory(line)) continue;
      const std::string path = top + "/" + std::string(sync_detail::stamp_line_path(line));
      const int w = ::inotify_add_watch(notify.get(), path.c_str(), sync_detail::kWatchedChanges);
      if (w < 0) {
        s.state = State::kChanged;  // not a directory any more, or gone: never untouched
        break;
      }
      s.wds.push_back(w);
    }
    for (const int w : s.wds) by_wd[w] = name;
    if (s.state == State::kChecking) {
      s.check = c.id = ++next_check;
      {
        std::lock_guard<std::mutex> lock(m);
        checks.push_back(std::move(c));
      }
      cv.notify_one();
    }
    spares[name] = std::move(s);
  }

  void drop(const std::string& name) {
    const auto it = spares.find(name);
    if (it == spares.end()) return;
    for (const int w : it->second.wds) {
      ::inotify_rm_watch(notify.get(), w);
      by_wd.erase(w);
    }
    spares.erase(it);
  }

  void read_events() {
    sync_detail::read_inotify_events(notify.get(), [this](const inotify_event& ev) {
      on_event(ev, ev.len > 0 ? std::string(ev.name) : std::string());
    });
  }

  void on_event(const inotify_event& ev, const std::string& name) {
    if ((ev.mask & IN_Q_OVERFLOW) != 0) {  // events lost: no spare is known untouched
      for (auto& [n, s] : spares) s.state = State::kChanged;
      return;
    }
    if (ev.wd == dir_wd) {
      if ((ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) != 0) {
        while (!spares.empty()) drop(spares.begin()->first);
        ::inotify_rm_watch(notify.get(), dir_wd);
        dir_wd = -1;
      } else if (ends_with(name, ".stamps")) {
        const std::string spare = name.substr(0, name.size() - 7);
        if ((ev.mask & (IN_MOVED_TO | IN_CREATE)) != 0)
          add(spare);
        else
          drop(spare);
      } else if ((ev.mask & (IN_MOVED_FROM | IN_DELETE)) != 0) {
        drop(name);  // a spare taken by a job, or removed
      }
      return;
    }
    const auto w = by_wd.find(ev.wd);
    if (w == by_wd.end()) return;  // a watch dropped with its spare
    if (const auto s = spares.find(w->second); s != spares.end()) s->second.state = State::kChanged;
    if ((ev.mask & IN_IGNORED) != 0) by_wd.erase(w);
  }

  void read_checked() {
    Checked c;
    while (::read(done_read.get(), &c, sizeof c) == static_cast<ssize_t>(sizeof c))
      for (auto& [n, s] : spares)
        if (s.check == c.id && s.state == State::kChecking)
          s.state = c.untouched != 0 ? State::kUntouched : State::kChanged;
  }

  // One question, "NAME\n", answered "1" (untouched) or "0" once every event queued so far is
  // read: any change that ended before the question was asked is counted.
  void answer() {
    const UniqueFd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!c || !same_user(c.get())) return;
    std::string name;
    char buf[256];
    while (name.find('\n') == std::string::npos && name.size() < 512) {
      pollfd p{c.get(), POLLIN, 0};
      if (::poll(&p, 1, kAnswerMs) != 1) return;
      const ssize_t got = ::recv(c.get(), buf, sizeof buf, 0);
      if (got <= 0) return;
      name.append(buf, static_cast<size_t>(got));
    }
    name.resize(name.find('\n') == std::string::npos ? 0 : name.find('\n'));
    watch_folder();
    read_events();
    read_checked();
    const auto s = spares.find(name);
    const char yes = s != spares.end() && s->second.state == State::kUntouched ? '1' : '0';
    [[maybe_unused]] const ssize_t w = ::send(c.get(), &yes, 1, MSG_NOSIGNAL);
  }

  // The checks, one at a time, only when a CPU would otherwise be idle: a spare is kept when
  // its job ends, often while the next job starts.
  void check_spares() {
    sched_param none{};
    if (idle_checks) ::sched_setscheduler(0, SCHED_IDLE, &none);  // this thread alone
    for (;;) {
      Check c;
      {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [this] { return stopping || !checks.empty(); });
        if (stopping) return;
        c = std::move(checks.front());
        checks.pop_front();
      }
      const Checked r{c.id, sync_detail::copy_untouched(dir + "/" + c.name, c.stamps) ? 1U : 0U};
      [[maybe_unused]] const ssize_t w = ::write(done_write.get(), &r, sizeof r);
    }
  }
};

SpareWatch::SpareWatch(std::string base, Checks checks) : impl_(std::make_unique<Impl>()) {
  impl_->base = std::move(base);
  impl_->idle_checks = checks == Checks::kWhenIdle;
  impl_->dir = impl_->base + "/spares";
  if (!impl_->open()) {
    impl_->stop();
    impl_.reset();
  }
}

SpareWatch::~SpareWatch() {
  if (impl_) impl_->stop();
}

bool SpareWatch::serving() const { return impl_ != nullptr; }

bool spare_watch_untouched(const std::string& base, const std::string& name) {
  const UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  socklen_t len = 0;
  const sockaddr_un a = watch_address(base, len);
  if (!s || ::connect(s.get(), reinterpret_cast<const sockaddr*>(&a), len) != 0 ||
      !same_user(s.get()))
    return false;
  const std::string line = name + "\n";
  if (::send(s.get(), line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size()))
    return false;
  pollfd p{s.get(), POLLIN, 0};
  char c = 0;
  return ::poll(&p, 1, kAnswerMs) == 1 && ::recv(s.get(), &c, 1, 0) == 1 && c == '1';
}

}  // namespace ferry
