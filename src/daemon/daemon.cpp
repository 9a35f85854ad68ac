#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

#include "daemon_impl.hpp"
#include "ferry/daemon/free_port.hpp"
#include "ferry/daemon/own_name.hpp"
#include "ferry/rendezvous/interfaces.hpp"

namespace ferry {

Daemon::Impl::Impl(asio::io_context& io, const DaemonOptions& opts)
    : io_(io),
      host_(own_host_name()),
      own_spawner_(opts.spawner ? nullptr : std::make_unique<SystemSpawner>()),
      spawner_(opts.spawner ? *opts.spawner : *own_spawner_),
      subreaper_(opts.subreaper),
      settings_(opts.settings),
      in_(io, opts.in_fd),
      pump_(io, opts.out_fd, {[this] { output_idle(); }, [this] { front_lost(); }}),
      channel_(io, pump_, pump_.can_splice() && !opts.settings.output_copy),
      signals_(io),
      beat_timer_(io),
      exit_timer_(io),
      stdin_(io, [this](size_t n) { queue(wire::encode(wire::StdinAck{uint32_t(n)})); }),
      launcher_(spawner_, host_, [this](const std::string& line) { log(line); }),
      ranks_(io, spawner_, channel_,
             [this](const Rank& r, const wire::Exited& e) { rank_reported(r, e); }),
      kv_(
          io, [this](const wire::KvRequest& r) { queue(wire::encode(r)); },
          [this](const std::string& line) {
            if (spec_.verbose) log(host_ + ": " + line);
          }),
      pmix_(
          io, guard_, [this](const std::string& frame) { queue(frame); },
          [this](const std::string& line) { log(line); },
          [this]() -> void* { return launcher_.topology(); }) {}

void Daemon::Impl::start() {
  guard_.start();
  // Orphans below ferryd come to it instead of init: the sweep finds them all (but the guard).
  if (subreaper_ && ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0) sweep_.descendants = true;
  sweep_.spared = {guard_.pid()};
  launcher_.load_devices(settings_.device_root);
  spawner_.watch(io_, [this] { ranks_.reap(); });
  for (int signo : {SIGTERM, SIGINT, SIGHUP}) signals_.add(signo);
  wait_signal();
  send_hello();
  read_input();
}

void Daemon::Impl::queue(const std::string& frame) {
  if (front_gone_) return;
  out().send(frame);
}

// Everything queued was written. Parked rank pipes are read again, and what they hold may
// end the job there and then: its exit reports and Done are queued, and may find the stream
// full. ferryd exits only once those too were written (here, or at the next idle).
void Daemon::Impl::output_idle() {
  if (!output_idle_now()) return;
  channel_.pump_idle();
  if (finished_ && !spec_.keep_serving && output_idle_now()) stop();
}

void Daemon::Impl::send_hello() {
  wire::Hello h;
  h.hostname = host_;
  h.pid = ::getpid();
  h.free_port = find_free_port();
  // The KV proxy listens from the start, so its port can go into the ranks' environment.
  if (auto port = kv_.listen())
    h.kv_port = *port;
  else
    ::fprintf(stderr, "ferryd: %s\n", port.error().message.c_str());
  SystemInterfaceReader ifs(settings_.sysfs_net);
  if (auto list = ifs.read()) h.interfaces = interfaces_to_lines(*list);
  for (int n : launcher_.socket_cores()) h.socket_cores.push_back(static_cast<uint32_t>(n));
  queue(wire::encode(h));
}

void Daemon::Impl::stop() {
  if (stopped_) return;
  stopped_ = true;
  io_.stop();
}

Daemon::Daemon(asio::io_context& io, const DaemonOptions& opts)
    : impl_(std::make_unique<Impl>(io, opts)) {}
Daemon::~Daemon() = default;
void Daemon::start() { impl_->start(); }
int Daemon::exit_code() const { return impl_->exit_code(); }

}  // namespace ferry
