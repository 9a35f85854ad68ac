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

void encode_binding(Encoder& e, const BindingOptions& b) {
  e.u8(static_cast<uint8_t>(b.bind_to));
  e.u8(static_cast<uint8_t>(b.map_by));
  e.i32(b.pe);
  e.i32(b.cpus_per_rank);
  e.i32(b.devices_per_rank);
  e.u8((b.bind_mem ? 1 : 0) | (b.isolate_devices ? 2 : 0) | (b.report_bindings ? 4 : 0));
  e.u32(static_cast<uint32_t>(b.devices.size()));
  for (int dev : b.devices) e.i32(dev);
}

BindingOptions decode_binding(Decoder& d) {
  BindingOptions b;
  uint8_t bind_to = d.u8(), map_by = d.u8();
  b.bind_to = bind_to <= static_cast<uint8_t>(BindTo::kSocket) ? static_cast<BindTo>(bind_to)
                                                                : BindTo::kDefault;
  b.map_by = map_by <= static_cast<uint8_t>(MapBy::kSocket) ? static_cast<MapBy>(map_by)
                                                             : MapBy::kDefault;
  b.pe = d.i32();
  b.cpus_per_rank = d.i32();
  b.devices_per_rank = d.i32();
  uint8_t flags = d.u8();
  b.bind_mem = flags & 1;
  b.isolate_devices = flags & 2;
  b.report_bindings = flags & 4;
  uint32_t n = d.u32();
  for (uint32_t i = 0; i < n && d.ok() && i < 4096; ++i) b.devices.push_back(d.i32());
  return b;
}

}  // namespace

std::string encode(const Hello& m) {
  Encoder e;
  e.raw(kMagicView);
  e.u32(m.version);
  e.str(m.hostname);
  e.i32(m.pid);
  e.u16(m.free_port);
  e.u16(m.kv_port);
  e.strs(m.interfaces);
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
  h.kv_port = d.u16();
  h.interfaces = d.strs();
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
    e.strs(r.extra_args);
  }
  e.i32(m.stdin_rank);
  e.u32(m.kill_grace_ms);
  e.u8((m.verbose ? 1 : 0) | (m.wdir_fallback ? 2 : 0) | (m.pmi ? 4 : 0));
  e.u32(m.heartbeat_ms);
  e.str(m.secret);
  e.i32(m.world_size);
  e.str(m.pmi_process_mapping);
  encode_binding(e, m.binding);
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
  // Each rank takes at least 12 bytes (rank, two list counts): refuse counts the frame
  // cannot hold before making room for them, or a 16 MiB frame could make ferryd allocate
  // a RankLaunch (56 bytes) for each of its bytes.
  if (!d.ok() || n > f.payload.size() / 12) return make_error("malformed host spec message");
  m.ranks.resize(n);
  for (auto& r : m.ranks) {
    r.rank = d.i32();
    r.env = d.strs();
    r.extra_args = d.strs();
  }
  m.stdin_rank = d.i32();
  m.kill_grace_ms = d.u32();
  uint8_t flags = d.u8();
  m.verbose = flags & 1;
  m.wdir_fallback = flags & 2;
  m.pmi = flags & 4;
  m.heartbeat_ms = d.u32();
  m.secret = d.str();
  m.world_size = d.i32();
  m.pmi_process_mapping = d.str();
  m.binding = decode_binding(d);
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

Result<OutputView> decode_output(const FrameView& f) {
  if (f.type != static_cast<uint8_t>(MsgType::kOutput))
    return make_error("expected a output message, got type " + std::to_string(f.type));
  Decoder d(f.payload);
  OutputView m;
  m.rank = d.i32();
  m.stream = d.u8();
  m.data = d.raw(d.u32());
  if (m.stream != 1 && m.stream != 2) return make_error("malformed output message");
  return finish(d, m, "output");
}

Result<Output> decode_output(const Frame& f) {
  auto v = decode_output(FrameView{f.type, f.payload});
  if (!v) return v.error();
  return Output{v->rank, v->stream, std::string(v->data)};
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

std::string encode(const KvRequest& m) {
  Encoder e;
  e.u32(m.id);
  e.str(m.method);
  e.str(m.target);
  e.str(m.body);
  return frame(MsgType::kKvRequest, e);
}

Result<KvRequest> decode_kv_request(const Frame& f) {
  if (auto s = expect(f, MsgType::kKvRequest, "KV request"); !s) return s.error();
  Decoder d(f.payload);
  KvRequest m;
  m.id = d.u32();
  m.method = d.str();
  m.target = d.str();
  m.body = d.str();
  return finish(d, std::move(m), "KV request");
}

std::string encode(const KvReply& m) {
  Encoder e;
  e.u32(m.id);
  e.u16(m.status);
  e.str(m.body);
  return frame(MsgType::kKvReply, e);
}

Result<KvReply> decode_kv_reply(const Frame& f) {
  if (auto s = expect(f, MsgType::kKvReply, "KV reply"); !s) return s.error();
  Decoder d(f.payload);
  KvReply m;
  m.id = d.u32();
  m.status = d.u16();
  m.body = d.str();
  return finish(d, std::move(m), "KV reply");
}

std::string encode(const PmiBarrier& m, bool done) {
  Encoder e;
  e.u32(m.epoch);
  e.strs(m.keys);
  e.strs(m.values);
  return frame(done ? MsgType::kPmiBarrierDone : MsgType::kPmiBarrier, e);
}

Result<PmiBarrier> decode_pmi_barrier(const Frame& f) {
  if (f.type != static_cast<uint8_t>(MsgType::kPmiBarrier) &&
      f.type != static_cast<uint8_t>(MsgType::kPmiBarrierDone))
    return make_error("expected a PMI barrier message, got type " + std::to_string(f.type));
  Decoder d(f.payload);
  PmiBarrier m;
  m.epoch = d.u32();
  m.keys = d.strs();
  m.values = d.strs();
  if (m.keys.size() != m.values.size()) return make_error("malformed PMI barrier message");
  return finish(d, std::move(m), "PMI barrier");
}

std::string encode(const PmiAbort& m) {
  Encoder e;
  e.i32(m.rank);
  e.i32(m.exit_code);
  e.str(m.message);
  return frame(MsgType::kPmiAbort, e);
}

Result<PmiAbort> decode_pmi_abort(const Frame& f) {
  if (auto s = expect(f, MsgType::kPmiAbort, "PMI abort"); !s) return s.error();
  Decoder d(f.payload);
  PmiAbort m;
  m.rank = d.i32();
  m.exit_code = d.i32();
  m.message = d.str();
  return finish(d, std::move(m), "PMI abort");
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

std::string encode_stdin_ack(uint32_t bytes) {
  Encoder e;
  e.u32(bytes);
  return frame(MsgType::kStdinAck, e);
}

Result<int32_t> decode_i32(const Frame& f) {
  Decoder d(f.payload);
  int32_t v = d.i32();
  return finish(d, v, "control");
}

}  // namespace ferry::wire
