// libFuzzer: the frame reader both ends of a ferryrun-ferryd connection read with, and the
// message decoders behind it. The input is the chunking header of chunks.hpp, then the
// stream. It is read fed whole (next()) and fed in pieces (next_view()): both must give
// the same frames and end in the same state. Every frame then goes through every decoder;
// what decodes must encode and decode back to the same message, and decoding must not
// allocate out of proportion to the frame (a length field is not a promise).
//
// FERRY_FUZZ_WRITE_SEEDS=DIR fuzz_frame writes the seed corpus, made with the encoders,
// into DIR and exits.
#include <sanitizer/allocator_interface.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "chunks.hpp"
#include "ferry/wire/frame.hpp"
#include "ferry/wire/messages.hpp"

namespace {

using ferry::wire::Frame;
using ferry::wire::FrameReader;

// Bytes allocated while `counting` is set, through the sanitizer's malloc hook.
bool counting = false;
std::size_t allocated = 0;

void on_malloc(const volatile void*, std::size_t size) {
  if (counting) allocated += size;
}
void on_free(const volatile void*) {}

// Runs `decode` and traps when it allocated more than a small multiple of the frame: the
// widest legitimate growth is a list of empty strings (4 bytes each on the wire, a
// std::string each in memory).
template <class F>
auto bounded_alloc(const Frame& f, F&& decode) {
  allocated = 0;
  counting = true;
  auto result = decode(f);
  counting = false;
  if (allocated > 16 * (f.payload.size() + 5) + 4096) __builtin_trap();
  return result;
}

// Reads `bytes` as exactly one frame.
Frame one_frame(std::string_view bytes) {
  FrameReader r;
  r.feed(bytes);
  auto f = r.next();
  if (!f || !*f || r.buffered() != 0) __builtin_trap();
  return std::move(**f);
}

// If `m` decoded, encoding it and decoding that gives it back (compared by encoding: every
// encoder writes every field).
template <class M, class Encode, class Decode>
void round_trip(const ferry::Result<M>& m, Encode&& encode, Decode&& decode) {
  if (!m) {
    if (m.error().message.empty()) __builtin_trap();
    return;
  }
  std::string bytes = encode(*m);
  auto again = decode(one_frame(bytes));
  if (!again || encode(*again) != bytes) __builtin_trap();
}

// ---- The message API: every decoder on every frame. Kept in this one place so that a
// ---- change of that API is a change here (and in write_seeds() below) only.
namespace w = ferry::wire;

template <class M>
void decode_as(const Frame& f) {
  auto dec = [](const Frame& fr) { return w::decode<M>(fr); };
  round_trip(
      bounded_alloc(f, dec), [](const M& m) { return w::encode(m); }, dec);
}

// What the variant decoders make of a frame agrees with the one decoder of its type.
template <class Variant>
void agrees(const ferry::Result<Variant>& v, const Frame& f) {
  if (!v) return;
  std::visit(
      [&f](const auto& m) {
        using M = std::remove_cvref_t<decltype(m)>;
        if constexpr (std::is_same_v<M, w::OutputView>) {
          auto one = w::decode<w::OutputView>(f);
          if (!one || one->rank != m.rank || one->stream != m.stream || one->data != m.data)
            __builtin_trap();
        } else {
          auto one = w::decode<M>(f);
          if (!one || w::encode(*one) != w::encode(m)) __builtin_trap();
        }
      },
      *v);
}

void decode_messages(const Frame& f) {
  decode_as<w::Hello>(f);
  decode_as<w::HostSpec>(f);
  decode_as<w::Started>(f);
  decode_as<w::Exited>(f);
  decode_as<w::Failure>(f);
  decode_as<w::KvRequest>(f);
  decode_as<w::KvReply>(f);
  decode_as<w::PmiBarrier>(f);
  decode_as<w::PmiBarrierDone>(f);
  decode_as<w::PmiAbort>(f);
  decode_as<w::Stdin>(f);
  decode_as<w::Signal>(f);
  decode_as<w::Terminate>(f);
  decode_as<w::Done>(f);
  decode_as<w::Log>(f);
  decode_as<w::Heartbeat>(f);
  decode_as<w::StdinAck>(f);
  // Output: decoded as a view into the frame, encoded from a copy.
  auto view = bounded_alloc(f, [](const Frame& fr) { return w::decode<w::OutputView>(fr); });
  if (view) {
    std::string bytes = w::encode(w::Output{view->rank, view->stream, std::string(view->data)});
    const Frame again = one_frame(bytes);
    auto back = w::decode<w::OutputView>(again);
    if (!back || back->rank != view->rank || back->stream != view->stream ||
        back->data != view->data)
      __builtin_trap();
  }
  const w::FrameView fv{f.type, f.payload};
  agrees(bounded_alloc(f, [&fv](const Frame&) { return w::decode_to_daemon(fv); }), f);
  agrees(bounded_alloc(f, [&fv](const Frame&) { return w::decode_to_front(fv); }), f);
}

// The seed corpus: each message type as the encoders make it, one frame per file, and one
// stream of several frames as ferryd sends them.
void write_seeds(const char* dir) {
  namespace w = ferry::wire;
  w::Hello hello;
  hello.hostname = "node1";
  hello.pid = 4242;
  hello.free_port = 29500;
  hello.kv_port = 40001;
  hello.interfaces = {"eth0 10.0.0.1/24", "lo 127.0.0.1/8"};
  w::HostSpec spec;
  spec.job_id = "job-1";
  spec.wdir = "/home/user";
  spec.argv = {"python3", "train.py"};
  spec.env = {"OMP_NUM_THREADS=1"};
  spec.ranks = {{0, {"RANK=0", "LOCAL_RANK=0"}, {"--local-rank=0"}},
                {1, {"RANK=1", "LOCAL_RANK=1"}, {"--local-rank=1"}}};
  spec.stdin_rank = 0;
  spec.heartbeat_ms = 1000;
  spec.secret = "0123456789abcdef";
  spec.pmi = true;
  spec.world_size = 2;
  spec.pmi_process_mapping = "(vector,(0,1,2))";
  spec.binding.pe = 2;
  spec.binding.devices = {0, 2};
  std::vector<std::pair<std::string, std::string>> seeds = {
      {"hello", w::encode(hello)},
      {"host-spec", w::encode(spec)},
      {"started", w::encode(w::Started{1, 4243})},
      {"output", w::encode(w::Output{0, 1, "epoch 1: loss 0.25\n"})},
      {"exited", w::encode(w::Exited{1, 0, 9})},
      {"failure", w::encode(w::Failure{-1, "cannot start python3: not found"})},
      {"kv-request", w::encode(w::KvRequest{7, "PUT", "/global/rank_0", "10.0.0.1:1234"})},
      {"kv-reply", w::encode(w::KvReply{7, 404, ""})},
      {"pmi-barrier", w::encode(w::PmiBarrier{1, {"bc-0"}, {"port#29000$"}})},
      {"pmi-barrier-done",
       w::encode(w::PmiBarrierDone{w::PmiBarrier{1, {"bc-0", "bc-1"}, {"a", "b"}}})},
      {"pmi-abort", w::encode(w::PmiAbort{1, 3, "MPI_Abort called"})},
      {"control", w::encode(w::Signal{15}) + w::encode(w::Terminate{5000}) +
                      w::encode(w::Stdin{"x"}) + w::encode(w::Stdin{}) + w::encode(w::Log{"note"}) +
                      w::encode(w::Heartbeat{}) + w::encode(w::StdinAck{4096}) +
                      w::encode(w::Done{})},
      {"oversized", std::string("\xff\xff\xff\x7f\x04", 5)},
  };
  seeds.push_back({"stream", seeds[0].second + seeds[2].second + seeds[3].second + seeds[4].second +
                                 w::encode(w::Done{})});
  for (const auto& [name, bytes] : seeds) {
    // Chunking header: one byte at a time, and for the stream also pieces of 3, 0 and 7.
    std::string header =
        name == "stream" ? std::string("\x03\x03\x00\x07", 4) : std::string(1, '\0');
    std::ofstream(std::string(dir) + "/" + name, std::ios::binary) << header << bytes;
  }
}

struct Outcome {
  std::vector<Frame> frames;
  std::optional<std::string> error;
  std::size_t buffered = 0;
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("FERRY_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto chunked =
      ferry_fuzz::take_chunking(std::string_view(reinterpret_cast<const char*>(data), size));
  std::string_view stream = chunked.stream;

  Outcome whole;
  {
    FrameReader r;
    r.feed(stream);
    std::size_t at = 0;
    for (;;) {
      auto f = r.next();
      if (!f) {
        whole.error = f.error().message;
        // Only a length of 0 or over the limit is an error.
        std::string_view len = stream.substr(at, 4);
        if (len.size() != 4) __builtin_trap();
        uint32_t n = 0;
        for (int i = 3; i >= 0; --i) n = n << 8 | static_cast<uint8_t>(len[i]);
        if (n != 0 && n <= ferry::wire::kMaxFrame) __builtin_trap();
        break;
      }
      if (!*f) break;
      // A frame is exactly the bytes it came in.
      std::string bytes = ferry::wire::encode_frame((*f)->type, (*f)->payload);
      if (stream.substr(at, bytes.size()) != bytes) __builtin_trap();
      at += bytes.size();
      if (stream.size() - at != r.buffered()) __builtin_trap();
      whole.frames.push_back(std::move(**f));
    }
    whole.buffered = r.buffered();
  }

  Outcome pieces;
  {
    FrameReader r;
    ferry_fuzz::for_each_piece(chunked, [&](std::string_view piece) {
      r.feed(piece);
      for (;;) {
        auto f = r.next_view();
        if (!f) {
          // Failed stays failed, whatever arrives after.
          if (pieces.error && f.error().message.find("corrupt") == std::string::npos)
            __builtin_trap();
          if (!pieces.error) pieces.error = f.error().message;
          break;
        }
        if (!*f) break;
        pieces.frames.push_back((*f)->to_frame());  // the view dies with the next feed()
      }
      // A drained reader holds at most one frame that is not complete yet.
      if (!pieces.error && r.buffered() >= 4 + ferry::wire::kMaxFrame) __builtin_trap();
    });
    pieces.buffered = r.buffered();
  }

  if (whole.frames.size() != pieces.frames.size()) __builtin_trap();
  for (std::size_t i = 0; i < whole.frames.size(); ++i)
    if (whole.frames[i].type != pieces.frames[i].type ||
        whole.frames[i].payload != pieces.frames[i].payload)
      __builtin_trap();
  if (whole.error != pieces.error) __builtin_trap();
  if (!whole.error && whole.buffered != pieces.buffered) __builtin_trap();

  for (const auto& f : whole.frames) decode_messages(f);
  return 0;
}
