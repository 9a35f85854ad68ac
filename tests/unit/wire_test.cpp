#include <gtest/gtest.h>

#include "ferry/wire/codec.hpp"
#include "ferry/wire/frame.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry::wire {
namespace {

Frame one_frame(const std::string& bytes) {
  FrameReader r;
  r.feed(bytes);
  auto f = r.next();
  EXPECT_TRUE(f.ok());
  EXPECT_TRUE(f->has_value());
  return f->value();
}

TEST(Codec, RoundTripsIntegersAndStrings) {
  Encoder e;
  e.u8(7);
  e.u32(0xdeadbeef);
  e.i32(-5);
  e.u64(1ull << 40);
  e.str(std::string("a\0b", 3));
  e.strs({"x", "", "yz"});
  Decoder d(e.bytes());
  EXPECT_EQ(d.u8(), 7);
  EXPECT_EQ(d.u32(), 0xdeadbeefu);
  EXPECT_EQ(d.i32(), -5);
  EXPECT_EQ(d.u64(), 1ull << 40);
  EXPECT_EQ(d.str(), std::string("a\0b", 3));
  EXPECT_EQ(d.strs(), (std::vector<std::string>{"x", "", "yz"}));
  EXPECT_TRUE(d.ok());
  EXPECT_TRUE(d.at_end());
}

TEST(Codec, TruncatedInputFailsInsteadOfReadingPastTheEnd) {
  Encoder e;
  e.str("hello");
  std::string b = e.take();
  b.pop_back();
  Decoder d(b);
  EXPECT_EQ(d.str(), "");
  EXPECT_FALSE(d.ok());
  Decoder huge(std::string("\xff\xff\xff\x7f", 4));
  EXPECT_TRUE(huge.strs().empty());
  EXPECT_FALSE(huge.ok());
}

TEST(FrameReader, ReassemblesFramesSplitAtEveryByte) {
  std::string stream = encode_frame(4, "first") + encode_frame(5, "") + encode_frame(6, "third");
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    FrameReader r;
    std::vector<Frame> got;
    for (auto part : {stream.substr(0, cut), stream.substr(cut)}) {
      r.feed(part);
      while (true) {
        auto f = r.next();
        ASSERT_TRUE(f.ok());
        if (!*f) break;
        got.push_back(**f);
      }
    }
    ASSERT_EQ(got.size(), 3u) << "cut at " << cut;
    EXPECT_EQ(got[0].type, 4);
    EXPECT_EQ(got[0].payload, "first");
    EXPECT_EQ(got[1].payload, "");
    EXPECT_EQ(got[2].payload, "third");
    EXPECT_EQ(r.buffered(), 0u);
  }
}

TEST(FrameReader, RejectsOversizedLength) {
  FrameReader r;
  r.feed(std::string("\xff\xff\xff\xff\x01", 5));
  auto f = r.next();
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("corrupt"), std::string::npos);
  EXPECT_FALSE(r.next().ok());
}

TEST(Messages, HelloRoundTrip) {
  Hello h;
  h.hostname = "fnode1";
  h.pid = 42;
  h.free_port = 29501;
  auto d = decode_hello(one_frame(encode(h)));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->hostname, "fnode1");
  EXPECT_EQ(d->pid, 42);
  EXPECT_EQ(d->free_port, 29501);
}

TEST(Messages, HelloOfAnotherVersionIsAClearError) {
  Hello h;
  h.version = kProtocolVersion + 1;
  auto d = decode_hello(one_frame(encode(h)));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("protocol version " + std::to_string(kProtocolVersion + 1)),
            std::string::npos);
  EXPECT_NE(d.error().message.find("same ferry release"), std::string::npos);
}

TEST(Messages, ForeignGreetingIsNotTakenForFerryd) {
  auto d = decode_hello(Frame{1, "SSH-2.0-OpenSSH"});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("not a ferryd"), std::string::npos);
}

TEST(Messages, HostSpecRoundTrip) {
  HostSpec s;
  s.job_id = "abc";
  s.wdir = "/work";
  s.argv = {"python3", "-c", "print(1)"};
  s.env = {"A=1", "B="};
  s.ranks = {{4, {"RANK=4"}, {}}, {5, {"RANK=5", "X=y"}, {}}};
  s.stdin_rank = 4;
  s.kill_grace_ms = 1500;
  s.verbose = true;
  s.wdir_fallback = true;
  s.heartbeat_ms = 2000;
  auto d = decode_host_spec(one_frame(encode(s)));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->job_id, "abc");
  EXPECT_EQ(d->argv, s.argv);
  EXPECT_EQ(d->env, s.env);
  ASSERT_EQ(d->ranks.size(), 2u);
  EXPECT_EQ(d->ranks[1].rank, 5);
  EXPECT_EQ(d->ranks[1].env, s.ranks[1].env);
  EXPECT_EQ(d->stdin_rank, 4);
  EXPECT_EQ(d->kill_grace_ms, 1500u);
  EXPECT_TRUE(d->verbose);
  EXPECT_TRUE(d->wdir_fallback);
  EXPECT_EQ(d->heartbeat_ms, 2000u);
}

TEST(Messages, HostSpecCarriesBindingOptions) {
  HostSpec s;
  s.binding.bind_to = BindTo::kNuma;
  s.binding.map_by = MapBy::kSocket;
  s.binding.pe = 4;
  s.binding.cpus_per_rank = 4;
  s.binding.devices_per_rank = 2;
  s.binding.devices = {0, 2, 4};
  s.binding.bind_mem = true;
  s.binding.report_bindings = true;
  auto d = decode_host_spec(one_frame(encode(s)));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->binding.bind_to, BindTo::kNuma);
  EXPECT_EQ(d->binding.map_by, MapBy::kSocket);
  EXPECT_EQ(d->binding.pe, 4);
  EXPECT_EQ(d->binding.devices_per_rank, 2);
  EXPECT_EQ(d->binding.devices, (std::vector<int>{0, 2, 4}));
  EXPECT_TRUE(d->binding.bind_mem);
  EXPECT_FALSE(d->binding.isolate_devices);
  EXPECT_TRUE(d->binding.report_bindings);
}

TEST(Messages, TruncatedHostSpecIsRejected) {
  HostSpec s;
  s.argv = {"true"};
  Frame f = one_frame(encode(s));
  f.payload.resize(f.payload.size() - 3);
  EXPECT_FALSE(decode_host_spec(f).ok());
}

TEST(Messages, OutputCarriesBinaryBytes) {
  Output o;
  o.rank = 3;
  o.stream = 2;
  o.data = std::string("\0\xff\n", 3);
  auto d = decode_output(one_frame(encode(o)));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->rank, 3);
  EXPECT_EQ(d->stream, 2);
  EXPECT_EQ(d->data, o.data);
  Output bad = o;
  bad.stream = 3;
  EXPECT_FALSE(decode_output(one_frame(encode(bad))).ok());
}

TEST(Messages, ExitedAndControlRoundTrip) {
  auto e = decode_exited(one_frame(encode(Exited{7, 0, 11})));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->rank, 7);
  EXPECT_EQ(e->signal, 11);
  auto t = one_frame(encode_terminate(2500));
  EXPECT_EQ(t.type, static_cast<uint8_t>(MsgType::kTerminate));
  EXPECT_EQ(*decode_i32(t), 2500);
  auto s = one_frame(encode_signal(2));
  EXPECT_EQ(*decode_i32(s), 2);
  EXPECT_FALSE(decode_started(s).ok());  // wrong type
}

TEST(Messages, HelloCarriesKvPortAndInterfaces) {
  Hello h;
  h.kv_port = 41000;
  h.interfaces = {"lo up loopback 127.0.0.1/8", "eth0 up 10.231.0.11/24"};
  auto d = decode_hello(one_frame(encode(h)));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->kv_port, 41000);
  EXPECT_EQ(d->interfaces, h.interfaces);
}

TEST(Messages, HostSpecCarriesRendezvousFields) {
  HostSpec s;
  s.ranks = {{3, {"RANK=3"}, {"--local-rank=1"}}};
  s.secret = std::string(64, 'a');
  s.pmi = true;
  s.world_size = 8;
  s.pmi_process_mapping = "(vector,(0,4,2))";
  auto d = decode_host_spec(one_frame(encode(s)));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->ranks.at(0).extra_args, std::vector<std::string>{"--local-rank=1"});
  EXPECT_EQ(d->secret, s.secret);
  EXPECT_TRUE(d->pmi);
  EXPECT_FALSE(d->verbose);
  EXPECT_EQ(d->world_size, 8);
  EXPECT_EQ(d->pmi_process_mapping, s.pmi_process_mapping);
}

TEST(Messages, KvRequestAndReplyRoundTripBinaryBodies) {
  std::string blob("\0\r\n\r\nvalue\xff", 12);
  auto q = decode_kv_request(one_frame(encode(KvRequest{7, "PUT", "/global/0", blob})));
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->id, 7u);
  EXPECT_EQ(q->method, "PUT");
  EXPECT_EQ(q->target, "/global/0");
  EXPECT_EQ(q->body, blob);
  auto r = decode_kv_reply(one_frame(encode(KvReply{7, 404, ""})));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->id, 7u);
  EXPECT_EQ(r->status, 404);
  EXPECT_TRUE(r->body.empty());
  EXPECT_FALSE(decode_kv_reply(one_frame(encode(KvRequest{1, "GET", "/a/b", ""}))).ok());
}

TEST(Messages, PmiBarrierBothWaysAndAbort) {
  PmiBarrier b{2, {"k1", "k2"}, {"v1", "v 2"}};
  auto up = one_frame(encode(b, false));
  auto down = one_frame(encode(b, true));
  EXPECT_EQ(up.type, static_cast<uint8_t>(MsgType::kPmiBarrier));
  EXPECT_EQ(down.type, static_cast<uint8_t>(MsgType::kPmiBarrierDone));
  for (const auto& f : {up, down}) {
    auto d = decode_pmi_barrier(f);
    ASSERT_TRUE(d.ok()) << d.error().message;
    EXPECT_EQ(d->epoch, 2u);
    EXPECT_EQ(d->keys, b.keys);
    EXPECT_EQ(d->values, b.values);
  }
  // Keys and values must pair up.
  Encoder e;
  e.u32(1);
  e.strs({"k"});
  e.strs({});
  EXPECT_FALSE(decode_pmi_barrier(Frame{static_cast<uint8_t>(MsgType::kPmiBarrier), e.take()}).ok());
  auto a = decode_pmi_abort(one_frame(encode(PmiAbort{5, 7, "boom"})));
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->rank, 5);
  EXPECT_EQ(a->exit_code, 7);
  EXPECT_EQ(a->message, "boom");
}

}  // namespace
}  // namespace ferry::wire
