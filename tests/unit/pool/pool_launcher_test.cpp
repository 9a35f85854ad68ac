// A job's way into a pool: the running pool serving the most of its hosts is chosen (a dead
// one passed over, a named one missing refused); a host the pool lacks, or one it cannot serve
// now, goes to the job's own launcher; a served host's link carries ferryd's bytes, its stderr
// lines and the stream's end from the pool's frames, and the job's bytes to the pool.
#include "ferry/pool/pool_launcher.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <asio.hpp>
#include <filesystem>
#include <fstream>

#include "ferry/pool/mux.hpp"
#include "ferry/pool/pool_dir.hpp"

namespace ferry {
namespace {

using asio::local::stream_protocol;

std::string fresh_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "poolrun-" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A pool directory with a hosts file; `live`: a socket that accepts (else a stale file).
struct FakePoolDir {
  FakePoolDir(asio::io_context& io, const std::string& root, const std::string& name,
              const std::string& hosts, bool live)
      : dir(root + "/" + name), acceptor(io) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/hosts") << hosts;
    const std::string path = dir + "/" + kPoolSocketName;
    acceptor.open(stream_protocol());
    acceptor.bind(stream_protocol::endpoint(path));
    acceptor.listen();
    if (!live) acceptor.close();  // the file stays: a pool killed
  }
  std::string dir;
  stream_protocol::acceptor acceptor;
};

class RecordingLauncher : public Launcher {
 public:
  void async_open(const HostEntry& host, const DaemonCommand&, OpenHandler handler) override {
    opened.push_back(host.name);
    handler(make_error(host.name + ": reached directly (test)"));
  }
  void cancel_all() override {}
  std::vector<std::string> opened;
};

TEST(PoolLauncher, TheRunningPoolServingMostHostsIsChosen) {
  asio::io_context io;
  const std::string root = fresh_dir("choose");
  FakePoolDir one(io, root, "one", "a\n", true);
  FakePoolDir two(io, root, "two", "a\nb\nc\n", true);
  FakePoolDir dead(io, root, "dead", "a\nb\nc\nd\n", false);
  auto r = find_pool(root, "", {"a", "b", "d"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->name, "two") << "two serves a and b; dead serves more but does not answer";
  auto none = find_pool(root, "", {"x"});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto named = find_pool(root, "one", {"b"});
  ASSERT_TRUE(named.ok() && named->has_value());
  EXPECT_EQ((*named)->name, "one");
  auto missing = find_pool(root, "dead", {"a"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("--pool dead: no such pool runs"), std::string::npos);
}

TEST(PoolLauncher, HostsThePoolDoesNotServeGoToTheJobsLauncher) {
  asio::io_context io;
  const std::string root = fresh_dir("fallback");
  FakePoolDir pool(io, root, "p", "node1:22\n", true);
  // The pool refuses node1 for now.
  std::string request;
  auto conn = std::make_shared<stream_protocol::socket>(io);
  asio::streambuf in;
  pool.acceptor.async_accept(*conn, [&](std::error_code ec) {
    ASSERT_FALSE(ec);
    asio::async_read_until(*conn, in, '\n', [&](std::error_code, size_t n) {
      request.assign(asio::buffers_begin(in.data()),
                     asio::buffers_begin(in.data()) + static_cast<std::ptrdiff_t>(n));
      asio::write(*conn, asio::buffer(std::string("no node1:22: cannot reach it now\n")));
      conn->close();
    });
  });
  RecordingLauncher direct;
  std::vector<std::string> said;
  PoolLauncher launcher(io, PoolRoute{"p", pool.dir, {"node1:22"}, 22, ""}, direct, "job-x",
                        [&](const std::string& l) { said.push_back(l); });
  HostEntry other, node1;
  other.name = "node2";
  node1.name = "node1";
  int answers = 0;
  launcher.async_open(other, DaemonCommand{}, [&](Result<std::unique_ptr<Link>> r) {
    EXPECT_FALSE(r.ok());
    ++answers;
  });
  launcher.async_open(node1, DaemonCommand{}, [&](Result<std::unique_ptr<Link>> r) {
    EXPECT_FALSE(r.ok());
    ++answers;
  });
  io.run_for(std::chrono::seconds(5));
  EXPECT_EQ(answers, 2);
  EXPECT_EQ(direct.opened, (std::vector<std::string>{"node2", "node1"}));
  EXPECT_EQ(request, "open node1:22 job-x\n");
  ASSERT_EQ(said.size(), 1U);
  EXPECT_EQ(said[0], "node1: pool p: node1:22: cannot reach it now; reached directly");
}

TEST(PoolLauncher, AServedHostsLinkCarriesTheStream) {
  asio::io_context io;
  const std::string root = fresh_dir("stream");
  FakePoolDir pool(io, root, "p", "node1\n", true);
  auto conn = std::make_shared<stream_protocol::socket>(io);
  asio::streambuf in;
  std::string from_job;
  std::function<void()> read_more = [&] {
    asio::async_read(*conn, in, asio::transfer_at_least(1), [&](std::error_code ec, size_t) {
      from_job.assign(asio::buffers_begin(in.data()), asio::buffers_end(in.data()));
      if (!ec) read_more();
    });
  };
  pool.acceptor.async_accept(*conn, [&](std::error_code ec) {
    ASSERT_FALSE(ec);
    asio::async_read_until(*conn, in, '\n', [&](std::error_code, size_t n) {
      in.consume(n);
      const std::string answer = "ok 10.0.0.2 10.0.0.1 node1:22 warm\n" +
                                 encode_mux(MuxType::kData, 0, "hello") +
                                 encode_mux(MuxType::kStderr, 0, "line one\nline ") +
                                 encode_mux(MuxType::kStderr, 0, "two\n");
      asio::write(*conn, asio::buffer(answer));
      read_more();
    });
  });
  RecordingLauncher direct;
  std::vector<std::string> said;
  PoolLauncher launcher(io, PoolRoute{"p", pool.dir, {"node1"}, 0, ""}, direct, "job-y",
                        [&](const std::string& l) { said.push_back(l); });
  HostEntry node1;
  node1.name = "node1";
  std::vector<std::string> stderr_lines;
  DaemonCommand cmd;
  cmd.on_stderr = [&](const std::string& l) { stderr_lines.push_back(l); };
  std::unique_ptr<Link> link;
  std::string data, closed = "(open)";
  launcher.async_open(node1, cmd, [&](Result<std::unique_ptr<Link>> r) {
    ASSERT_TRUE(r.ok()) << r.error().message;
    link = std::move(*r);
    link->start([&](std::string_view b) { data.append(b); },
                [&](const std::string& why) { closed = why; });
    link->send("frame bytes");
  });
  io.run_for(std::chrono::milliseconds(500));
  ASSERT_TRUE(link);
  EXPECT_EQ(link->peer_address(), "10.0.0.2");
  EXPECT_EQ(link->local_address(), "10.0.0.1");
  EXPECT_EQ(link->describe(), "node1:22");
  EXPECT_TRUE(link->relays_output());
  EXPECT_EQ(data, "hello");
  EXPECT_EQ(stderr_lines, (std::vector<std::string>{"line one", "line two"}));
  EXPECT_EQ(from_job, "frame bytes");
  EXPECT_EQ(closed, "(open)");
  EXPECT_TRUE(direct.opened.empty());
  ASSERT_EQ(said.size(), 1U);
  EXPECT_EQ(said[0], "node1: through pool p (warm, no SSH)");
  // The host's ferryd ends: the reason the pool gives is the link's.
  asio::write(*conn, asio::buffer(encode_mux(MuxType::kClose, 0, "ferryd exited with status 3")));
  io.restart();
  io.run_for(std::chrono::milliseconds(300));
  EXPECT_EQ(closed, "ferryd exited with status 3");
}

}  // namespace
}  // namespace ferry
