#include "ferry/daemon/pmi_proxy.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <deque>

#include "ferry/process/unique_fd.hpp"

namespace ferry {

struct PmiProxy::Socket {
  explicit Socket(asio::io_context& io) : sd(io) {}
  asio::local::stream_protocol::socket sd;
  UniqueFd child_end;  // the rank's end, until it was forked
  std::array<char, 4096> buf{};
  std::deque<std::string> out;
  bool writing = false;
  bool open = false;
};

PmiHostConfig pmi_host_config_of(const wire::HostSpec& spec) {
  PmiHostConfig cfg;
  cfg.kvsname = spec.job_id.empty() ? "ferry" : spec.job_id;
  cfg.world_size = spec.world_size;
  cfg.universe_size = spec.universe_size > 0 ? spec.universe_size : spec.world_size;
  cfg.process_mapping = spec.pmi_process_mapping;
  for (const auto& rl : spec.ranks) {
    cfg.ranks.push_back(rl.rank);
    cfg.appnums.push_back(static_cast<int>(rl.app));
  }
  return cfg;
}

PmiProxy::PmiProxy(asio::io_context& io, PmiHostConfig config, Events events)
    : io_(io), events_(std::move(events)) {
  host_ = std::make_unique<PmiHost>(std::move(config), host_events(""));
}

// The events of the PmiHost serving group `kvsname` ("" the job's ranks).
PmiHostEvents PmiProxy::host_events(const std::string& kvsname) {
  PmiHostEvents ev;
  ev.reply = [this](int rank, std::string bytes) { write(rank, std::move(bytes)); };
  ev.barrier_ready = [this, kvsname](uint32_t epoch, std::vector<PmiKv> puts) {
    wire::PmiBarrier b;
    b.epoch = epoch;
    b.kvsname = kvsname;
    for (auto& kv : puts) {
      b.keys.push_back(std::move(kv.key));
      b.values.push_back(std::move(kv.value));
    }
    events_.send(wire::encode(b));
  };
  ev.spawn = [this](int rank, PmiSpawnRequest request) {
    wire::PmiSpawn m;
    m.rank = rank;
    for (auto& c : request.commands) {
      for (auto& kv : c.info) {
        m.info_apps.push_back(static_cast<uint32_t>(m.apps.size()));
        m.info_keys.push_back(std::move(kv.key));
        m.info_values.push_back(std::move(kv.value));
      }
      wire::PmixSpawnApp a;
      a.cmd = c.execname;
      a.argv.push_back(std::move(c.execname));
      for (auto& arg : c.args) a.argv.push_back(std::move(arg));
      a.maxprocs = static_cast<uint32_t>(c.nprocs);
      m.apps.push_back(std::move(a));
    }
    for (auto& kv : request.preput) {
      m.preput_keys.push_back(std::move(kv.key));
      m.preput_values.push_back(std::move(kv.value));
    }
    events_.send(wire::encode(m));
  };
  ev.abort = [this](int rank, int code, std::string message) {
    events_.send(wire::encode(wire::PmiAbort{rank, code, std::move(message)}));
  };
  ev.failed = [this](int rank, std::string why) {
    events_.send(wire::encode(wire::Failure{rank, std::move(why)}));
    auto it = sockets_.find(rank);
    if (it != sockets_.end()) finish(rank, *it->second);
  };
  return ev;
}

PmiHost* PmiProxy::host_of(int rank) const {
  auto g = group_of_.find(rank);
  if (g == group_of_.end()) return host_.get();
  auto it = groups_.find(g->second);
  return it == groups_.end() ? host_.get() : it->second.host.get();
}

Status PmiProxy::add_group(const wire::PmiSpawnJob& m) {
  if (m.kvsname.empty() || groups_.contains(m.kvsname))
    return make_error("PMI spawned group '" + m.kvsname + "' is already here");
  PmiHostConfig cfg;
  cfg.kvsname = m.kvsname;
  cfg.world_size = m.size;
  cfg.universe_size = m.size;
  cfg.process_mapping = m.process_mapping;
  for (size_t i = 0; i < m.preput_keys.size() && i < m.preput_values.size(); ++i)
    cfg.preput.push_back({m.preput_keys[i], m.preput_values[i]});
  Group g;
  const int here = static_cast<int>(m.ranks.size());
  for (int i = 0; i < here; ++i) {
    const wire::RankLaunch& rl = m.ranks[static_cast<size_t>(i)];
    cfg.ranks.push_back(rl.rank);
    cfg.appnums.push_back(static_cast<int>(rl.app));
    g.members[rl.rank] = Member{rl.pmix_rank, m.size, i, here};
    group_of_[rl.rank] = m.kvsname;
  }
  g.host = std::make_unique<PmiHost>(std::move(cfg), host_events(m.kvsname));
  groups_.emplace(m.kvsname, std::move(g));
  return {};
}

std::optional<PmiProxy::Member> PmiProxy::member(int rank) const {
  auto g = group_of_.find(rank);
  if (g == group_of_.end()) return std::nullopt;
  auto it = groups_.find(g->second);
  if (it == groups_.end()) return std::nullopt;
  auto m = it->second.members.find(rank);
  if (m == it->second.members.end()) return std::nullopt;
  return m->second;
}

void PmiProxy::spawn_done(const wire::PmiSpawnDone& m) {
  host_of(m.rank)->spawn_done(m.rank, m.why);
}

PmiProxy::~PmiProxy() = default;

Result<int> PmiProxy::open_rank(int rank) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return make_error(std::string("PMI socketpair: ") + std::strerror(errno));
  UniqueFd ours(fds[0]);
  auto s = std::make_unique<Socket>(io_);
  s->child_end.reset(fds[1]);
  std::error_code ec;
  s->sd.assign(asio::local::stream_protocol(), ours.get(), ec);
  if (ec) return make_error("PMI socket: " + ec.message());
  ours.release();  // the socket owns it now
  const int child = s->child_end.get();
  sockets_[rank] = std::move(s);
  return child;
}

void PmiProxy::spawned(int rank) {
  auto it = sockets_.find(rank);
  if (it == sockets_.end()) return;
  Socket& s = *it->second;
  s.child_end.reset();  // the rank has its copy
  s.open = true;
  read(rank, s);
}

void PmiProxy::drop(int rank) {
  auto it = sockets_.find(rank);
  if (it == sockets_.end()) return;
  std::error_code ignored;
  it->second->sd.close(ignored);
  sockets_.erase(it);
}

bool PmiProxy::is_open(int rank) const {
  auto it = sockets_.find(rank);
  return it != sockets_.end() && it->second->open;
}

void PmiProxy::close_rank(int rank) {
  auto it = sockets_.find(rank);
  if (it == sockets_.end() || !it->second->open) return;
  host_of(rank)->closed(rank);  // may report the rank failed (and finish the socket)
  finish(rank, *it->second);
}

Status PmiProxy::barrier_done(const wire::PmiBarrier& b) {
  PmiHost* host = host_.get();
  if (!b.kvsname.empty()) {
    auto it = groups_.find(b.kvsname);
    if (it == groups_.end())
      return make_error("a PMI barrier answer for group '" + b.kvsname + "', which is not here");
    host = it->second.host.get();
  }
  std::vector<PmiKv> kvs;
  kvs.reserve(b.keys.size());
  for (std::size_t i = 0; i < b.keys.size(); ++i) kvs.push_back({b.keys[i], b.values[i]});
  return host->barrier_complete(b.epoch, kvs);
}

void PmiProxy::read(int rank, Socket& s) {
  s.sd.async_read_some(asio::buffer(s.buf), [this, rank, &s](std::error_code ec, size_t n) {
    if (ec == asio::error::operation_aborted || !s.open) return;
    if (ec) {
      host_of(rank)->closed(rank);
      finish(rank, s);
      return;
    }
    host_of(rank)->feed(rank, std::string_view(s.buf.data(), n));
    if (s.open) read(rank, s);
  });
}

void PmiProxy::write(int rank, std::string bytes) {
  auto it = sockets_.find(rank);
  if (it == sockets_.end() || !it->second->open) return;
  it->second->out.push_back(std::move(bytes));
  write_next(rank, *it->second);
}

void PmiProxy::write_next(int rank, Socket& s) {
  if (s.writing || s.out.empty() || !s.open) return;
  s.writing = true;
  asio::async_write(s.sd, asio::buffer(s.out.front()),
                    [this, rank, &s](std::error_code ec, size_t) {
                      s.writing = false;
                      if (ec) return;  // the read side notices the close
                      s.out.pop_front();
                      write_next(rank, s);
                    });
}

void PmiProxy::finish(int rank, Socket& s) {
  if (!s.open) return;
  s.open = false;
  s.out.clear();
  std::error_code ignored;
  s.sd.close(ignored);
  if (events_.closed) events_.closed(rank);
}

}  // namespace ferry
