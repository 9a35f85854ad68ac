// A Python process's frames read from its memory, as the state report does where gdb has no
// CPython extension: a real python3.11 in a known call chain.
#include "ferry/daemon/python_frames.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "ferry/daemon/rank_probe.hpp"

namespace ferry {
namespace {

constexpr const char* kPython = "/usr/bin/python3.11";

// A python3.11 child in inner() <- outer() <- <module>, a worker thread beside it; killed at
// the end.
class PythonChild : public testing::Test {
 protected:
  void SetUp() override {
    if (::access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
    char dir[] = "/tmp/ferry-pyframes.XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    script_ = dir_ + "/nap_ünï.py";
    std::ofstream(script_) << "import sys, threading, time\n"          // 1
                              "def inner(n):\n"                        // 2
                              "    x = [i * 2 for i in range(n)]\n"    // 3
                              "    sys.stdout.write('ready\\n')\n"     // 4
                              "    sys.stdout.flush()\n"               // 5
                              "    time.sleep(60)\n"                   // 6
                              "def outer():\n"                         // 7
                              "    return inner(3)\n"                  // 8
                              "threading.Thread(target=time.sleep,\n"  // 9
                              "                 args=(60,), daemon=True).start()\n"
                              "outer()\n";  // 11
    int out[2];
    ASSERT_EQ(::pipe(out), 0);
    pid_ = ::fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      ::execl(kPython, kPython, script_.c_str(), nullptr);
      ::_exit(127);
    }
    ::close(out[1]);
    char buf[16] = {};
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    ::close(out[0]);
    ASSERT_GT(n, 0) << "python3.11 did not start";
  }
  // The frames once the child sleeps in inner() (it flushed just before; on a loaded machine
  // it may take a moment to get there): read again until then, for 10 s at most.
  Result<std::vector<PythonFrame>> frames_in_sleep() const {
    Result<std::vector<PythonFrame>> frames = make_error("not read");
    for (int i = 0; i < 100; ++i) {
      frames = read_python_frames(pid_, 40);
      if (frames && !frames->empty() && frames->front().line == 6) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return frames;
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }
  std::string dir_, script_;
  pid_t pid_ = -1;
};

TEST_F(PythonChild, TheMainThreadsFramesInnermostFirst) {
  auto frames = frames_in_sleep();
  ASSERT_TRUE(frames) << frames.error().message;
  ASSERT_EQ(frames->size(), 3u) << format_python_frames(*frames);
  EXPECT_EQ((*frames)[0].file, script_);  // a file name that is not ASCII
  EXPECT_EQ((*frames)[0].line, 6);
  EXPECT_EQ((*frames)[0].function, "inner");
  EXPECT_EQ((*frames)[1].line, 8);
  EXPECT_EQ((*frames)[1].function, "outer");
  EXPECT_EQ((*frames)[2].line, 11);
  EXPECT_EQ((*frames)[2].function, "<module>");
  EXPECT_EQ(format_python_frames(*frames), "Traceback (most recent call first):\n  File \"" +
                                               script_ + "\", line 6, in inner\n  File \"" +
                                               script_ + "\", line 8, in outer\n  File \"" +
                                               script_ + "\", line 11, in <module>\n");
  auto two = read_python_frames(pid_, 2);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->size(), 2u);
}

// What the state report shows of a Python rank where gdb has no CPython extension: the
// "python:" part as gdb's would read, from memory.
TEST_F(PythonChild, TheReportsPythonPartComesFromMemoryWhereGdbCannotGiveIt) {
  ASSERT_TRUE(frames_in_sleep());
  EXPECT_EQ(python_from_memory(pid_, "gdb has no CPython extension: install python3.11-dbg"),
            "python:\n    Traceback (most recent call first):\n      File \"" + script_ +
                "\", line 6, in inner\n      File \"" + script_ +
                "\", line 8, in outer\n      File \"" + script_ + "\", line 11, in <module>\n");
  EXPECT_EQ(python_from_memory(::getpid(), "install gdb and python3.11-dbg")
                .rfind("python: unavailable (install gdb and python3.11-dbg; from its memory: not "
                       "CPython 3.11",
                       0),
            0u);
}

TEST(PythonFrames, AProcessThatIsNotPython311IsSaidToBeNone) {
  auto frames = read_python_frames(::getpid(), 40);
  ASSERT_FALSE(frames);
  EXPECT_EQ(frames.error().message.rfind("not CPython 3.11", 0), 0u) << frames.error().message;
}

// The location table's forms (CPython's Objects/locations.md, 3.11): each entry's first byte
// is 1CCCCLLL (code, length - 1), then the code's operands.
TEST(PythonFrames, TheLocationTableGivesEachInstructionItsLine) {
  const std::string table = {
      static_cast<char>(0x80 | (13 << 3) | 0), 0x04,           // 1 unit, no column, line +2
      static_cast<char>(0x80 | (0 << 3) | 1),  0x05,           // 2 units, short form: same line
      static_cast<char>(0x80 | (11 << 3) | 0), 1,    9,        // 1 unit, one-line form: line +1
      static_cast<char>(0x80 | (14 << 3) | 2), 0x07, 0, 1, 2,  // 3 units, long form: line -3
      static_cast<char>(0x80 | (15 << 3) | 0),                 // 1 unit, no location
  };
  EXPECT_EQ(python311_line(table, 10, -1), 10);  // not started: the first line
  EXPECT_EQ(python311_line(table, 10, 0), 12);
  EXPECT_EQ(python311_line(table, 10, 1), 12);
  EXPECT_EQ(python311_line(table, 10, 2), 12);
  EXPECT_EQ(python311_line(table, 10, 3), 13);
  EXPECT_EQ(python311_line(table, 10, 4), 10);
  EXPECT_EQ(python311_line(table, 10, 6), 10);
  EXPECT_EQ(python311_line(table, 10, 7), 0);
  EXPECT_EQ(python311_line(table, 10, 8), 0);  // past the table
}

}  // namespace
}  // namespace ferry
