// `--ship-ferryd auto` against a real, private sshd (ssh_launcher_fixture.hpp): the installed
// ferryd is started at once and known by its greeting (its first bytes); one that is missing
// or greets with another protocol is dropped, and the host's shell program then runs on a
// second channel. The plan here holds a file for another architecture only, so when the
// program runs it answers "arch <this machine's>", and the open fails naming it: proof that
// it ran.

#include <gtest/gtest.h>
#include <sys/utsname.h>

#include <memory>
#include <string>
#include <vector>

#include "ssh_launcher_fixture.hpp"

namespace ferry {
namespace {

using namespace ferry::test;

const std::string kGreeting = "\x01GREET\x0d";

std::string machine() {
  utsname u{};
  return ::uname(&u) == 0 ? u.machine : "x86_64";
}

class SshShip : public SshLauncherTest {
 protected:
  // `auto` with kGreeting 4 bytes in, and a file for sparc64 only; the verbose lines go
  // to log_.
  SshOptions ship_options() {
    SshOptions o = options(make_config(known_line("host_key")));
    auto plan = std::make_shared<ShipPlan>();
    plan->mode = ShipMode::kAuto;
    plan->protocol = 13;
    plan->greeting = kGreeting;
    plan->greeting_offset = 4;
    plan->files.push_back(ShippedFerryd::in_memory("sparc64", std::string(64, 'a'), "x"));
    o.ship = plan;
    o.verbose = true;
    o.log = [this](const std::string& line) { log_.push_back(line); };
    return o;
  }
  bool logged(const std::string& part) const {
    for (const auto& line : log_)
      if (line.find(part) != std::string::npos) return true;
    return false;
  }
  // Opens h1 with `ferryd` as its installed ferryd; the open must fail: returns its error.
  std::string failed_open(const std::string& ferryd) {
    asio::io_context io;
    SshLauncher launcher(io, ship_options());
    std::string error;
    auto link = open(io, launcher, host("h1"), ferryd, &error);
    EXPECT_FALSE(link);
    return error;
  }
  std::string script(const std::string& name, const std::string& body) {
    fs::path p = dir_ / name;
    write_text(p, "#!/bin/sh\n" + body, fs::perms::owner_all);
    return p.string();
  }
  std::vector<std::string> log_;
};

TEST_P(SshShip, TheInstalledFerrydThatGreetsWithOurProtocolIsTheOne) {
  // Four bytes of frame length, the greeting, then an echo, as a ferryd would go on.
  const std::string path = script("greets_ok", "printf 'LLLL\\001GREET\\015rest'\nexec cat\n");
  asio::io_context io;
  SshLauncher launcher(io, ship_options());
  std::string error;
  auto link = open(io, launcher, host("h1"), path, &error);
  ASSERT_TRUE(link) << error;
  EXPECT_TRUE(logged("installed ferryd at " + path + " speaks our protocol"));
  EXPECT_FALSE(logged("looking for another")) << "no second channel";
  std::string got;
  link->start([&](std::string_view b) { got.append(b); }, [](const std::string&) {});
  link->send("ping");
  ASSERT_TRUE(run_until(io, [&] { return got.size() >= 4 + kGreeting.size() + 8; }));
  EXPECT_EQ(got, "LLLL" + kGreeting + "restping") << "the greeting stays in the stream";
  link->close();
  link.reset();
  io.run_for(200ms);
}

TEST_P(SshShip, AMissingFerrydLeadsToTheShippingProgram) {
  const std::string error = failed_open((dir_ / "no_such_ferryd").string());
  EXPECT_EQ(error, prefix("h1") + "the host is " + machine() +
                       " and ferryrun holds a ferryd for sparc64 only; give --ferryd-dir DIR "
                       "with a ferryd-" +
                       machine() + " in it");
  EXPECT_TRUE(logged("ended before its greeting (exit status 127"));
  EXPECT_TRUE(logged("looking for another"));
}

TEST_P(SshShip, AFerrydOfAnotherProtocolIsDroppedAndSeesItsInputEnd) {
  const fs::path ended = dir_ / "other_ended";
  fs::remove(ended);
  const std::string path =
      script("greets_other",
             "printf 'LLLL\\001GREET\\143'\ncat >/dev/null\ntouch " + ended.string() + "\n");
  asio::io_context io;
  SshLauncher launcher(io, ship_options());
  std::string error;
  auto link = open(io, launcher, host("h1"), path, &error);
  EXPECT_FALSE(link);
  EXPECT_NE(error.find("the host is " + machine()), std::string::npos) << error;
  EXPECT_TRUE(logged("greets with another protocol version"));
  EXPECT_TRUE(run_until(
      io, [&] { return fs::exists(ended); }, 10s))
      << "the dropped ferryd's input never ended";
}

TEST_P(SshShip, AFerrydThatFailsBeforeItsGreetingIsNamedInTheLog) {
  const std::string error = failed_open((dir_ / "exit3").string());
  EXPECT_TRUE(logged("ended before its greeting (exit status 3: starting)")) << error;
}

INSTANTIATE_TEST_SUITE_P(SessionsOn, SshShip, ::testing::Values(-1, 2),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return p.param < 0 ? std::string("Loop") : std::string("Threads");
                         });

}  // namespace
}  // namespace ferry
