#include "ferry/output/console_output.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ferry {
namespace {

using namespace std::string_literals;
namespace fs = std::filesystem;

// An in-memory file standing in for the console's stdout or stderr.
class Capture {
 public:
  Capture() : fd_(::memfd_create("capture", MFD_CLOEXEC)) {}
  ~Capture() { ::close(fd_); }
  int fd() const { return fd_; }
  std::string text() const {
    std::string out;
    char buf[65536];
    off_t off = 0;
    ssize_t n;
    while ((n = ::pread(fd_, buf, sizeof buf, off)) > 0) {
      out.append(buf, static_cast<std::size_t>(n));
      off += n;
    }
    return out;
  }

 private:
  int fd_;
};

struct Console {
  explicit Console(OutputOptions o = {}) : out(std::move(o), cout.fd(), cerr.fd()) {
    out.set_warn([this](const std::string& w) { warnings.push_back(w); });
  }
  std::vector<std::string> warnings;
  Capture cout, cerr;
  ConsoleOutput out;
};

OutputOptions with_tag(TagStyle tag) {
  OutputOptions o;
  o.tag = tag;
  return o;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/ferry_output_test.XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path path;
};

// Options whose per-rank files cannot be written: the output directory is a regular file
// in `dir`, so no directory can be made under it.
OutputOptions unwritable_files(const TempDir& dir) {
  const fs::path blocker = dir.path / "file";
  std::ofstream(blocker) << "x";
  OutputOptions o;
  o.output_dir = blocker.string();
  return o;
}

TEST(ConsoleOutput, TagStyles) {
  const struct {
    TagStyle style;
    const char* out;
    const char* err;
  } cases[] = {
      {TagStyle::kHorovod, "[3]<stdout>:a\n[3]<stdout>:b\n", "[3]<stderr>:e\n"},
      {TagStyle::kOpenMpi, "[1,3]<stdout>:a\n[1,3]<stdout>:b\n", "[1,3]<stderr>:e\n"},
      {TagStyle::kMpich, "[3] a\n[3] b\n", "[3] e\n"},
      {TagStyle::kNone, "a\nb\n", "e\n"},
  };
  for (const auto& c : cases) {
    Console con(with_tag(c.style));
    con.out.write(3, StreamId::kStdout, "a\nb\n");
    con.out.write(3, StreamId::kStderr, "e\n");
    con.out.flush();
    EXPECT_EQ(con.cout.text(), c.out);
    EXPECT_EQ(con.cerr.text(), c.err);
  }
  EXPECT_EQ(format_tag(TagStyle::kOpenMpi, 12, StreamId::kStderr), "[1,12]<stderr>:");
}

TEST(ConsoleOutput, EverySplitPositionGivesIdenticalOutput) {
  const std::string text = "first\n\nbin\0\x01\xff\n  spaced line  \nlast without newline"s;
  const std::string expected =
      "[0]<stdout>:first\n[0]<stdout>:\n[0]<stdout>:bin\0\x01\xff\n"
      "[0]<stdout>:  spaced line  \n[0]<stdout>:last without newline\n"s;
  for (std::size_t cap : {std::size_t{1000}, std::size_t{5}}) {
    for (std::size_t i = 0; i <= text.size(); ++i) {
      OutputOptions o;
      o.line_cap = cap;
      Console con(o);
      con.out.write(0, StreamId::kStdout, std::string_view(text).substr(0, i));
      con.out.write(0, StreamId::kStdout, std::string_view(text).substr(i));
      con.out.close_stream(0, StreamId::kStdout);
      con.out.flush();
      ASSERT_EQ(con.cout.text(), expected) << "split at " << i << " cap " << cap;
    }
  }
}

TEST(ConsoleOutput, InterleavedRanksNeverTearALine) {
  // Four ranks, lines of varied length (some past the cap, so ranks take the fd and
  // others queue or wait), fed in random chunks in random order.
  constexpr int kRanks = 4;
  std::mt19937 rng(12345);
  std::vector<std::vector<std::string>> lines(kRanks);
  std::vector<std::string> streams(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    for (int i = 0; i < 300; ++i) {
      const std::size_t len = rng() % 5 == 0 ? 100 + rng() % 400 : rng() % 40;
      std::string line = "r" + std::to_string(r) + "l" + std::to_string(i) + ":";
      line += std::string(len, static_cast<char>('a' + r));
      lines[r].push_back(line);
      streams[r] += line + "\n";
    }
  }
  OutputOptions o;
  o.line_cap = 64;
  o.buffer_size = 1000;
  Console con(o);
  std::vector<std::size_t> pos(kRanks, 0);
  int open = kRanks;
  while (open > 0) {
    const int r = static_cast<int>(rng() % kRanks);
    if (pos[r] == streams[r].size()) continue;
    const std::size_t n = std::min<std::size_t>(1 + rng() % 200, streams[r].size() - pos[r]);
    con.out.write(r, StreamId::kStdout, std::string_view(streams[r]).substr(pos[r], n));
    pos[r] += n;
    if (pos[r] == streams[r].size()) {
      con.out.close_stream(r, StreamId::kStdout);
      --open;
    }
  }
  con.out.flush();
  std::istringstream in(con.cout.text());
  std::vector<std::size_t> next(kRanks, 0);
  std::string got;
  int count = 0;
  while (std::getline(in, got)) {
    ASSERT_GE(got.size(), 12u);
    ASSERT_EQ(got[0], '[');
    const int r = got[1] - '0';
    ASSERT_TRUE(r >= 0 && r < kRanks) << got;
    ASSERT_EQ(got.substr(0, 12), "[" + std::to_string(r) + "]<stdout>:");
    ASSERT_LT(next[r], lines[r].size());
    ASSERT_EQ(got.substr(12), lines[r][next[r]]) << "line " << count;
    ++next[r];
    ++count;
  }
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(next[r], lines[r].size());
  EXPECT_TRUE(con.warnings.empty());
}

TEST(ConsoleOutput, StderrGoesToStderrFdUnlessMerged) {
  Console sep;
  sep.out.write(1, StreamId::kStdout, "o1\n");
  sep.out.write(1, StreamId::kStderr, "e1\n");
  sep.out.write(1, StreamId::kStdout, "o2\n");
  sep.out.flush();
  EXPECT_EQ(sep.cout.text(), "[1]<stdout>:o1\n[1]<stdout>:o2\n");
  EXPECT_EQ(sep.cerr.text(), "[1]<stderr>:e1\n");

  OutputOptions o;
  o.merge_stderr = true;
  Console merged(o);
  merged.out.write(1, StreamId::kStdout, "o1\n");
  merged.out.write(1, StreamId::kStderr, "e1\n");
  merged.out.write(1, StreamId::kStdout, "o2\n");
  merged.out.flush();
  EXPECT_EQ(merged.cout.text(), "[1]<stdout>:o1\n[1]<stderr>:e1\n[1]<stdout>:o2\n");
  EXPECT_EQ(merged.cerr.text(), "");
}

TEST(ConsoleOutput, SameFileForBothFdsIsOneDestination) {
  Capture cap;
  const int dup_fd = ::dup(cap.fd());
  {
    ConsoleOutput out(OutputOptions{}, cap.fd(), dup_fd);
    out.write(0, StreamId::kStdout, std::string(100000, 'x'));  // holds the fd
    out.write(0, StreamId::kStderr, "err\n");                   // must not land mid-line
    out.flush();
    out.write(0, StreamId::kStdout, "\n");
    out.flush();
  }
  ::close(dup_fd);
  EXPECT_EQ(cap.text(), "[0]<stdout>:" + std::string(100000, 'x') + "\n[0]<stderr>:err\n");
}

TEST(ConsoleOutput, LastLineWithoutNewline) {
  TempDir dir;
  OutputOptions o;
  o.output_dir = dir.path.string();
  Console con(o);
  con.out.write(0, StreamId::kStdout, "one\ntail");
  con.out.flush();
  EXPECT_EQ(con.cout.text(), "[0]<stdout>:one\n");
  con.out.close_stream(0, StreamId::kStdout);
  con.out.flush();
  EXPECT_EQ(con.cout.text(), "[0]<stdout>:one\n[0]<stdout>:tail\n");
  EXPECT_EQ(read_file(dir.path / "rank.0" / "stdout"), "one\ntail");
}

TEST(ConsoleOutput, TenMegabyteLineWithoutNewlinePassesThroughBounded) {
  OutputOptions o;
  Console con(o);
  std::string big(10 << 20, 'z');
  for (std::size_t i = 0; i < big.size(); i += 7919) big[i] = static_cast<char>('A' + i % 26);
  std::size_t max_buffered = 0;
  for (std::size_t i = 0; i < big.size(); i += 65536) {
    con.out.write(0, StreamId::kStdout, std::string_view(big).substr(i, 65536));
    max_buffered = std::max(max_buffered, con.out.buffered_bytes());
    if (i == (5 << 20)) con.out.write(1, StreamId::kStdout, "other rank\n");  // queued
  }
  EXPECT_LE(max_buffered, o.line_cap + o.buffer_size + 100);
  con.out.close_stream(0, StreamId::kStdout);
  con.out.flush();
  EXPECT_EQ(con.out.buffered_bytes(), 0u);
  EXPECT_EQ(con.cout.text(), "[0]<stdout>:" + big + "\n[1]<stdout>:other rank\n");

  Console once;  // one write call of the whole line
  once.out.write(2, StreamId::kStdout, big);
  EXPECT_LE(once.out.buffered_bytes(), o.buffer_size);
  once.out.write(2, StreamId::kStdout, "\n");
  once.out.flush();
  EXPECT_EQ(once.cout.text(), "[2]<stdout>:" + big + "\n");
}

TEST(ConsoleOutput, BinaryWithNulsAndNoNewlines) {
  std::string bin(3 << 20, '\0');
  std::mt19937 rng(7);
  for (char& c : bin) {
    c = static_cast<char>(rng() & 0xff);
    if (c == '\n') c = '\0';
  }
  TempDir dir;
  OutputOptions o;
  o.tag = TagStyle::kNone;
  o.output_dir = dir.path.string();
  Console con(o);
  for (std::size_t i = 0; i < bin.size(); i += 10007) {
    con.out.write(0, StreamId::kStdout, std::string_view(bin).substr(i, 10007));
    ASSERT_LE(con.out.buffered_bytes(), o.line_cap + o.buffer_size + 16 * 1024);
  }
  con.out.close_stream(0, StreamId::kStdout);
  con.out.flush();
  EXPECT_EQ(con.cout.text(), bin + "\n");
  EXPECT_EQ(read_file(dir.path / "rank.0" / "stdout"), bin);
}

TEST(ConsoleOutput, TimestampPrefix) {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  EXPECT_EQ(format_timestamp(1700000000), "Tue Nov 14 22:13:20 2023");
  EXPECT_EQ(format_timestamp(1699000000), "Fri Nov  3 08:26:40 2023");  // day padded
  const struct {
    TagStyle style;
    const char* line;
  } cases[] = {
      {TagStyle::kHorovod, "Tue Nov 14 22:13:20 2023[5]<stdout>:hi\n"},
      {TagStyle::kOpenMpi, "Tue Nov 14 22:13:20 2023[1,5]<stdout>:hi\n"},
      {TagStyle::kMpich, "Tue Nov 14 22:13:20 2023[5] hi\n"},
      {TagStyle::kNone, "Tue Nov 14 22:13:20 2023<stdout>:hi\n"},
  };
  for (const auto& c : cases) {
    OutputOptions o = with_tag(c.style);
    o.timestamps = true;
    Console con(o);
    con.out.set_clock([] { return std::time_t{1700000000}; });
    con.out.write(5, StreamId::kStdout, "hi\nhi\n");
    con.out.flush();
    EXPECT_EQ(con.cout.text(), std::string(c.line) + c.line);
  }
  OutputOptions o;
  o.timestamps = true;
  Console real(o);  // the real clock: check the shape only
  real.out.write(0, StreamId::kStdout, "x\n");
  real.out.flush();
  const std::string line = real.cout.text();
  ASSERT_EQ(line.size(), 24u + 14u) << line;
  EXPECT_EQ(line.substr(24), "[0]<stdout>:x\n");
  EXPECT_EQ(line[3], ' ');
  EXPECT_EQ(line[13], ':');
  EXPECT_EQ(line[16], ':');
}

TEST(ConsoleOutput, RankFilePaths) {
  OutputOptions o;
  o.output_dir = "/d/";
  o.world_size = 16;
  EXPECT_EQ(rank_file_path(o, 0, StreamId::kStdout), "/d/rank.00/stdout");
  EXPECT_EQ(rank_file_path(o, 15, StreamId::kStderr), "/d/rank.15/stderr");
  o.world_size = 1;
  EXPECT_EQ(rank_file_path(o, 0, StreamId::kStdout), "/d/rank.0/stdout");
  o.world_size = 10;
  EXPECT_EQ(rank_file_path(o, 3, StreamId::kStdout), "/d/rank.3/stdout");
  o.world_size = 101;
  EXPECT_EQ(rank_file_path(o, 7, StreamId::kStdout), "/d/rank.007/stdout");
  // Open MPI pads to the digits of the rank count, horovodrun to those of the last rank.
  o.layout = FileLayout::kOpenMpi;
  EXPECT_EQ(rank_file_path(o, 7, StreamId::kStderr), "/d/1/rank.007/stderr");
  o.world_size = 10;
  EXPECT_EQ(rank_file_path(o, 3, StreamId::kStdout), "/d/1/rank.03/stdout");
  o.world_size = 9;
  EXPECT_EQ(rank_file_path(o, 3, StreamId::kStdout), "/d/1/rank.3/stdout");
}

TEST(ConsoleOutput, PerRankFilesHorovodLayout) {
  TempDir dir;
  OutputOptions o;
  o.world_size = 16;
  o.output_dir = (dir.path / "out").string();  // created as needed
  Console con(o);
  for (int r = 0; r < 16; ++r) {
    con.out.write(r, StreamId::kStdout, "rank " + std::to_string(r) + "\npartial");
    if (r % 2 == 0) con.out.write(r, StreamId::kStderr, "e\0rr"s);
  }
  for (int r = 0; r < 16; ++r) {
    con.out.close_stream(r, StreamId::kStdout);
    con.out.close_stream(r, StreamId::kStderr);
  }
  con.out.flush();
  for (int r = 0; r < 16; ++r) {
    char name[32];
    std::snprintf(name, sizeof name, "rank.%02d", r);
    EXPECT_EQ(read_file(dir.path / "out" / name / "stdout"),
              "rank " + std::to_string(r) + "\npartial");
    ASSERT_TRUE(fs::exists(dir.path / "out" / name / "stderr")) << name;
    EXPECT_EQ(read_file(dir.path / "out" / name / "stderr"), r % 2 == 0 ? "e\0rr"s : "");
  }
  EXPECT_FALSE(fs::exists(dir.path / "out" / "rank.0"));
  EXPECT_TRUE(con.warnings.empty());
}

TEST(ConsoleOutput, PerRankFilesOpenMpiLayout) {
  TempDir dir;
  OutputOptions o;
  o.world_size = 16;
  o.layout = FileLayout::kOpenMpi;
  o.output_dir = dir.path.string();
  fs::create_directories(dir.path / "1" / "rank.05");
  std::ofstream(dir.path / "1" / "rank.05" / "stdout") << std::string(300000, '!');  // old run
  Console con(o);
  const std::string big(100000, 'q');  // larger than the file buffer
  con.out.write(5, StreamId::kStdout, "small\n");
  con.out.write(5, StreamId::kStdout, big);
  con.out.write(5, StreamId::kStderr, "err\n");
  con.out.flush();
  EXPECT_EQ(read_file(dir.path / "1" / "rank.05" / "stdout"), "small\n" + big);
  EXPECT_EQ(read_file(dir.path / "1" / "rank.05" / "stderr"), "err\n");
  con.out.close_stream(5, StreamId::kStderr);
  con.out.write(5, StreamId::kStderr, "late\n");  // after close: appended, not truncated
  con.out.flush();
  EXPECT_EQ(read_file(dir.path / "1" / "rank.05" / "stderr"), "err\nlate\n");
  EXPECT_FALSE(fs::exists(dir.path / "1" / "rank.5"));
}

TEST(ConsoleOutput, FileErrorIsOneWarningNotACrash) {
  TempDir dir;
  OutputOptions o = unwritable_files(dir);
  o.world_size = 4;
  Console con(o);
  for (int r = 0; r < 4; ++r) con.out.write(r, StreamId::kStdout, "line\n");
  for (int r = 0; r < 4; ++r) con.out.close_stream(r, StreamId::kStdout);
  con.out.flush();
  ASSERT_EQ(con.warnings.size(), 1u);
  EXPECT_NE(con.warnings[0].find("rank.0/stdout"), std::string::npos) << con.warnings[0];
  EXPECT_EQ(con.cout.text(),
            "[0]<stdout>:line\n[1]<stdout>:line\n[2]<stdout>:line\n"
            "[3]<stdout>:line\n");
}

TEST(ConsoleOutput, DefaultWarningIsAWholeLineOnStderrNamingTheProgram) {
  for (const std::string program : {"ferryrun", "mpirun"}) {
    Capture cout, cerr;
    TempDir dir;
    OutputOptions o = unwritable_files(dir);
    o.program = program;  // the name the user typed
    ConsoleOutput out(o, cout.fd(), cerr.fd());
    out.write(0, StreamId::kStdout, "a\n");
    out.flush();
    const std::string err = cerr.text();
    EXPECT_EQ(err.rfind(program + ": warning: cannot ", 0), 0u) << err;
    EXPECT_EQ(err.back(), '\n');
  }
}

TEST(ConsoleOutput, LinesOfOthersWaitBehindALongLine) {
  OutputOptions o;
  o.line_cap = 8;
  Console con(o);
  con.out.write(0, StreamId::kStdout, "0123456789");  // past the cap: holds stdout
  con.out.write(1, StreamId::kStdout, "one\ntwo\n");
  con.out.print_line(StreamId::kStdout, "diagnostic");
  con.out.write(2, StreamId::kStderr, "err\n");  // other fd: not held
  con.out.flush();
  EXPECT_EQ(con.cout.text(), "[0]<stdout>:0123456789");
  EXPECT_EQ(con.cerr.text(), "[2]<stderr>:err\n");
  con.out.write(0, StreamId::kStdout, "AB\nnext\n");
  con.out.flush();
  EXPECT_EQ(con.cout.text(),
            "[0]<stdout>:0123456789AB\n[1]<stdout>:one\n[1]<stdout>:two\ndiagnostic\n"
            "[0]<stdout>:next\n");
}

TEST(ConsoleOutput, SecondLongLineWaitsAndTakesTheFdNext) {
  OutputOptions o;
  o.line_cap = 4;
  Console con(o);
  con.out.write(0, StreamId::kStdout, "AAAAAA");
  con.out.write(1, StreamId::kStdout, "BBBBBBBB");  // waits, held past the cap
  con.out.write(2, StreamId::kStdout, "c\n");
  con.out.write(1, StreamId::kStdout, "BB");
  con.out.write(0, StreamId::kStdout, "A\n");  // 0 releases; 2's line, then 1 takes
  con.out.write(1, StreamId::kStdout, "B");
  con.out.write(2, StreamId::kStdout, "d\n");  // queued behind 1 now
  con.out.close_stream(1, StreamId::kStdout);  // 1 ends without newline
  con.out.flush();
  EXPECT_EQ(con.cout.text(),
            "[0]<stdout>:AAAAAAA\n[2]<stdout>:c\n[1]<stdout>:BBBBBBBBBBB\n[2]<stdout>:d\n");
}

TEST(ConsoleOutput, QueueOverflowBreaksTheHolderLineWithoutLosingBytes) {
  OutputOptions o;
  o.line_cap = 16;
  o.queue_cap = 1000;
  Console con(o);
  const std::string first(100, 'h');
  con.out.write(0, StreamId::kStdout, first);  // holds the fd
  std::string expected_others;
  int n = 0;
  // Each queued line is 12 + 28 bytes: the 26th passes 1000 bytes.
  for (; n < 25; ++n) {
    const std::string line = "line " + std::to_string(100 + n) + std::string(19, '.') + "\n";
    con.out.write(1, StreamId::kStdout, line);
    expected_others += "[1]<stdout>:" + line;
  }
  con.out.flush();
  EXPECT_EQ(con.cout.text(), "[0]<stdout>:" + first);  // still held, 1000 bytes queued
  EXPECT_TRUE(con.warnings.empty());
  const std::string last = "line 125" + std::string(19, '.') + "\n";
  con.out.write(1, StreamId::kStdout, last);
  expected_others += "[1]<stdout>:" + last;
  ASSERT_EQ(con.warnings.size(), 1u);
  EXPECT_NE(con.warnings[0].find("no bytes were lost"), std::string::npos);
  EXPECT_NE(con.warnings[0].find("rank 0"), std::string::npos);
  con.out.write(0, StreamId::kStdout, "tail\n");  // continuation: a new tagged line
  con.out.flush();
  EXPECT_EQ(con.cout.text(),
            "[0]<stdout>:" + first + "\n" + expected_others + "[0]<stdout>:tail\n");
  EXPECT_EQ(con.out.buffered_bytes(), 0u);
}

TEST(ConsoleOutput, QueueOverflowCountsWaitingLongLines) {
  OutputOptions o;
  o.line_cap = 4;
  o.queue_cap = 100;
  Console con(o);
  con.out.write(0, StreamId::kStdout, "aaaaaa");
  con.out.write(1, StreamId::kStdout, std::string(150, 'b'));  // waits; over the queue cap
  con.out.write(0, StreamId::kStdout, "aa\n");
  con.out.write(1, StreamId::kStdout, "b\n");
  con.out.flush();
  // 0 is broken, 1 takes the fd at once; 0's continuation waits behind 1's line.
  EXPECT_EQ(con.cout.text(),
            "[0]<stdout>:aaaaaa\n[1]<stdout>:" + std::string(151, 'b') + "\n[0]<stdout>:aa\n");
  EXPECT_EQ(con.warnings.size(), 1u);
}

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
