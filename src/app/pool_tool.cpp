// ferry up / down / pools: a warm pool started, ended and listed (docs/pool.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ferry/app/app.hpp"
#include "ferry/common/private_dir.hpp"
#include "ferry/common/text.hpp"
#include "ferry/pool/pool_dir.hpp"
#include "ferry/pool/pool_server.hpp"
#include "ferry/transport/local_launcher.hpp"

namespace ferry {

namespace {

constexpr const char* kUpHelp =
    R"(Usage: ferry up [--name NAME] [--idle TIME] [--foreground] HOST OPTIONS...

Starts a warm pool: one ferryd per host, kept running behind one SSH connection per host
held by a pool process on this machine. Jobs whose hosts it serves then start through it
(ferryrun finds it; --pool NAME picks one, --no-pool none): no SSH handshake, no login
shell and no ferryd start per job. Hosts are given as to ferryrun: -H, --hostfile, -p, -l,
-i, --ssh-config, --ssh-accept-new, --config JOB.toml, --ferryd PATH.

Options:
  --name NAME     the pool's name (default: default)
  --idle TIME     end the pool after this long without a job: 90s, 30m (default), 2h, never
  --foreground    serve in this terminal instead of in the background (Ctrl-C ends it)
  -h, --help      this text

'ferry pools' lists the pools, 'ferry down [NAME]' ends one.
)";

int refuse(const std::string& cmd, const std::string& why) {
  std::fprintf(stderr, "ferry %s: %s\n", cmd.c_str(), why.c_str());
  return 2;
}

// "90s", "30m", "2h", "1d", a bare number of seconds, or "never".
std::optional<std::chrono::seconds> parse_idle(const std::string& text) {
  if (text == "never") return std::chrono::seconds(std::chrono::hours(24 * 365 * 10));
  size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(text, &used);
  } catch (...) {
    return std::nullopt;
  }
  if (n <= 0) return std::nullopt;
  const std::string unit = text.substr(used);
  long long mult = 0;
  if (unit.empty() || unit == "s") mult = 1;
  if (unit == "m") mult = 60;
  if (unit == "h") mult = 3600;
  if (unit == "d") mult = 86400;
  if (mult == 0 || n > 3650LL * 86400 / mult) return std::nullopt;
  return std::chrono::seconds(n * mult);
}

std::string now_text() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return buf;
}

struct UpArgs {
  std::string name = "default";
  std::string idle_text = "30m";
  std::chrono::seconds idle{1800};
  bool foreground = false;
  std::vector<std::string> rest;  // ferryrun's host options
};

// Serves the pool until it ends; `report` (a pipe to `ferry up`'s foreground, or -1) gets
// the hosts' first results, one line each, and is closed then.
int serve_pool(PoolOptions opts, int report) {
  asio::io_context io;
  asio::signal_set stop_signals(io, SIGTERM, SIGINT);
  opts.on_stop = [&stop_signals] { stop_signals.cancel(); };
  PoolServer server(io, std::move(opts));
  stop_signals.async_wait([&server](std::error_code ec, int) {
    if (!ec) server.stop();
  });
  int up_count = -1;
  auto st = server.start([&](const std::vector<std::string>& lines, int up) {
    up_count = up;
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    if (report >= 0) {
      (void)!::write(report, text.data(), text.size());
      ::close(report);
      report = -1;
    } else {
      std::fputs(text.c_str(), stdout);
      std::fflush(stdout);
    }
    if (up == 0) server.stop();
  });
  if (!st) {
    const std::string line = "error " + st.error().message + "\n";
    if (report >= 0) (void)!::write(report, line.data(), line.size());
    std::fprintf(stderr, "%s\n", line.c_str());
    return 1;
  }
  io.run();
  return up_count > 0 ? 0 : 1;
}

// ferry up's own options (the rest are ferryrun's); nullopt when done: help printed (status
// 0), or refused (2).
std::optional<UpArgs> parse_up_args(const std::vector<std::string>& args, int& status) {
  UpArgs up;
  status = 0;
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& flag, std::string& into) {
      if (a.rfind(flag + "=", 0) == 0) {
        into = a.substr(flag.size() + 1);
        return true;
      }
      if (a == flag && i + 1 < args.size()) {
        into = args[++i];
        return true;
      }
      return false;
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUpHelp, stdout);
      return std::nullopt;
    }
    if (a == "--foreground") {
      up.foreground = true;
      continue;
    }
    if (value("--name", up.name) || value("--idle", up.idle_text)) continue;
    if (a == "--name" || a == "--idle") {
      status = refuse("up", a + " needs a value");
      return std::nullopt;
    }
    up.rest.push_back(a);
  }
  if (Status st = check_pool_name(up.name); !st) {
    status = refuse("up", "--name: " + st.error().message);
    return std::nullopt;
  }
  auto idle = parse_idle(up.idle_text);
  if (!idle) {
    status = refuse("up",
                    "--idle: bad time '" + up.idle_text + "' (expected 90s, 30m, 2h, 1d or never)");
    return std::nullopt;
  }
  up.idle = *idle;
  return up;
}

// How the pool reaches its hosts: ferryrun's SSH settings, a keepalive, a log with times.
PoolOptions pool_options(const UpArgs& up, const std::string& dir, const FrontendConfig& cfg,
                         HostList remote) {
  PoolOptions opts;
  opts.name = up.name;
  opts.dir = dir;
  opts.hosts = std::move(remote);
  opts.ssh.config_file = cfg.ssh.config_file;
  opts.ssh.identity_file = cfg.ssh.identity_file;
  opts.ssh.default_port = cfg.ssh.port;
  opts.ssh.default_user = cfg.ssh.user;
  opts.ssh.accept_new_host_keys = cfg.ssh.accept_new;
  opts.ssh.connect_timeout_s = cfg.job.start_timeout_s;
  // A host that vanished is noticed within 30 s; a job's own heartbeat does its part.
  opts.ssh.keepalive_s = 10;
  opts.ssh.verbose = cfg.job.verbose;
  opts.ssh.log = [](const std::string& line) {
    std::fprintf(stderr, "%s %s\n", now_text().c_str(), line.c_str());
  };
  opts.ferryd_path = cfg.job.ferryd_path;
  opts.idle = up.idle;
  opts.log = opts.ssh.log;
  return opts;
}

// The background pool's first report, read from `fd` until it closes: each failed host said,
// and ferry up's exit status.
int report_up(int fd, const UpArgs& up, bool verbose) {
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  int up_count = 0, failed = 0;
  std::string error;
  for (const std::string& line : split(text, '\n')) {
    if (line.rfind("error ", 0) == 0) {
      error = line.substr(6);
      continue;
    }
    const size_t sp = line.find(' ');
    const std::string key = line.substr(0, sp);
    const std::string rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (rest.rfind("up ", 0) == 0) {
      ++up_count;
      if (verbose) std::printf("ferry up: %s: up (%s)\n", key.c_str(), rest.substr(3).c_str());
    } else if (rest.rfind("failed ", 0) == 0) {
      ++failed;
      std::fprintf(stderr, "ferry up: %s: %s\n", key.c_str(), rest.substr(7).c_str());
    }
  }
  if (!error.empty()) return refuse("up", error);
  if (up_count == 0) {
    std::fprintf(stderr, "ferry up: pool %s: no host could be reached; nothing kept\n",
                 up.name.c_str());
    return 1;
  }
  std::printf(
      "ferry up: pool %s: %d of %d host(s) up; ends after %s without a job ('ferry down%s')\n",
      up.name.c_str(), up_count, up_count + failed, up.idle_text.c_str(),
      up.name == "default" ? "" : (" " + up.name).c_str());
  return failed == 0 ? 0 : 1;
}

// Refused (with the status) unless the pool of that name that runs already serves `remote`.
int already_up(const std::vector<std::string>& answer, const UpArgs& up, const HostList& remote,
               const FrontendConfig& cfg) {
  std::set<std::string> served;
  for (const auto& line : answer) served.insert(line.substr(0, line.find(' ')));
  std::string missing;
  for (const HostEntry& h : remote) {
    const std::string key = pool_host_key(h, cfg.ssh.port, cfg.ssh.user);
    if (!served.contains(key)) missing += (missing.empty() ? "" : ", ") + key;
  }
  if (!missing.empty())
    return refuse("up", "pool " + up.name + " runs already without " + missing +
                            "; end it first ('ferry down " + up.name + "') or give --name");
  std::printf("ferry up: pool %s runs already and serves these hosts\n", up.name.c_str());
  return 0;
}

// The pool's process: a new session, no terminal, its output into the pool's log.
[[noreturn]] void become_pool(PoolOptions opts, const UpArgs& up, int report) {
  ::setsid();
  ::signal(SIGHUP, SIG_IGN);
  const std::string log = opts.dir + "/" + kPoolLogName;
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (null >= 0) ::dup2(null, 0);
  if (out >= 0) {
    ::dup2(out, 1);
    ::dup2(out, 2);
  }
  std::fprintf(stderr, "%s pool %s: pid %d, %zu host(s), idle %s\n", now_text().c_str(),
               up.name.c_str(), static_cast<int>(::getpid()), opts.hosts.size(),
               up.idle_text.c_str());
  std::_Exit(serve_pool(std::move(opts), report));
}

int pool_up(const std::vector<std::string>& args) {
  int status = 0;
  const auto parsed_up = parse_up_args(args, status);
  if (!parsed_up) return status;
  const UpArgs& up = *parsed_up;
  // The hosts exactly as ferryrun reads them; `true` stands for the job's command.
  std::vector<std::string> fargs{"ferry up"};
  fargs.insert(fargs.end(), up.rest.begin(), up.rest.end());
  fargs.emplace_back("true");
  ParseOutcome parsed = parse_ferryrun_args(fargs);
  if (!parsed.config) return parsed.exit_code;
  FrontendConfig& cfg = *parsed.config;
  if (cfg.launch != LaunchWith::kSsh)
    return refuse("up",
                  std::string("a pool holds SSH connections; these hosts are reached ") +
                      (cfg.launch == LaunchWith::kSlurm ? "by srun (a Slurm allocation)"
                                                        : "on this machine (--launcher local)"));
  HostList remote;
  for (const HostEntry& h : cfg.job.hosts)
    if (!is_local_host(h.name) || h.port != 0 || !h.user.empty()) remote.push_back(h);
  if (remote.empty())
    return refuse("up",
                  "no remote host to keep (give them with -H, --hostfile or --config; this "
                  "machine's ferryd is forked for each job, no pool needed)");
  auto pools = pools_directory();
  if (!pools) return refuse("up", pools.error().message);
  const std::string dir = *pools + "/" + up.name;
  if (Status st = make_private_dir(dir, "pools"); !st) return refuse("up", st.error().message);
  if (auto answer = pool_request(dir, "hosts")) return already_up(*answer, up, remote, cfg);

  PoolOptions opts = pool_options(up, dir, cfg, std::move(remote));
  ::signal(SIGPIPE, SIG_IGN);
  if (up.foreground) return serve_pool(std::move(opts), -1);
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return refuse("up", std::strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t child = ::fork();
  if (child < 0) return refuse("up", std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    ::close(report[0]);
    become_pool(std::move(opts), up, report[1]);
  }
  ::close(report[1]);
  return report_up(report[0], up, cfg.job.verbose);
}

int pool_down(const std::vector<std::string>& args) {
  std::vector<std::string> names;
  bool all = false;
  for (size_t i = 2; i < args.size(); ++i) {
    if (args[i] == "-h" || args[i] == "--help") {
      std::fputs(
          "Usage: ferry down [NAME...|--all]\n\nEnds warm pools (default: the pool "
          "named default): their ferryds on every host end with them.\n",
          stdout);
      return 0;
    }
    if (args[i] == "--all") {
      all = true;
      continue;
    }
    if (Status st = check_pool_name(args[i]); !st) return refuse("down", st.error().message);
    names.push_back(args[i]);
  }
  auto found = existing_pools_directory();  // looked at, never made
  if (!found) return refuse("down", found.error().message);
  const std::string pools = found->value_or("");
  if (all && !pools.empty())
    for (const PoolEntry& p : list_pools(pools)) names.emplace_back(p.name);
  else if (names.empty())
    names.emplace_back("default");
  int status = 0;
  for (const auto& name : names) {
    const std::string dir = pools + "/" + name;
    auto answer = pools.empty() ? Result<std::vector<std::string>>(make_error("none"))
                                : pool_request(dir, "down");
    if (!answer) {
      if (!all) {
        std::fprintf(stderr, "ferry down: no pool %s runs\n", name.c_str());
        status = 1;
      }
      continue;
    }
    std::printf("ferry down: pool %s ended\n", name.c_str());
  }
  return status;
}

int pool_list(const std::vector<std::string>& args) {
  if (args.size() > 2) {
    if (args[2] == "-h" || args[2] == "--help") {
      std::fputs("Usage: ferry pools\n\nLists the warm pools and the state of each host.\n",
                 stdout);
      return 0;
    }
    return refuse("pools", "takes no arguments");
  }
  auto pools = existing_pools_directory();  // looked at, never made
  if (!pools) return refuse("pools", pools.error().message);
  bool any = false;
  for (const PoolEntry& p : *pools ? list_pools(**pools) : std::vector<PoolEntry>{}) {
    auto hosts = pool_request(p.dir, "hosts");
    if (!hosts) continue;
    auto jobs = pool_request(p.dir, "jobs");
    any = true;
    std::printf("%s: %zu host(s), %zu job stream(s) open\n", p.name.c_str(), hosts->size(),
                jobs ? jobs->size() : size_t{0});
    for (const auto& line : *hosts) std::printf("  %s\n", line.c_str());
  }
  if (!any) std::printf("no pool runs ('ferry up -H HOSTS' starts one)\n");
  return 0;
}

}  // namespace

int run_pool_tool(const std::vector<std::string>& args) {
  const std::string cmd = args.size() > 1 ? args[1] : "";
  if (cmd == "up") return pool_up(args);
  if (cmd == "down") return pool_down(args);
  if (cmd == "pools") return pool_list(args);
  return refuse(cmd, "not a pool command (up, down, pools)");
}

}  // namespace ferry
