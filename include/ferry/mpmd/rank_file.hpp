#pragma once
/// \file
/// Open MPI's rank files (`mpirun --rankfile FILE`): each rank's host and cores, written out
/// by the user, one line a rank:
///
///     rank 0=node1 slot=0:0-1     # node1, socket 0, cores 0 and 1
///     rank 1=+n1 slot=2-3         # the job's second host, its cores 2 and 3
///
/// Hosts are names of the job's hosts or `+nN` (the job's N-th host, from 0); without hosts
/// on the command line the file's hosts are the job's, as under mpirun. Slot lists are
/// binding's (slot_list.hpp): checked for syntax here, against each host's sockets once its
/// ferryd has reported them, and bound by ferryd.

#include <string>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/hosts/host_list.hpp"
#include "ferry/plan/placement.hpp"

namespace ferry {

/// One line of a rank file.
struct RankFileEntry {
  int rank = 0;
  std::string host;   ///< as written: a host name, or "+nN"
  std::string slots;  ///< the slot list; "": the rank is placed but not bound
  int line = 0;       ///< 1-based, for messages
};

/// A parsed rank file: its entries by rank (rank i at index i once placed).
struct RankFile {
  std::string path;
  std::vector<RankFileEntry> entries;  ///< in file order

  /// "FILE line N" of the entry for `rank`; "FILE" when the file has none.
  std::string where(int rank) const;
  /// The entry for `rank`, or null.
  const RankFileEntry* find(int rank) const;
};

/// Parses a rank file's text (`path` names it in messages). `#` starts a comment; blank lines
/// are skipped. Error, one line "FILE line N: ...": a line that is not `rank N=HOST [slot=LIST]`,
/// a rank given twice (naming the first line), a bad slot list, an empty file.
Result<RankFile> parse_rank_file(const std::string& text, const std::string& path);

/// Reads and parses the file at `path`. Error: unreadable, or as parse_rank_file().
Result<RankFile> read_rank_file(const std::string& path);

/// The hosts a rank file names by name, in order of first appearance, each with a slot for
/// each of its ranks, `+nN` ones included (origin "FILE line N"): the job's hosts when none
/// were given.
HostList rank_file_hosts(const RankFile& file);

/// Places ranks 0..np-1 (np <= 0: as many as the file has, which must then be 0..N-1) where
/// the file says. Entries for ranks at or past np are ignored, as mpirun does. Error, naming
/// the file (and line): a rank the file lacks, a host not among `hosts`, `+nN` past the last
/// host, more ranks on a host than its slots without `oversubscribe` (or past max_slots).
Result<Placement> place_by_rank_file(const RankFile& file, const HostList& hosts, int np,
                                     bool oversubscribe);

}  // namespace ferry
