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
