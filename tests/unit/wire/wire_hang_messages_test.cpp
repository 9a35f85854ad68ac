// The messages of the state report, the preflight and --check through each side's decoder:
// a message left out of ToDaemon / ToFront would be refused as an unexpected type.
#include <gtest/gtest.h>

#include <string>

#include "ferry/wire/messages.hpp"

namespace ferry::wire {
namespace {

FrameView view(const std::string& frame) {
  return FrameView{static_cast<uint8_t>(frame[4]), std::string_view(frame).substr(5)};
}

template <class M>
M to_daemon(const M& m) {
  const std::string f = encode(m);
  auto r = decode_to_daemon(view(f));
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r && std::holds_alternative<M>(*r) ? std::get<M>(*r) : M{};
}

template <class M>
M to_front(const M& m) {
  const std::string f = encode(m);
  auto r = decode_to_front(view(f));
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r && std::holds_alternative<M>(*r) ? std::get<M>(*r) : M{};
}

TEST(WireHang, StateRequestAndReport) {
  EXPECT_EQ(to_daemon(StateRequest{7}).id, 7u);
  StateReport r;
  r.id = 7;
  r.ranks.push_back(RankState{3, 4242, "sleeping", 15, 1000, 9, "native:\n    #0 poll\n"});
  r.note = "n";
  StateReport back = to_front(r);
  EXPECT_EQ(back.id, 7u);
  ASSERT_EQ(back.ranks.size(), 1u);
  EXPECT_EQ(back.ranks[0].pid, 4242);
  EXPECT_EQ(back.ranks[0].stack, "native:\n    #0 poll\n");
  EXPECT_EQ(back.note, "n");
}

TEST(WireHang, PreflightBothWays) {
  Preflight p = to_daemon(Preflight{true, "10.0.0.1", 29500, 3000});
  EXPECT_TRUE(p.listen);
  EXPECT_EQ(p.address, "10.0.0.1");
  EXPECT_EQ(p.port, 29500);
  EXPECT_EQ(p.timeout_ms, 3000u);
  PreflightResult r = to_front(PreflightResult{"no answer", "ETIMEDOUT", "eth0", 3001});
  EXPECT_EQ(r.reason, "ETIMEDOUT");
  EXPECT_EQ(r.interface, "eth0");
}

TEST(WireHang, PmixStartCarriesTheNodeName) {
  EXPECT_EQ(to_daemon(PmixStart{"node7#2"}).node, "node7#2");
}

TEST(WireHang, SyncMessagesBothWays) {
  SyncOffer o;
  o.items.push_back({"src/run.py", 1, 0755, 5000000000ULL, std::string(64, 'a'), ""});
  o.items.push_back({"src/cfg", 2, 0777, 0, "", "../conf"});
  o.digest = std::string(64, 'd');
  SyncOffer ob = to_daemon(o);
  ASSERT_EQ(ob.items.size(), 2u);
  EXPECT_EQ(ob.digest, o.digest);
  EXPECT_EQ(to_daemon(SyncProbe{std::string(64, 'e')}).digest, std::string(64, 'e'));
  SyncNeed want;
  want.offer_wanted = true;
  EXPECT_TRUE(to_front(want).offer_wanted);
  EXPECT_EQ(ob.items[0].size, 5000000000ULL);
  EXPECT_EQ(ob.items[0].mode, 0755u);
  EXPECT_EQ(ob.items[1].target, "../conf");
  SyncData d = to_daemon(SyncData{std::string(64, 'b'), "bytes", true});
  EXPECT_TRUE(d.last);
  EXPECT_EQ(d.data, "bytes");
  EXPECT_EQ(to_front(SyncNeed{{"h1", "h2"}, ""}).hashes.size(), 2u);
  EXPECT_EQ(to_front(SyncAck{1ULL << 40}).bytes, 1ULL << 40);
  EXPECT_EQ(to_front(SyncReady{"", "no room", ""}).error, "no room");
  EXPECT_EQ(to_front(SyncReady{"/c", "", "a new copy"}).how, "a new copy");
}

TEST(WireHang, CheckRequestAndReport) {
  to_daemon(CheckRequest{});
  CheckReport c;
  c.version = "0.1.0";
  c.cores = 8;
  c.software = {"python3 3.11.2"};
  c.link_speeds = {"eth0 10000"};
  CheckReport back = to_front(c);
  EXPECT_EQ(back.cores, 8u);
  EXPECT_EQ(back.software, c.software);
  EXPECT_EQ(back.link_speeds, c.link_speeds);
}

}  // namespace
}  // namespace ferry::wire
