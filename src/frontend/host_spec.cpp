#include "ferry/frontend/host_spec.hpp"

namespace ferry {

const std::vector<int>& devices_for_host(const JobOptions& opts, const HostEntry& host) {
  for (const auto& hd : opts.host_devices)
    if (hd.name == host.name && hd.user == host.user && hd.port == host.port) return hd.devices;
  return opts.binding.devices;
}

}  // namespace ferry
