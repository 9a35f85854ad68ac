// The elastic driver's first discovery: the hosts the job starts on (see elastic_discovery.hpp).
// The later ones run on the driver's thread (job_elastic_hosts.cpp) and read their listings
// with the same read_discovery_listing.
#include <algorithm>
#include <chrono>
#include <thread>

#include "ferry/frontend/elastic_discovery.hpp"
#include "ferry/hosts/host_fields.hpp"
#include "ferry/process/run_capture.hpp"

namespace ferry {
namespace {

// The listed hosts as the job's hosts, each checked as a job file's host is.
Result<HostList> host_entries(const std::vector<DiscoveredHost>& hosts) {
  HostList entries;
  for (const auto& h : hosts) {
    auto entry =
        host_from_fields({h.name, "", 0, h.slots, std::nullopt, ""}, 1, "--host-discovery-script");
    if (!entry) return entry.error();
    entries.push_back(std::move(*entry));
  }
  return entries;
}

}  // namespace

Result<std::vector<DiscoveredHost>> read_discovery_listing(const std::string& output,
                                                           const ElasticOptions& elastic) {
  auto hosts = parse_discovered_hosts(output, elastic.slots_per_host);
  if (!hosts) return hosts.error();
  if (auto entries = host_entries(*hosts); !entries) return entries.error();
  return hosts;
}

Result<std::string> discover_first_hosts(JobOptions& job,
                                         const std::function<void(const std::string&)>& waiting) {
  const ElasticOptions& e = job.elastic;
  const std::string script = "--host-discovery-script " + e.discovery_script + ": ";
  const int need = job.np > 0 ? job.np : e.min_np;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(e.timeout_s);
  int have = 0;
  int told = -1;  // the count the last waiting line gave
  for (bool first = true;; first = false) {
    auto out = run_shell_capture(e.discovery_script);
    if (!out && first) return make_error("--host-discovery-script: " + out.error().message);
    if (out) {
      auto hosts = read_discovery_listing(*out, e);
      if (!hosts) return make_error(script + hosts.error().message);
      have = 0;
      for (const auto& h : *hosts) have += h.slots;
      if (have >= need) {
        std::string list;
        for (const auto& h : *hosts)
          list += (list.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
        auto entries = host_entries(*hosts);
        if (!entries) return make_error(script + entries.error().message);
        job.hosts = std::move(*entries);
        job.host_devices.clear();
        job.np = e.max_np > 0 ? std::min(have, e.max_np) : have;
        return "elastic: the discovery script lists " + list;
      }
      if (waiting && have != told) {
        const auto left =
            std::chrono::ceil<std::chrono::seconds>(until - std::chrono::steady_clock::now());
        waiting("the discovery script lists " + std::to_string(have) + " of the " +
                std::to_string(need) + " slots the job needs; waiting up to " +
                std::to_string(std::max<int64_t>(0, left.count())) + " s (--elastic-timeout)");
        told = have;
      }
    }
    if (std::chrono::steady_clock::now() >= until)
      return make_error("timed out after " + std::to_string(e.timeout_s) +
                        " s waiting for the discovery script to list " + std::to_string(need) +
                        " slots (it lists " + std::to_string(have) +
                        "; --elastic-timeout, --min-np, -np)");
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

}  // namespace ferry
