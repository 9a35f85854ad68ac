#include "ferry/daemon/daemon.hpp"

#include "ferry/binding/report.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <map>
#include <vector>

#include "ferry/daemon/host_binder.hpp"
#include "ferry/daemon/output_pump.hpp"
#include "ferry/daemon/kv_proxy.hpp"
#include "ferry/daemon/pmi_proxy.hpp"
#include "ferry/process/spawn.hpp"
#include "ferry/daemon/sweeper.hpp"
#include "ferry/rendezvous/framework_env.hpp"
#include "ferry/rendezvous/interfaces.hpp"
#include "ferry/rendezvous/pmi_job.hpp"
#include "ferry/wire/frame_batch.hpp"
#include "ferry/wire/messages.hpp"

extern char** environ;

namespace ferry {
namespace {

using asio::posix::stream_descriptor;

// Copying output (no splice): stop reading rank pipes while this much is queued for the
// front end, so a slow console throttles the ranks instead of growing ferryd.
constexpr size_t kHighWater = 1u << 20;
// One read from a rank pipe: a whole default pipe buffer.
constexpr size_t kReadChunk = 64u << 10;
// Largest Output frame spliced at once (a pipe rarely holds more).
constexpr size_t kMaxForward = 1u << 20;
// After a rank is reaped, how long its pipes may stay open (held by a background child)
// before its exit is reported anyway.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(1000);
// When the front end is gone: SIGTERM, then SIGKILL after this; exit well within 2 s.
constexpr auto kOrphanGrace = std::chrono::milliseconds(700);

uint16_t find_free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof a;
  uint16_t port = 0;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(s);
  return port;
}

bool env_flag(const char* name) {
  const char* v = ::getenv(name);
  return v && *v && std::string_view(v) != "0";
}

std::string host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

std::vector<std::string> own_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

struct Pipe {
  int read = -1, write = -1;
};

bool make_pipe(Pipe& p) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  p.read = fds[0];
  p.write = fds[1];
  return true;
}

}  // namespace

class Daemon::Impl {
 public:
  Impl(asio::io_context& io, DaemonOptions opts)
      : io_(io), in_(io, opts.in_fd),
        pump_(io, opts.out_fd,
              {[this] { output_idle(); }, [this] { front_lost(); }}),
        signals_(io),
        grace_timer_(io), exit_timer_(io), beat_timer_(io),
        kv_(io, [this](wire::KvRequest r) { queue(wire::encode(r)); },
            [this](const std::string& line) {
              if (spec_.verbose) log(host_name() + ": " + line);
            }) {}

  void start() {
    guard_.start();
    // FERRY_DEVICE_ROOT lets tests point device discovery at a fake /proc, /dev, /sys tree.
    const char* dev_root = ::getenv("FERRY_DEVICE_ROOT");
    binder_.load(dev_root && *dev_root ? dev_root : "/");
    signals_.add(SIGCHLD);
    signals_.add(SIGTERM);
    signals_.add(SIGINT);
    signals_.add(SIGHUP);
    wait_signal();
    wire::Hello h;
    h.hostname = host_name();
    h.pid = ::getpid();
    h.free_port = find_free_port();
    // The KV proxy listens from the start, so its port can go into the ranks' environment.
    if (auto port = kv_.listen()) h.kv_port = *port;
    else ::fprintf(stderr, "ferryd: %s\n", port.error().message.c_str());
    SystemInterfaceReader ifs;
    if (auto list = ifs.read()) h.interfaces = interfaces_to_lines(*list);
    queue(wire::encode(h));
    read_input();
  }

  int exit_code() const { return exit_code_; }

 private:
  // A rank's stdout or stderr pipe. It has no buffer of its own: its bytes are spliced
  // from the pipe to the front end's stream (or, without splice, read straight into the
  // frame batch bound there).
  struct Stream {
    explicit Stream(asio::io_context& io) : sd(io) {}
    stream_descriptor sd;
    bool open = false;
    bool forwarding = false;     // a frame of its bytes is queued in the pump
    bool close_pending = false;  // close once that frame left (the pump reads the fd)
  };

  struct Rank {
    explicit Rank(asio::io_context& io) : out(io), err(io), in(io), drain(io) {}
    int32_t rank = 0;
    pid_t pid = -1;
    Stream out, err;
    stream_descriptor in;  // write end of the stdin pipe (stdin rank only)
    std::deque<std::string> in_queue;
    bool in_writing = false;
    bool in_eof = false;
    bool reaped = false;
    int status = 0;
    bool exit_sent = false;
    asio::steady_timer drain;
  };

  // ---- frames to the front end --------------------------------------------------------

  void queue(const std::string& frame) {
    if (front_gone_) return;
    pump_.send(frame);
  }

  void output_idle() {
    if (paused_) resume_reads();
    if (finished_) stop();
  }

  void log(const std::string& line) { queue(wire::encode(wire::Log{line})); }

  // ---- frames from the front end ------------------------------------------------------

  void read_input() {
    in_.async_read_some(asio::buffer(in_buf_), [this](std::error_code ec, size_t n) {
      if (ec) {
        front_lost();
        return;
      }
      reader_.feed(std::string_view(in_buf_.data(), n));
      last_heard_ = std::chrono::steady_clock::now();
      for (;;) {
        auto f = reader_.next_view();
        if (!f) {
          fatal(f.error().message);
          return;
        }
        if (!*f) break;
        handle(**f);
        if (front_gone_) return;
      }
      read_input();
    });
  }

  void handle(const wire::FrameView& f) {
    auto msg = wire::decode_to_daemon(f);
    if (!msg) return fatal(msg.error().message);
    std::visit(wire::Overloaded{
                   [this](wire::HostSpec& spec) { on_host_spec(std::move(spec)); },
                   [this](wire::Stdin& in) { feed_stdin(in.data); },
                   [this](wire::Signal& s) { signal_all(s.signo); },
                   [this](wire::Terminate& t) {
                     terminate(std::chrono::milliseconds(t.grace_ms));
                   },
                   [](wire::Heartbeat&) {},  // reading it was the point (last_heard_)
                   [this](wire::KvReply& r) { kv_.reply(r); },
                   [this](wire::PmiBarrierDone& b) {
                     if (!pmi_) return fatal("a PMI barrier answer arrived, but PMI is off");
                     if (auto s = pmi_->barrier_done(b); !s) fatal(s.error().message);
                   },
               },
               *msg);
  }

  void on_host_spec(wire::HostSpec spec) {
    if (have_spec_) return fatal("a second host spec arrived");
    have_spec_ = true;
    spec_ = std::move(spec);
    if (spec_.heartbeat_ms > 0) heartbeat();
    launch();
  }

  // With heartbeats on, ferryd sends one every interval and gives up on a front end it
  // has not heard from for three: a cut link may never deliver EOF.
  void heartbeat() {
    const auto interval = std::chrono::milliseconds(spec_.heartbeat_ms);
    if (std::chrono::steady_clock::now() - last_heard_ > 3 * interval) {
      ::fprintf(stderr, "ferryd: no word from ferryrun for %u ms; stopping the job\n",
                3 * spec_.heartbeat_ms);
      front_lost();
      return;
    }
    queue(wire::encode(wire::Heartbeat{}));
    beat_timer_.expires_after(interval);
    beat_timer_.async_wait([this](std::error_code ec) {
      if (!ec && !front_gone_ && !finished_) heartbeat();
    });
  }

  // ---- ranks ---------------------------------------------------------------------------

  void launch() {
    tag_ = spec_.job_id + "." + std::to_string(::getpid());
    guard_.set_job(tag_);
    start_rendezvous();
    const auto base = own_environment();
    if (!spec_.wdir.empty() && ::access(spec_.wdir.c_str(), X_OK) != 0 && spec_.wdir_fallback) {
      // The front end's directory does not exist here: start in $HOME, as ssh would.
      const char* home = ::getenv("HOME");
      if (spec_.verbose)
        log(host_name() + ": " + spec_.wdir + " does not exist here; ranks start in " +
            (home ? home : "/"));
      spec_.wdir = home ? home : "/";
    }
    const std::vector<std::string> tags = {std::string(kJobTagVar) + "=" + tag_,
                                           "FERRY_JOB_ID=" + spec_.job_id};
    // Cores and devices for every local rank, computed before the first fork.
    std::vector<std::string> bind_lines;
    std::vector<int> global_ranks;
    for (const auto& rl : spec_.ranks) global_ranks.push_back(rl.rank);
    auto bind_plan = binder_.plan(spec_.binding, global_ranks, spec_.world_size,
                                  merge_environment({base, spec_.env}), host_name(),
                                  spec_.verbose, bind_lines);
    for (const auto& line : bind_lines) log(line);
    if (bind_plan) bindings_ = std::move(bind_plan.value());
    for (const auto& rl : spec_.ranks) {
      auto r = std::make_unique<Rank>(io_);
      r->rank = rl.rank;
      Rank& rank = *r;
      ranks_.push_back(std::move(r));
      if (terminating_) {  // told to stop while launching: do not start the rest
        report_exit_now(rank, 0, SIGKILL);
        continue;
      }
      if (!bind_plan) {
        spawn_failed(rank, bind_plan.error().message);
        continue;
      }
      const size_t local = static_cast<size_t>(&rl - spec_.ranks.data());
      const RankBinding* binding =
          local < bindings_.ranks.size() ? &bindings_.ranks[local] : nullptr;
      if (binding && spec_.binding.report_bindings)
        log(format_binding_report(host_name(), rl.rank, *binding, bindings_));
      auto env = merge_environment(
          {base, binding ? binding->env : std::vector<std::string>{}, spec_.env, rl.env, tags});
      auto path = resolve_command(spec_.argv.empty() ? "" : spec_.argv[0], env, spec_.wdir);
      if (!path) {
        spawn_failed(rank, path.error().message);
        continue;
      }
      Pipe po, pe, pi;
      bool want_stdin = rl.rank == spec_.stdin_rank;
      if (!make_pipe(po) || !make_pipe(pe) || (want_stdin && !make_pipe(pi))) {
        spawn_failed(rank, std::string("pipe: ") + std::strerror(errno));
        for (int fd : {po.read, po.write, pe.read, pe.write, pi.read, pi.write})
          if (fd >= 0) ::close(fd);
        continue;
      }
      int devnull = want_stdin ? -1 : ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      SpawnRequest req;
      req.path = *path;
      req.argv = spec_.argv;
      req.env = std::move(env);
      add_rendezvous(req, rl, static_cast<int>(&rl - spec_.ranks.data()));
      req.wdir = spec_.wdir;
      req.binding = binding;
      req.stdin_fd = want_stdin ? pi.read : devnull;
      req.stdout_fd = po.write;
      req.stderr_fd = pe.write;
      auto pid = spawn_process(req);
      if (pmi_) pid ? pmi_->spawned(rl.rank) : pmi_->drop(rl.rank);
      for (int fd : {po.write, pe.write, pi.read, devnull})
        if (fd >= 0) ::close(fd);
      if (!pid) {
        for (int fd : {po.read, pe.read, pi.write})
          if (fd >= 0) ::close(fd);
        spawn_failed(rank, pid.error().message);
        continue;
      }
      rank.pid = *pid;
      by_pid_[rank.pid] = &rank;
      guard_.add_pgid(rank.pid);
      open_stream(rank, rank.out, po.read, 1);
      open_stream(rank, rank.err, pe.read, 2);
      if (want_stdin) {
        rank.in.assign(pi.write);
        for (auto& chunk : early_stdin_) rank.in_queue.push_back(std::move(chunk));
        early_stdin_.clear();
        rank.in_eof = early_stdin_eof_;
        write_stdin(rank);
      }
      queue(wire::encode(wire::Started{rank.rank, rank.pid}));
    }
    kv_.set_candidates(rank_pids());
    // Stdin that arrived for a stdin rank that did not start: dropped, so acknowledged.
    size_t unclaimed = 0;
    for (auto& chunk : early_stdin_) unclaimed += chunk.size();
    early_stdin_.clear();
    ack_stdin(unclaimed);
    if (spec_.ranks.empty()) check_done();
    // Children may have exited before their pids were recorded.
    reap();
  }

  // ---- rendezvous (KV proxy, PMI) ------------------------------------------------------

  void start_rendezvous() {
    kv_.set_secret(spec_.secret);
    if (!spec_.pmi) return;
    PmiHostConfig cfg;
    cfg.kvsname = spec_.job_id.empty() ? "ferry" : spec_.job_id;
    cfg.world_size = spec_.world_size;
    cfg.universe_size = spec_.world_size;
    cfg.process_mapping = spec_.pmi_process_mapping;
    for (const auto& rl : spec_.ranks) cfg.ranks.push_back(rl.rank);
    PmiProxy::Events ev;
    ev.send = [this](std::string frame) { queue(std::move(frame)); };
    ev.closed = [this](int rank) {
      for (auto& r : ranks_)
        if (r->rank == rank) maybe_report_exit(*r);
    };
    pmi_ = std::make_unique<PmiProxy>(io_, std::move(cfg), std::move(ev));
  }

  // The rank's extra arguments and, with PMI on, its end of a PMI socket pair.
  void add_rendezvous(SpawnRequest& req, const wire::RankLaunch& rl, int local_rank) {
    req.argv.insert(req.argv.end(), rl.extra_args.begin(), rl.extra_args.end());
    if (!pmi_) return;
    auto fd = pmi_->open_rank(rl.rank);
    if (!fd) {
      log(host_name() + ": rank " + std::to_string(rl.rank) + " starts without PMI: " +
          fd.error().message);
      return;
    }
    req.keep_fds.push_back(*fd);
    req.env = merge_environment(
        {req.env, pmi_environment(*fd, rl.rank, spec_.world_size, host_name(), local_rank,
                                  static_cast<int>(spec_.ranks.size()))});
  }

  std::vector<pid_t> rank_pids() const {
    std::vector<pid_t> v;
    for (auto& r : ranks_)
      if (r->pid > 0) v.push_back(r->pid);
    return v;
  }

  void spawn_failed(Rank& rank, const std::string& why) {
    queue(wire::encode(wire::Failure{rank.rank, why}));
    report_exit_now(rank, 127, 0);
  }

  void report_exit_now(Rank& rank, int code, int sig) {
    rank.reaped = true;
    rank.exit_sent = true;
    queue(wire::encode(wire::Exited{rank.rank, code, sig}));
    check_done();
  }

  void open_stream(Rank& rank, Stream& s, int fd, uint8_t id) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    s.sd.assign(fd);
    s.open = true;
    read_stream(rank, s, id);
  }

  // Waits until the pipe is readable, then pulls from it.
  void read_stream(Rank& rank, Stream& s, uint8_t id) {
    if (!s.open) return;
    s.sd.async_wait(stream_descriptor::wait_read, [this, &rank, &s, id](std::error_code ec) {
      if (ec == asio::error::operation_aborted || !s.open) return;
      if (ec) return stream_ended(rank, s);
      pull(rank, s, id);
    });
  }

  // Moves what the pipe holds towards the front end. Splicing, the pipe is its own
  // buffer: one frame of what it holds is queued, and the pipe is looked at again only
  // once that frame left, so a slow front end holds the rank back and ferryd buffers
  // nothing. Readiness that came while a frame was queued is not seen again (edge
  // triggered), so the pipe is checked before waiting on it.
  void pull(Rank& rank, Stream& s, uint8_t id) {
    if (!s.open) return;
    const int fd = s.sd.native_handle();
    if (front_gone_) return drain(rank, s, id);
    if (!splice_output_) return copy(rank, s, id);
    int avail = 0;
    if (::ioctl(fd, FIONREAD, &avail) == 0 && avail > 0) {
      s.forwarding = true;
      pump_.forward(fd, rank.rank, id, std::min<size_t>(static_cast<size_t>(avail), kMaxForward),
                    [this, &rank, &s, id] { forwarded(rank, s, id); });
      return;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)))
      return stream_ended(rank, s);  // nothing left and no writer: EOF
    read_stream(rank, s, id);
  }

  void forwarded(Rank& rank, Stream& s, uint8_t id) {
    s.forwarding = false;
    if (s.close_pending) {
      s.close_pending = false;
      return stream_ended(rank, s);
    }
    pull(rank, s, id);
  }

  // Without splice: one read straight into the frame batch. One read per turn keeps a
  // chatty rank from starving the others.
  void copy(Rank& rank, Stream& s, uint8_t id) {
    if (paused_) {
      paused_streams_.push_back({&rank, &s, id});
      return;
    }
    auto room = pump_.room(kReadChunk);
    ssize_t n = ::read(s.sd.native_handle(), room.data(), room.size());
    if (n > 0) {
      pump_.commit(rank.rank, id, static_cast<size_t>(n));
      if (pump_.queued() > kHighWater) paused_ = true;
    }
    next_turn(rank, s, id, n, room.size());
  }

  // The front end is gone: read and discard, so no rank blocks writing before it is
  // stopped.
  void drain(Rank& rank, Stream& s, uint8_t id) {
    char sink[4096];
    ssize_t n = ::read(s.sd.native_handle(), sink, sizeof sink);
    next_turn(rank, s, id, n, sizeof sink);
  }

  // After one read of `n` (read()'s result) of `asked` bytes: EOF or an error ends the
  // stream; a full read may have left bytes behind, and no new readiness edge comes for
  // those, so the next turn reads again without waiting; else it waits.
  void next_turn(Rank& rank, Stream& s, uint8_t id, ssize_t n, size_t asked) {
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return stream_ended(rank, s);
    if (n > 0 && static_cast<size_t>(n) == asked)
      asio::post(io_, [this, &rank, &s, id] { pull(rank, s, id); });
    else
      read_stream(rank, s, id);
  }

  void stream_ended(Rank& rank, Stream& s) {
    close_stream(s);
    maybe_report_exit(rank);
  }

  void close_stream(Stream& s) {
    if (!s.open) return;
    if (s.forwarding) {  // the pump still reads this fd: close once its frame left
      s.close_pending = true;
      return;
    }
    s.open = false;
    std::error_code ignored;
    s.sd.close(ignored);
  }

  void resume_reads() {
    paused_ = false;
    auto waiting = std::move(paused_streams_);
    paused_streams_.clear();
    for (auto& w : waiting) pull(*w.rank, *w.stream, w.id);
  }

  void feed_stdin(const std::string& data) {
    Rank* target = nullptr;
    for (auto& r : ranks_)
      if (r->rank == spec_.stdin_rank && r->in.is_open()) target = r.get();
    if (!target) {
      // Not started yet (or no stdin rank here): keep until launch, drop otherwise.
      if (!have_spec_) {
        if (data.empty()) early_stdin_eof_ = true;
        else early_stdin_.push_back(data);
      } else {
        ack_stdin(data.size());
      }
      return;
    }
    if (data.empty()) target->in_eof = true;
    else target->in_queue.push_back(data);
    write_stdin(*target);
  }

  void write_stdin(Rank& r) {
    if (r.in_writing || !r.in.is_open()) return;
    if (r.in_queue.empty()) {
      if (r.in_eof) {
        std::error_code ignored;
        r.in.close(ignored);
      }
      return;
    }
    r.in_writing = true;
    asio::async_write(r.in, asio::buffer(r.in_queue.front()),
                      [this, &r](std::error_code ec, size_t) {
                        r.in_writing = false;
                        if (ec) {  // the rank closed its stdin (or exited): drop the rest
                          drop_stdin(r);
                          std::error_code ignored;
                          r.in.close(ignored);
                          return;
                        }
                        ack_stdin(r.in_queue.front().size());
                        r.in_queue.pop_front();
                        write_stdin(r);
                      });
  }

  // Every stdin byte is acknowledged once written or dropped: the front end keeps only a
  // window of unacknowledged bytes in flight, so a rank that does not read its stdin
  // holds ferryrun's reading back instead of filling ferryd's memory.
  void ack_stdin(size_t bytes) {
    if (bytes > 0) queue(wire::encode(wire::StdinAck{static_cast<uint32_t>(bytes)}));
  }

  void drop_stdin(Rank& r) {
    size_t bytes = 0;
    for (auto& chunk : r.in_queue) bytes += chunk.size();
    r.in_queue.clear();
    ack_stdin(bytes);
  }

  // ---- exits ---------------------------------------------------------------------------

  void wait_signal() {
    signals_.async_wait([this](std::error_code ec, int signo) {
      if (ec) return;
      if (signo == SIGCHLD) {
        reap();
      } else {
        // ferryd itself is being stopped: take the ranks with it.
        if (exit_code_ == 0) exit_code_ = 128 + signo;
        front_lost();
      }
      wait_signal();
    });
  }

  void reap() {
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      auto it = by_pid_.find(pid);
      if (it == by_pid_.end()) continue;
      Rank& r = *it->second;
      by_pid_.erase(it);
      r.reaped = true;
      r.status = status;
      if (r.out.open || r.err.open || pmi_open(r)) {
        r.drain.expires_after(kDrainAfterExit);
        r.drain.async_wait([this, &r](std::error_code ec) {
          if (ec) return;
          close_stream(r.out);
          close_stream(r.err);
          if (pmi_) pmi_->close_rank(r.rank);
          maybe_report_exit(r);
        });
      }
      maybe_report_exit(r);
    }
  }

  void maybe_report_exit(Rank& r) {
    if (!r.reaped || r.exit_sent || r.out.open || r.err.open || pmi_open(r)) return;
    r.drain.cancel();
    r.exit_sent = true;
    wire::Exited e;
    e.rank = r.rank;
    if (WIFSIGNALED(r.status)) e.signal = WTERMSIG(r.status);
    else e.exit_code = WEXITSTATUS(r.status);
    queue(wire::encode(e));
    if (!r.in_writing) drop_stdin(r);  // else the cancelled write's handler drops the rest
    if (r.in.is_open()) {
      std::error_code ignored;
      r.in.close(ignored);
    }
    check_done();
  }

  bool pmi_open(const Rank& r) const { return pmi_ && pmi_->is_open(r.rank); }

  void check_done() {
    if (!have_spec_ || finished_) return;
    for (auto& r : ranks_)
      if (!r->exit_sent) return;
    // Every rank is gone; anything still tagged with the job (setsid daemons a rank left
    // behind) goes too, before we say we are done.
    sweep_job(tag_, pgids());
    guard_.release();
    grace_timer_.cancel();
    beat_timer_.cancel();
    finished_ = true;
    queue(wire::encode(wire::Done{}));
    if (pump_.idle()) stop();
  }

  std::vector<pid_t> pgids() const {
    std::vector<pid_t> v;
    for (auto& r : ranks_)
      if (r->pid > 0 && !r->reaped) v.push_back(r->pid);
    return v;
  }

  void signal_all(int signo) {
    for (auto& r : ranks_)
      if (r->pid > 0 && !r->reaped) ::kill(-r->pid, signo);
  }

  void terminate(std::chrono::milliseconds grace) {
    bool first = !terminating_;
    terminating_ = true;
    if (grace.count() <= 0) {
      signal_all(SIGKILL);
      grace_timer_.cancel();
      return;
    }
    if (!first) return;
    signal_all(SIGTERM);
    grace_timer_.expires_after(grace);
    grace_timer_.async_wait([this](std::error_code ec) {
      if (!ec) signal_all(SIGKILL);
    });
  }

  // The front end vanished (its stream closed or broke) or ferryd was told to stop: kill
  // everything and exit; nobody is left to report to.
  void front_lost() {
    if (front_gone_) return;
    front_gone_ = true;
    pump_.drop();    // queued frames' pipes are drained from now on (front_gone_)
    resume_reads();  // so are parked ones, so no rank blocks writing
    std::error_code ignored;
    in_.close(ignored);
    if (exit_code_ == 0 && !finished_) exit_code_ = 1;
    signal_all(SIGTERM);
    exit_timer_.expires_after(kOrphanGrace);
    exit_timer_.async_wait([this](std::error_code) {
      if (have_spec_) sweep_job(tag_, pgids());
      signal_all(SIGKILL);
      guard_.release();
      stop();
    });
    beat_timer_.cancel();
    if (!have_spec_ || finished_) {
      exit_timer_.cancel();
    }
  }

  void fatal(const std::string& why) {
    ::fprintf(stderr, "ferryd: %s\n", why.c_str());
    queue(wire::encode(wire::Failure{-1, why}));
    exit_code_ = 2;
    terminate(std::chrono::milliseconds(0));
    front_lost();
  }

  void stop() {
    if (stopped_) return;
    stopped_ = true;
    io_.stop();
  }

  struct PausedRead {
    Rank* rank;
    Stream* stream;
    uint8_t id;
  };

  asio::io_context& io_;
  stream_descriptor in_;
  OutputPump pump_;
  // FERRY_OUTPUT_COPY=1 copies rank output through ferryd instead of splicing it (a
  // switch for tests and for kernels that refuse splice on these fds).
  const bool splice_output_ = pump_.can_splice() && !env_flag("FERRY_OUTPUT_COPY");
  asio::signal_set signals_;
  asio::steady_timer grace_timer_, exit_timer_, beat_timer_;
  std::chrono::steady_clock::time_point last_heard_ = std::chrono::steady_clock::now();
  std::array<char, 64 * 1024> in_buf_{};
  wire::FrameReader reader_;

  bool paused_ = false;
  std::vector<PausedRead> paused_streams_;
  wire::HostSpec spec_;
  std::string tag_;  // FERRY_SWEEP_TAG value of this ferryd's ranks
  bool have_spec_ = false;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::map<pid_t, Rank*> by_pid_;
  std::vector<std::string> early_stdin_;
  bool early_stdin_eof_ = false;
  bool terminating_ = false;
  bool front_gone_ = false;
  bool finished_ = false;
  bool stopped_ = false;
  int exit_code_ = 0;
  Guard guard_;
  HostBinder binder_;
  HostBindingPlan bindings_;  // must outlive the spawns that point into it
  KvProxy kv_;
  std::unique_ptr<PmiProxy> pmi_;
};

Daemon::Daemon(asio::io_context& io, DaemonOptions opts)
    : impl_(std::make_unique<Impl>(io, opts)) {}
Daemon::~Daemon() = default;
void Daemon::start() { impl_->start(); }
int Daemon::exit_code() const { return impl_->exit_code(); }

}  // namespace ferry
