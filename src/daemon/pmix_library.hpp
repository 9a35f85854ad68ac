#pragma once
// Private to src/daemon/: the PMIx server library (libpmix.so.2, Open MPI's runtime
// interface), loaded with dlopen when a job first needs it. ferryd links no libpmix: a host
// without it still runs every other job, and a job that never starts a PMIx server pays
// nothing for it. The declarations come from libpmix-dev's headers, so a signature that
// changes there fails to compile here.

#include <hwloc.h>
#include <pmix.h>
#include <pmix_server.h>

#include <chrono>
#include <string>

namespace ferry::libpmix {

struct Functions {
  decltype(&PMIx_server_init) server_init = nullptr;
  decltype(&PMIx_server_finalize) server_finalize = nullptr;
  decltype(&PMIx_server_register_nspace) register_nspace = nullptr;
  decltype(&PMIx_server_deregister_nspace) deregister_nspace = nullptr;
  decltype(&PMIx_server_register_client) register_client = nullptr;
  decltype(&PMIx_server_setup_fork) setup_fork = nullptr;
  decltype(&PMIx_server_dmodex_request) dmodex_request = nullptr;
  decltype(&PMIx_Error_string) error_string = nullptr;
  decltype(&PMIx_Get_version) get_version = nullptr;
  // The hwloc libpmix links (not necessarily ferryd's own: the shipped ferryd carries hwloc
  // inside). Optional: null where libpmix was built without hwloc.
  decltype(&hwloc_topology_abi_check) hwloc_abi_check = nullptr;

  bool complete() const {
    return server_init && server_finalize && register_nspace && deregister_nspace &&
           register_client && setup_fork && dmodex_request && error_string && get_version;
  }
};

/// The functions, loaded once; null when the host has no usable libpmix (`why` says why).
const Functions* get(std::string& why);

/// Whether libpmix's hwloc can take a topology that ferryd's hwloc built: another copy of
/// the library reads the structure only if its layout (hwloc's topology ABI) is the same.
bool shares_topology(const Functions& f, hwloc_topology_t topology);

/// PMIx_server_finalize, waited for at most `limit`, on a thread of its own. libpmix 4.2's
/// was seen to wait forever: its progress thread blocked on a lock of an object already
/// freed, where the ranks' connections closed just before (ferryrun killed while a state
/// report read the ranks' stacks). ferryd ends right after its server, so it leaves such a
/// finalize to the process's end. False when it did not return.
bool finalize_server(const Functions& f, std::chrono::milliseconds limit = std::chrono::seconds(3));
/// Whether a finalize_server did not return: libpmix's threads still run, and the process
/// must end with _exit.
bool finalize_left_running();

}  // namespace ferry::libpmix
