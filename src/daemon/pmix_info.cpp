#include "pmix_info.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace ferry {

namespace {

// The names a PMIx 2 to 5 client reads the server's address from, newest first (PMIx 4.0
// gives no URI41, PMIx 4.1 and later give all five).
constexpr std::array<std::string_view, 5> kUriNames = {"PMIX_SERVER_URI41", "PMIX_SERVER_URI4",
                                                       "PMIX_SERVER_URI3", "PMIX_SERVER_URI2",
                                                       "PMIX_SERVER_URI21"};

}  // namespace

std::vector<std::string> pmix_client_environment(const PmixClient& c) {
  const std::string uri = c.server + ";tcp4://127.0.0.1:" + std::to_string(c.port);
  std::vector<std::string> env = {"PMIX_NAMESPACE=" + c.nspace,
                                  "PMIX_RANK=" + std::to_string(c.rank)};
  for (std::string_view name : kUriNames) env.push_back(std::string(name) + "=" + uri);
  env.insert(env.end(),
             {"PMIX_SECURITY_MODE=native", "PMIX_BFROP_BUFFER_TYPE=PMIX_BFROP_BUFFER_NON_DESC",
              "PMIX_GDS_MODULE=hash", "PMIX_SERVER_TMPDIR=" + c.dir, "PMIX_SYSTEM_TMPDIR=" + c.dir,
              "PMIX_HOSTNAME=" + c.node});
  return env;
}

uint16_t pmix_uri_port(char** env) {
  for (std::string_view name : kUriNames) {
    for (char** e = env; e && *e; ++e) {
      const std::string_view v(*e);
      const size_t colon = v.rfind(':');
      if (v.size() > name.size() && v.starts_with(name) && v[name.size()] == '=' &&
          colon != std::string_view::npos)
        return static_cast<uint16_t>(std::strtoul(*e + colon + 1, nullptr, 10));
    }
  }
  return 0;
}

pmix_info_t& PmixInfoList::added(std::vector<pmix_info_t>& to, const char* key) {
  pmix_info_t& i = to.emplace_back();
  std::memset(&i, 0, sizeof i);
  std::strncpy(i.key, key, PMIX_MAX_KEYLEN);
  return i;
}

void PmixInfoList::add(std::vector<pmix_info_t>& to, const char* key, const std::string& v) {
  pmix_info_t& i = added(to, key);
  i.value.type = PMIX_STRING;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-union-access): pmix_value_t is libpmix's C union
  i.value.data.string = strings_.emplace_back(v).data();
}

void PmixInfoList::add_u32(std::vector<pmix_info_t>& to, const char* key, uint32_t v) {
  pmix_info_t& i = added(to, key);
  i.value.type = PMIX_UINT32;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-union-access): pmix_value_t is libpmix's C union
  i.value.data.uint32 = v;
}

void PmixInfoList::add_u16(std::vector<pmix_info_t>& to, const char* key, uint16_t v) {
  pmix_info_t& i = added(to, key);
  i.value.type = PMIX_UINT16;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-union-access): pmix_value_t is libpmix's C union
  i.value.data.uint16 = v;
}

// `items` as one job-level entry `key` (a proc's or an app's facts), through `a`, which
// like `items` must stay where it is until the registration is done.
void PmixInfoList::add_array(const char* key, std::vector<pmix_info_t>& items,
                             pmix_data_array_t& a) {
  a.type = PMIX_INFO;
  a.size = items.size();
  a.array = items.data();
  pmix_info_t& entry = added(job_, key);
  entry.value.type = PMIX_DATA_ARRAY;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-union-access)
  entry.value.data.darray = &a;
}

// Node ranks equal local ranks: one job per node. Open MPI 4.1 requires the local and node
// ranks, the job size and max procs; it reads the local size and peers to wire up shared
// memory between the ranks of a node.
PmixInfoList::PmixInfoList(const PmixNamespace& ns, const std::string& tmpdir) {
  const auto nodes = static_cast<uint32_t>(ns.nodes.size());
  const auto local = static_cast<uint32_t>(ns.local_ranks.size());
  add(job_, PMIX_JOBID, ns.nspace);
  add_u32(job_, PMIX_JOB_SIZE, ns.job_size);
  add_u32(job_, PMIX_UNIV_SIZE, std::max(ns.universe_size, ns.job_size));
  add_u32(job_, PMIX_MAX_PROCS, ns.job_size);
  add_u32(job_, PMIX_APPNUM, 0);
  add_u32(job_, PMIX_JOB_NUM_APPS,
          ns.app_sizes.empty() ? 1 : static_cast<uint32_t>(ns.app_sizes.size()));
  add_apps(ns);
  add_u32(job_, PMIX_NUM_NODES, nodes);
  add(job_, PMIX_NODE_MAP, ns.node_map);
  add(job_, PMIX_PROC_MAP, ns.proc_map);
  add(job_, PMIX_TMPDIR, tmpdir);
  {
    pmix_info_t& i = added(job_, PMIX_TDIR_RMCLEAN);
    i.value.type = PMIX_BOOL;
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-union-access)
    i.value.data.flag = true;
  }
  // A spawned namespace with no process here has no local facts.
  if (local > 0) {
    add(job_, PMIX_LOCAL_PEERS, ns.local_peers);
    add_u32(job_, PMIX_LOCAL_SIZE, local);
    add_u32(job_, PMIX_NODE_SIZE, local);
  }
  if (!ns.local_cpusets.empty()) add(job_, PMIX_LOCAL_CPUSETS, ns.local_cpusets);
  // One array per rank; reserved first, so that the pointers into them stay valid.
  procs_.resize(ns.procs.size());
  arrays_.resize(ns.procs.size());
  for (size_t k = 0; k < ns.procs.size(); ++k) {
    const PmixProc& p = ns.procs[k];
    auto& v = procs_[k];
    v.reserve(6);
    pmix_info_t& r = added(v, PMIX_RANK);
    r.value.type = PMIX_PROC_RANK;
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-union-access)
    r.value.data.rank = static_cast<pmix_rank_t>(p.rank);
    add_u32(v, PMIX_NODEID, p.node);
    add_u16(v, PMIX_LOCAL_RANK, p.local_rank);
    add_u16(v, PMIX_NODE_RANK, p.local_rank);
    add_u32(v, PMIX_APPNUM, p.app);
    add(v, PMIX_HOSTNAME, ns.nodes[p.node]);
    add_array(PMIX_PROC_INFO_ARRAY, v, arrays_[k]);
  }
}

// An MPMD job's apps, as PRRTE registers them: per app its number, size and leader (its
// first rank), which Open MPI reads for MPI_APPNUM and the app's communicator.
void PmixInfoList::add_apps(const PmixNamespace& ns) {
  if (ns.app_sizes.empty()) return;
  apps_.resize(ns.app_sizes.size());
  app_arrays_.resize(ns.app_sizes.size());
  uint32_t leader = 0;
  for (size_t k = 0; k < ns.app_sizes.size(); ++k) {
    auto& v = apps_[k];
    v.reserve(3);
    add_u32(v, PMIX_APPNUM, static_cast<uint32_t>(k));
    add_u32(v, PMIX_APP_SIZE, ns.app_sizes[k]);
    pmix_info_t& l = added(v, PMIX_APPLDR);
    l.value.type = PMIX_PROC_RANK;
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-union-access)
    l.value.data.rank = static_cast<pmix_rank_t>(leader);
    leader += ns.app_sizes[k];
    add_array(PMIX_APP_INFO_ARRAY, v, app_arrays_[k]);
  }
}

}  // namespace ferry
