// ferryd moving its output onto a direct route while ranks write: the test plays ferryrun on
// stdout and on the route (the real handshake, the real record opener). Whatever ferryd
// queued on stdout before the switch stays there, the route's first record counts exactly
// those bytes, each record holds whole frames, and each rank's output, stdout's part then
// the route's, is whole and in order.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>

#include <fstream>
#include <optional>
#include <string>

#include "daemon_front_end.hpp"
#include "ferry/transport/connect_back.hpp"
#include "ferry/transport/sealed_records.hpp"

namespace ferry {
namespace {

using asio::ip::tcp;
using test_support::FrontEnd;

const char kSecret[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const char kToken[] = "route-test-token";

std::string expected_lines(int n) {
  std::string s;
  for (int i = 1; i <= n; ++i) s += std::to_string(i) + "\n";
  return s;
}

TEST(DaemonOutputRoute, OutputMovesToTheRouteMidStreamLosingAndReorderingNothing) {
  ::signal(SIGPIPE, SIG_IGN);
  FrontEnd fe(nullptr);

  // ferryrun's listening end.
  tcp::acceptor acceptor(fe.io, tcp::endpoint(asio::ip::make_address_v4("127.0.0.1"), 0));
  auto sock = std::make_shared<tcp::socket>(fe.io);
  std::optional<RecordOpener> opener;
  std::string route_bytes;
  std::array<char, 65536> chunk{};
  bool route_eof = false;
  // Reads what the route holds, without blocking (between the loop's slices, as FrontEnd
  // reads stdout): no read of the loop's own may be left half done when ferryd stops it.
  auto drain_route = [&](int wait_ms) {
    if (!opener) return;
    for (;;) {
      pollfd p{sock->native_handle(), POLLIN, 0};
      if (::poll(&p, 1, wait_ms) <= 0) return;
      const ssize_t n = ::read(sock->native_handle(), chunk.data(), chunk.size());
      if (n <= 0) {
        route_eof = n == 0;
        return;
      }
      route_bytes.append(chunk.data(), static_cast<size_t>(n));
    }
  };
  acceptor.async_accept(*sock, [&](std::error_code ec) {
    ASSERT_FALSE(ec);
    ConnectBackCheck check;
    check.secret_of = [](const std::string& node) -> std::optional<std::string> {
      if (node == kToken) return std::string(kSecret);
      return std::nullopt;
    };
    serve_connect_back(fe.io, sock, check, [&](Result<AcceptedBack> r) {
      ASSERT_TRUE(r) << r.error().message;
      auto o = RecordOpener::create(output_route_key(kSecret, r->nonce_f, r->nonce_d));
      ASSERT_TRUE(o);
      opener.emplace(std::move(*o));
    });
  });

  // Each rank writes a first part, waits for the flag, then writes the rest: the test sets the
  // flag once the route is open, so the switch falls between the parts, whatever the timing.
  constexpr int kLines = 300000;  // about 2 MB per rank
  const std::string flag = ::testing::TempDir() + "route-flag-" + std::to_string(::getpid());
  ::unlink(flag.c_str());
  wire::HostSpec s;
  s.job_id = "route-switch";
  s.argv = {"/bin/sh", "-c",
            "seq 1 200000; while [ ! -e \"$0\" ]; do sleep 0.01; done; seq 200001 " +
                std::to_string(kLines),
            flag};
  s.world_size = 2;
  s.binding.bind_to = BindTo::kNone;
  for (int r = 0; r < 2; ++r) s.ranks.push_back({r, {}, {}});
  fe.send(s);
  // The route is offered once output flows on stdout; ferryd opens it after 1 MiB of it
  // (each rank's first part is 1.3 MB).
  ASSERT_TRUE(fe.run_until([&] { return !fe.output(0, StreamId::kStdout).empty(); }));
  fe.send(wire::OutputRoute{{"127.0.0.1"}, acceptor.local_endpoint().port(), kSecret, kToken});
  // ferryd stops its loop once everything it queued was written; the route then holds the
  // rest in the kernel (ferryd's socket closes only with the Daemon).
  std::optional<FrontEnd::Clock::time_point> opened;
  ASSERT_TRUE(fe.run_until(
                  [&] {
                    drain_route(0);
                    if (opener && !opened) opened = FrontEnd::Clock::now();
                    // A moment for ferryd to read ferryrun's proof and move its output.
                    if (opened && FrontEnd::Clock::now() - *opened > std::chrono::milliseconds(100))
                      std::ofstream{flag};
                    return route_eof;
                  },
                  std::chrono::milliseconds(20000)) ||
              fe.stopped());
  ASSERT_TRUE(opener.has_value()) << "ferryd never connected";
  drain_route(200);
  ::unlink(flag.c_str());

  // Open the route: its count first, then frames.
  ASSERT_TRUE(opener.has_value());
  std::vector<std::string> plains;
  size_t at = 0;
  while (at < route_bytes.size()) {
    std::string_view plain;
    auto took =
        opener->open(std::span<char>(route_bytes.data() + at, route_bytes.size() - at), plain);
    ASSERT_TRUE(took) << took.error().message;
    ASSERT_GT(*took, 0u) << "the route ended inside a record";
    plains.emplace_back(plain);
    at += *took;
  }
  ASSERT_GE(plains.size(), 2u);
  ASSERT_EQ(8u, plains[0].size());
  uint64_t boundary = 0;
  for (char c : plains[0]) boundary = (boundary << 8) | static_cast<unsigned char>(c);
  uint64_t stdout_bytes = 0;
  for (const auto& f : fe.frames()) stdout_bytes += 5 + f.frame.payload.size();
  EXPECT_EQ(boundary, stdout_bytes) << "the count must be every byte ferryd wrote to stdout";

  // Records end at frame ends (the front end then never joins a frame from two records):
  // each record alone is whole frames.
  for (size_t i = 1; i < plains.size(); ++i) {
    wire::FrameReader one;
    one.feed(plains[i]);
    for (;;) {
      auto f = one.next_view();
      ASSERT_TRUE(f) << f.error().message;
      if (!*f) break;
    }
    ASSERT_EQ(one.buffered(), 0u) << "record " << i << " of " << plains.size()
                                  << " ends inside a frame";
  }
  wire::FrameReader reader;
  for (size_t i = 1; i < plains.size(); ++i) reader.feed(plains[i]);
  std::string routed[2];
  bool done = false;
  size_t routed_outputs = 0;
  for (;;) {
    auto f = reader.next();
    ASSERT_TRUE(f) << f.error().message;
    if (!*f) break;
    EXPECT_FALSE(done) << "a frame after Done";
    if ((*f)->type == static_cast<uint8_t>(wire::MsgType::kDone)) done = true;
    if ((*f)->type != static_cast<uint8_t>(wire::MsgType::kOutput)) continue;
    auto o = wire::decode<wire::OutputView>(**f);
    ASSERT_TRUE(o);
    ASSERT_TRUE(o->rank == 0 || o->rank == 1);
    routed[o->rank] += o->data;
    ++routed_outputs;
  }
  EXPECT_TRUE(done) << "Done comes on the route";
  EXPECT_GT(routed_outputs, 0u) << "the switch came after the output ended: nothing tested";
  EXPECT_FALSE(fe.output(0, StreamId::kStdout).empty());
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(fe.output(r, StreamId::kStdout) + routed[r] == expected_lines(kLines))
        << "rank " << r << ": " << fe.output(r, StreamId::kStdout).size() << " bytes on stdout, "
        << routed[r].size() << " on the route";
}

}  // namespace
}  // namespace ferry
