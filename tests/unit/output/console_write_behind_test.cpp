// ConsoleOutput with write_behind(): a console pipe nobody reads never blocks the caller's
// loop; the flow handler says stop once too much waits and go once it drained; every byte
// still arrives, in order.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "console_test_support.hpp"

namespace ferry {
namespace {

using namespace test_support;
using Clock = std::chrono::steady_clock;

// Reads a pipe once told to, or after a rescue delay, so that a writer that blocks after
// all makes the test fail (too slow) instead of hanging.
class LateReader {
 public:
  explicit LateReader(int fd) : fd_(fd) {
    thread_ = std::thread([this] {
      const auto rescue = Clock::now() + std::chrono::seconds(4);
      while (!go_ && Clock::now() < rescue)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      char buf[65536];
      ssize_t n;
      while ((n = ::read(fd_, buf, sizeof buf)) > 0) got_.append(buf, static_cast<std::size_t>(n));
    });
  }
  ~LateReader() { join(); }
  void go() { go_ = true; }
  // Call after the write end is closed.
  const std::string& join() {
    if (thread_.joinable()) thread_.join();
    return got_;
  }

 private:
  int fd_;
  std::atomic<bool> go_{false};
  std::string got_;
  std::thread thread_;
};

// Writes 4 MB of lines to the console `p[1]` nobody reads until told to: the loop never
// waits, the flow handler says stop and go, every byte arrives in order, and p[1] (shared
// with the shell, in ferryrun) keeps its flags. Closes both fds.
void full_console_never_blocks_the_loop(int p[2]) {
  LateReader reader(p[0]);
  asio::io_context io;
  Capture err;
  OutputOptions o;
  o.behind_limit = 1 << 20;
  std::vector<bool> flow;
  std::string expected;
  auto console = std::make_unique<ConsoleOutput>(o, p[1], err.fd());
  console->write_behind(io);
  console->set_flow_handler([&](bool behind) { flow.push_back(behind); });

  // 4 MB of lines: the pipe or socket holds a few hundred KiB at most, nobody reads it.
  const auto start = Clock::now();
  for (int i = 0; i < 40000; ++i) {
    const std::string line = "line " + std::to_string(i) + std::string(i % 197, '#') + "\n";
    console->write(i % 3, StreamId::kStdout, line);
    expected += "[" + std::to_string(i % 3) + "]<stdout>:" + line;
    if (i % 100 == 99) console->flush();
  }
  console->flush();
  const auto writing = Clock::now() - start;
  EXPECT_LT(writing, std::chrono::seconds(1)) << "writes waited for the reader";
  EXPECT_EQ(flow, std::vector<bool>{true}) << "told to stop once, past the limit";

  // The loop keeps its timers meanwhile.
  asio::steady_timer timer(io);
  bool fired = false;
  timer.expires_after(std::chrono::milliseconds(50));
  timer.async_wait([&](std::error_code ec) { fired = !ec; });
  const auto armed = Clock::now();
  io.run_for(std::chrono::milliseconds(300));
  io.restart();
  EXPECT_TRUE(fired);
  EXPECT_LT(Clock::now() - armed, std::chrono::seconds(1));
  EXPECT_EQ(flow.size(), 1u) << "nothing drained, so no go yet";

  reader.go();
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (flow.size() < 2 && Clock::now() < deadline) {
    io.run_for(std::chrono::milliseconds(20));
    io.restart();
  }
  EXPECT_EQ(flow, (std::vector<bool>{true, false})) << "told to go on once it drained";
  console.reset();  // writes what is left
  EXPECT_EQ(::fcntl(p[1], F_GETFL) & O_NONBLOCK, 0) << "the shared open file's flags changed";
  ::close(p[1]);
  const std::string& got = reader.join();
  ::close(p[0]);
  EXPECT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected) << "bytes lost or out of order";
}

TEST(ConsoleWriteBehind, FullPipeNeverBlocksTheLoopAndEveryByteArrives) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);  // blocking, as a shell's pipe is
  full_console_never_blocks_the_loop(p);
}

TEST(ConsoleWriteBehind, FullSocketNeverBlocksTheLoopAndEveryByteArrives) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  int p[2] = {sv[1], sv[0]};  // read end, write end
  full_console_never_blocks_the_loop(p);
}

// A console that keeps up is written on the caller's thread: after flush() the bytes are
// there, no thread in between, and the shared open file keeps its flags.
TEST(ConsoleWriteBehind, ConsoleThatKeepsUpIsWrittenAtOnce) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ASSERT_EQ(::fcntl(p[0], F_SETFL, O_NONBLOCK), 0);  // the test's reads must not wait
  Capture file;
  std::string expected;
  {
    asio::io_context io;
    OutputOptions o = with_tag(TagStyle::kNone);
    ConsoleOutput to_pipe(o, p[1], p[1]);
    ConsoleOutput to_file(o, file.fd(), file.fd());
    to_pipe.write_behind(io);
    to_file.write_behind(io);
    for (int i = 0; i < 20; ++i) {
      const std::string line = "line " + std::to_string(i) + "\n";
      expected += line;
      to_pipe.write(0, StreamId::kStdout, line);
      to_file.write(0, StreamId::kStdout, line);
      to_pipe.flush();
      to_file.flush();
      EXPECT_EQ(to_pipe.buffered_bytes(), 0u);
      EXPECT_EQ(to_file.buffered_bytes(), 0u);
      EXPECT_EQ(file.text(), expected);
      char buf[64];
      const ssize_t n = ::read(p[0], buf, sizeof buf);
      EXPECT_EQ(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0), line);
    }
    EXPECT_EQ(::fcntl(p[1], F_GETFL) & O_NONBLOCK, 0) << "the shared pipe's flags changed";
  }
  ::close(p[1]);
  ::close(p[0]);
}

TEST(ConsoleWriteBehind, WriteErrorIsOneWarning) {
  std::signal(SIGPIPE, SIG_IGN);
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ::close(p[0]);
  asio::io_context io;
  Capture err;
  ConsoleOutput out(OutputOptions{}, p[1], err.fd());
  out.write_behind(io);
  std::vector<std::string> warnings;
  out.set_warn([&](const std::string& w) { warnings.push_back(w); });
  // The thread meets the error; the next call reports it.
  for (int i = 0; i < 100 && warnings.empty(); ++i) {
    out.write(0, StreamId::kStdout, "x\n");
    out.flush();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  out.write(0, StreamId::kStdout, "y\n");
  out.flush();
  ::close(p[1]);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("Broken pipe"), std::string::npos) << warnings[0];
}

// An unfinished line is no prompt while the reading is stopped for a console that is behind:
// its rest may be waiting in ferry, not in the rank. Its wait starts again when reading goes
// on, as long as amid heavy output; taken as a prompt, it would hold the fd and the other
// ranks' lines would pile up behind it.
TEST(ConsoleWriteBehind, NoPromptWhileReadingIsStopped) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  LateReader reader(p[0]);
  asio::io_context io;
  Capture err;
  OutputOptions o;
  o.behind_limit = 1 << 20;
  Clock::time_point t = Clock::now();
  std::vector<bool> flow;
  std::string expected;
  auto console = std::make_unique<ConsoleOutput>(o, p[1], err.fd());
  console->set_steady_clock([&] { return t; });
  console->write_behind(io);
  console->set_flow_handler([&](bool behind) { flow.push_back(behind); });
  auto line = [&](int rank, const std::string& text) {
    console->write(rank, StreamId::kStdout, text + "\n");
    console->flush();
    expected += "[" + std::to_string(rank) + "]<stdout>:" + text + "\n";
  };
  for (int i = 0; i < 20000; ++i) line(1, "filler " + std::to_string(i) + std::string(100, '-'));
  ASSERT_EQ(flow, std::vector<bool>{true});
  console->write(0, StreamId::kStdout, "Password: ");
  console->flush();
  t += std::chrono::seconds(1);
  console->tick();
  line(1, "while stopped");

  reader.go();
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (flow.size() < 2 && Clock::now() < deadline) {
    io.run_for(std::chrono::milliseconds(20));
    io.restart();
  }
  ASSERT_EQ(flow, (std::vector<bool>{true, false}));
  // Just after reading went on, its rest is likelier on its way: the wait is 2 s, not 300 ms.
  t += std::chrono::milliseconds(1800);
  console->tick();
  line(1, "read again");
  t += std::chrono::milliseconds(300);  // now it sat long enough: shown, holding the fd
  console->tick();
  console->write(1, StreamId::kStdout, "behind the prompt\n");
  console->write(0, StreamId::kStdout, "ok\n");
  console->flush();
  expected += "[0]<stdout>:Password: ok\n[1]<stdout>:behind the prompt\n";
  console.reset();
  ::close(p[1]);
  const std::string& got = reader.join();
  ::close(p[0]);
  EXPECT_EQ(got.size(), expected.size());
  EXPECT_EQ(got.substr(got.size() - std::min<std::size_t>(got.size(), 200)),
            expected.substr(expected.size() - 200));
}

// Bytes in use on the heap, every arena and mmap()ed block included.
std::size_t heap_in_use() {
  const struct mallinfo2 m = ::mallinfo2();
  return m.uordblks + m.hblkhd;
}

// What waits for a reader that stopped costs about its own size: 9 MiB behind a full pipe
// hold at most a quarter more (one growing buffer would double its capacity past 8 MiB, to
// 16 MiB, and copy the 8 on the way), and all of it arrives in order.
TEST(ConsoleWriteBehind, WhatWaitsCostsItsOwnSize) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  LateReader reader(p[0]);
  std::string expected;
  std::size_t grew = 0;
  std::size_t waiting = 0;
  {
    asio::io_context io;
    Capture err;
    OutputOptions o = with_tag(TagStyle::kNone);
    o.behind_limit = std::size_t{64} << 20;  // no flow control in the way
    ConsoleOutput out(o, p[1], err.fd());
    out.write_behind(io);
    std::string line(999, 'q');
    line += '\n';
    expected.reserve(std::size_t{10} << 20);
    const std::size_t before = heap_in_use();
    for (int i = 0; i < 9 * 1024; ++i) {  // lines of 1000 bytes, flushed in 256 KiB writes
      line[0] = static_cast<char>('a' + i % 26);
      out.write(0, StreamId::kStdout, line);
      expected += line;
    }
    out.flush();
    grew = heap_in_use() - before;
    waiting = out.buffered_bytes();
    reader.go();
  }
  ::close(p[1]);
  const std::string& got = reader.join();
  ::close(p[0]);
  EXPECT_GT(waiting, std::size_t{8} << 20) << "the pipe took more than it holds";
  EXPECT_LT(grew, waiting + waiting / 4) << waiting << " bytes waiting held " << grew;
  EXPECT_TRUE(got == expected) << "bytes lost or out of order";
}

TEST(ConsoleWriteBehind, DestructorWritesEverythingFirst) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  LateReader reader(p[0]);
  std::string expected;
  {
    asio::io_context io;
    Capture err;
    ConsoleOutput out(with_tag(TagStyle::kNone), p[1], err.fd());
    out.write_behind(io);
    const std::string block(1 << 20, 'z');
    for (int i = 0; i < 3; ++i) {
      out.write(0, StreamId::kStdout, block);
      expected += block;
    }
    out.write(0, StreamId::kStdout, "unended");  // the destructor writes it (untagged: as is)
    expected += "unended";
    reader.go();
  }
  ::close(p[1]);
  EXPECT_TRUE(reader.join() == expected);
}

}  // namespace
}  // namespace ferry
