// `ferry stop` of a job that ends under the request: its front end closes its control socket
// before it writes its end into the record, and the answer is the end, not a socket error.
#include "ferry/session/ferry_tool.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "ferry/session/job_session.hpp"
#include "ferry/session/job_store.hpp"

namespace ferry {
namespace {

TEST(FerryTool, AStopAsTheJobEndsSaysItEnded) {
  const std::string home = ::testing::TempDir() + "ferrytool-ending";
  std::filesystem::remove_all(home);
  std::filesystem::create_directories(home);
  const char* old = std::getenv("XDG_STATE_HOME");
  const std::string saved = old ? old : "";
  ::setenv("XDG_STATE_HOME", home.c_str(), 1);
  auto jobs = default_jobs_directory();
  ASSERT_TRUE(jobs.ok()) << jobs.error().message;
  auto id = create_job_directory(*jobs);
  ASSERT_TRUE(id.ok()) << id.error().message;
  const std::string dir = *jobs + "/" + *id;
  // Running, its front end (this process) alive, its control socket already closed.
  JobRecord r;
  r.id = *id;
  r.state = "running";
  r.pid = ::getpid();
  r.pid_start = process_start_time(r.pid);
  ASSERT_TRUE(write_record(dir, r));
  std::thread front_end([&] {  // writes its end a moment later
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    JobRecord e = r;
    e.state = "ended";
    e.exit_status = 0;
    (void)write_record(dir, e);
  });
  ::testing::internal::CaptureStderr();
  const int rc = run_ferry_tool({"ferry", "stop", *id});
  const std::string err = ::testing::internal::GetCapturedStderr();
  front_end.join();
  if (old)
    ::setenv("XDG_STATE_HOME", saved.c_str(), 1);
  else
    ::unsetenv("XDG_STATE_HOME");
  EXPECT_EQ(rc, 2);
  EXPECT_EQ(err, "ferry: job " + *id + " has ended (status 0)\n");
}

}  // namespace
}  // namespace ferry
