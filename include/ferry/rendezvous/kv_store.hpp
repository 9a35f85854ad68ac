#pragma once
/// \file
/// The job's key-value store for Horovod's gloo rendezvous, held by the
/// front end. Requests reach it from every host's ferryd (which parsed and authenticated
/// them); it answers like horovod's `runner/http/http_server.py` RendezvousHandler, less
/// that server's quirks.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "ferry/plan/placement.hpp"

namespace ferry {

/// The most bytes (keys and values) each of the job's rendezvous stores holds: the Horovod/gloo
/// key-value store in the front end, and the PMI-1 key-value space on every host. Gloo and
/// MPICH put a few hundred bytes per rank; the bound only stops a rank that puts without end
/// from taking the memory of the front end's or a ferryd's host. The rank whose put would pass
/// it fails (docs/frameworks.md).
inline constexpr std::size_t kStoreLimitBytes = std::size_t{64} << 20;

/// HTTP status of a PUT refused because the store is full (507 Insufficient Storage): ferryd
/// fails the rank that sent it.
inline constexpr int kStoreFullStatus = 507;

/// The reason given for a rank whose put a full store refused; `store` names which one.
std::string store_full_message(std::string_view store);

/// A store reply: the HTTP status and body to send back.
struct KvReply {
  int status = 200;
  std::string body;
};

/// Scoped store. `PUT /<scope>/<key>` stores the body; `GET` answers 200 + value or 404
/// (empty body) while absent, which gloo clients poll every 10 ms; `DELETE /<scope>/<key>`
/// means "rank <key> finished with <scope>" (gloo's HTTPStore::Finalize sends its rank).
///
/// Scopes whose size is known (set_scope_size) are dropped once that many distinct ranks
/// DELETEd, and start afresh (a later hvd.init() reuses the names). For other scopes (process
/// sets: `global_process_set_hash_<h>`, elastic's `rank_and_size`) the size is unknown, so,
/// as horovod does for such "ad-hoc" scopes, DELETE removes the key it names and an emptied
/// scope is dropped: gloo clients run a barrier before Finalize, so nobody still needs it.
class KvStore {
 public:
  /// `limit`: the most bytes of scopes, keys and values held (kStoreLimitBytes).
  explicit KvStore(std::size_t limit = kStoreLimitBytes) : limit_(limit) {}

  /// Declares `scope` to have `ranks` members (> 0).
  void set_scope_size(const std::string& scope, int ranks);

  /// Serves one request. `method` is the HTTP method, `target` the request target
  /// ("/global/rank_0"). Paths that are not exactly two non-empty segments get 400,
  /// methods other than GET/PUT/DELETE 405, a PUT that would pass the limit kStoreFullStatus.
  KvReply serve(std::string_view method, std::string_view target, std::string body);

  /// Stores `value`; false, with nothing changed, when the store would then hold more than
  /// its limit.
  bool put(const std::string& scope, const std::string& key, std::string value);
  std::optional<std::string> get(const std::string& scope, const std::string& key) const;
  /// DELETE semantics described above.
  void finish(const std::string& scope, const std::string& key);

  /// Number of scopes holding data, and bytes held in scope names, keys and values.
  std::size_t scope_count() const { return data_.size(); }
  std::size_t bytes() const { return bytes_; }

 private:
  void drop(const std::string& scope);

  std::map<std::string, std::map<std::string, std::string>, std::less<>> data_;
  std::map<std::string, int, std::less<>> sizes_;
  std::map<std::string, std::set<std::string>, std::less<>> finished_;
  std::size_t limit_;
  std::size_t bytes_ = 0;
};

/// Declares the scopes horovod's gloo context uses for this placement
/// (`horovod/common/gloo/gloo_context.cc`): `global` = world size, `local_<HOROVOD_HOSTNAME>`
/// (the host label) = that host's local size, `cross_<local_rank>` = cross size.
void declare_horovod_scopes(KvStore& store, const Placement& placement);

}  // namespace ferry
