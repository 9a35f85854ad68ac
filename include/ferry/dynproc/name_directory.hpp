#pragma once
/// \file
/// A job's name service, as MPI's dynamic processes use it: `MPI_Publish_name` and
/// `MPI_Lookup_name`, and the exchange of process lists with which Open MPI's
/// `MPI_Comm_accept`/`MPI_Comm_connect` (and so `MPI_Comm_spawn`) meet. One directory per
/// job, kept by the front end; every rank of the job (every namespace of it) sees the same
/// names, and no other job sees them. Pure: ferryrun feeds it the hosts' requests and sends
/// its answers back.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace ferry {

/// A process as PMIx names it: a namespace and a rank in it.
struct ProcId {
  std::string nspace;
  uint32_t rank = 0;
  bool operator==(const ProcId&) const = default;
  bool operator<(const ProcId& o) const {
    return std::tie(nspace, rank) < std::tie(o.nspace, o.rank);
  }
};

/// PMIx's "every rank of the namespace" (PMIX_RANK_WILDCARD).
inline constexpr uint32_t kWildcardRank = UINT32_MAX - 1;

/// The PMIx statuses the front end answers with (the front end does not include libpmix's
/// headers; ferryd passes these numbers through).
inline constexpr int32_t kPmixSuccess = 0;
inline constexpr int32_t kPmixErrTimeout = -24;
inline constexpr int32_t kPmixErrUnreach = -25;
inline constexpr int32_t kPmixErrBadParam = -27;
inline constexpr int32_t kPmixErrNotFound = -46;
inline constexpr int32_t kPmixErrNotSupported = -47;
inline constexpr int32_t kPmixErrPartialSuccess = -52;
inline constexpr int32_t kPmixErrDuplicateKey = -53;
inline constexpr int32_t kPmixErrOutOfResource = -29;

class NameDirectory {
 public:
  /// One published name: its key, its value and the process that published it; `bytes`: the
  /// value is a PMIx byte object, not a string (kept as it came, told apart for the answer).
  struct Entry {
    std::string key;
    std::string value;
    ProcId owner{};
    bool bytes = false;
    bool operator==(const Entry&) const = default;
  };
  /// The answer to one lookup: a PMIx status and what was found, in the order asked.
  struct Answer {
    uint64_t ticket = 0;
    int32_t status = kPmixSuccess;
    std::vector<Entry> found;
  };

  /// At most this many lookups wait at once (`wait` with names not yet published); more are
  /// answered "out of resource" at once. Waiting lookups end with the job.
  static constexpr std::size_t kMaxWaiting = 1024;
  /// At most this many bytes of keys and values are published at once.
  static constexpr std::size_t kMaxBytes = 16 << 20;

  /// `owner` publishes `entries` (their owner fields unused). `first_read`: each is removed when
  /// first looked up (Open MPI's accept/connect exchange). A key already published, an empty key,
  /// or more bytes than kMaxBytes: nothing is published and the status says why. Lookups that were
  /// waiting for these names and now have all theirs are appended to `released`.
  int32_t publish(const ProcId& owner, const std::vector<Entry>& entries, bool first_read,
                  std::vector<Answer>& released);

  /// Lookup `ticket` of `keys`. With every key published: answered at once (status success);
  /// without `wait`: answered at once with what there is (not found where none is, partial
  /// success where some are); with `wait`: held until all are published (nullopt), then
  /// returned by a later publish().
  std::optional<Answer> lookup(uint64_t ticket, const std::vector<std::string>& keys, bool wait);

  /// `owner` removes its `keys` (all it published, when empty). Names another process
  /// published are left. Not found when nothing was removed.
  int32_t unpublish(const ProcId& owner, const std::vector<std::string>& keys);

  /// A waiting lookup is given up (its rank's host is gone, its time ran out). False when no
  /// lookup `ticket` waits.
  bool drop(uint64_t ticket);

  std::size_t published() const { return names_.size(); }
  std::size_t waiting() const { return waiting_.size(); }

 private:
  struct Name {
    std::string value;
    ProcId owner;
    bool first_read = false;
    bool bytes = false;
  };
  Answer take(uint64_t ticket, const std::vector<std::string>& keys);
  bool all_present(const std::vector<std::string>& keys) const;

  std::map<std::string, Name> names_;
  std::map<uint64_t, std::vector<std::string>> waiting_;  // by ticket: keys asked
  std::size_t bytes_ = 0;
};

}  // namespace ferry
