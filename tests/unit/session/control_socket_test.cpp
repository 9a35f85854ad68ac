// The control socket: a request answered by the handler, the socket private from its birth,
// a deep directory reached anyway, a peer of another uid refused before the handler runs, and
// no answer once the server is gone.
#include "ferry/session/control_socket.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

namespace ferry {
namespace {

std::string fresh_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "control-" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ::chmod(dir.c_str(), 0700);
  return dir;
}

TEST(ControlSocket, ARequestGetsTheHandlersAnswer) {
  const std::string dir = fresh_dir("answer");
  auto server = ControlServer::start(dir, [](const std::string& r) { return "got <" + r + ">"; });
  ASSERT_TRUE(server.ok()) << server.error().message;
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/control.sock").c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  for (const char* r : {"stop", "signal USR1", "state"}) {
    auto a = control_request(dir, r);
    ASSERT_TRUE(a.ok()) << a.error().message;
    EXPECT_EQ(*a, std::string("got <") + r + ">");
  }
}

TEST(ControlSocket, NoAnswerOnceTheServerIsGone) {
  const std::string dir = fresh_dir("gone");
  {
    auto server = ControlServer::start(dir, [](const std::string&) { return "x"; });
    ASSERT_TRUE(server.ok());
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/control.sock"));
  auto a = control_request(dir, "stop");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().message, "its front end no longer answers (" + dir + "/control.sock)");
}

TEST(ControlSocket, ADirectoryTooDeepForAUnixSocketPathIsReachedAnyway) {
  std::string dir = fresh_dir("deep");
  while (dir.size() < 150) dir += "/deeper-and-deeper";
  std::filesystem::create_directories(dir);
  auto server = ControlServer::start(dir, [](const std::string& r) { return r + "!"; });
  ASSERT_TRUE(server.ok()) << server.error().message;
  EXPECT_TRUE(std::filesystem::exists(dir + "/control.sock"));
  auto a = control_request(dir, "state");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(*a, "state!");
}

TEST(ControlSocket, APeerOfAnotherUserIsRefusedAndNothingIsDone) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (to connect as another uid)";
  const std::string dir = fresh_dir("other");
  std::atomic<int> handled{0};
  auto server = ControlServer::start(dir, [&](const std::string&) {
    ++handled;
    return "done";
  });
  ASSERT_TRUE(server.ok());
  // Opened up on purpose, so that only the peer check stands between nobody and the job.
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod((dir + "/control.sock").c_str(), 0666), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    auto a = control_request(dir, "stop");
    ::_exit(a.ok() && *a == "refused: this job belongs to another user" ? 0 : 1);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(child, &st, 0), child);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_EQ(handled.load(), 0);
  // Its owner is answered as before.
  auto a = control_request(dir, "state");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, "done");
  EXPECT_EQ(handled.load(), 1);
}

}  // namespace
}  // namespace ferry
