#include "ferry/daemon/pmix_server.hpp"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "pmix_info.hpp"
#include "pmix_library.hpp"

namespace ferry {

struct PmixServer::State {
  State(asio::io_context& io_, Events events_, const libpmix::Functions& fns_)
      : io(io_), events(std::move(events_)), fns(fns_) {}
  struct Waiting {
    pmix_modex_cbfunc_t cbfunc = nullptr;
    void* cbdata = nullptr;
  };
  asio::io_context& io;
  Events events;
  const libpmix::Functions& fns;
  std::string dir;
  std::string nspace;      // the current attempt's
  bool closed = false;     // the server is finalized: no callback of libpmix may be called
  uint32_t fence_seq = 0;  // fences reported to the front end
  std::map<uint32_t, Waiting> fences;  // by seq
  std::map<uint32_t, Waiting> modex;   // by this server's request id
  uint32_t next_modex = 1;
  std::set<int> connected, finalized;  // ranks of the current namespace
};

namespace {

// libpmix has one server per process; its upcalls find it here.
std::mutex g_mutex;
std::shared_ptr<PmixServer::State> g_state;
bool g_finalized = false;  // libpmix's server ran here and was finalized: it cannot restart

// Runs `f` on the io_context's thread (libpmix calls from its own progress thread).
template <class F>
bool on_loop(F f) {
  std::shared_ptr<PmixServer::State> s;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    s = g_state;
  }
  if (!s) return false;
  asio::post(s->io, [s, f = std::move(f)]() mutable {
    if (!s->closed) f(*s);
  });
  return true;
}

std::string bytes(const char* data, size_t n) { return data && n ? std::string(data, n) : ""; }

void release_malloced(void* p) { std::free(p); }

// Hands `data` to a libpmix modex callback in memory it frees through release_malloced.
void answer(const PmixServer::State::Waiting& w, pmix_status_t status, const std::string& data) {
  char* copy = nullptr;
  if (!data.empty()) {
    copy = static_cast<char*>(std::malloc(data.size()));
    if (!copy) status = PMIX_ERR_NOMEM;
    if (copy) std::memcpy(copy, data.data(), data.size());
  }
  w.cbfunc(status, copy, copy ? data.size() : 0, w.cbdata, copy ? release_malloced : nullptr, copy);
}

void fill_proc(pmix_proc_t& p, const std::string& nspace, int rank) {
  std::memset(&p, 0, sizeof p);
  std::strncpy(p.nspace, nspace.c_str(), PMIX_MAX_NSLEN);
  p.rank = static_cast<pmix_rank_t>(rank);
}

// ---- libpmix's upcalls ------------------------------------------------------------------

pmix_status_t client_connected(const pmix_proc_t* proc, void*, pmix_op_cbfunc_t cbfunc,
                               void* cbdata) {
  std::string ns = proc->nspace;
  const int rank = static_cast<int>(proc->rank);
  return on_loop([=](PmixServer::State& s) {
    if (ns == s.nspace) s.connected.insert(rank);
    if (cbfunc) cbfunc(PMIX_SUCCESS, cbdata);
  })
             ? PMIX_SUCCESS
             : PMIX_ERROR;
}

pmix_status_t client_finalized(const pmix_proc_t* proc, void*, pmix_op_cbfunc_t cbfunc,
                               void* cbdata) {
  std::string ns = proc->nspace;
  const int rank = static_cast<int>(proc->rank);
  return on_loop([=](PmixServer::State& s) {
    if (ns == s.nspace) s.finalized.insert(rank);
    if (cbfunc) cbfunc(PMIX_SUCCESS, cbdata);
  })
             ? PMIX_SUCCESS
             : PMIX_ERROR;
}

// MPI_Abort: the whole job ends with the rank's status (ferry aborts every rank, whichever
// procs the call named).
pmix_status_t abort_job(const pmix_proc_t* proc, void*, int status, const char msg[], pmix_proc_t[],
                        size_t, pmix_op_cbfunc_t cbfunc, void* cbdata) {
  const int rank = static_cast<int>(proc->rank);
  std::string text = msg ? msg : "";
  return on_loop([=](PmixServer::State& s) {
    s.events.send(wire::encode(wire::PmiAbort{rank, status, text}));
    if (cbfunc) cbfunc(PMIX_SUCCESS, cbdata);
  })
             ? PMIX_SUCCESS
             : PMIX_ERROR;
}

// Every local rank entered a fence over the whole namespace (MPI_Init's modex, a barrier):
// this host's data goes to the front end. Fences over some ranks only are not offered.
pmix_status_t fence(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t[], size_t,
                    char* data, size_t ndata, pmix_modex_cbfunc_t cbfunc, void* cbdata) {
  if (nprocs != 1 || procs[0].rank != PMIX_RANK_WILDCARD) return PMIX_ERR_NOT_SUPPORTED;
  std::string ns = procs[0].nspace;
  std::string mine = bytes(data, ndata);
  return on_loop([=, mine = std::move(mine)](PmixServer::State& s) {
    if (ns != s.nspace) return cbfunc(PMIX_ERR_NOT_FOUND, nullptr, 0, cbdata, nullptr, nullptr);
    const uint32_t seq = ++s.fence_seq;
    s.fences[seq] = {cbfunc, cbdata};
    s.events.send(wire::encode(wire::PmixFence{seq, mine}));
  })
             ? PMIX_SUCCESS
             : PMIX_ERROR;
}

// A local rank wants a rank's data that this server does not hold (direct modex).
pmix_status_t direct_modex(const pmix_proc_t* proc, const pmix_info_t[], size_t,
                           pmix_modex_cbfunc_t cbfunc, void* cbdata) {
  std::string ns = proc->nspace;
  const int rank = static_cast<int>(proc->rank);
  return on_loop([=](PmixServer::State& s) {
    if (ns != s.nspace) return cbfunc(PMIX_ERR_NOT_FOUND, nullptr, 0, cbdata, nullptr, nullptr);
    const uint32_t id = s.next_modex++;
    s.modex[id] = {cbfunc, cbdata};
    s.events.send(wire::encode(wire::PmixModexRequest{id, rank}));
  })
             ? PMIX_SUCCESS
             : PMIX_ERROR;
}

// libpmix's answer to a modex request of the front end's, on libpmix's thread.
struct Asked {
  std::shared_ptr<PmixServer::State> state;
  uint32_t id = 0;
};

void local_data(pmix_status_t status, char* data, size_t n, void* cbdata) {
  std::unique_ptr<Asked> a(static_cast<Asked*>(cbdata));
  asio::post(a->state->io, [s = a->state, id = a->id, status, d = bytes(data, n)] {
    if (!s->closed) s->events.send(wire::encode(wire::PmixModexReply{id, status, d}));
  });
}

// libpmix copies the module with its own sizeof: a newer library (PMIx 5 on Ubuntu 24.04,
// say) has upcalls past the end of the 4.2 struct this ferryd was built with. They read as
// null here, which libpmix takes as "not supported", instead of the bytes after it.
struct PaddedModule {
  pmix_server_module_t m;
  std::array<void*, 64> later;
};

PaddedModule& server_module() {
  static PaddedModule module = [] {
    PaddedModule p{};
    p.m.client_connected = client_connected;
    p.m.client_finalized = client_finalized;
    p.m.abort = abort_job;
    p.m.fence_nb = fence;
    p.m.direct_modex = direct_modex;
    return p;
  }();
  return module;
}

// Removes PMIX_* variables: ferryd is no PMIx client (under srun it may have been given a
// client's variables), and libpmix's server must not take them for its own.
void drop_pmix_environment() {
  std::vector<std::string> names;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "PMIX_", 5) == 0) names.emplace_back(*e, std::strcspn(*e, "="));
  for (const auto& n : names) ::unsetenv(n.c_str());
}

}  // namespace

PmixServer::PmixServer(std::shared_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<PmixServer>> PmixServer::start(asio::io_context& io,
                                                      const std::string& node_name,
                                                      const std::string& tmp_root,
                                                      void* hwloc_topology, Events events) {
  std::string why;
  const libpmix::Functions* fns = libpmix::get(why);
  if (!fns) return make_error(why);
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
  auto state = std::make_shared<State>(io, std::move(events), *fns);
  state->dir = templ;
  drop_pmix_environment();

  pmix_info_t info[4];
  std::memset(info, 0, sizeof info);
  auto set = [](pmix_info_t& i, const char* key, const std::string& v) {
    std::strncpy(i.key, key, PMIX_MAX_KEYLEN);
    i.value.type = PMIX_STRING;
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-union-access): libpmix's C union
    i.value.data.string = const_cast<char*>(v.c_str());
  };
  set(info[0], PMIX_SERVER_TMPDIR, state->dir);
  set(info[1], PMIX_SYSTEM_TMPDIR, state->dir);
  set(info[2], PMIX_HOSTNAME, node_name);
  // libpmix keeps a copy of the topology, made by its own hwloc: the shipped ferryd carries
  // another copy of hwloc inside, maybe of another version, whose topology that one can read
  // only if their layouts agree. Otherwise libpmix finds the topology itself.
  static char hwloc_source[] = "hwloc";
  pmix_topology_t topology{hwloc_source, hwloc_topology};
  size_t ninfo = 3;
  if (shares_topology(hwloc_topology)) {
    std::strncpy(info[3].key, PMIX_TOPOLOGY2, PMIX_MAX_KEYLEN);
    info[3].value.type = PMIX_TOPO;
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-union-access)
    info[3].value.data.topo = &topology;
    ninfo = 4;
  }
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_state = state;
  }
  // libpmix's hwloc, used here for the first time, would load its plugins (PCI, OpenCL,
  // OpenGL, libxml2, and their libraries: two thirds of ferryd's CPU at a short job's start)
  // for a topology that has no I/O objects. Pointed at the server's new, empty directory, it
  // finds none.
  const bool plugins_path_set = std::getenv("HWLOC_PLUGINS_PATH") != nullptr;
  if (!plugins_path_set) ::setenv("HWLOC_PLUGINS_PATH", state->dir.c_str(), 1);
  const pmix_status_t rc = fns->server_init(&server_module().m, info, ninfo);
  if (!plugins_path_set) ::unsetenv("HWLOC_PLUGINS_PATH");
  if (rc != PMIX_SUCCESS) {
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      g_state.reset();
    }
    std::error_code ignored;
    std::filesystem::remove_all(state->dir, ignored);
    return make_error(std::string("the PMIx server did not start: ") + fns->error_string(rc));
  }
  return std::unique_ptr<PmixServer>(new PmixServer(std::move(state)));
}

PmixServer::~PmixServer() {
  State& s = *state_;
  // What still waits is dropped with the server: nobody is left to answer it.
  s.closed = true;
  s.fns.server_finalize();
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_state.reset();
    g_finalized = true;
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

std::string PmixServer::version() const {
  const char* v = state_->fns.get_version();
  return v ? v : "";
}

bool PmixServer::unfinalized(int rank) const {
  return state_->connected.contains(rank) && !state_->finalized.contains(rank);
}

Status PmixServer::begin(const PmixNamespace& ns) {
  State& s = *state_;
  if (!s.nspace.empty()) {
    // The previous attempt's ranks are gone: what they waited for fails, then their namespace.
    for (auto& [seq, w] : s.fences) answer(w, PMIX_ERR_TIMEOUT, {});
    for (auto& [id, w] : s.modex) answer(w, PMIX_ERR_TIMEOUT, {});
    s.fences.clear();
    s.modex.clear();
    pmix_nspace_t old;
    std::memset(old, 0, sizeof old);
    std::strncpy(old, s.nspace.c_str(), PMIX_MAX_NSLEN);
    s.fns.deregister_nspace(old, nullptr, nullptr);
  }
  s.nspace = ns.nspace;
  s.fence_seq = 0;
  s.connected.clear();
  s.finalized.clear();
  PmixInfoList info(ns, s.dir);
  pmix_nspace_t name;
  std::memset(name, 0, sizeof name);
  std::strncpy(name, ns.nspace.c_str(), PMIX_MAX_NSLEN);
  const pmix_status_t rc = s.fns.register_nspace(name, static_cast<int>(ns.local_ranks.size()),
                                                 info.data(), info.size(), nullptr, nullptr);
  if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED)
    return make_error("PMIx: cannot register the job's namespace: " +
                      std::string(s.fns.error_string(rc)));
  return {};
}

Result<std::vector<std::string>> PmixServer::rank_environment(int rank) {
  State& s = *state_;
  pmix_proc_t proc;
  fill_proc(proc, s.nspace, rank);
  pmix_status_t rc =
      s.fns.register_client(&proc, ::getuid(), ::getgid(), nullptr, nullptr, nullptr);
  if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED)
    return make_error(std::string("PMIx: cannot register rank ") + std::to_string(rank) + ": " +
                      s.fns.error_string(rc));
  char** env = nullptr;
  rc = s.fns.setup_fork(&proc, &env);
  std::vector<std::string> out;
  for (char** e = env; e && *e; ++e) {
    out.emplace_back(*e);
    std::free(*e);
  }
  std::free(env);
  if (rc != PMIX_SUCCESS)
    return make_error(std::string("PMIx: no environment for rank ") + std::to_string(rank) + ": " +
                      s.fns.error_string(rc));
  return out;
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
  pmix_proc_t proc;
  fill_proc(proc, s.nspace, m.rank);
  auto* asked = new Asked{state_, m.id};
  const pmix_status_t rc = s.fns.dmodex_request(&proc, local_data, asked);
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
