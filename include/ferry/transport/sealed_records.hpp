#pragma once
/// \file
/// ferryd's frames on a direct output route (a TCP connection back to ferryrun that bypasses
/// sshd): AES-128-GCM records, one direction, one key per connection. A record is
///
///     u32 n (big-endian, authenticated as associated data) | n bytes of ciphertext | 16-byte tag
///
/// Its 96-bit nonce is its number on the connection (0, 1, 2, ...), never sent: a record that
/// is dropped, repeated, reordered or altered fails to open, and so does the rest of the stream.
/// The key comes from the connect-back handshake (output_route_key): both ends proved the
/// per-host secret that ferryrun handed ferryd over SSH, and both nonces make it fresh.
/// OpenSSL's libcrypto does the work (loaded on first use, as for the handshake's HMAC).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "ferry/common/result.hpp"

namespace ferry {

inline constexpr size_t kRecordHeader = 4;
inline constexpr size_t kRecordTag = 16;
/// Largest plaintext of one record.
inline constexpr size_t kMaxRecord = size_t{256} << 10;
inline constexpr size_t kRouteKeySize = 16;

/// The record key of a connection: HMAC-SHA256(secret, "ferry output" F D), first 16 bytes;
/// "" when libcrypto cannot be loaded.
std::string output_route_key(std::string_view secret, std::string_view nonce_f,
                             std::string_view nonce_d);

/// Whether libcrypto's AES-GCM can be loaded here.
bool have_record_cipher();

/// The sending end.
class RecordSealer {
 public:
  /// `key`: kRouteKeySize bytes.
  static Result<RecordSealer> create(std::string_view key);
  RecordSealer(const RecordSealer&) = delete;
  RecordSealer& operator=(const RecordSealer&) = delete;
  RecordSealer(RecordSealer&&) noexcept;
  RecordSealer& operator=(RecordSealer&&) noexcept;
  ~RecordSealer();

  /// Appends one record of `plain` (at most kMaxRecord bytes) to `out`.
  void seal(std::string_view plain, std::string& out);

 private:
  RecordSealer() = default;
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

/// The receiving end.
class RecordOpener {
 public:
  static Result<RecordOpener> create(std::string_view key);
  RecordOpener(const RecordOpener&) = delete;
  RecordOpener& operator=(const RecordOpener&) = delete;
  RecordOpener(RecordOpener&&) noexcept;
  RecordOpener& operator=(RecordOpener&&) noexcept;
  ~RecordOpener();

  /// Opens the record at the start of `buf`, in place: returns the bytes it took, 0 when `buf`
  /// does not hold all of it yet; its plaintext is then `plain` (inside `buf`). An error when
  /// the record is longer than kMaxRecord or fails authentication: the stream is not ferryd's.
  Result<size_t> open(std::span<char> buf, std::string_view& plain);

 private:
  RecordOpener() = default;
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace ferry
