#include "ferry/daemon/pmix_server.hpp"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "pmix_info.hpp"
#include "pmix_state.hpp"

namespace ferry {

namespace {

// libpmix has one server per process; its upcalls find it here.
std::mutex g_mutex;
std::shared_ptr<PmixServer::State> g_state;
bool g_finalized = false;  // libpmix's server ran here and was finalized: it cannot restart

using pmix_detail::answer;
using pmix_detail::fill_proc;
using pmix_detail::server_module;

// Removes PMIX_* variables: ferryd is no PMIx client (under srun it may have been given a
// client's variables), and libpmix's server must not take them for its own.
void drop_pmix_environment() {
  std::vector<std::string> names;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "PMIX_", 5) == 0) names.emplace_back(*e, std::strcspn(*e, "="));
  for (const auto& n : names) ::unsetenv(n.c_str());
}

pmix_status_t register_client(PmixServer::State& s, int rank, const std::string& nspace = {}) {
  pmix_proc_t proc;
  fill_proc(proc, nspace.empty() ? s.nspace : nspace, rank);
  return s.fns->register_client(&proc, ::getuid(), ::getgid(), nullptr, nullptr, nullptr);
}

Status register_one(PmixServer::State& s, const PmixNamespace& ns) {
  PmixInfoList info(ns, s.dir);
  pmix_nspace_t name;
  std::memset(name, 0, sizeof name);
  std::strncpy(name, ns.nspace.c_str(), PMIX_MAX_NSLEN);
  const pmix_status_t rc = s.fns->register_nspace(name, static_cast<int>(ns.local_ranks.size()),
                                                  info.data(), info.size(), nullptr, nullptr);
  if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED)
    return make_error("PMIx: cannot register namespace " + ns.nspace + ": " +
                      std::string(s.fns->error_string(rc)));
  return {};
}

void deregister(PmixServer::State& s, const std::string& nspace) {
  pmix_nspace_t old;
  std::memset(old, 0, sizeof old);
  std::strncpy(old, nspace.c_str(), PMIX_MAX_NSLEN);
  s.fns->deregister_nspace(old, nullptr, nullptr);
}

Status register_namespace(PmixServer::State& s) {
  if (!s.ns) return {};
  if (auto st = register_one(s, *s.ns); !st) return st;
  for (int r : s.clients) {
    const pmix_status_t crc = register_client(s, r);
    if (crc != PMIX_SUCCESS && crc != PMIX_OPERATION_SUCCEEDED)
      return make_error("PMIx: cannot register rank " + std::to_string(r) + ": " +
                        s.fns->error_string(crc));
  }
  return {};
}

// libpmix's own listener, from the environment it would give a registered rank.
uint16_t library_port(PmixServer::State& s, int rank) {
  pmix_proc_t proc;
  fill_proc(proc, s.nspace, rank);
  char** env = nullptr;
  uint16_t port = 0;
  if (s.fns->setup_fork(&proc, &env) == PMIX_SUCCESS) port = pmix_uri_port(env);
  for (char** e = env; e && *e; ++e) std::free(*e);
  std::free(env);
  return port;
}

// Loads libpmix and starts its server, registering the current namespace and its ranks.
Status start_library(PmixServer::State& s) {
  if (s.started) return {};
  if (!s.failed.empty()) return make_error(s.failed);
  auto fail = [&](std::string why) {
    s.failed = std::move(why);
    if (s.events.failed) s.events.failed(s.failed);
    return make_error(s.failed);
  };
  std::string why;
  const libpmix::Functions* fns = libpmix::get(why);
  if (!fns) return fail(why);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_finalized) return fail("libpmix cannot start a second server in one process");
  }
  drop_pmix_environment();
  pmix_info_t info[6];
  std::memset(info, 0, sizeof info);
  auto set = [](pmix_info_t& i, const char* key, const char* v) {
    std::strncpy(i.key, key, PMIX_MAX_KEYLEN);
    i.value.type = PMIX_STRING;
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-union-access): libpmix's C union
    i.value.data.string = const_cast<char*>(v);
  };
  set(info[0], PMIX_SERVER_TMPDIR, s.dir.c_str());
  set(info[1], PMIX_SYSTEM_TMPDIR, s.dir.c_str());
  set(info[2], PMIX_HOSTNAME, s.node.c_str());
  // The name the ranks were given with the address (see rank_environment).
  set(info[3], PMIX_SERVER_NSPACE, kPmixServerNspace);
  std::strncpy(info[4].key, PMIX_SERVER_RANK, PMIX_MAX_KEYLEN);
  info[4].value.type = PMIX_PROC_RANK;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-union-access)
  info[4].value.data.rank = static_cast<pmix_rank_t>(::getpid());
  // libpmix keeps a copy of the topology, made by its own hwloc: the shipped ferryd carries
  // another copy of hwloc inside, maybe of another version, whose topology that one can read
  // only if their layouts agree. Otherwise libpmix finds the topology itself.
  static char hwloc_source[] = "hwloc";
  pmix_topology_t topology{hwloc_source, s.topology};
  size_t ninfo = 5;
  if (libpmix::shares_topology(*fns, static_cast<hwloc_topology_t>(s.topology))) {
    std::strncpy(info[5].key, PMIX_TOPOLOGY2, PMIX_MAX_KEYLEN);
    info[5].value.type = PMIX_TOPO;
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-union-access)
    info[5].value.data.topo = &topology;
    ninfo = 6;
  }
  // libpmix's hwloc, used here for the first time, would load its plugins (PCI, OpenCL,
  // OpenGL, libxml2, and their libraries: two thirds of ferryd's CPU at a short job's start)
  // for a topology that has no I/O objects. Pointed at the server's new, empty directory, it
  // finds none.
  const bool plugins_path_set = std::getenv("HWLOC_PLUGINS_PATH") != nullptr;
  if (!plugins_path_set) ::setenv("HWLOC_PLUGINS_PATH", s.dir.c_str(), 1);
  const pmix_status_t rc = fns->server_init(&server_module(), info, ninfo);
  if (!plugins_path_set) ::unsetenv("HWLOC_PLUGINS_PATH");
  if (rc != PMIX_SUCCESS)
    return fail(std::string("the PMIx server did not start: ") + fns->error_string(rc));
  s.fns = fns;
  s.started = true;
  const char* v = fns->get_version();
  if (s.events.started) s.events.started(v ? v : "");
  if (auto st = register_namespace(s); !st) return fail(st.error().message);
  return {};
}

// On the loop's thread: a rank connected to ferryd's address. libpmix starts if it has not,
// and the relay thread relays the connection to it.
void connected(PmixServer::State& s, const PmixRelays::Socket& rank) {
  if (!start_library(s)) return s.relays->drop(rank);  // its PMIx_Init fails: ferryd said why
  if (s.library_port == 0 && !s.clients.empty()) s.library_port = library_port(s, s.clients[0]);
  s.relays->forward(rank, s.library_port);
}

}  // namespace

std::shared_ptr<PmixServer::State> pmix_detail::current() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_state;
}

PmixServer::PmixServer(std::shared_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<PmixServer>> PmixServer::start(asio::io_context& io,
                                                      const std::string& node_name,
                                                      const std::string& tmp_root,
                                                      void* hwloc_topology, Events events) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_state) return make_error("a PMIx server runs in this process already");
    if (g_finalized) return make_error("libpmix cannot start a second server in one process");
  }
  const std::string root = tmp_root.empty() ? std::string("/tmp") : tmp_root;
  remove_stale_directories(root);
  std::string templ = root + "/" + directory_prefix() + "XXXXXX";
  if (!::mkdtemp(templ.data()))
    return make_error("cannot create a private directory for PMIx under " +
                      templ.substr(0, templ.rfind('/')) + ": " + std::strerror(errno));
  // Under srun ferryd may have been given a client's PMIx variables: neither its ranks nor
  // libpmix's server may take them for theirs.
  drop_pmix_environment();
  auto state = std::make_shared<State>(io, std::move(events));
  state->dir = templ;
  state->node = node_name;
  state->topology = hwloc_topology;
  state->self = state;
  // The relay thread's events reach the loop only while the server is there.
  auto on_loop_if_open = [weak = std::weak_ptr<State>(state)](auto f) {
    auto st = weak.lock();
    if (st)
      asio::post(st->io, [weak, f = std::move(f)] {
        auto locked = weak.lock();
        if (locked && !locked->closed) f(*locked);
      });
  };
  PmixRelays::Events relay_events;
  relay_events.connected = [on_loop_if_open](const PmixRelays::Socket& rank) {
    on_loop_if_open([rank](State& st) { connected(st, rank); });
  };
  relay_events.failed = [on_loop_if_open](std::string why) {
    on_loop_if_open([why = std::move(why)](State& st) {
      if (st.events.failed) st.events.failed(why);
    });
  };
  auto relays = PmixRelays::listen(std::move(relay_events));
  if (!relays) {
    std::error_code ignored;
    std::filesystem::remove_all(state->dir, ignored);
    return relays.error();
  }
  state->relays = std::move(*relays);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_state = state;
  }
  return std::unique_ptr<PmixServer>(new PmixServer(std::move(state)));
}

PmixServer::~PmixServer() {
  State& s = *state_;
  // What still waits is dropped with the server: nobody is left to answer it.
  s.closed = true;
  s.relays.reset();  // the listener and every relay closed, their thread ended
  if (s.started) libpmix::finalize_server(*s.fns);  // a few seconds at most
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_state.reset();
    if (s.started) g_finalized = true;
  }
  std::error_code ignored;
  std::filesystem::remove_all(s.dir, ignored);
}

bool PmixServer::shares_topology(void* hwloc_topology) {
  std::string why;
  const libpmix::Functions* fns = libpmix::get(why);
  return fns && libpmix::shares_topology(*fns, static_cast<hwloc_topology_t>(hwloc_topology));
}

const std::string& PmixServer::directory() const { return state_->dir; }

bool PmixServer::finalized_before() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_finalized;
}

bool PmixServer::finalize_left_running() { return libpmix::finalize_left_running(); }

bool PmixServer::library_started() const { return state_->started; }

std::string PmixServer::version() const {
  const char* v = state_->started ? state_->fns->get_version() : nullptr;
  return v ? v : "";
}

bool PmixServer::unfinalized(int rank) const {
  return state_->connected.contains(rank) && !state_->finalized.contains(rank);
}

Status PmixServer::begin(const PmixNamespace& ns) {
  State& s = *state_;
  if (s.started && !s.nspace.empty()) {
    // The previous attempt's ranks are gone: what they waited for fails, then their namespace.
    for (auto& [seq, w] : s.fences) answer(w, PMIX_ERR_TIMEOUT, {});
    for (auto& [id, w] : s.modex) answer(w, PMIX_ERR_TIMEOUT, {});
    s.fences.clear();
    s.modex.clear();
    pmix_detail::fail_dynamic(s, PMIX_ERR_TIMEOUT);
    for (const auto& [name, child] : s.spawned) deregister(s, name);
    deregister(s, s.nspace);
  }
  s.spawned.clear();
  s.nspace = ns.nspace;
  s.ns = ns;
  s.clients.clear();
  s.fence_seq = 0;
  s.connected.clear();
  s.finalized.clear();
  if (!s.started) return {};
  return register_namespace(s);
}

// Made here (pmix_client_environment), so that libpmix need not run before a rank asks for it.
Result<std::vector<std::string>> PmixServer::rank_environment(int rank) {
  State& s = *state_;
  if (s.started) {
    const pmix_status_t rc = register_client(s, rank);
    if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED)
      return make_error(std::string("PMIx: cannot register rank ") + std::to_string(rank) + ": " +
                        s.fns->error_string(rc));
  }
  s.clients.push_back(rank);
  return pmix_client_environment({s.nspace, rank,
                                  std::string(kPmixServerNspace) + "." + std::to_string(::getpid()),
                                  s.relays->port(), s.dir, s.node});
}

Status PmixServer::add_namespace(const PmixNamespace& ns) {
  State& s = *state_;
  if (auto st = start_library(s); !st) return st;
  if (s.spawned.contains(ns.nspace)) return make_error("PMIx: namespace " + ns.nspace + " twice");
  if (auto st = register_one(s, ns); !st) return st;
  s.spawned.emplace(ns.nspace, ns);
  return {};
}

Result<std::vector<std::string>> PmixServer::child_environment(const std::string& nspace,
                                                               int rank) {
  State& s = *state_;
  if (!s.started || !s.spawned.contains(nspace))
    return make_error("PMIx: namespace " + nspace + " is not registered here");
  const pmix_status_t rc = register_client(s, rank, nspace);
  if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED)
    return make_error("PMIx: cannot register " + nspace + " rank " + std::to_string(rank) + ": " +
                      s.fns->error_string(rc));
  return pmix_client_environment({nspace, rank,
                                  std::string(kPmixServerNspace) + "." + std::to_string(::getpid()),
                                  s.relays->port(), s.dir, s.node});
}

Status PmixServer::fence_done(const wire::PmixFenceDone& m) {
  State& s = *state_;
  auto it = s.fences.find(m.seq);
  if (it == s.fences.end())
    return make_error("a PMIx fence answer arrived for fence " + std::to_string(m.seq) +
                      ", which no rank here entered");
  const State::Waiting w = it->second;
  s.fences.erase(it);
  answer(w, PMIX_SUCCESS, m.data);
  return {};
}

void PmixServer::modex_request(const wire::PmixModexRequest& m) {
  State& s = *state_;
  // Another host's rank wants a local rank's data: that rank is an Open MPI one, so libpmix
  // starts now if no local rank has connected yet (its data comes once it commits).
  if (!start_library(s))
    return s.events.send(wire::encode(wire::PmixModexReply{m.id, PMIX_ERR_NOT_FOUND, {}}));
  pmix_proc_t proc;
  fill_proc(proc, m.nspace.empty() ? s.nspace : m.nspace, m.rank);
  auto* asked = new pmix_detail::Asked{state_, m.id};
  const pmix_status_t rc = s.fns->dmodex_request(&proc, pmix_detail::local_data, asked);
  if (rc != PMIX_SUCCESS) {
    delete asked;
    s.events.send(wire::encode(wire::PmixModexReply{m.id, rc, {}}));
  }
}

Status PmixServer::modex_reply(const wire::PmixModexReply& m) {
  State& s = *state_;
  auto it = s.modex.find(m.id);
  if (it == s.modex.end())
    return make_error("a PMIx data answer arrived for request " + std::to_string(m.id) +
                      ", which this host did not send");
  const State::Waiting w = it->second;
  s.modex.erase(it);
  answer(w, m.status, m.data);
  return {};
}

}  // namespace ferry
