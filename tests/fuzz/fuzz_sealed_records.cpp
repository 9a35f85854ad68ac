// libFuzzer: the sealed records of a direct output route, which ferryrun reads from a TCP
// connection anyone may open. Byte 0 picks the mode:
//   even: the rest (after the chunking header of chunks.hpp) is a stream from a stranger;
//         fed in pieces, it must never open (forging a record is AES-GCM's to prevent), an
//         opened length must lie in the buffer, and a failed stream stays failed;
//   odd:  the rest is plaintext, sealed into records of the sizes the chunking header
//         gives; the records, fed in pieces, open to exactly that plaintext; then one byte
//         (picked by byte 0) is flipped and the stream must fail from that record on.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chunks.hpp"
#include "ferry/transport/sealed_records.hpp"

namespace {

const std::string kKey(ferry::kRouteKeySize, 'K');

// Feeds `stream` in the chunking's pieces to an opener, as ferryrun's route does (bytes are
// appended; every whole record at the front is opened and dropped). Returns the plaintexts,
// and whether the stream failed.
struct Opened {
  std::vector<std::string> plains;
  bool failed = false;
};

Opened open_stream(const ferry_fuzz::ChunkedInput& c, std::string_view stream) {
  Opened out;
  auto opener = ferry::RecordOpener::create(kKey);
  if (!opener) __builtin_trap();
  std::string buf;
  ferry_fuzz::ChunkedInput cut = c;
  cut.stream = stream;
  ferry_fuzz::for_each_piece(cut, [&](std::string_view piece) {
    if (out.failed) return;
    buf.append(piece);
    for (;;) {
      std::string_view plain;
      auto took = opener->open(std::span<char>(buf.data(), buf.size()), plain);
      if (!took) {
        const std::string& m = took.error().message;
        if (m.empty() || m.find('\n') != std::string::npos) __builtin_trap();
        out.failed = true;
        return;
      }
      if (*took == 0) return;
      if (*took > buf.size() || plain.size() + ferry::kRecordHeader + ferry::kRecordTag != *took ||
          plain.data() != buf.data() + ferry::kRecordHeader)
        __builtin_trap();
      out.plains.emplace_back(plain);
      buf.erase(0, *took);
    }
  });
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!ferry::have_record_cipher()) return 0;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (in.empty()) return 0;
  const auto mode = static_cast<uint8_t>(in[0]);
  auto c = ferry_fuzz::take_chunking(in.substr(1));
  if ((mode & 1) == 0) {
    Opened o = open_stream(c, c.stream);
    if (!o.plains.empty()) __builtin_trap();  // a stranger's bytes never open
    return 0;
  }
  // Seal the plaintext in records of the chunking's sizes (0: an empty record).
  auto sealer = ferry::RecordSealer::create(kKey);
  if (!sealer) __builtin_trap();
  std::vector<std::string> plains;
  std::vector<size_t> ends;  // where each record ends in the sealed stream
  std::string sealed;
  size_t at = 0;
  for (size_t i = 0; at < c.stream.size() || i == 0; ++i) {
    size_t n = std::min(c.sizes[i % c.sizes.size()], c.stream.size() - at);
    plains.emplace_back(c.stream.substr(at, n));
    sealer->seal(plains.back(), sealed);
    ends.push_back(sealed.size());
    at += n;
  }
  Opened o = open_stream(c, sealed);
  if (o.failed || o.plains != plains) __builtin_trap();
  // One flipped byte: the records before it open, that one and every later one fail.
  const size_t flip = (mode >> 1) * 7919 % sealed.size();
  sealed[flip] = static_cast<char>(sealed[flip] ^ 0x20);
  size_t bad = 0;
  while (ends[bad] <= flip) ++bad;
  o = open_stream(c, sealed);
  if (o.plains.size() > bad) __builtin_trap();
  for (size_t i = 0; i < o.plains.size(); ++i)
    if (o.plains[i] != plains[i]) __builtin_trap();
  if (!o.failed && o.plains.size() == plains.size()) __builtin_trap();
  return 0;
}
