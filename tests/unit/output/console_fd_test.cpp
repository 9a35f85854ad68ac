// ConsoleOutput's writes to its fds when it writes them itself: buffering, non-blocking
// pipes, write errors and the warning hook.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "console_test_support.hpp"

namespace ferry {
namespace {

using namespace std::string_literals;
using namespace test_support;

TEST(ConsoleOutput, BufferedUntilFullOrFlush) {
  OutputOptions o;
  o.buffer_size = 1024;
  Console con(o);
  con.out.write(0, StreamId::kStdout, "short\n");
  EXPECT_EQ(con.cout.text(), "");
  EXPECT_EQ(con.out.buffered_bytes(), 18u);
  std::size_t total = 18;
  for (int i = 0; i < 100; ++i) {
    const std::string line = std::string(5 + i % 7, 'x') + "\n";
    con.out.write(0, StreamId::kStdout, line);
    total += 12 + line.size();
  }
  const std::string partial = con.cout.text();
  EXPECT_GE(partial.size(), 1024u - 30);
  EXPECT_EQ(partial.back(), '\n');  // a full buffer is written up to a line end
  con.out.flush();
  EXPECT_EQ(con.cout.text().size(), total);
}

TEST(ConsoleOutput, NonBlockingPipeGetsEveryByte) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ::fcntl(p[1], F_SETFL, O_NONBLOCK);
  std::string got;
  std::thread reader([&] {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(p[0], buf, sizeof buf)) > 0) {
      got.append(buf, static_cast<std::size_t>(n));
      if (got.size() % 8 == 0) std::this_thread::yield();
    }
  });
  std::string expected;
  {
    Capture err;
    ConsoleOutput out(with_tag(TagStyle::kNone), p[1], err.fd());
    for (int i = 0; i < 40000; ++i) {
      const std::string line = "line " + std::to_string(i) + std::string(i % 97, '#') + "\n";
      out.write(i % 3, StreamId::kStdout, line);
      expected += line;
    }
    out.flush();
  }
  ::close(p[1]);
  reader.join();
  ::close(p[0]);
  EXPECT_EQ(got, expected);
}

TEST(ConsoleOutput, BrokenPipeIsOneWarning) {
  std::signal(SIGPIPE, SIG_IGN);
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ::close(p[0]);
  Capture err;
  ConsoleOutput out(OutputOptions{}, p[1], err.fd());
  std::vector<std::string> warnings;
  out.set_warn([&](const std::string& w) { warnings.push_back(w); });
  for (int i = 0; i < 3; ++i) {
    out.write(0, StreamId::kStdout, "x\n");
    out.flush();
  }
  ::close(p[1]);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("Broken pipe"), std::string::npos) << warnings[0];
}

// With a reader-gone handler (ferryrun's job), a broken stdout is not output to drop but the end of
// the job: the handler runs once, and the warning says so.
TEST(ConsoleOutput, BrokenStdoutCallsTheReaderGoneHandlerOnce) {
  std::signal(SIGPIPE, SIG_IGN);
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ::close(p[0]);
  Capture err;
  ConsoleOutput out(OutputOptions{}, p[1], err.fd());
  std::vector<std::string> warnings;
  out.set_warn([&](const std::string& w) { warnings.push_back(w); });
  int gone = 0;
  out.set_reader_gone_handler([&] { ++gone; });
  for (int i = 0; i < 3; ++i) {
    out.write(0, StreamId::kStdout, "x\n");
    out.flush();
  }
  ::close(p[1]);
  EXPECT_EQ(gone, 1);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("stdout is a broken pipe"), std::string::npos) << warnings[0];
}

// A broken stderr alone does not end the job: its output is dropped, as before.
TEST(ConsoleOutput, BrokenStderrLeavesTheReaderGoneHandlerAlone) {
  std::signal(SIGPIPE, SIG_IGN);
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ::close(p[0]);
  Capture out_fd;
  ConsoleOutput out(OutputOptions{}, out_fd.fd(), p[1]);
  std::vector<std::string> warnings;
  out.set_warn([&](const std::string& w) { warnings.push_back(w); });
  int gone = 0;
  out.set_reader_gone_handler([&] { ++gone; });
  out.write(0, StreamId::kStderr, "x\n");
  out.flush();
  ::close(p[1]);
  EXPECT_EQ(gone, 0);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("discarded"), std::string::npos) << warnings[0];
}

TEST(ConsoleOutput, WarnHookMayFlushAndPrint) {
  // As ferryrun's Diagnostics does: the hook flushes the console, then prints.
  Capture cout, cerr;
  TempDir dir;
  OutputOptions o = unwritable_files(dir);
  o.line_cap = 4;
  o.queue_cap = 20;
  ConsoleOutput out(o, cout.fd(), cerr.fd());
  int calls = 0;
  out.set_warn([&](const std::string& w) {
    ++calls;
    out.flush();
    out.print_line(StreamId::kStderr, "W: " + w);
  });
  out.write(0, StreamId::kStdout, "holder");                     // file error; holds stdout
  out.write(1, StreamId::kStdout, "queued line 1\nqueued 2\n");  // passes the queue cap
  out.write(0, StreamId::kStdout, "!\n");
  out.flush();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(cout.text(),
            "[0]<stdout>:holder\n[1]<stdout>:queued line 1\n[1]<stdout>:queued 2\n"
            "[0]<stdout>:!\n");
  EXPECT_EQ(cerr.text().rfind("W: cannot ", 0), 0u) << cerr.text();
}

TEST(ConsoleOutput, DestructorDoesNotCallTheWarnHook) {
  std::signal(SIGPIPE, SIG_IGN);
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ::close(p[0]);
  Capture err;
  int calls = 0;
  {
    ConsoleOutput out(OutputOptions{}, p[1], err.fd());
    out.set_warn([&](const std::string&) { ++calls; });
    out.write(0, StreamId::kStdout, "unflushed\n");  // fails only in the destructor's flush
  }
  ::close(p[1]);
  EXPECT_EQ(calls, 0);
  EXPECT_NE(err.text().find("ferryrun: warning: cannot write output to fd"), std::string::npos)
      << err.text();
}

}  // namespace
}  // namespace ferry
