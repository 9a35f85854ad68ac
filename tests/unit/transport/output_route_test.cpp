// Direct output routes: the sealed records (AES-128-GCM through libcrypto) and ferryrun's
// routed link, with the test playing ferryd: it connects back with the real handshake and
// seals records as ferryd does, while a stand-in link plays the SSH channel. The daemon's
// switch from stdout to the route is tested with the real Daemon in
// tests/unit/daemon/daemon_output_route_test.cpp.
#include "ferry/transport/output_route.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>

#include "ferry/common/interface_addresses.hpp"
#include "ferry/transport/connect_back.hpp"
#include "ferry/transport/sealed_records.hpp"

namespace ferry {
namespace {

const std::string kKey(16, 'k');

std::string count_record(uint64_t n) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[7 - i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out;
}

TEST(SealedRecords, OpenInOrderAndHideThePlaintext) {
  auto sealer = RecordSealer::create(kKey);
  auto opener = RecordOpener::create(kKey);
  ASSERT_TRUE(sealer && opener);
  std::string wire;
  sealer->seal("hello, ranks", wire);
  sealer->seal("", wire);
  sealer->seal(std::string(kMaxRecord, 'x'), wire);
  EXPECT_EQ(std::string::npos, wire.find("hello"));
  EXPECT_EQ(std::string::npos, wire.find(std::string(64, 'x')));
  std::string_view plain;
  // A record not all there yet opens as 0 bytes, whatever part of it is missing.
  for (size_t cut : {size_t{0}, size_t{3}, size_t{20}, kRecordHeader + 12 + kRecordTag - 1}) {
    auto r = opener->open(std::span<char>(wire.data(), cut), plain);
    ASSERT_TRUE(r);
    EXPECT_EQ(0u, *r);
  }
  size_t at = 0;
  for (const std::string& want :
       {std::string("hello, ranks"), std::string(), std::string(kMaxRecord, 'x')}) {
    auto r = opener->open(std::span<char>(wire.data() + at, wire.size() - at), plain);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(want, plain);
    at += *r;
  }
  EXPECT_EQ(wire.size(), at);
}

TEST(SealedRecords, AlteredReorderedOrForeignRecordsFail) {
  auto seal_two = [](std::string_view key) {
    auto s = RecordSealer::create(key);
    std::string w;
    s->seal("first", w);
    s->seal("second", w);
    return w;
  };
  const std::string good = seal_two(kKey);
  const size_t first = kRecordHeader + 5 + kRecordTag;
  auto opens = [](std::string w, std::string_view key) {
    auto o = RecordOpener::create(key);
    std::string_view plain;
    auto r = o->open(std::span<char>(w.data(), w.size()), plain);
    return static_cast<bool>(r) && *r > 0;
  };
  EXPECT_TRUE(opens(good, kKey));
  std::string flipped = good;
  flipped[kRecordHeader + 1] ^= 1;  // a ciphertext bit
  EXPECT_FALSE(opens(flipped, kKey));
  std::string tag = good;
  tag[first - 1] ^= 0x80;  // a tag bit
  EXPECT_FALSE(opens(tag, kKey));
  EXPECT_FALSE(opens(good.substr(first), kKey));  // the second record first: wrong number
  EXPECT_FALSE(opens(good, std::string(16, 'K')));
  std::string huge = good;
  huge[0] = 0x7f;  // longer than kMaxRecord
  auto o = RecordOpener::create(kKey);
  std::string_view plain;
  auto r = o->open(std::span<char>(huge.data(), huge.size()), plain);
  ASSERT_FALSE(r);
  EXPECT_NE(std::string::npos, r.error().message.find("too long"));
  EXPECT_FALSE(RecordSealer::create("short"));
}

// The SSH channel, played: the test delivers its bytes and its end.
class StandInSsh final : public Link {
 public:
  void start(DataHandler d, ClosedHandler c) override {
    data = std::move(d);
    closed = std::move(c);
  }
  void send(std::string bytes) override { sent.push_back(std::move(bytes)); }
  void close() override { closed_by_job = true; }
  std::string peer_address() const override { return "10.0.0.9"; }
  std::string local_address() const override { return local; }
  std::string describe() const override { return "node9:22"; }
  bool relays_output() const override { return true; }

  DataHandler data;
  ClosedHandler closed;
  std::vector<std::string> sent;
  bool closed_by_job = false;
  std::string local = "127.0.0.1";  ///< the SSH connection's local address
};

class RoutedLinkTest : public ::testing::Test {
 protected:
  RoutedLinkTest() : router_(io_, [this](const std::string& l) { log_ += l + "\n"; }) {}

  void SetUp() override {
    auto ssh = std::make_unique<StandInSsh>();
    ssh_ = ssh.get();
    std::string problem;
    link_ = router_.route(std::move(ssh), offer_, problem);
    ASSERT_EQ("", problem);
    ASSERT_FALSE(offer_.addresses.empty());
    EXPECT_EQ("127.0.0.1", offer_.addresses.front());  // the SSH connection's own first
    EXPECT_EQ(64u, offer_.secret.size());
    link_->start([this](std::string_view b) { got_ += b; },
                 [this](const std::string& why) { end_ = why; });
  }

  // Connects back as ferryd does, proving `secret`; true once the handshake passed.
  bool connect(const std::string& secret) {
    ConnectBackTarget t;
    t.addresses = {"127.0.0.1"};
    t.port = offer_.port;
    t.secret = secret;
    t.node = offer_.token;
    t.timeout = std::chrono::milliseconds(3000);
    std::optional<Result<ConnectedBack>> r;
    async_connect_back(io_, t, [&](Result<ConnectedBack> c) { r = std::move(c); });
    run_until([&] { return r.has_value(); });
    if (!r || !*r) return false;
    fd_ = std::move((*r)->fd);
    auto s = RecordSealer::create(output_route_key(secret, (*r)->nonce_f, (*r)->nonce_d));
    if (!s) return false;
    sealer_.emplace(std::move(*s));
    run_for(20);  // ferryrun's side of the handshake finishes
    return true;
  }

  void send_record(std::string_view plain) {
    std::string w;
    sealer_->seal(plain, w);
    ASSERT_EQ(static_cast<ssize_t>(w.size()), ::write(fd_.get(), w.data(), w.size()));
  }

  void run_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io_.restart();
      io_.run_for(std::chrono::milliseconds(5));
    }
  }
  void run_for(int ms) {
    io_.restart();
    io_.run_for(std::chrono::milliseconds(ms));
  }

  asio::io_context io_;
  std::string log_;
  OutputRouter router_;
  OutputRouter::Offer offer_;
  StandInSsh* ssh_ = nullptr;
  std::unique_ptr<Link> link_;
  UniqueFd fd_;
  std::optional<RecordSealer> sealer_;
  std::string got_;
  std::optional<std::string> end_;
};

TEST(RouteAddresses, TheSshConnectionsAddressAloneUnlessLoopbackOrNone) {
  const std::vector<std::string> own = {"127.0.0.1", "10.0.0.1", "192.168.5.1"};
  EXPECT_EQ(route_addresses("10.0.0.1", own), (std::vector<std::string>{"10.0.0.1"}));
  EXPECT_EQ(route_addresses("172.17.0.1", own), (std::vector<std::string>{"172.17.0.1"}));
  EXPECT_EQ(route_addresses("127.0.0.1", own),
            (std::vector<std::string>{"127.0.0.1", "10.0.0.1", "192.168.5.1"}));
  EXPECT_EQ(route_addresses("", own), own);
}

// The router listens where the host reached this machine, not on every address (the wildcard):
// with the SSH connection on a non-loopback address, loopback refuses the connection.
TEST(OutputRouterListen, OnlyOnTheAddressesOffered) {
  std::string addr;
  for (const auto& a : own_ipv4_addresses())
    if (!a.starts_with("127.")) addr = a;
  if (addr.empty()) GTEST_SKIP() << "this machine has no IPv4 address but loopback";
  asio::io_context io;
  OutputRouter router(io, nullptr);
  auto ssh = std::make_unique<StandInSsh>();
  ssh->local = addr;
  OutputRouter::Offer offer;
  std::string problem;
  auto link = router.route(std::move(ssh), offer, problem);
  ASSERT_EQ("", problem);
  EXPECT_EQ(offer.addresses, std::vector<std::string>{addr});
  auto reaches = [&](const std::string& a) {
    asio::ip::tcp::socket s(io);
    std::error_code ec;
    s.connect({asio::ip::make_address_v4(a), offer.port}, ec);
    return !ec;
  };
  EXPECT_TRUE(reaches(addr));
  EXPECT_FALSE(reaches("127.0.0.1"));
}

TEST_F(RoutedLinkTest, RouteBytesWaitForTheSshBytesQueuedBeforeIt) {
  ASSERT_TRUE(connect(offer_.secret));
  EXPECT_NE(std::string::npos, log_.find("output on a direct route")) << log_;
  ssh_->data("AB");
  send_record(count_record(5));  // ferryd had queued 5 bytes on SSH
  send_record("XYZ");
  run_for(50);
  EXPECT_EQ("AB", got_);  // XYZ came first on the wire, but after CDE in the stream
  ssh_->data("CDE");
  run_until([&] { return got_.size() == 8; });
  EXPECT_EQ("ABCDEXYZ", got_);
  // ferryd exits: its SSH channel ends cleanly; the link ends once the route drained too.
  ssh_->closed("");
  run_for(20);
  EXPECT_FALSE(end_.has_value());
  send_record("!");
  fd_.reset();
  run_until([&] { return end_.has_value(); });
  ASSERT_TRUE(end_.has_value());
  EXPECT_EQ("", *end_);
  EXPECT_EQ("ABCDEXYZ!", got_);
}

TEST_F(RoutedLinkTest, AForgedRecordEndsTheLink) {
  ASSERT_TRUE(connect(offer_.secret));
  send_record(count_record(0));
  std::string w;
  sealer_->seal("frames", w);
  w[kRecordHeader] ^= 1;
  ASSERT_EQ(static_cast<ssize_t>(w.size()), ::write(fd_.get(), w.data(), w.size()));
  run_until([&] { return end_.has_value(); });
  ASSERT_TRUE(end_.has_value());
  EXPECT_NE(std::string::npos, end_->find("failed authentication")) << *end_;
  EXPECT_EQ("", got_);
}

TEST_F(RoutedLinkTest, SshBytesAfterTheRouteOpenedEndTheLink) {
  ASSERT_TRUE(connect(offer_.secret));
  send_record(count_record(2));
  run_for(30);
  ssh_->data("ABC");
  ASSERT_TRUE(end_.has_value());
  EXPECT_NE(std::string::npos, end_->find("after its output route opened")) << *end_;
}

TEST_F(RoutedLinkTest, WithoutTheSecretNoRouteOpensAndSshCarriesOn) {
  EXPECT_FALSE(connect(std::string(64, '0')));
  run_for(30);
  EXPECT_NE(std::string::npos, log_.find("refused")) << log_;
  ssh_->data("still here");
  ssh_->closed("");
  EXPECT_EQ("still here", got_);
  ASSERT_TRUE(end_.has_value());
  EXPECT_EQ("", *end_);
}

// ferryd's handshake gave up (its time ran out while ferryrun's proof was on its way) and closed
// the connection with the proof unread: a reset, before any record. ferryd never took that
// route, so its output goes on over SSH and the link does not end.
TEST_F(RoutedLinkTest, ARouteResetBeforeItsFirstRecordLeavesOutputOnSsh) {
  ASSERT_TRUE(connect(offer_.secret));
  ssh_->data("AB");
  const linger reset{1, 0};  // close with a reset, as a socket with unread bytes does
  ASSERT_EQ(0, ::setsockopt(fd_.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset));
  fd_.reset();
  run_for(100);
  EXPECT_FALSE(end_) << "the link ended: " << end_.value_or("");
  EXPECT_NE(std::string::npos, log_.find("output stays on SSH")) << log_;
  ssh_->data("CD");
  ssh_->closed("");
  run_until([&] { return end_.has_value(); });
  EXPECT_EQ("ABCD", got_);
  ASSERT_TRUE(end_);
  EXPECT_EQ("", *end_);
}

TEST_F(RoutedLinkTest, AFailedSshConnectionEndsTheLinkAtOnce) {
  ASSERT_TRUE(connect(offer_.secret));
  send_record(count_record(0));
  run_for(20);
  ssh_->closed("connection reset");
  ASSERT_TRUE(end_.has_value());
  EXPECT_EQ("connection reset", *end_);
}

}  // namespace
}  // namespace ferry
