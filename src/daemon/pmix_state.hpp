#pragma once
// Private to src/daemon/: what PmixServer (pmix_server.cpp) shares with libpmix's upcalls
// (pmix_upcalls.cpp), which libpmix calls on its own progress thread and which find the
// process's one server here.

#include <asio.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ferry/daemon/pmix_server.hpp"
#include "pmix_library.hpp"
#include "pmix_relay.hpp"

namespace ferry {

struct PmixServer::State {
  State(asio::io_context& io_, Events events_) : io(io_), events(std::move(events_)) {}
  struct Waiting {
    pmix_modex_cbfunc_t cbfunc = nullptr;
    void* cbdata = nullptr;
  };
  asio::io_context& io;
  Events events;
  const libpmix::Functions* fns = nullptr;  // set when libpmix started
  std::string dir;
  std::string node;
  void* topology = nullptr;
  // Where the ranks connect (pmix_relay.hpp): libpmix, started when the first rank connects,
  // listens on a port of its own, and each connection is relayed there.
  std::unique_ptr<PmixRelays> relays;
  std::weak_ptr<State> self;
  uint16_t library_port = 0;        // libpmix's listener, once known
  bool started = false;             // libpmix's server runs
  std::string failed;               // why it could not start ("" if it did not fail)
  std::optional<PmixNamespace> ns;  // the current attempt's facts
  std::vector<int> clients;         // its local ranks given an environment
  std::string nspace;               // the current attempt's
  bool closed = false;              // the server is finalized: no callback of libpmix may be called
  uint32_t fence_seq = 0;           // fences reported to the front end
  std::map<uint32_t, Waiting> fences;  // by seq
  std::map<uint32_t, Waiting> modex;   // by this server's request id
  uint32_t next_modex = 1;
  std::set<int> connected, finalized;  // ranks of the current namespace
  // MPI's dynamic processes (pmix_dynamic.cpp): requests to the front end's name service and
  // collectives over some processes, by this server's number (never reused, so that a late
  // answer of an earlier attempt finds nothing).
  struct NameWait {
    pmix_op_cbfunc_t op = nullptr;          // publish, unpublish
    pmix_lookup_cbfunc_t lookup = nullptr;  // lookup
    void* cbdata = nullptr;
    std::shared_ptr<asio::steady_timer> timer;  // a lookup's PMIX_TIMEOUT
  };
  std::map<uint32_t, NameWait> names;
  struct GroupWait {
    pmix_op_cbfunc_t op = nullptr;        // connect, disconnect
    pmix_modex_cbfunc_t fence = nullptr;  // a fence over listed processes
    void* cbdata = nullptr;
  };
  std::map<uint32_t, GroupWait> groups;
  struct SpawnWait {
    pmix_spawn_cbfunc_t cbfunc = nullptr;
    void* cbdata = nullptr;
  };
  std::map<uint32_t, SpawnWait> spawns;
  uint32_t next_request = 1;
  // Namespaces of processes MPI_Comm_spawn started, registered beside the attempt's (every
  // host registers each, whether or not its processes run here).
  std::map<std::string, PmixNamespace> spawned;
};

namespace pmix_detail {

/// The server of this process, if one runs (libpmix has one server per process).
std::shared_ptr<PmixServer::State> current();

/// Runs `f` on the server's loop thread (libpmix calls from its own progress thread); false
/// where no server runs.
template <class F>
bool on_loop(F f) {
  std::shared_ptr<PmixServer::State> s = current();
  if (!s) return false;
  asio::post(s->io, [s, f = std::move(f)]() mutable {
    if (!s->closed) f(*s);
  });
  return true;
}

/// The callbacks ferryd gives libpmix's server.
pmix_server_module_t& server_module();
/// Adds what MPI's dynamic processes need to `m` (pmix_dynamic.cpp): publish, lookup,
/// unpublish, connect, disconnect.
void add_dynamic_upcalls(pmix_server_module_t& m);
/// libpmix's process list as the wire carries it.
std::vector<wire::PmixProcName> proc_names(const pmix_proc_t procs[], size_t nprocs);
/// On the loop: the local processes among `procs` entered a collective of `kind`
/// (wire::PmixGroupOp's): it goes to the front end, and `w` is answered when it comes back.
void start_group(PmixServer::State& s, uint8_t kind, const std::vector<wire::PmixProcName>& procs,
                 const std::string& data, PmixServer::State::GroupWait w);
/// Answers a collective's or a name request's waiting rank (pmix_dynamic.cpp).
void answer_group(const PmixServer::State::GroupWait& w, pmix_status_t status,
                  const std::string& data);
void answer_names(const PmixServer::State::NameWait& w, pmix_status_t status,
                  const std::vector<wire::PmixName>& names);
void answer_spawn(const PmixServer::State::SpawnWait& w, pmix_status_t status,
                  const std::string& nspace);
/// Answers everything `s` still waits for from the front end with `status` (a new attempt).
void fail_dynamic(PmixServer::State& s, pmix_status_t status);

/// Hands `data` to a libpmix modex callback in memory libpmix frees.
void answer(const PmixServer::State::Waiting& w, pmix_status_t status, const std::string& data);
/// `nspace`'s `rank` as libpmix names a process.
void fill_proc(pmix_proc_t& p, const std::string& nspace, int rank);

/// libpmix's answer to a modex request of the front end's, for request `id`.
struct Asked {
  std::shared_ptr<PmixServer::State> state;
  uint32_t id = 0;
};
/// The callback for libpmix's dmodex_request: `cbdata` is a new Asked, deleted here.
void local_data(pmix_status_t status, char* data, size_t n, void* cbdata);

}  // namespace pmix_detail
}  // namespace ferry
