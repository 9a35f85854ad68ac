// What ferryd would decide on this host: topology summary, accelerators, and the
// --report-bindings lines for M local ranks, using the binding library exactly as the daemon
// does (load_system, discover_accelerators, plan_bindings, probe_memory_binding).
//
//   g++ -std=c++20 -I include bench/binding/show_host.cpp build/libferry_binding.a \
//       build/libferry_common.a \
//       $(pkg-config --cflags --libs hwloc) -pthread -o show_host
//   ./show_host 8 [--bind-to core|none|hwthread|numa|socket] [--map-by slot|numa|socket]
//                 [--cpus-per-rank N] [--bind-mem] [--isolate-devices] [--root DIR]

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ferry/binding/apply.hpp"
#include "ferry/binding/id_list.hpp"
#include "ferry/binding/report.hpp"
#include "ferry/binding/summary.hpp"

extern char** environ;

int main(int argc, char** argv) {
  using namespace ferry;
  int ranks = argc > 1 ? std::atoi(argv[1]) : 2;
  BindingOptions opt;
  std::string root = "/";
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    std::string v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--bind-to") {
      opt.bind_to = v == "none"       ? BindTo::kNone
                    : v == "hwthread" ? BindTo::kHwthread
                    : v == "numa"     ? BindTo::kNuma
                    : v == "socket"   ? BindTo::kSocket
                                      : BindTo::kCore;
      ++i;
    } else if (a == "--map-by") {
      opt.map_by = v == "slot"     ? MapBy::kSlot
                   : v == "numa"   ? MapBy::kNuma
                   : v == "socket" ? MapBy::kSocket
                                   : MapBy::kNode;
      ++i;
    } else if (a == "--cpus-per-rank") {
      opt.cpus_per_rank = std::atoi(v.c_str());
      ++i;
    } else if (a == "--root") {
      root = v;
      ++i;
    } else if (a == "--bind-mem") {
      opt.bind_mem = true;
    } else if (a == "--isolate-devices") {
      opt.isolate_devices = true;
    }
  }
  auto topo = Topology::load_system();
  if (!topo) return std::fprintf(stderr, "%s\n", topo.error().message.c_str()), 1;
  auto devs = discover_accelerators(root);
  if (!devs) return std::fprintf(stderr, "%s\n", devs.error().message.c_str()), 1;
  std::printf("host: %s\n", summarize(*topo, *devs).to_string().c_str());
  for (const auto& d : *devs)
    std::printf("device: %s %d %s numa=%d local_cpus=%s %s %s\n", accelerator_kind_name(d.kind),
                d.index, d.pci_address.c_str(), d.numa_node, format_id_list(d.local_cpus).c_str(),
                d.model.c_str(), d.uuid.c_str());
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  auto plan = plan_bindings(*topo, *devs, opt, ranks, env_lookup_from(env));
  if (!plan) return std::fprintf(stderr, "error: %s\n", plan.error().message.c_str()), 1;
  if (opt.bind_mem && !plan->ranks.empty())
    if (auto probe = probe_memory_binding(plan->ranks.front()); !probe)
      disable_memory_binding(*plan, probe.error().message);
  std::printf("policy: %s\n", plan->policy.c_str());
  for (const auto& w : plan->warnings) std::printf("warning: %s\n", w.c_str());
  for (const auto& n : plan->notes) std::printf("note: %s\n", n.c_str());
  char host[256] = "?";
  ::gethostname(host, sizeof host);
  for (const auto& r : plan->ranks) {
    std::printf("%s\n", format_binding_report(host, r.local_rank, r, *plan).c_str());
    std::string kv;
    for (const auto& e : r.env) kv += " " + e;
    std::printf("    env:%s\n", kv.c_str());
  }
  return 0;
}
