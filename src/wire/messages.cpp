#include "ferry/wire/messages.hpp"

#include "ferry/wire/binding_options.hpp"
#include "ferry/wire/schema.hpp"

namespace ferry::wire {
namespace {

constexpr std::string_view kMagicView{kMagic, sizeof(kMagic) - 1};

// One case per message type: the switch makes the compiler name a type left out.
// NOLINTNEXTLINE(readability-function-size)
const char* name_of(MsgType t) {
  switch (t) {
    case MsgType::kHello:
      return "hello";
    case MsgType::kHostSpec:
      return "host spec";
    case MsgType::kStarted:
      return "started";
    case MsgType::kOutput:
      return "output";
    case MsgType::kExited:
      return "exited";
    case MsgType::kStdin:
      return "stdin";
    case MsgType::kSignal:
      return "signal";
    case MsgType::kTerminate:
      return "terminate";
    case MsgType::kDone:
      return "done";
    case MsgType::kFailure:
      return "failure";
    case MsgType::kLog:
      return "log";
    case MsgType::kHeartbeat:
      return "heartbeat";
    case MsgType::kKvRequest:
      return "KV request";
    case MsgType::kKvReply:
      return "KV reply";
    case MsgType::kPmiBarrier:
      return "PMI barrier";
    case MsgType::kPmiBarrierDone:
      return "PMI barrier done";
    case MsgType::kPmiAbort:
      return "PMI abort";
    case MsgType::kStdinAck:
      return "stdin ack";
    case MsgType::kStartRanks:
      return "start ranks";
    case MsgType::kStopRanks:
      return "stop ranks";
    case MsgType::kOutputRoute:
      return "output route";
    case MsgType::kPmixFence:
      return "PMIx fence";
    case MsgType::kPmixFenceDone:
      return "PMIx fence done";
    case MsgType::kPmixModexRequest:
      return "PMIx modex request";
    case MsgType::kPmixModexReply:
      return "PMIx modex reply";
    case MsgType::kStateRequest:
      return "state request";
    case MsgType::kStateReport:
      return "state report";
    case MsgType::kPreflight:
      return "preflight";
    case MsgType::kPreflightResult:
      return "preflight result";
    case MsgType::kCheckRequest:
      return "check request";
    case MsgType::kCheckReport:
      return "check report";
    case MsgType::kPmixStart:
      return "PMIx start";
    case MsgType::kSyncOffer:
      return "sync offer";
    case MsgType::kSyncNeed:
      return "sync need";
    case MsgType::kSyncData:
      return "sync data";
    case MsgType::kSyncAck:
      return "sync ack";
    case MsgType::kSyncReady:
      return "sync ready";
    case MsgType::kSyncProbe:
      return "sync probe";
    case MsgType::kPmixPublish:
      return "PMIx publish";
    case MsgType::kPmixLookup:
      return "PMIx lookup";
    case MsgType::kPmixUnpublish:
      return "PMIx unpublish";
    case MsgType::kPmixNames:
      return "PMIx names";
    case MsgType::kPmixGroupOp:
      return "PMIx group operation";
    case MsgType::kPmixGroupDone:
      return "PMIx group operation done";
    case MsgType::kPmixSpawn:
      return "PMIx spawn";
    case MsgType::kPmixSpawnDone:
      return "PMIx spawn done";
    case MsgType::kPmixSpawnJob:
      return "PMIx spawned job";
    case MsgType::kSamples:
      return "samples";
    case MsgType::kPmiSpawn:
      return "PMI spawn";
    case MsgType::kPmiSpawnDone:
      return "PMI spawn done";
    case MsgType::kPmiSpawnJob:
      return "PMI spawned job";
  }
  return "unknown";
}

void put_u32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// The version field of a Hello or HostSpec whose payload begins with `prefix`, read before
// the rest, so a peer of another release gets a version error, not "malformed".
Result<void> check_version(std::string_view payload, std::string_view prefix, const char* peer,
                           const char* self, const char* hint) {
  Decoder d(payload);
  if (d.raw(prefix.size()) != prefix) return {};
  uint32_t version = d.u32();
  if (!d.ok() || version == kProtocolVersion) return {};
  return make_error(std::string(peer) + " speaks protocol version " + std::to_string(version) +
                    ", this " + self + " speaks version " + std::to_string(kProtocolVersion) +
                    hint);
}

// What a message needs beyond its fields' own ranges.
Result<void> check(const PmiBarrier& m) {
  if (m.keys.size() != m.values.size()) return make_error("malformed PMI barrier message");
  return {};
}
Result<void> check(const OutputView& m) {
  if (m.stream != 1 && m.stream != 2) return make_error("malformed output message");
  return {};
}
Result<void> check(const PmiBarrierDone& m) { return check(static_cast<const PmiBarrier&>(m)); }
Result<void> check(const PmiSpawn& m) {
  if (m.preput_keys.size() != m.preput_values.size() || m.info_apps.size() != m.info_keys.size() ||
      m.info_keys.size() != m.info_values.size())
    return make_error("malformed PMI spawn");
  for (uint32_t a : m.info_apps)
    if (a >= m.apps.size()) return make_error("malformed PMI spawn");
  return {};
}
Result<void> check(const PmiSpawnJob& m) {
  if (m.preput_keys.size() != m.preput_values.size())
    return make_error("malformed PMI spawned job");
  return {};
}
Result<void> check(const auto&) { return {}; }

template <class M>
Result<M> decode_fields(const FrameView& f) {
  if (f.type != static_cast<uint8_t>(M::kType))
    return make_error(std::string("expected a ") + name_of(M::kType) + " message, got type " +
                      std::to_string(f.type));
  if constexpr (std::is_same_v<M, Hello>) {
    if (f.payload.substr(0, kMagicView.size()) != kMagicView)
      return make_error("the remote program is not a ferryd (unexpected greeting)");
    if (auto s = check_version(f.payload, kMagicView, "ferryd", "ferryrun",
                               "; install the same ferry release on every host");
        !s)
      return s.error();
  }
  if constexpr (std::is_same_v<M, HostSpec>)
    if (auto s = check_version(f.payload, {}, "ferryrun", "ferryd", ""); !s) return s.error();
  Decoder d(f.payload);
  M m;
  get(d, m);
  if (!d.ok() || !d.at_end())
    return make_error(std::string("malformed ") + name_of(M::kType) + " message");
  if (auto s = check(m); !s) return s.error();
  return m;
}

// Decodes `f` as whichever alternative of `V` has its type.
template <class V, size_t I = 0>
Result<V> decode_variant(const FrameView& f, const char* side) {
  if constexpr (I == std::variant_size_v<V>) {
    return make_error(std::string("unexpected message type ") + std::to_string(f.type) + " for " +
                      side);
  } else {
    using M = std::variant_alternative_t<I, V>;
    if (f.type != static_cast<uint8_t>(M::kType)) return decode_variant<V, I + 1>(f, side);
    auto m = decode_fields<M>(f);
    if (!m) return m.error();
    return V{std::in_place_index<I>, std::move(m.value())};
  }
}

}  // namespace

void write_output_header(std::span<char, kOutputHeader> out, int32_t rank, uint8_t stream,
                         size_t n) {
  char* h = out.data();
  put_u32(h, static_cast<uint32_t>(kOutputHeader - 4 + n));
  h[4] = static_cast<char>(MsgType::kOutput);
  put_u32(h + 5, static_cast<uint32_t>(rank));
  h[9] = static_cast<char>(stream);
  put_u32(h + 10, static_cast<uint32_t>(n));
}

std::string encode(const Output& m) {
  std::string out(kOutputHeader + m.data.size(), '\0');
  write_output_header(std::span<char, kOutputHeader>(out.data(), kOutputHeader), m.rank, m.stream,
                      m.data.size());
  out.replace(kOutputHeader, m.data.size(), m.data);
  return out;
}

template <class M>
std::string encode(const M& m) {
  Encoder e;
  put(e, m);
  return encode_frame(static_cast<uint8_t>(M::kType), e.bytes());
}

template <class M>
Result<M> decode(const FrameView& f) {
  return decode_fields<M>(f);
}

Result<ToDaemon> decode_to_daemon(const FrameView& f) {
  return decode_variant<ToDaemon>(f, "ferryd");
}

Result<ToFront> decode_to_front(const FrameView& f) {
  return decode_variant<ToFront>(f, "ferryrun");
}

std::string hello_greeting() {
  return encode(Hello{}).substr(kHelloGreetingOffset, 1 + kMagicView.size() + sizeof(uint32_t));
}

// Every message has its encoder and decoder; a type missing here fails to link.
#define FERRY_WIRE_MESSAGE(M)               \
  template std::string encode<M>(const M&); \
  template Result<M> decode<M>(const FrameView&);
FERRY_WIRE_MESSAGE(Hello)
FERRY_WIRE_MESSAGE(HostSpec)
FERRY_WIRE_MESSAGE(Started)
FERRY_WIRE_MESSAGE(Exited)
FERRY_WIRE_MESSAGE(Failure)
FERRY_WIRE_MESSAGE(KvRequest)
FERRY_WIRE_MESSAGE(KvReply)
FERRY_WIRE_MESSAGE(PmiBarrier)
FERRY_WIRE_MESSAGE(PmiBarrierDone)
FERRY_WIRE_MESSAGE(PmiAbort)
FERRY_WIRE_MESSAGE(Stdin)
FERRY_WIRE_MESSAGE(Signal)
FERRY_WIRE_MESSAGE(Terminate)
FERRY_WIRE_MESSAGE(Done)
FERRY_WIRE_MESSAGE(Log)
FERRY_WIRE_MESSAGE(Heartbeat)
FERRY_WIRE_MESSAGE(StdinAck)
FERRY_WIRE_MESSAGE(StartRanks)
FERRY_WIRE_MESSAGE(StopRanks)
FERRY_WIRE_MESSAGE(OutputRoute)
FERRY_WIRE_MESSAGE(PmixFence)
FERRY_WIRE_MESSAGE(PmixFenceDone)
FERRY_WIRE_MESSAGE(PmixModexRequest)
FERRY_WIRE_MESSAGE(PmixModexReply)
FERRY_WIRE_MESSAGE(StateRequest)
FERRY_WIRE_MESSAGE(StateReport)
FERRY_WIRE_MESSAGE(Preflight)
FERRY_WIRE_MESSAGE(PreflightResult)
FERRY_WIRE_MESSAGE(CheckRequest)
FERRY_WIRE_MESSAGE(CheckReport)
FERRY_WIRE_MESSAGE(PmixStart)
FERRY_WIRE_MESSAGE(SyncProbe)
FERRY_WIRE_MESSAGE(SyncOffer)
FERRY_WIRE_MESSAGE(SyncNeed)
FERRY_WIRE_MESSAGE(SyncData)
FERRY_WIRE_MESSAGE(SyncAck)
FERRY_WIRE_MESSAGE(SyncReady)
FERRY_WIRE_MESSAGE(PmixPublish)
FERRY_WIRE_MESSAGE(PmixLookup)
FERRY_WIRE_MESSAGE(PmixUnpublish)
FERRY_WIRE_MESSAGE(PmixNames)
FERRY_WIRE_MESSAGE(PmixGroupOp)
FERRY_WIRE_MESSAGE(PmixGroupDone)
FERRY_WIRE_MESSAGE(PmixSpawn)
FERRY_WIRE_MESSAGE(PmixSpawnDone)
FERRY_WIRE_MESSAGE(PmixSpawnJob)
FERRY_WIRE_MESSAGE(Samples)
FERRY_WIRE_MESSAGE(PmiSpawn)
FERRY_WIRE_MESSAGE(PmiSpawnDone)
FERRY_WIRE_MESSAGE(PmiSpawnJob)
#undef FERRY_WIRE_MESSAGE
// Output is written by encode(const Output&) and FrameBatch, through write_output_header().
template Result<OutputView> decode<OutputView>(const FrameView&);

}  // namespace ferry::wire
