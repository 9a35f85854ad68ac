#pragma once
/// \file
/// The messages of `--sync` (docs/sync.md): a job's tree probed for and offered to a host, the
/// files it lacks, their bytes and acknowledgements, and its copy ready. Part of messages.hpp,
/// which includes it once MsgType is declared: include messages.hpp, not this file.

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace ferry::wire {

/// One entry of a synced tree (ferry/sync/tree.hpp's TreeEntry, without where it was read).
struct SyncItem {
  std::string path;  ///< relative, '/'-separated, parents first
  uint8_t kind = 0;  ///< TreeEntry::Kind: 0 directory, 1 file, 2 symlink
  uint32_t mode = 0;
  uint64_t size = 0;
  std::string hash;    ///< a file's SHA-256, hex
  std::string target;  ///< a symlink's
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.path, m.kind, m.mode, m.size, m.hash, m.target);
  }
};

/// --sync, first: the tree's digest (SHA-256 over every entry). A host that keeps a spare copy
/// of exactly that tree, untouched since its job, answers SyncReady at once; any other answers
/// SyncNeed with `offer_wanted`, and gets the SyncOffer.
struct SyncProbe {
  static constexpr MsgType kType = MsgType::kSyncProbe;
  std::string digest;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.digest);
  }
};

/// --sync: the tree every rank of this host starts in. ferryd answers with SyncNeed, receives
/// the files it lacks (SyncData, each acknowledged by SyncAck), makes the job's copy and says
/// so (SyncReady); only then the HostSpec comes, whose relative working directories are taken
/// inside the copy.
struct SyncOffer {
  static constexpr MsgType kType = MsgType::kSyncOffer;
  std::vector<SyncItem> items;
  std::string digest;         ///< as in the SyncProbe: what the host keeps its copy under
  bool usage_wanted = false;  ///< --verbose: SyncNeed says what the host's cache keeps
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.items, m.digest, m.usage_wanted);
  }
};

struct SyncNeed {
  static constexpr MsgType kType = MsgType::kSyncNeed;
  std::vector<std::string> hashes;  ///< in the order they are wanted; empty: all there
  std::string error;                ///< the cache cannot be used here (one line); "" none
  uint64_t cache_bytes = 0;         ///< what the host's cache keeps; 0 unless the offer asked
  uint32_t cache_files = 0;         ///< and files are wanted (a stat per cached file)
  bool offer_wanted = false;        ///< the answer to a SyncProbe: send the SyncOffer
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.hashes, m.error, m.cache_bytes, m.cache_files, m.offer_wanted);
  }
};

struct SyncData {
  static constexpr MsgType kType = MsgType::kSyncData;
  std::string hash;
  std::string data;   ///< the next bytes of the file (sent in order)
  bool last = false;  ///< the file is whole after these
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.hash, m.data, m.last);
  }
};

struct SyncAck {
  static constexpr MsgType kType = MsgType::kSyncAck;
  uint64_t bytes = 0;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.bytes);
  }
};

struct SyncReady {
  static constexpr MsgType kType = MsgType::kSyncReady;
  std::string path;   ///< the job's copy on this host
  std::string error;  ///< why there is none (one line); "" none
  /// How the copy came to be, for --verbose: a new copy, a kept one mended, or a kept one
  /// untouched (checked entry by entry, or as the pool's watch saw it)
  std::string how;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.path, m.error, m.how);
  }
};

}  // namespace ferry::wire
