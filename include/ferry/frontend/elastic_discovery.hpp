#pragma once
/// \file
/// horovodrun's elastic mode with a discovery script: what a listing of the script means, and
/// where the job starts. The elastic driver (job_elastic*.cpp) runs the script every second
/// while the job runs; its first listing, before any host is reached, gives the job its hosts.

#include <functional>
#include <string>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/frontend/job_options.hpp"
#include "ferry/rendezvous/elastic_rounds.hpp"

namespace ferry {

/// One listing of the discovery script (`host` or `host:slots` a line; --slots-per-host for a
/// line without slots), each name checked as a job file's host is: a name that cannot be a host
/// (`-oProxyCommand=x`) is an Error naming it, never a host to reach.
Result<std::vector<DiscoveredHost>> read_discovery_listing(const std::string& output,
                                                           const ElasticOptions& elastic);

/// The job's first hosts: runs the script every second until its hosts have the slots the job
/// waits for (-np, else --min-np), for at most --elastic-timeout. A script that fails the first
/// time is an error at once (horovod: a misconfiguration). Then `job.hosts` are those hosts and
/// `job.np` is a worker on every slot, up to --max-np (horovodrun's rule: -np is the floor).
/// Returns the line --verbose shows; an Error is one line, for the user. While the listing has
/// too few slots, `waiting` gets a line for the user the first time and whenever the count
/// changes ("the discovery script lists 1 of the 4 slots the job needs; waiting up to 600 s
/// (--elastic-timeout)"): the wait is silent otherwise, and may last minutes.
Result<std::string> discover_first_hosts(
    JobOptions& job, const std::function<void(const std::string&)>& waiting = {});

}  // namespace ferry
