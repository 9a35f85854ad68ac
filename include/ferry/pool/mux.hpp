#pragma once
/// \file
/// The warm pool's framing between the pool process and a host's `ferryd --pool`: many
/// jobs' ferryd streams over the one SSH channel the pool holds to that host. A frame is
/// `u32 length | u8 type | u32 stream | payload` (little-endian; length counts type, stream
/// and payload, at most kMuxMaxFrame). Each side keeps at most kMuxWindow bytes of a
/// stream's data unacknowledged: the receiver acknowledges data once it has written it on
/// (to the job's ferryd, or to the job's front end), so a stream whose reader stopped holds
/// back only itself, never the other jobs on the channel. Pure: no I/O.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ferry/common/result.hpp"

namespace ferry {

enum class MuxType : std::uint8_t {
  kHello = 1,   ///< host → pool, once, stream 0: "ferryd-pool VERSION HOSTNAME PID"
  kOpen = 2,    ///< pool → host: start a job's ferryd on this stream (payload: the job's label)
  kData = 3,    ///< either way: the stream's bytes (ferryd's stdin, or its stdout)
  kStderr = 4,  ///< host → pool: ferryd's stderr bytes (not counted in the window)
  kAck = 5,     ///< either way: payload u64, data bytes of the stream written on
  kClose = 6,   ///< either way: the stream ended (payload: why, "" for a clean end)
};

/// The version a host's `ferryd --pool` greets with; a pool refuses another.
inline constexpr int kMuxVersion = 1;
/// Data of one stream sent and not yet acknowledged, at most.
inline constexpr std::size_t kMuxWindow = std::size_t{1} << 20;
/// One frame's length field, at most (a data frame carries at most kMuxMaxData).
inline constexpr std::size_t kMuxMaxFrame = std::size_t{16} << 20;
inline constexpr std::size_t kMuxMaxData = std::size_t{256} << 10;

struct MuxFrame {
  MuxType type = MuxType::kData;
  std::uint32_t stream = 0;
  std::string payload;
};

/// One frame's bytes. `payload` must be shorter than kMuxMaxFrame - 5.
std::string encode_mux(MuxType type, std::uint32_t stream, std::string_view payload);
/// An acknowledgement of `bytes` of `stream`.
std::string encode_mux_ack(std::uint32_t stream, std::uint64_t bytes);
/// The count an acknowledgement carries; nullopt when its payload is not 8 bytes.
std::optional<std::uint64_t> decode_mux_ack(std::string_view payload);

/// The pool's answer to a job's `open KEY LABEL` (pool_server.hpp): where the host was
/// reached and how its ferryd came (`warm`, or `repaired` when the host's pool ferryd had to
/// be started again). One line on the wire: `ok PEER LOCAL DESCRIBE HOW`, "-" for empty.
struct OpenAnswer {
  std::string peer, local, describe, how;
};
/// The answer's line, newline included.
std::string encode_open_answer(const OpenAnswer& a);
/// The answer in `line` (no newline); nullopt when it is not an `ok` line (a refusal: `no WHY`).
std::optional<OpenAnswer> parse_open_answer(std::string_view line);

/// Cuts a byte stream into frames.
class MuxReader {
 public:
  void feed(std::string_view bytes) { buf_.append(bytes); }
  /// The next whole frame, nullopt when more bytes are needed; an error (one line) for a
  /// length out of bounds or an unknown type: the stream is corrupt and must be dropped.
  Result<std::optional<MuxFrame>> next();

 private:
  std::string buf_;
  std::size_t off_ = 0;
};

}  // namespace ferry
