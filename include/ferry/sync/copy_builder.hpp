#pragma once
/// \file
/// A job's copy of a synced tree built on a host (docs/sync.md): its directories and links made
/// at once, the files the host's cache lacks received straight into the copy (each byte written
/// once, as rsync writes it; the cache takes them in afterwards, CacheFiller), the others copied
/// out of the cache. Built under a temporary name and renamed whole: ranks never see half a tree.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/sync/file_cache.hpp"
#include "ferry/sync/tree.hpp"

namespace ferry {

class CopyBuilder {
 public:
  /// Starts the copy `name` (jobs/NAME in `cache`) of `entries`: its directories and links.
  /// `receiving`: the hashes of the files to come by receive() (each once; what the cache
  /// lacks); every other file must be in the cache by finish(). Error: one line naming the path.
  static Result<CopyBuilder> start(const FileCache& cache, const std::vector<TreeEntry>& entries,
                                   const std::string& name,
                                   const std::vector<std::string>& receiving);
  CopyBuilder(CopyBuilder&&) noexcept;
  CopyBuilder& operator=(CopyBuilder&&) noexcept;
  CopyBuilder(const CopyBuilder&) = delete;
  CopyBuilder& operator=(const CopyBuilder&) = delete;
  /// Removes the copy when it was not finished.
  ~CopyBuilder();

  /// The next `bytes` of the file `hash` (one of `receiving`, in order), written into the copy
  /// where the tree first has it. With `last`, checked against its hash and given its mode.
  /// Error: not one of `receiving`, a write failed, or the bytes do not match the hash (what
  /// was written of it is removed).
  Status receive(const std::string& hash, std::string_view bytes, bool last);
  /// Makes the rest (files out of the cache; a file received once and named twice in the tree,
  /// copied), gives directories their modes and the copy its name; returns its path. `still` is
  /// told meanwhile. Error: one line naming the entry (a file not received or not cached); the
  /// copy is removed.
  Result<std::string> finish(const StillWorking& still = {});
  /// The files received, as (hash, path in the finished copy), with their sizes: what the cache
  /// may take in from the copy.
  struct Received {
    std::string hash;
    std::string path;
    uint64_t size = 0;
  };
  std::vector<Received> received() const;

 private:
  struct State;
  explicit CopyBuilder(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

}  // namespace ferry
