#pragma once
/// \file
/// One host's part of the job (wire::HostSpec).

#include <vector>

#include "ferry/frontend/job_options.hpp"

namespace ferry {

/// The devices `host`'s ranks may use: its own `host_devices` entry (same name, user and
/// port; two containers behind one address are two hosts), else the job's binding.devices.
const std::vector<int>& devices_for_host(const JobOptions& opts, const HostEntry& host);

}  // namespace ferry
