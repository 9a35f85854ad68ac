#include "ferry/daemon/rank_probe.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

namespace ferry {
namespace {

TEST(RankProbe, ParsesStatWithSpacesAndParenthesesInTheName) {
  const std::string text =
      "4242 (py (worker) 1) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 7 0 1234 "
      "1000 200 18446744073709551615\n";
  ProcSample s = parse_proc_stat(text);
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(s.state, 'S');
  EXPECT_EQ(s.cpu_ticks, 300u);
  EXPECT_EQ(s.threads, 7u);
  EXPECT_FALSE(parse_proc_stat("4242 (cut").ok);
  EXPECT_FALSE(parse_proc_stat("1 (x) S 1 2").ok);
}

TEST(RankProbe, OwnProcessIsSampledAndNamed) {
  ProcSample s = sample_proc(::getpid());
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(state_name('D'), "disk sleep (D)");
  EXPECT_EQ(state_name('S'), "sleeping");
  EXPECT_EQ(state_name('R'), "running");
}

TEST(RankProbe, CpuShareOfOneCore) {
  ProcSample a, b;
  a.ok = b.ok = true;
  a.cpu_ticks = 0;
  b.cpu_ticks = static_cast<uint64_t>(::sysconf(_SC_CLK_TCK)) / 2;  // half a second
  EXPECT_EQ(cpu_permille(a, b, std::chrono::milliseconds(1000)), 500u);
  EXPECT_EQ(cpu_permille(b, a, std::chrono::milliseconds(1000)), 0u);  // gone backwards
}

TEST(RankProbe, GdbOutputKeepsFramesAndTheTraceback) {
  const std::string out =
      "[Thread debugging using libthread_db enabled]\n"
      "0x00007f in poll () from /lib/libc.so.6\n"
      "#0  0x00007f in poll () from /lib/libc.so.6\n"
      "#1  0x00005a in main ()\n"
      "MARK\n"
      "Traceback (most recent call first):\n"
      "  File \"/t/hang.py\", line 3, in wait_here\n"
      "    time.sleep(100)\n"
      "[Inferior 1 (process 7) detached]\n";
  EXPECT_EQ(tidy_gdb_output(out, "MARK", true),
            "native:\n"
            "    #0  0x00007f in poll () from /lib/libc.so.6\n"
            "    #1  0x00005a in main ()\n"
            "python:\n"
            "    Traceback (most recent call first):\n"
            "      File \"/t/hang.py\", line 3, in wait_here\n"
            "        time.sleep(100)\n");
  EXPECT_EQ(tidy_gdb_output("MARK\n", "MARK", true), "");
}

}  // namespace
}  // namespace ferry
