// The jobs directory (private, the user's own), records written whole and read back, ids
// found by prefix, and the liveness of a record's front end.
#include "ferry/session/job_store.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "ferry/common/read_text_file.hpp"
#include "ferry/session/job_session.hpp"

namespace ferry {
namespace {

std::string fresh_home(const std::string& name) {
  std::string dir = ::testing::TempDir() + "jobstore-" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(JobStore, TheJobsDirectoryIsMadePrivateUnderTheStateHome) {
  const std::string home = fresh_home("make");
  auto d = jobs_directory(home, "");
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(*d, home + "/.local/state/ferry/jobs");
  struct stat st {};
  ASSERT_EQ(::stat(d->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700U);
  auto x = jobs_directory(home, home + "/xdg");
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(*x, home + "/xdg/ferry/jobs");
  // A relative XDG_STATE_HOME is ignored, as the XDG spec says.
  EXPECT_EQ(*jobs_directory(home, "rel"), home + "/.local/state/ferry/jobs");
  EXPECT_FALSE(jobs_directory("", "").ok());
}

TEST(JobStore, ADirectoryOthersMayWriteIsRefused) {
  const std::string home = fresh_home("open");
  auto d = jobs_directory(home, "");
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(::chmod(d->c_str(), 0777), 0);
  auto again = jobs_directory(home, "");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().message, *d + ": writable by others (mode 777); chmod 700 it");
  ASSERT_EQ(::chmod(d->c_str(), 0755), 0);  // readable by others: made private again
  ASSERT_TRUE(jobs_directory(home, "").ok());
  struct stat st {};
  ASSERT_EQ(::stat(d->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700U);
}

TEST(JobStore, RecordsRoundTripAndIdsAreFoundByPrefix) {
  const std::string jobs = *jobs_directory(fresh_home("records"), "");
  auto a = create_job_directory(jobs);
  auto b = create_job_directory(jobs);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 8U);
  EXPECT_NE(*a, *b);
  JobRecord r;
  r.id = *a;
  r.state = "ended";
  r.exit_status = 3;
  r.hosts = {"fnode1", "fnode2"};
  r.ranks = 4;
  r.command = "ferryrun -np 4 ./app";
  r.started = 100;
  ASSERT_TRUE(write_record(jobs + "/" + *a, r).ok());
  JobRecord s = r;
  s.id = *b;
  s.started = 200;
  ASSERT_TRUE(write_record(jobs + "/" + *b, s).ok());
  auto back = read_record(jobs + "/" + *a);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->hosts, r.hosts);
  EXPECT_EQ(back->exit_status, 3);
  EXPECT_EQ(back->command, r.command);
  auto all = list_records(jobs);
  ASSERT_EQ(all.size(), 2U);
  EXPECT_EQ(all[0].id, *a);  // oldest first
  EXPECT_EQ(find_record(jobs, *b)->id, *b);
  EXPECT_EQ(find_record(jobs, b->substr(0, 7))->id, *b);
  EXPECT_EQ(find_record(jobs, "zz").error().message, "no job 'zz' (ferry ps lists them)");
  if ((*a)[0] == (*b)[0]) {
    EXPECT_NE(find_record(jobs, a->substr(0, 1)).error().message.find("names 2 jobs"),
              std::string::npos);
  }
  EXPECT_EQ(prune_jobs(jobs, 1), 1);  // ended jobs beyond the newest one
  EXPECT_EQ(list_records(jobs).size(), 1U);
  EXPECT_EQ(list_records(jobs)[0].id, *b);
}

TEST(JobStore, AFrontEndThatIsGoneMakesTheJobLost) {
  JobRecord r;
  r.state = "running";
  r.pid = ::getpid();
  r.pid_start = process_start_time(r.pid);
  EXPECT_GT(r.pid_start, 0U);
  EXPECT_EQ(r.effective_state(), "running");
  r.pid_start += 1;  // another process that had this pid
  EXPECT_EQ(r.effective_state(), "lost");
  r.pid = 0;
  EXPECT_EQ(r.effective_state(), "lost");
  r.state = "ended";
  EXPECT_EQ(r.effective_state(), "ended");
}

// A record read while the job ran, its front end gone by the look at /proc: the record is read
// once more, and the end the front end wrote meanwhile wins over "lost".
TEST(JobStore, AJobFoundLostIsReadOnceMoreBeforeItIsCalledSo) {
  const std::string dir = fresh_home("settled");
  JobRecord r;
  r.id = "0badcafe";
  r.state = "running";
  r.pid = ::getpid();
  r.pid_start = process_start_time(r.pid);
  EXPECT_EQ(settled_state(dir, r), "running");  // its front end runs: nothing read

  r.pid_start += 1;  // gone by the look at /proc
  JobRecord written = r;
  written.state = "ended";
  written.exit_status = 3;
  ASSERT_TRUE(write_record(dir, written));
  EXPECT_EQ(settled_state(dir, r), "ended");
  EXPECT_EQ(r.state, "ended");
  EXPECT_EQ(r.exit_status, 3);

  r.state = "running";  // gone without writing its end: lost, the record as read
  r.exit_status = -1;
  written.state = "running";
  written.exit_status = -1;
  ASSERT_TRUE(write_record(dir, written));
  EXPECT_EQ(settled_state(dir, r), "lost");
  EXPECT_EQ(r.exit_status, -1);
  std::filesystem::remove(dir + "/job.json");  // no record to read again: lost
  EXPECT_EQ(settled_state(dir, r), "lost");
}

// A front end killed with SIGKILL closes its sockets (so its hosts end the ranks) before it
// turns zombie: from its first step of exit, PF_EXITING in the flags, it reads as ended.
TEST(JobStore, AProcessWhoseExitHasBegunHasEnded) {
  const std::string head = "4242 (ferryrun (x) y) ";
  const std::string tail = " 0 0 0 0 0 0 0 20 0 1 0 98765 0 0";
  EXPECT_FALSE(stat_says_ended(head + "S 1 4242 4242 0 -1 4194560" + tail));  // 0x400100
  EXPECT_TRUE(stat_says_ended(head + "S 1 4242 4242 0 -1 4194564" + tail));   // + PF_EXITING
  EXPECT_TRUE(stat_says_ended(head + "R 1 4242 4242 0 -1 4" + tail));
  EXPECT_TRUE(stat_says_ended(head + "Z 1 4242 4242 0 -1 4194560" + tail));
  EXPECT_TRUE(stat_says_ended(head + "X 1 4242 4242 0 -1 0" + tail));
  EXPECT_TRUE(stat_says_ended("no stat line"));
  EXPECT_TRUE(stat_says_ended(head + "S 1"));

  // Real processes: this one runs; a child that exited and is not reaped yet has ended.
  auto self = read_text_file("/proc/self/stat", 4096, "stat file");
  ASSERT_TRUE(self);
  EXPECT_FALSE(stat_says_ended(*self));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, child, &info, WEXITED | WNOWAIT), 0);  // zombie, not reaped
  EXPECT_FALSE(same_process_alive(child, 0));
  int st = 0;
  ASSERT_EQ(::waitpid(child, &st, 0), child);
}

}  // namespace
}  // namespace ferry
