#include "pmix_library.hpp"

#include <dlfcn.h>

#include <atomic>

#include "ferry/common/bounded_call.hpp"

namespace ferry::libpmix {
namespace {

template <class Fn>
void load(void* lib, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(lib, name));
}

struct Loaded {
  Functions f;
  std::string why;
};

Loaded load_all() {
  Loaded l;
  // RTLD_GLOBAL: libpmix loads its plugins (pmix_mca_*.so), which look up its symbols.
  void* h = ::dlopen("libpmix.so.2", RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    const char* e = ::dlerror();
    l.why = std::string("no PMIx library on this host (") + (e ? e : "libpmix.so.2") + ")";
    return l;
  }
  Functions& f = l.f;
  load(h, "PMIx_server_init", f.server_init);
  load(h, "PMIx_server_finalize", f.server_finalize);
  load(h, "PMIx_server_register_nspace", f.register_nspace);
  load(h, "PMIx_server_deregister_nspace", f.deregister_nspace);
  load(h, "PMIx_server_register_client", f.register_client);
  load(h, "PMIx_server_setup_fork", f.setup_fork);
  load(h, "PMIx_server_dmodex_request", f.dmodex_request);
  load(h, "PMIx_Error_string", f.error_string);
  load(h, "PMIx_Get_version", f.get_version);
  load(h, "hwloc_topology_abi_check", f.hwloc_abi_check);
  if (!f.complete()) l.why = "the PMIx library on this host lacks the server functions";
  return l;
}

}  // namespace

const Functions* get(std::string& why) {
  static const Loaded loaded = load_all();
  why = loaded.why;
  return loaded.f.complete() ? &loaded.f : nullptr;
}

bool shares_topology(const Functions& f, hwloc_topology_t topology) {
  return topology && f.hwloc_abi_check && f.hwloc_abi_check(topology) == 0;
}

namespace {
std::atomic<bool> g_left_running{false};
}  // namespace

bool finalize_server(const Functions& f, std::chrono::milliseconds limit) {
  const Functions* fns = &f;  // static (get()): it outlives a thread left running
  if (call_within([fns] { fns->server_finalize(); }, limit)) return true;
  g_left_running = true;
  return false;
}

bool finalize_left_running() { return g_left_running; }

}  // namespace ferry::libpmix
