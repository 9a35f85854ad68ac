// libpmix's upcalls: what ferryd's PMIx server does when a rank connects, finalizes, aborts,
// enters a fence, wants a peer's data or asks for job control. libpmix calls them on its own
// thread; each does its work on the server's loop (pmix_detail::on_loop).

#include <array>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "pmix_state.hpp"

namespace ferry::pmix_detail {
namespace {

std::string bytes(const char* data, size_t n) { return data && n ? std::string(data, n) : ""; }

void release_malloced(void* p) { std::free(p); }

}  // namespace

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

namespace {

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
// this host's data goes to the front end, which answers once every host's came. A fence over
// listed processes (MPI_Comm_disconnect's) is a collective of their hosts only.
pmix_status_t fence(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t[], size_t,
                    char* data, size_t ndata, pmix_modex_cbfunc_t cbfunc, void* cbdata) {
  std::string mine = bytes(data, ndata);
  auto listed = proc_names(procs, nprocs);
  return on_loop([=, mine = std::move(mine), listed = std::move(listed)](PmixServer::State& s) {
    if (listed.size() != 1 || listed[0].rank != PMIX_RANK_WILDCARD || listed[0].nspace != s.nspace)
      return start_group(s, 0, listed, mine, {nullptr, cbfunc, cbdata});
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
    const bool spawned = s.spawned.contains(ns);
    if (ns != s.nspace && !spawned)
      return cbfunc(PMIX_ERR_NOT_FOUND, nullptr, 0, cbdata, nullptr, nullptr);
    const uint32_t id = s.next_modex++;
    s.modex[id] = {cbfunc, cbdata};
    s.events.send(wire::encode(wire::PmixModexRequest{id, rank, spawned ? ns : std::string()}));
  })
             ? PMIX_SUCCESS
             : PMIX_ERROR;
}

// Open MPI names the files it leaves in shared memory (its shared-memory transport's
// segment in /dev/shm, 4 MiB a rank) through PMIx_Job_control's cleanup keys: libpmix keeps
// those requests itself and removes the files when the rank's connection ends, however the
// rank died, but only where the host offers job control at all. Without it, every killed
// rank's segment stayed in /dev/shm, that is in the host's memory. What else a rank asks of
// job control (signal, kill, restart other procs) is not offered: libpmix passes only that
// here.
pmix_status_t job_control(const pmix_proc_t*, const pmix_proc_t[], size_t, const pmix_info_t[],
                          size_t, pmix_info_cbfunc_t, void*) {
  return PMIX_ERR_NOT_SUPPORTED;
}

}  // namespace

// On libpmix's thread.
void local_data(pmix_status_t status, char* data, size_t n, void* cbdata) {
  std::unique_ptr<Asked> a(static_cast<Asked*>(cbdata));
  asio::post(a->state->io, [s = a->state, id = a->id, status, d = bytes(data, n)] {
    if (!s->closed) s->events.send(wire::encode(wire::PmixModexReply{id, status, d}));
  });
}

namespace {

// libpmix copies the module with its own sizeof: a newer library (PMIx 5 on Ubuntu 24.04,
// say) has upcalls past the end of the 4.2 struct this ferryd was built with. They read as
// null here, which libpmix takes as "not supported", instead of the bytes after it.
struct PaddedModule {
  pmix_server_module_t m;
  std::array<void*, 64> later;
};

}  // namespace

pmix_server_module_t& server_module() {
  static PaddedModule module = [] {
    PaddedModule p{};
    p.m.client_connected = client_connected;
    p.m.client_finalized = client_finalized;
    p.m.abort = abort_job;
    p.m.fence_nb = fence;
    p.m.direct_modex = direct_modex;
    p.m.job_control = job_control;
    add_dynamic_upcalls(p.m);
    return p;
  }();
  return module.m;
}

}  // namespace ferry::pmix_detail
