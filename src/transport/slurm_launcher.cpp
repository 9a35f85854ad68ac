#include "ferry/transport/slurm_launcher.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <map>
#include <optional>

#include "child_reaper.hpp"
#include "ferry/common/interface_addresses.hpp"
#include "ferry/common/random_bytes.hpp"
#include "ferry/process/spawn.hpp"
#include "ferry/transport/connect_back.hpp"
#include "ferry/transport/socket_link.hpp"

namespace ferry {
namespace {

using asio::ip::tcp;

// How long srun may run on after its ferryds are gone before it is waited for no more.
constexpr auto kStepReapWait = std::chrono::hours(24 * 365);

std::string comma_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

// srun says this for --cpu-bind=none where the cluster's TaskPlugin binds nothing (task/none):
// no binding is what was asked for, so the line tells the user nothing. Any other line passes.
bool is_cpu_bind_notice(std::string_view line) {
  return line == "srun: cluster configuration lacks support for cpu binding";
}

class TcpLink final : public SocketLink<tcp> {
 public:
  TcpLink(asio::io_context& io, tcp::socket sock, std::string node, std::string peer,
          std::string local)
      : SocketLink(io, std::move(sock)),
        node_(std::move(node)),
        peer_addr_(std::move(peer)),
        local_addr_(std::move(local)) {}
  ~TcpLink() override { close(); }
  TcpLink(const TcpLink&) = delete;
  TcpLink& operator=(const TcpLink&) = delete;
  std::string peer_address() const override { return peer_addr_; }
  std::string local_address() const override { return local_addr_; }
  std::string describe() const override { return node_ + " (srun)"; }

 private:
  std::string node_, peer_addr_, local_addr_;
};

}  // namespace

class SlurmLauncher::Impl {
 public:
  Impl(asio::io_context& io, SlurmOptions opts) : io_(io), opts_(std::move(opts)) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    *alive_ = false;
    std::error_code ignored;
    acceptor_.close(ignored);
  }

  void open(const HostEntry& host, const DaemonCommand& cmd, OpenHandler handler) {
    batch_.push_back(std::make_shared<Pending>(Pending{host, cmd, std::move(handler), 0}));
    if (batch_.size() == 1)
      asio::post(io_, [this, alive = alive_] {
        if (*alive) start_step();
      });
  }

  void cancel_all() {
    for (auto& [node, p] : waiting_) fail(*p, p->host.name + ": srun: no answer from ferryd");
    waiting_.clear();
    for (auto& [pid, step] : steps_)
      if (step.connected == 0) ::kill(pid, SIGTERM);
  }

 private:
  struct Pending {
    HostEntry host;
    DaemonCommand cmd;
    OpenHandler handler;
    pid_t step = 0;
  };
  struct Step {
    int hosts = 0;
    int connected = 0;
    std::string last_error;                  // srun's last stderr line
    bool output_ended = false;               // its stderr reached EOF
    std::optional<std::optional<int>> exit;  // set once reaped (nullopt: status unknown)
  };

  static void fail(Pending& p, const std::string& why) {
    auto h = std::move(p.handler);
    p.handler = nullptr;
    if (h) h(make_error(why));
  }

  Status listen() {
    if (acceptor_.is_open()) return {};
    if (!have_hmac())
      return make_error("cannot load libcrypto.so.3 (OpenSSL), needed to prove the job secret");
    std::error_code ec;
    acceptor_.open(tcp::v4(), ec);
    if (!ec) acceptor_.bind(tcp::endpoint(tcp::v4(), 0), ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return make_error("cannot listen for ferryd's connections: " + ec.message());
    auto secret = random_bytes(32);
    if (!secret) return secret.error();
    secret_ = hex_text(*secret);
    accept();
    return {};
  }

  void start_step() {
    auto batch = std::move(batch_);
    batch_.clear();
    if (Status st = listen(); !st) {
      for (auto& p : batch) fail(*p, p->host.name + ": " + st.error().message);
      return;
    }
    std::string nodelist;
    for (auto& p : batch) nodelist += (nodelist.empty() ? "" : ",") + p->host.name;
    const std::string n = std::to_string(batch.size());
    SpawnRequest req;
    req.argv = {opts_.srun,
                "--nodes=" + n,
                "--ntasks=" + n,
                "--ntasks-per-node=1",
                "--nodelist=" + nodelist,
                opts_.survive_lost_host ? "--kill-on-bad-exit=0" : "--kill-on-bad-exit",
                "--mpi=none",
                "--cpu-bind=none",
                "--quiet",
                batch.front()->cmd.ferryd_path,
                "--connect"};
    if (opts_.survive_lost_host) req.argv.insert(req.argv.end() - 2, "--no-kill");
    for (char** e = environ; e && *e; ++e) req.env.emplace_back(*e);
    req.env.push_back(std::string(kConnectSecretVar) + "=" + secret_);
    req.env.push_back(std::string(kConnectPortVar) + "=" +
                      std::to_string(acceptor_.local_endpoint().port()));
    req.env.push_back(std::string(kConnectAddrsVar) + "=" + comma_list(own_ipv4_addresses()));
    auto path = resolve_command(opts_.srun, req.env, "");
    if (!path) {
      for (auto& p : batch) fail(*p, p->host.name + ": srun: " + path.error().message);
      return;
    }
    req.path = *path;
    auto err = make_pipe();
    if (!err) {
      for (auto& p : batch) fail(*p, p->host.name + ": " + err.error().message);
      return;
    }
    UniqueFd null = open_dev_null();
    req.stdin_fd = null.get();
    req.stdout_fd = err->write.get();
    req.stderr_fd = err->write.get();
    auto pid = spawn_process(req);
    err->write.reset();
    if (!pid) {
      for (auto& p : batch) fail(*p, p->host.name + ": srun: " + pid.error().message);
      return;
    }
    if (opts_.verbose && opts_.log)
      opts_.log("slurm: one srun step for " + n + " node(s): " + nodelist + " (pid " +
                std::to_string(*pid) + ")");
    Step& step = steps_[*pid];
    step.hosts = static_cast<int>(batch.size());
    for (auto& p : batch) {
      p->step = *pid;
      waiting_[p->host.name] = p;
    }
    read_stderr(*pid, std::move(err->read));
    async_reap(io_, *pid, kStepReapWait, [this, pid = *pid, alive = alive_](std::optional<int> st) {
      if (*alive) step_ended(pid, st);
    });
  }

  // srun's own messages and the ferryds' stderr, line by line, to the user.
  void read_stderr(pid_t pid, UniqueFd fd) {
    auto sd = std::make_shared<asio::posix::stream_descriptor>(io_, fd.release());
    auto buf = std::make_shared<std::string>();
    auto chunk = std::make_shared<std::array<char, 4096>>();
    auto pump = std::make_shared<std::function<void()>>();
    *pump = [this, sd, buf, chunk, pump, pid, alive = alive_] {
      sd->async_read_some(asio::buffer(*chunk), [=, this](std::error_code ec, size_t n) {
        if (!*alive) return;
        if (!ec) buf->append(chunk->data(), n);
        size_t nl = 0;
        while ((nl = buf->find('\n')) != std::string::npos) {
          std::string line = buf->substr(0, nl);
          buf->erase(0, nl + 1);
          if (is_cpu_bind_notice(line)) continue;
          if (auto it = steps_.find(pid); it != steps_.end()) it->second.last_error = line;
          if (opts_.log) opts_.log(line);
        }
        if (ec) {
          *pump = nullptr;  // ends the cycle
          if (auto it = steps_.find(pid); it != steps_.end()) {
            it->second.output_ended = true;
            step_over(pid);
          }
          return;
        }
        (*pump)();
      });
    };
    (*pump)();
  }

  void step_ended(pid_t pid, std::optional<int> status) {
    auto it = steps_.find(pid);
    if (it == steps_.end()) return;
    it->second.exit = status;
    step_over(pid);
  }

  // srun exited and its last words were read: hosts still waiting for their ferryd fail.
  void step_over(pid_t pid) {
    auto it = steps_.find(pid);
    if (it == steps_.end() || !it->second.exit || !it->second.output_ended) return;
    const std::optional<int> status = *it->second.exit;
    std::string why = "srun ended";
    if (status && WIFEXITED(*status))
      why = "srun exited with status " + std::to_string(WEXITSTATUS(*status));
    if (status && WIFSIGNALED(*status))
      why = "srun killed by signal " + std::to_string(WTERMSIG(*status));
    why += " before ferryd connected";
    if (!it->second.last_error.empty()) why += ": " + it->second.last_error;
    for (auto w = waiting_.begin(); w != waiting_.end();) {
      if (w->second->step == pid) {
        fail(*w->second, w->first + ": " + why);
        w = waiting_.erase(w);
      } else {
        ++w;
      }
    }
    steps_.erase(it);
  }

  void accept() {
    acceptor_.async_accept([this, alive = alive_](std::error_code ec, tcp::socket s) {
      if (!*alive || !acceptor_.is_open()) return;
      if (!ec) handshake(std::make_shared<tcp::socket>(std::move(s)));
      accept();
    });
  }

  // ferryrun's half of the handshake (connect_back.hpp); a peer that fails it is dropped.
  void handshake(const std::shared_ptr<tcp::socket>& s) {
    ConnectBackCheck check;
    check.secret_of = [this,
                       alive = alive_](const std::string& node) -> std::optional<std::string> {
      if (!*alive || !waiting_.contains(node)) return std::nullopt;
      return secret_;
    };
    serve_connect_back(io_, s, std::move(check), [this, s, alive = alive_](Result<AcceptedBack> r) {
      if (!*alive) return;
      if (!r) {
        if (opts_.verbose && opts_.log) opts_.log("slurm: " + r.error().message);
        return;
      }
      authenticated(s, r->node);
    });
  }

  void authenticated(const std::shared_ptr<tcp::socket>& s, const std::string& node) {
    auto it = waiting_.find(node);
    if (it == waiting_.end()) return;  // another connection for that node got there first
    std::shared_ptr<Pending> p = it->second;
    waiting_.erase(it);
    if (auto st = steps_.find(p->step); st != steps_.end()) ++st->second.connected;
    std::error_code e1, e2;
    const std::string peer = s->remote_endpoint(e1).address().to_string();
    const std::string local = s->local_endpoint(e2).address().to_string();
    s->set_option(tcp::no_delay(true), e1);
    auto h = std::move(p->handler);
    p->handler = nullptr;
    if (h)
      h(std::unique_ptr<Link>(
          std::make_unique<TcpLink>(io_, std::move(*s), p->host.name, peer, local)));
  }

  asio::io_context& io_;
  SlurmOptions opts_;
  tcp::acceptor acceptor_{io_};
  std::string secret_;
  std::vector<std::shared_ptr<Pending>> batch_;              // opened this turn
  std::map<std::string, std::shared_ptr<Pending>> waiting_;  // by node name
  std::map<pid_t, Step> steps_;                              // running srun steps
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

SlurmLauncher::SlurmLauncher(asio::io_context& io, SlurmOptions opts)
    : impl_(std::make_unique<Impl>(io, std::move(opts))) {}
SlurmLauncher::~SlurmLauncher() = default;
void SlurmLauncher::async_open(const HostEntry& host, const DaemonCommand& cmd,
                               OpenHandler handler) {
  impl_->open(host, cmd, std::move(handler));
}
void SlurmLauncher::cancel_all() { impl_->cancel_all(); }

}  // namespace ferry
