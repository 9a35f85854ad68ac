// ferryd --pool: the jobs' ferryds of one host, each on a stream of the pool's channel.
#include "ferry/pool/host_side.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <asio.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>

#include "ferry/common/read_buffer.hpp"
#include "ferry/pool/ferryd_starter.hpp"
#include "ferry/pool/mux.hpp"
#include "ferry/sync/file_cache.hpp"
#include "ferry/sync/spare_watch.hpp"

namespace ferry {

namespace {

using asio::local::stream_protocol;

// A job's ferryd closes its socket only when exiting: its status follows EOF closely, and the
// stream's end waits for it this long at most (for the reason it gives).
constexpr auto kStatusWait = std::chrono::milliseconds(1000);
constexpr std::size_t kRead = std::size_t{64} * 1024;

std::string exit_reason(int status, const std::string& last_line) {
  std::string why;
  if (WIFSIGNALED(status))
    why = "ferryd killed by signal " + std::to_string(WTERMSIG(status));
  else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    why = "ferryd exited with status " + std::to_string(WEXITSTATUS(status));
  if (!why.empty() && !last_line.empty()) why += ": " + last_line;
  return why;
}

class HostSide {
 public:
  HostSide(asio::io_context& io, int in_fd, int out_fd, std::string exe)
      : io_(io),
        in_(io, in_fd),
        out_(io, out_fd),
        sigchld_(io, SIGCHLD),
        starter_(io, std::move(exe),
                 {[this](std::uint64_t t, pid_t pid) { forked(t, pid); },
                  [this](std::uint64_t t, const std::string& why) { not_forked(t, why); },
                  [this](pid_t pid, int st) { child_ended(pid, st); }}) {}

  void start() {
    starter_.start();
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    send(encode_mux(MuxType::kHello, 0,
                    "ferryd-pool " + std::to_string(kMuxVersion) + " " + host + " " +
                        std::to_string(::getpid())));
    wait_children();
    read_pool();
  }

  int status() const { return status_; }

 private:
  struct Job {
    explicit Job(asio::io_context& io) : sock(io), err(io), status_timer(io) {}
    pid_t pid = -1;           // -1 until the fork server says which
    std::uint64_t token = 0;  // the fork server's request, while its answer is awaited
    stream_protocol::socket sock;
    asio::posix::stream_descriptor err;
    asio::steady_timer status_timer;
    ReadBuffer buf{kRead};
    std::array<char, 4096> ebuf{};
    std::uint64_t unacked = 0;  // sent to the pool, not yet acknowledged
    bool reading = false, eof = false, err_eof = false, waited = false;
    std::deque<std::string> to_ferryd;
    bool writing = false;
    std::optional<int> wait_status;
    std::string err_partial, last_line;
  };

  void send(std::string frame) {
    out_q_.push_back(std::move(frame));
    if (!writing_) write_next();
  }

  void write_next() {
    if (out_q_.empty()) {
      writing_ = false;
      return;
    }
    writing_ = true;
    asio::async_write(out_, asio::buffer(out_q_.front()), [this](std::error_code ec, size_t) {
      if (ec) return end(1);
      out_q_.pop_front();
      write_next();
    });
  }

  void read_pool() {
    in_.async_read_some(asio::buffer(in_buf_.data(), in_buf_.size()),
                        [this](std::error_code ec, size_t n) {
                          if (ec) return end(0);  // the pool's connection ended
                          reader_.feed(std::string_view(in_buf_.data(), n));
                          for (;;) {
                            auto f = reader_.next();
                            if (!f) return end(1);
                            if (!*f) break;
                            on_frame(std::move(**f));
                          }
                          read_pool();
                        });
  }

  void on_frame(MuxFrame f) {
    switch (f.type) {
      case MuxType::kOpen:
        return open_job(f.stream);
      case MuxType::kData: {
        auto it = jobs_.find(f.stream);
        if (it == jobs_.end()) return;
        it->second->to_ferryd.push_back(std::move(f.payload));
        if (!it->second->writing) write_job(f.stream, *it->second);
        return;
      }
      case MuxType::kAck: {
        auto it = jobs_.find(f.stream);
        auto n = decode_mux_ack(f.payload);
        if (it == jobs_.end() || !n) return;
        Job& j = *it->second;
        j.unacked -= std::min(j.unacked, *n);
        if (!j.reading && !j.eof && j.unacked < kMuxWindow) read_job(f.stream, j);
        return;
      }
      case MuxType::kClose:
        // The job's front end is gone: its ferryd reads EOF and stops the ranks; reaped later.
        jobs_.erase(f.stream);
        refill();
        return;
      default:
        return;
    }
  }

  // What the fork server said of a job's ferryd: its pid, or that there is none.
  Job* job_of_token(std::uint64_t token, std::uint32_t& id) {
    for (auto& [i, j] : jobs_)
      if (j->token == token) {
        id = i;
        return j.get();
      }
    return nullptr;
  }

  void forked(std::uint64_t token, pid_t pid) {
    std::uint32_t id = 0;
    Job* j = job_of_token(token, id);
    if (!j) return;  // a spare replaced before its answer: it reads EOF and exits
    j->token = 0;
    j->pid = pid;
    by_pid_[pid] = id;
  }

  // No ferryd: its stream ends (the only other end was the request's), with this reason.
  void not_forked(std::uint64_t token, const std::string& why) {
    std::uint32_t id = 0;
    Job* j = job_of_token(token, id);
    if (!j) return;
    j->token = 0;
    j->last_line = why;
    j->wait_status = 1 << 8;
    if (j->eof && j->err_eof) finish(id);
  }

  void open_job(std::uint32_t id) {
    auto s = starter_.take();
    if (!s) return send(encode_mux(MuxType::kClose, id, s.error().message));
    auto job = std::make_unique<Job>(io_);
    job->pid = s->pid;
    job->token = s->token;
    job->sock.assign(stream_protocol(), s->sock.release());
    job->err.assign(s->err.release());
    Job& j = *job;
    jobs_[id] = std::move(job);
    if (s->pid > 0) by_pid_[s->pid] = id;
    read_job(id, j);
    read_err(id, j);
  }

  // The next job's ferryd is started when a job's stream ends, not when it begins.
  void refill() {
    if (!ended_) starter_.refill();
  }

  // The job still exists, and is the one the callback was made for (ids are never reused).
  Job* alive(std::uint32_t id) {
    auto it = jobs_.find(id);
    return it == jobs_.end() ? nullptr : it->second.get();
  }

  void read_job(std::uint32_t id, Job& j) {
    j.reading = true;
    j.sock.async_read_some(
        asio::buffer(j.buf.data(), j.buf.size()), [this, id](std::error_code ec, size_t n) {
          Job* job = alive(id);
          if (!job) return;
          job->reading = false;
          if (ec) {
            job->eof = true;
            return maybe_end(id, *job);
          }
          job->unacked += n;
          send(encode_mux(MuxType::kData, id, std::string_view(job->buf.data(), n)));
          if (job->unacked < kMuxWindow) read_job(id, *job);
        });
  }

  void read_err(std::uint32_t id, Job& j) {
    j.err.async_read_some(asio::buffer(j.ebuf), [this, id](std::error_code ec, size_t n) {
      Job* job = alive(id);
      if (!job) return;
      if (ec) {
        job->err_eof = true;
        return maybe_end(id, *job);
      }
      const std::string_view bytes(job->ebuf.data(), n);
      send(encode_mux(MuxType::kStderr, id, bytes));
      // The last whole line: the reason an exit gives.
      job->err_partial.append(bytes);
      size_t nl = 0;
      while ((nl = job->err_partial.find('\n')) != std::string::npos) {
        std::string line = job->err_partial.substr(0, nl);
        job->err_partial.erase(0, nl + 1);
        if (!line.empty()) job->last_line = std::move(line);
      }
      if (job->err_partial.size() > 4096) job->err_partial.clear();
      read_err(id, *job);
    });
  }

  void write_job(std::uint32_t id, Job& j) {
    if (j.to_ferryd.empty()) {
      j.writing = false;
      return;
    }
    j.writing = true;
    asio::async_write(j.sock, asio::buffer(j.to_ferryd.front()),
                      [this, id](std::error_code ec, size_t n) {
                        Job* job = alive(id);
                        if (!job) return;
                        if (ec) {  // ferryd gone: its end is the read side's to report
                          job->to_ferryd.clear();
                          job->writing = false;
                          return;
                        }
                        job->to_ferryd.pop_front();
                        send(encode_mux_ack(id, n));
                        write_job(id, *job);
                      });
  }

  // The stream ended (stdout and stderr both): its close goes out with ferryd's exit status,
  // once known or after kStatusWait.
  void maybe_end(std::uint32_t id, Job& j) {
    if (!j.eof || !j.err_eof || j.waited) return;
    if (j.wait_status) return finish(id);
    j.waited = true;
    j.status_timer.expires_after(kStatusWait);
    j.status_timer.async_wait([this, id](std::error_code ec) {
      if (!ec && alive(id)) finish(id);
    });
  }

  void finish(std::uint32_t id) {
    Job* j = alive(id);
    if (!j) return;
    std::string why = j->wait_status ? exit_reason(*j->wait_status, j->last_line) : "";
    send(encode_mux(MuxType::kClose, id, why));
    jobs_.erase(id);
    refill();
  }

  void wait_children() {
    sigchld_.async_wait([this](std::error_code ec, int) {
      if (ec) return;
      int st = 0;
      pid_t pid = 0;
      // The fork server's own end shows on its socket.
      while ((pid = ::waitpid(-1, &st, WNOHANG)) > 0)
        if (pid != starter_.server_pid()) child_ended(pid, st);
      wait_children();
    });
  }

  // A job's ferryd (or the spare) ended with wait status `st`.
  void child_ended(pid_t pid, int st) {
    auto it = by_pid_.find(pid);
    if (it == by_pid_.end()) {
      // The spare ended unused (it failed at its start): the next job starts its own, and
      // its stream says why, should that one fail too.
      starter_.spare_ended(pid);
      return;
    }
    const std::uint32_t id = it->second;
    by_pid_.erase(it);
    if (Job* j = alive(id)) {
      j->wait_status = st;
      if (j->eof && j->err_eof) finish(id);
    }
  }

  void end(int status) {
    if (ended_) return;
    ended_ = true;
    status_ = status;
    // Every job's ferryd reads EOF now (and SIGTERM when this process exits).
    jobs_.clear();
    starter_.stop();  // the fork server reads the end and exits
    io_.stop();
  }

  asio::io_context& io_;
  asio::posix::stream_descriptor in_, out_;
  asio::signal_set sigchld_;
  ReadBuffer in_buf_{kRead};
  MuxReader reader_;
  std::deque<std::string> out_q_;
  bool writing_ = false;
  bool ended_ = false;
  int status_ = 0;
  std::map<std::uint32_t, std::unique_ptr<Job>> jobs_;
  std::map<pid_t, std::uint32_t> by_pid_;
  FerrydStarter starter_;
};

}  // namespace

int run_pool_host(int in_fd, int out_fd, const std::string& ferryd_exe) {
  // The spares of --sync's cache watched while the pool lives: a job that takes one need not
  // check its every entry first.
  const SpareWatch spares(FileCache::default_base());
  asio::io_context io;
  HostSide side(io, in_fd, out_fd, ferryd_exe);
  side.start();
  io.run();
  return side.status();
}

}  // namespace ferry
