// The journal: bounded by rotation at line starts, read whole and followed across rotations;
// the helpers that pick lines for `ferry attach --since` and `ferry logs --rank`.
#include "ferry/session/journal.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace ferry {
namespace {

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "journal-" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(Journal, AppendsAndReadsBack) {
  const std::string dir = fresh_dir("append");
  auto j = Journal::open(dir, 0);
  ASSERT_TRUE(j.ok()) << j.error().message;
  j->write("[0]<stdout>:a\n");
  j->write("[1]<stderr>:b\n");
  EXPECT_EQ(read_journal(dir), "[0]<stdout>:a\n[1]<stderr>:b\n");
  EXPECT_EQ(j->dropped(), 0U);
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/console.log").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
}

TEST(Journal, RotationKeepsTheNewestLinesWithinTheBound) {
  const std::string dir = fresh_dir("rotate");
  auto j = Journal::open(dir, 1000);  // segments of 500 bytes
  ASSERT_TRUE(j.ok());
  std::string all;
  for (int i = 0; i < 100; ++i) {
    const std::string line = "line " + std::to_string(i) + " xxxxxxxxxxxxxxxx\n";
    all += line;
    j->write(line);
  }
  const std::string kept = read_journal(dir);
  EXPECT_LE(kept.size(), 1000U + 30U);  // the bound, plus one write
  EXPECT_GE(kept.size(), 500U);
  EXPECT_TRUE(all.ends_with(kept)) << "the newest bytes, in order";
  EXPECT_TRUE(kept.starts_with("line ")) << "a segment starts at a line's start";
  EXPECT_EQ(j->dropped(), all.size() - kept.size());
  EXPECT_EQ(journal_dropped(dir), j->dropped());
}

TEST(Journal, OneLargeWriteOfManyLinesStaysWithinTheBound) {
  // A pipe read brings 64 KiB at once, rarely ending at a line's end.
  const std::string dir = fresh_dir("large");
  auto j = Journal::open(dir, 1000);
  ASSERT_TRUE(j.ok());
  std::string all;
  for (int i = 0; i < 500; ++i) all += "row " + std::to_string(i) + " yyyyyyyyyyyy\n";
  j->write(std::string_view(all).substr(0, all.size() - 5));  // ends mid-line
  j->write(std::string_view(all).substr(all.size() - 5));
  const std::string kept = read_journal(dir);
  EXPECT_LE(kept.size(), 1000U + 25U);  // the bound, plus a line
  EXPECT_TRUE(all.ends_with(kept));
  EXPECT_TRUE(kept.starts_with("row "));
}

TEST(Journal, RotatesOnlyAtALinesStart) {
  const std::string dir = fresh_dir("partial");
  auto j = Journal::open(dir, 200);
  ASSERT_TRUE(j.ok());
  j->write(std::string(150, 'a'));  // no newline: past half the bound, but mid-line
  j->write(std::string(10, 'b'));
  j->write("\n");
  EXPECT_EQ(j->dropped(), 0U);
  j->write("next\n");  // at a line's start: rotates now
  EXPECT_EQ(read_journal(dir), std::string(150, 'a') + std::string(10, 'b') + "\nnext\n");
}

TEST(Journal, AFollowerSeesEveryByteAcrossRotations) {
  const std::string dir = fresh_dir("follow");
  auto j = Journal::open(dir, 100);
  ASSERT_TRUE(j.ok());
  j->write("before\n");
  JournalFollower f(dir, false);
  std::string seen, written;
  for (int i = 0; i < 40; ++i) {
    const std::string line = "row " + std::to_string(i) + "\n";
    written += line;
    j->write(line);
    if (i % 7 == 0) seen += f.poll();  // rotations happen between some polls
  }
  seen += f.poll();
  EXPECT_EQ(seen, written);
}

TEST(Journal, AFollowerFromTheStartGetsTheWholeJournalOnceThenWhatComes) {
  const std::string dir = fresh_dir("from-start");
  auto j = Journal::open(dir, 100);
  ASSERT_TRUE(j.ok());
  for (int i = 0; i < 12; ++i) j->write("old " + std::to_string(i) + "\n");  // rotated
  JournalFollower f(dir, true);
  EXPECT_EQ(f.poll(), read_journal(dir));
  EXPECT_EQ(f.poll(), "");
  j->write("new\n");
  EXPECT_EQ(f.poll(), "new\n");
}

// The detached console's journal (fds 1 and 2 on console.log, rotated by a thread): a burst
// the thread could not keep up with (here one write of 900 KB, before it can look) is cut
// to the newest half of the bound, from a line's start, and counted as dropped.
//
// `wait_us`: how long the console lives on after the burst; 0: it ends at once, before the
// thread had its turn (finish() bounds what it finds).
void burst_is_cut_to_the_bound(const std::string& name, useconds_t wait_us) {
  const std::string dir = fresh_dir(name);
  std::string burst;
  for (int i = 0; burst.size() < 900000; ++i)
    burst += "[0]<stdout>:row " + std::to_string(i) + " xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // a child: the rotator takes over its fds 1 and 2
    JournalRotator r(dir, 64 * 1024);
    if (!r.start().ok()) ::_exit(3);
    const bool whole = ::write(1, burst.data(), burst.size()) == static_cast<ssize_t>(burst.size());
    if (wait_us > 0) ::usleep(wait_us);  // the thread's turn
    r.finish();
    ::_exit(whole ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const std::string kept = read_journal(dir);
  EXPECT_GE(kept.size(), 32u * 1024);       // never less than half the bound
  EXPECT_LE(kept.size(), 32u * 1024 + 64);  // and at most one line more
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(kept.rfind("[0]<stdout>:row ", 0), 0u) << kept.substr(0, 80);  // a whole line
  EXPECT_EQ(burst.substr(burst.size() - kept.size()), kept);               // the newest bytes
  std::ifstream dropped(dir + "/journal.dropped");
  uint64_t n = 0;
  dropped >> n;
  EXPECT_EQ(n, burst.size() - kept.size());
}

TEST(JournalRotator, ABurstItCouldNotKeepUpWithIsCutToTheBound) {
  burst_is_cut_to_the_bound("rotator-burst", 300000);
}

TEST(JournalRotator, ABurstTheConsoleEndsWithIsCutToTheBoundToo) {
  burst_is_cut_to_the_bound("rotator-burst-end", 0);
}

TEST(Journal, LastLinesAndRankLines) {
  EXPECT_EQ(last_lines("a\nb\nc\n", 2), "b\nc\n");
  EXPECT_EQ(last_lines("a\nb\nc", 2), "b\nc");
  EXPECT_EQ(last_lines("a\nb\n", 5), "a\nb\n");
  EXPECT_EQ(last_lines("a\nb\n", 0), "");
  EXPECT_TRUE(is_rank_line("[3]<stdout>:x", 3));
  EXPECT_TRUE(is_rank_line("[1,3]<stderr>:x", 3));
  EXPECT_TRUE(is_rank_line("[3@node2]<stdout>:x", 3));
  EXPECT_TRUE(is_rank_line("[3] x", 3));
  EXPECT_FALSE(is_rank_line("[13]<stdout>:x", 3));
  EXPECT_FALSE(is_rank_line("ferryrun: rank 3 exited", 3));
}

}  // namespace
}  // namespace ferry
