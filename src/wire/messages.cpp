#include "ferry/wire/messages.hpp"

#include "ferry/wire/codec.hpp"

namespace ferry::wire {
namespace {

constexpr std::string_view kMagicView{kMagic, sizeof(kMagic) - 1};

std::string frame(MsgType t, Encoder& e) {
  return encode_frame(static_cast<uint8_t>(t), e.bytes());
}

template <typename T>
Result<T> finish(Decoder& d, T value, const char* what) {
  if (!d.ok() || !d.at_end()) return make_error(std::string("malformed ") + what + " message");
  return value;
}

Result<void> expect(const Frame& f, MsgType t, const char* what) {
  if (f.type != static_cast<uint8_t>(t))
    return make_error(std::string("expected a ") + what + " message, got type " +
                      std::to_string(f.type));
  return {};
}

}  // namespace

std::string encode(const Hello& m) {
  Encoder e;
  e.raw(kMagicView);
  e.u32(m.version);
  e.str(m.hostname);
  e.i32(m.pid);
  e.u16(m.free_port);
  return frame(MsgType::kHello, e);
}

Result<Hello> decode_hello(const Frame& f) {
  if (f.type != static_cast<uint8_t>(MsgType::kHello) ||
      f.payload.compare(0, kMagicView.size(), kMagicView) != 0)
    return make_error("the remote program is not a ferryd (unexpected greeting)");
  Decoder d(f.payload);
  d.raw(kMagicView.size());
  Hello h;
  h.version = d.u32();
  if (d.ok() && h.version != kProtocolVersion)
    return make_error("ferryd speaks protocol version " + std::to_string(h.version) +
                      ", this ferryrun speaks version " + std::to_string(kProtocolVersion) +
                      "; install the same ferry release on every host");
  h.hostname = d.str();
  h.pid = d.i32();
  h.free_port = d.u16();
  return finish(d, std::move(h), "hello");
}

std::string encode(const HostSpec& m) {
  Encoder e;
  e.u32(m.version);
  e.str(m.job_id);
  e.str(m.wdir);
  e.strs(m.argv);
  e.strs(m.env);
  e.u32(static_cast<uint32_t>(m.ranks.size()));
  for (const auto& r : m.ranks) {
    e.i32(r.rank);
    e.strs(r.env);
  }
  e.i32(m.stdin_rank);
  e.u32(m.kill_grace_ms);
  e.u8((m.verbose ? 1 : 0) | (m.wdir_fallback ? 2 : 0));
  e.u32(m.heartbeat_ms);
  return frame(MsgType::kHostSpec, e);
}

Result<HostSpec> decode_host_spec(const Frame& f) {
  if (auto s = expect(f, MsgType::kHostSpec, "host spec"); !s) return s.error();
  Decoder d(f.payload);
  HostSpec m;
  m.version = d.u32();
  if (d.ok() && m.version != kProtocolVersion)
    return make_error("ferryrun speaks protocol version " + std::to_string(m.version) +
                      ", this ferryd speaks version " + std::to_string(kProtocolVersion));
  m.job_id = d.str();
  m.wdir = d.str();
  m.argv = d.strs();
  m.env = d.strs();
  uint32_t n = d.u32();
  if (!d.ok() || n > f.payload.size()) return make_error("malformed host spec message");
  m.ranks.resize(n);
  for (auto& r : m.ranks) {
    r.rank = d.i32();
    r.env = d.strs();
  }
  m.stdin_rank = d.i32();
  m.kill_grace_ms = d.u32();
  uint8_t flags = d.u8();
  m.verbose = flags & 1;
  m.wdir_fallback = flags & 2;
  m.heartbeat_ms = d.u32();
  return finish(d, std::move(m), "host spec");
}

std::string encode(const Started& m) {
  Encoder e;
  e.i32(m.rank);
  e.i32(m.pid);
  return frame(MsgType::kStarted, e);
}

Result<Started> decode_started(const Frame& f) {
  if (auto s = expect(f, MsgType::kStarted, "started"); !s) return s.error();
  Decoder d(f.payload);
  Started m;
  m.rank = d.i32();
  m.pid = d.i32();
  return finish(d, m, "started");
}

std::string encode(const Output& m) {
  Encoder e;
  e.bytes().reserve(m.data.size() + 9);
  e.i32(m.rank);
  e.u8(m.stream);
  e.str(m.data);
  return frame(MsgType::kOutput, e);
}

Result<Output> decode_output(const Frame& f) {
  if (auto s = expect(f, MsgType::kOutput, "output"); !s) return s.error();
  Decoder d(f.payload);
  Output m;
  m.rank = d.i32();
  m.stream = d.u8();
  m.data = d.str();
  if (m.stream != 1 && m.stream != 2) return make_error("malformed output message");
  return finish(d, std::move(m), "output");
}

std::string encode(const Exited& m) {
  Encoder e;
  e.i32(m.rank);
  e.i32(m.exit_code);
  e.i32(m.signal);
  return frame(MsgType::kExited, e);
}

Result<Exited> decode_exited(const Frame& f) {
  if (auto s = expect(f, MsgType::kExited, "exited"); !s) return s.error();
  Decoder d(f.payload);
  Exited m;
  m.rank = d.i32();
  m.exit_code = d.i32();
  m.signal = d.i32();
  return finish(d, m, "exited");
}

std::string encode(const Failure& m) {
  Encoder e;
  e.i32(m.rank);
  e.str(m.message);
  return frame(MsgType::kFailure, e);
}

Result<Failure> decode_failure(const Frame& f) {
  if (auto s = expect(f, MsgType::kFailure, "failure"); !s) return s.error();
  Decoder d(f.payload);
  Failure m;
  m.rank = d.i32();
  m.message = d.str();
  return finish(d, std::move(m), "failure");
}

std::string encode_stdin(std::string_view data) {
  return encode_frame(static_cast<uint8_t>(MsgType::kStdin), data);
}

std::string encode_signal(int32_t signo) {
  Encoder e;
  e.i32(signo);
  return frame(MsgType::kSignal, e);
}

std::string encode_terminate(uint32_t grace_ms) {
  Encoder e;
  e.i32(static_cast<int32_t>(grace_ms));
  return frame(MsgType::kTerminate, e);
}

std::string encode_done() { return encode_frame(static_cast<uint8_t>(MsgType::kDone), {}); }

std::string encode_log(std::string_view line) {
  return encode_frame(static_cast<uint8_t>(MsgType::kLog), line);
}

std::string encode_heartbeat() {
  return encode_frame(static_cast<uint8_t>(MsgType::kHeartbeat), {});
}

Result<int32_t> decode_i32(const Frame& f) {
  Decoder d(f.payload);
  int32_t v = d.i32();
  return finish(d, v, "control");
}

}  // namespace ferry::wire
