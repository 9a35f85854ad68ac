// A pool host's watch over its spare copies: inotify on each spare's directories and files,
// its stamps checked once the watch is on (by a thread that runs only when the CPUs are idle)
// unless it was watched throughout a job that took it, and a socket where a job's ferryd asks
// whether the spare it is about to take is untouched.
#include "ferry/sync/spare_watch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "copy_stamps.hpp"
#include "ferry/common/posix_handles.hpp"
#include "ferry/common/private_dir.hpp"
#include "inotify_watch.hpp"

namespace ferry {

namespace {

// The spares folder: a spare kept (its stamps moved in last), taken or removed.
constexpr uint32_t kSparesFolder = IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE |
                                   IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

// How long a ferryd waits for the watch's answer, and the watch for its question, before it
// does without (the ferryd checks the stamps itself).
constexpr int kAnswerMs = 200;

// A spare of more entries is not watched (the ferryd that takes it checks its stamps).
constexpr size_t kMaxWatchedEntries = 20000;
// Spares taken by jobs that are kept watched, to come back untouched.
constexpr size_t kMaxLent = 8;

// The socket's abstract name: the user's and the cache's own. The cache is named by its folder's
// device and inode as well as its path: hosts that share a network namespace (containers with
// the host's network, and the host itself) share abstract names, but each sees its own folder
// at that path, and each one's watch must answer its own ferryds alone. False where the folder
// cannot be seen.
bool watch_address(const std::string& base, sockaddr_un& a, socklen_t& len) {
  struct stat st {};
  if (::stat(base.c_str(), &st) != 0) return false;
  const uint64_t h = sync_detail::fnv1a(base);
  char name[96];
  const int n = std::snprintf(
      name, sizeof name, "ferry-spare-watch-%u-%016llx-%llx-%llx",
      static_cast<unsigned>(::geteuid()), static_cast<unsigned long long>(h),
      static_cast<unsigned long long>(st.st_dev), static_cast<unsigned long long>(st.st_ino));
  a = sockaddr_un{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path + 1, name, static_cast<size_t>(n));  // sun_path[0] 0: abstract
  len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + static_cast<size_t>(n));
  return true;
}

// The question about a spare: "DEV INO NAME\n", its top directory's device and inode as the
// asker sees them, which the watch's own must match.
std::string question(dev_t dev, ino_t ino, const std::string& name) {
  return std::to_string(dev) + " " + std::to_string(ino) + " " + name + "\n";
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
    std::string name;      ///< in the spares folder ("" while a job has it)
    std::vector<int> wds;  ///< its directories' and regular files' watches
    int top_wd = -1;
    dev_t dev = 0;  ///< its top directory's, which it keeps through a job's renames
    ino_t ino = 0;
    ino_t stamps_ino = 0;  ///< its stamps file's, as checked (kept again as it is)
    uint64_t check = 0;    ///< its check's number
    uint64_t lent = 0;     ///< taken by a job: the order it was taken in (0: not)
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
  std::unordered_map<uint64_t, Spare> spares;            // by their own number
  std::map<std::string, uint64_t, std::less<>> by_name;  // those in the spares folder
  std::unordered_map<int, uint64_t> by_wd;
  uint64_t next_id = 0, next_check = 0, next_lent = 0;
  bool idle_checks = true;
  std::atomic<uint64_t> checks_run{0};

  std::mutex m;  // guards checks and stopping, the checker's queue
  std::condition_variable cv;
  std::deque<Check> checks;
  bool stopping = false;

  std::thread loop;
  std::thread checker;

  bool open() {
    // The cache's folder made now if need be (as FileCache makes it), so that its name is
    // known before the first job.
    if (!make_private_dir(base, "synced files")) return false;
    sockaddr_un a{};
    socklen_t len = 0;
    if (!watch_address(base, a, len)) return false;
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
    const DirPtr d = open_dir(dir);
    while (const dirent* e = d ? ::readdir(d.get()) : nullptr) {
      const std::string n = e->d_name;
      if (ends_with(n, ".stamps")) add(n.substr(0, n.size() - 7));
    }
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

  // A spare kept (its stamps are in place last). One that a job took on this watch's word
  // and kept again with no event in between is untouched still: it was watched throughout.
  // Any other is watched, each directory and each regular file, then checked.
  void add(const std::string& name) {
    if (const auto it = by_name.find(name); it != by_name.end()) drop(it->second);
    const std::string top = dir + "/" + name;
    struct stat st {};
    struct stat sst {};
    if (::lstat(top.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        ::lstat((top + ".stamps").c_str(), &sst) != 0)
      return;
    // Back with the stamps file it was taken with (the same inode: not read again).
    for (auto& [id, s] : spares) {
      if (s.lent == 0 || s.dev != st.st_dev || s.ino != st.st_ino) continue;
      if (s.state == State::kUntouched && s.stamps_ino == sst.st_ino) {
        s.lent = 0;
        s.name = name;
        by_name[name] = id;
        return;
      }
      drop(id);  // changed while the job had it: watched and checked again, below
      break;
    }
    Check c;
    c.name = name;
    c.stamps = sync_detail::read_stamps(top + ".stamps");
    if (c.stamps.empty()) return;
    Spare s;
    s.name = name;
    s.dev = st.st_dev;
    s.ino = st.st_ino;
    s.stamps_ino = sst.st_ino;
    s.top_wd = ::inotify_add_watch(notify.get(), top.c_str(), sync_detail::kWatchedChanges);
    if (s.top_wd < 0) return;  // gone already, or no more watches to be had: not watched
    s.wds.push_back(s.top_wd);
    // A spare of more entries than that is left to the ferryd's check (inotify's watches are
    // the user's, all processes' together, 8,192 by default on older kernels).
    if (c.stamps.size() > kMaxWatchedEntries) s.state = State::kChanged;
    for (size_t i = 0; i < c.stamps.size() && s.state == State::kChecking; ++i) {
      const std::string_view line = c.stamps[i];
      const int kind = sync_detail::stamp_line_kind(line);
      // A link's target cannot change in place: a new one is a change of its directory's.
      if (kind == static_cast<int>(TreeEntry::Kind::kSymlink)) continue;
      const std::string path = top + "/" + std::string(sync_detail::stamp_line_path(line));
      const int w = ::inotify_add_watch(notify.get(), path.c_str(),
                                        kind == static_cast<int>(TreeEntry::Kind::kDirectory)
                                            ? sync_detail::kWatchedChanges
                                            : sync_detail::kWatchedFileChanges);
      if (w < 0) {
        s.state = State::kChanged;  // not what it was any more, or gone: never untouched
        break;
      }
      s.wds.push_back(w);
    }
    const uint64_t id = ++next_id;
    for (const int w : s.wds) by_wd[w] = id;
    by_name[name] = id;
    if (s.state == State::kChecking) {
      s.check = c.id = ++next_check;
      {
        std::lock_guard<std::mutex> lock(m);
        checks.push_back(std::move(c));
      }
      cv.notify_one();
    }
    spares[id] = std::move(s);
  }

  // A spare taken by a job (renamed out of the folder): one taken on this watch's word stays
  // watched, to come back untouched when the job keeps it unchanged; any other is forgotten.
  void lend(const std::string& name) {
    const auto it = by_name.find(name);
    if (it == by_name.end()) return;
    const uint64_t id = it->second;
    by_name.erase(it);
    Spare& s = spares[id];
    s.name.clear();
    if (s.state != State::kUntouched) return drop(id);
    s.lent = ++next_lent;
    // The oldest lent spares beyond a few are forgotten (a job that ended without keeping its
    // copy: the watches of a removed copy go with it).
    size_t lent = 0;
    uint64_t oldest = 0, oldest_id = 0;
    for (const auto& [i, x] : spares) {
      if (x.lent == 0) continue;
      ++lent;
      if (oldest == 0 || x.lent < oldest) {
        oldest = x.lent;
        oldest_id = i;
      }
    }
    if (lent > kMaxLent) drop(oldest_id);
  }

  void drop(uint64_t id) {
    const auto it = spares.find(id);
    if (it == spares.end()) return;
    for (const int w : it->second.wds) {
      ::inotify_rm_watch(notify.get(), w);
      by_wd.erase(w);
    }
    if (!it->second.name.empty()) by_name.erase(it->second.name);
    spares.erase(it);
  }

  void read_events() {
    sync_detail::read_inotify_events(notify.get(), [this](const inotify_event& ev) {
      on_event(ev, ev.len > 0 ? std::string(ev.name) : std::string());
    });
  }

  void on_event(const inotify_event& ev, const std::string& name) {
    if ((ev.mask & IN_Q_OVERFLOW) != 0) {  // events lost: no spare is known untouched
      for (auto& [id, s] : spares) s.state = State::kChanged;
      return;
    }
    if (ev.wd == dir_wd) {
      if ((ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) != 0) {
        while (!by_name.empty()) drop(by_name.begin()->second);
        ::inotify_rm_watch(notify.get(), dir_wd);
        dir_wd = -1;
      } else if (ends_with(name, ".stamps")) {
        const std::string spare = name.substr(0, name.size() - 7);
        if ((ev.mask & (IN_MOVED_TO | IN_CREATE)) != 0)
          add(spare);
        else if (const auto it = by_name.find(spare); it != by_name.end())
          drop(it->second);
      } else if ((ev.mask & IN_MOVED_FROM) != 0) {
        lend(name);  // a spare taken by a job
      } else if (const auto it = by_name.find(name);
                 it != by_name.end() && (ev.mask & IN_DELETE) != 0) {
        drop(it->second);  // removed
      }
      return;
    }
    const auto w = by_wd.find(ev.wd);
    if (w == by_wd.end()) return;  // a watch dropped with its spare
    const uint64_t id = w->second;
    Spare& s = spares[id];
    // The whole spare renamed: taken by a job, or kept again. Nothing in it changes.
    if (ev.wd == s.top_wd && (ev.mask & IN_MOVE_SELF) != 0) return;
    s.state = State::kChanged;
    if ((ev.mask & IN_IGNORED) != 0) {
      by_wd.erase(w);
      if (ev.wd == s.top_wd) drop(id);  // its copy removed
    }
  }

  void read_checked() {
    Checked c;
    while (::read(done_read.get(), &c, sizeof c) == static_cast<ssize_t>(sizeof c))
      for (auto& [id, s] : spares)
        if (s.check == c.id && s.state == State::kChecking)
          s.state = c.untouched != 0 ? State::kUntouched : State::kChanged;
  }

  // One question, "DEV INO NAME\n", answered "1" (untouched) or "0" once every event queued so
  // far is read: any change that ended before the question was asked is counted. "1" only for
  // the spare this watch watched under that name, the very directory the asker sees there.
  void answer() {
    const UniqueFd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!c || !same_user(c.get())) return;
    std::string q;
    char buf[256];
    while (q.find('\n') == std::string::npos && q.size() < 512) {
      pollfd p{c.get(), POLLIN, 0};
      if (::poll(&p, 1, kAnswerMs) != 1) return;
      const ssize_t got = ::recv(c.get(), buf, sizeof buf, 0);
      if (got <= 0) return;
      q.append(buf, static_cast<size_t>(got));
    }
    q.resize(q.find('\n') == std::string::npos ? 0 : q.find('\n'));
    unsigned long long dev = 0, ino = 0;
    int at = 0;
    if (std::sscanf(q.c_str(), "%llu %llu %n", &dev, &ino, &at) != 2 || at <= 0) return;
    const std::string name = q.substr(static_cast<size_t>(at));
    watch_folder();
    read_events();
    read_checked();
    const auto it = by_name.find(name);
    const Spare* s = it != by_name.end() ? &spares[it->second] : nullptr;
    const char yes =
        s != nullptr && s->state == State::kUntouched && s->dev == dev && s->ino == ino ? '1' : '0';
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
      checks_run.fetch_add(1);
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

uint64_t SpareWatch::checks_run() const { return impl_ ? impl_->checks_run.load() : 0; }

bool spare_watch_untouched(const std::string& base, const std::string& name) {
  struct stat st {};
  sockaddr_un a{};
  socklen_t len = 0;
  if (::lstat((base + "/spares/" + name).c_str(), &st) != 0 || !watch_address(base, a, len))
    return false;
  const UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s || ::connect(s.get(), reinterpret_cast<const sockaddr*>(&a), len) != 0 ||
      !same_user(s.get()))
    return false;
  const std::string line = question(st.st_dev, st.st_ino, name);
  if (::send(s.get(), line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size()))
    return false;
  pollfd p{s.get(), POLLIN, 0};
  char c = 0;
  return ::poll(&p, 1, kAnswerMs) == 1 && ::recv(s.get(), &c, 1, 0) == 1 && c == '1';
}

}  // namespace ferry
