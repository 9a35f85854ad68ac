#pragma once
/// \file
/// SHA-256 of a stream of bytes or of a file, hex, lower case: the names of the files a synced
/// tree is cached under (docs/sync.md). Through libcrypto, loaded on first use (ferryrun has it
/// through libssh; a ferryd that never hashes never loads it).

#include <memory>
#include <string>
#include <string_view>

#include "ferry/common/result.hpp"

namespace ferry {

class ContentHash {
 public:
  /// A fresh digest. Error: libcrypto cannot be loaded here.
  static Result<ContentHash> start();
  ContentHash(const ContentHash&) = delete;
  ContentHash& operator=(const ContentHash&) = delete;
  ContentHash(ContentHash&&) noexcept = default;
  ContentHash& operator=(ContentHash&&) noexcept = default;
  ~ContentHash();

  void update(std::string_view bytes);
  /// The digest of everything given, as 64 hex digits; the object is spent.
  std::string hex();

 private:
  ContentHash(void* ctx, bool parts) : ctx_(ctx, Free{parts}) {}
  struct Free {
    bool parts = false;  ///< SHA256_CTX (libcrypto's SHA256_* calls), else an EVP_MD_CTX
    void operator()(void* ctx) const;
  };
  std::unique_ptr<void, Free> ctx_;
};

/// The SHA-256 of the file at `path`, read in pieces. Error: one line naming the file.
Result<std::string> file_sha256(const std::string& path);
/// The SHA-256 of `bytes`. Error: libcrypto cannot be loaded here.
Result<std::string> bytes_sha256(std::string_view bytes);

}  // namespace ferry
