#pragma once
/// \file
/// The messages of MPICH's MPI_Comm_spawn (PMI-1's PMI_Spawn_multiple, served by ferryd's PMI
/// server and the front end): a rank asks, the front end places the new processes and tells
/// each host that runs some of them their process group, and answers the rank. Part of
/// messages.hpp, which includes it once MsgType and RankLaunch are declared: include
/// messages.hpp, not this file.

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "ferry/wire/pmix_messages.hpp"  // PmixSpawnApp

namespace ferry::wire {

/// d→f: the job's process `rank` (a rank, or a process an earlier spawn started) called
/// PMI_Spawn_multiple: start `apps` (PmixSpawnApp: the same shape as a PMIx spawn's; `env`
/// and `cwd` empty), with `preput_keys`/`preput_values` in their KVS. The MPI_Info pairs
/// given for app `info_apps[i]` are `info_keys[i]`=`info_values[i]`. Answered by
/// PmiSpawnDone for `rank` (a rank waits in one spawn at a time).
struct PmiSpawn {
  static constexpr MsgType kType = MsgType::kPmiSpawn;
  int32_t rank = 0;
  std::vector<PmixSpawnApp> apps;
  std::vector<std::string> preput_keys;
  std::vector<std::string> preput_values;
  std::vector<uint32_t> info_apps;
  std::vector<std::string> info_keys;
  std::vector<std::string> info_values;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.rank, m.apps, m.preput_keys, m.preput_values, m.info_apps, m.info_keys,
                    m.info_values);
  }
};

/// f→d: the answer to `rank`'s PmiSpawn: its processes are on their way as process group
/// `kvsname` (`why` empty), or why not (one line, said to the user too).
struct PmiSpawnDone {
  static constexpr MsgType kType = MsgType::kPmiSpawnDone;
  int32_t rank = 0;
  std::string kvsname;
  std::string why;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.rank, m.kvsname, m.why);
  }
};

/// f→d, to each host that runs some of a PMI spawn's processes: their process group
/// `kvsname` of `size` processes (`process_mapping`: its PMI_process_mapping), its KVS seeded
/// with the preput pairs, and `ranks`, the ones here (RankLaunch: `pmix_nspace` the group's
/// name, `pmix_rank` the process's rank in it, `app` its command's index).
struct PmiSpawnJob {
  static constexpr MsgType kType = MsgType::kPmiSpawnJob;
  std::string kvsname;
  int32_t size = 0;
  std::string process_mapping;
  std::vector<std::string> preput_keys;
  std::vector<std::string> preput_values;
  std::vector<RankLaunch> ranks;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.kvsname, m.size, m.process_mapping, m.preput_keys, m.preput_values, m.ranks);
  }
};

}  // namespace ferry::wire
