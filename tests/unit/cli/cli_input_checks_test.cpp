// Bad values on the command line: each is refused in one line naming the option and the
// value, with exit status 2, before anything starts.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ferry/cli/ferryrun_cli.hpp"

namespace ferry {
namespace {

struct Parsed {
  ParseOutcome outcome;
  std::string err;  // what ferryrun printed on stderr
};

Parsed parse(std::vector<std::string> args, const char* program = "ferryrun") {
  args.insert(args.begin(), program);
  testing::internal::CaptureStderr();
  ParseOutcome r = parse_ferryrun_args(args);
  return {std::move(r), testing::internal::GetCapturedStderr()};
}

// The one line a refused command line prints (exit status 2, no config).
std::string refusal(std::vector<std::string> args, const char* program = "ferryrun") {
  Parsed p = parse(std::move(args), program);
  EXPECT_FALSE(p.outcome.config.has_value());
  EXPECT_EQ(p.outcome.exit_code, 2);
  EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
  return p.err;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CliInputChecks, NumbersArePlainDecimals) {
  EXPECT_TRUE(has(refusal({"-np", "four", "true"}), "ferryrun: -np: 'four' is not a whole number"));
  EXPECT_TRUE(has(refusal({"-np", "0x2", "true"}), "'0x2' is not a whole number"));
  EXPECT_TRUE(has(refusal({"-np", "-1", "true"}), "'-1' is not a whole number"));
  EXPECT_TRUE(has(refusal({"-np", "1e3", "true"}), "'1e3' is not a whole number"));
  EXPECT_TRUE(has(refusal({"--kill-grace", "nan", "true"}), "--kill-grace: 'nan' is not a number"));
  EXPECT_TRUE(has(refusal({"--kill-grace", "inf", "true"}), "'inf' is not a number"));
  EXPECT_TRUE(has(refusal({"--kill-grace", "1e1", "true"}), "'1e1' is not a number"));
  EXPECT_TRUE(has(refusal({"--kill-grace", "5000", "true"}), "5000 is out of range (0 to 3600)"));
  EXPECT_TRUE(has(refusal({"--start-timeout", "0", "true"}), "0 is out of range (1 to 86400)"));
  EXPECT_TRUE(has(refusal({"-p", "70000", "true"}), "70000 is out of range (1 to 65535)"));
  EXPECT_TRUE(has(refusal({"-np", "99999999999999999999", "true"}), "is out of range (1 to"));
}

// A flag the personality refuses gets its reason even with no command: `horovodrun
// --check-build` is typed alone, and "no command given" would not say why it cannot work.
TEST(CliInputChecks, ARefusedFlagGivenAloneGetsItsReason) {
  EXPECT_TRUE(has(refusal({"--check-build"}, "horovodrun"),
                  "horovodrun: --check-build: ferry cannot inspect Horovod's build"));
  EXPECT_TRUE(has(refusal({"-tune", "params.conf"}, "mpirun"), "mpirun: -tune: "));
  EXPECT_TRUE(has(refusal({"-info"}, "mpiexec"), "mpiexec: -info: ferryrun --version"));
  // With a command, the same line.
  EXPECT_TRUE(has(refusal({"--check-build", "-np", "2", "true"}, "horovodrun"),
                  "--check-build: ferry cannot inspect"));
  EXPECT_TRUE(has(refusal({}, "horovodrun"), "horovodrun: no command given"));
}

// A missing or unknown value names the option as typed and what its value is, not CLI11's
// "--np: 1 required INT missing".
TEST(CliInputChecks, AMissingValueNamesTheOptionAsTypedAndWhatItTakes) {
  EXPECT_EQ(refusal({"-np"}), "ferryrun: -np: needs a value (N) (see ferryrun --help)\n");
  EXPECT_EQ(refusal({"-H"}, "mpirun"), "mpirun: -H: needs a value (HOSTS) (see mpirun --help)\n");
  EXPECT_EQ(refusal({"-x"}), "ferryrun: -x: needs a value (VAR[=VALUE]) (see ferryrun --help)\n");
  EXPECT_EQ(refusal({"-wdir"}, "mpirun"),
            "mpirun: -wdir: needs a value (DIR) (see mpirun --help)\n");
  EXPECT_EQ(refusal({"--blacklist-cooldown-range", "1"}, "horovodrun"),
            "horovodrun: --blacklist-cooldown-range: needs values (LOW HIGH) (see horovodrun "
            "--help)\n");
  EXPECT_EQ(refusal({"--launcher", "pdsh", "true"}),
            "ferryrun: --launcher: 'pdsh' is not one of {auto,ssh,slurm,local,rsh,fork} (see "
            "ferryrun --help)\n");
}

TEST(CliInputChecks, PlainNumbersStillWork) {
  Parsed p = parse({"-np", "010", "--kill-grace", "0.5", "--heartbeat", "3", "true"});
  ASSERT_TRUE(p.outcome.config.has_value()) << p.err;
  EXPECT_EQ(p.outcome.config->job.np, 10);  // decimal, not octal
  EXPECT_DOUBLE_EQ(p.outcome.config->job.kill_grace_s, 0.5);
  EXPECT_EQ(p.outcome.config->job.heartbeat_s, 3);
  p = parse({"--kill-grace", ".25", "true"});
  ASSERT_TRUE(p.outcome.config.has_value()) << p.err;
  EXPECT_DOUBLE_EQ(p.outcome.config->job.kill_grace_s, 0.25);
}

TEST(CliInputChecks, OtherPersonalitiesCheckTheirNumbersToo) {
  EXPECT_TRUE(has(refusal({"-np", "0x2", "true"}, "mpirun"), "'0x2' is not a whole number"));
  EXPECT_TRUE(has(refusal({"-np", "two", "true"}, "horovodrun"), "'two' is not a whole number"));
}

TEST(CliInputChecks, RanksAboveTheLimitAreRefusedNamingIt) {
  EXPECT_TRUE(has(refusal({"-np", "1000000", "true"}), "1000000 is out of range (1 to 65536)"));
}

TEST(CliInputChecks, ContradictionsAndEmptyValues) {
  EXPECT_TRUE(has(refusal({"--stdin-none", "--stdin", "1", "-np", "2", "true"}),
                  "--stdin-none and --stdin 1 contradict each other"));
  EXPECT_TRUE(parse({"--stdin-none", "--stdin", "none", "true"}).outcome.config.has_value());
  EXPECT_TRUE(has(refusal({"--wdir", "", "true"}), "--wdir: must not be empty"));
  EXPECT_TRUE(has(refusal({"-np", "1", ""}), "the command is an empty word"));
  EXPECT_TRUE(has(refusal({"-np", "1", "--", ""}), "the command is an empty word"));
}

TEST(CliInputChecks, ExportsOfVariablesFerrySetsAreWarnedAbout) {
  Parsed p = parse(
      {"-x", "RANK=7", "-x", "WORLD_SIZE=99", "-x", "MASTER_PORT=1234", "-x", "MY_VAR=1", "true"});
  ASSERT_TRUE(p.outcome.config.has_value()) << p.err;
  EXPECT_EQ(p.err,
            "ferryrun: warning: -x RANK, WORLD_SIZE: ferry sets these itself for every rank; "
            "the exported value is not used\n");
  p = parse({"-x", "MASTER_PORT=1234", "-x", "MY_VAR=1", "true"});  // MASTER_PORT is the user's
  EXPECT_EQ(p.err, "");
}

TEST(CliInputChecks, MessagesEscapeWhatTheUserGave) {
  const std::string err = refusal({"-H", "a\x1b]0;x\x07", "true"});
  EXPECT_TRUE(has(err, "\\x1b]0;x\\x07")) << err;
  EXPECT_FALSE(has(err, "\x1b"));
}

TEST(CliInputChecks, HostNamesTooLongAreRefusedShortly) {
  const std::string err = refusal({"-H", std::string(5000, 'h'), "true"});
  EXPECT_TRUE(has(err, "a host name of 5000 characters (at most 253)")) << err;
  EXPECT_LT(err.size(), 400u);
  EXPECT_TRUE(has(refusal({"-H", std::string(64, 'l') + ".example", "true"}),
                  "a label of 64 characters (at most 63)"));
  EXPECT_TRUE(has(refusal({"-H", "a..b", "true"}), "an empty label"));
  Parsed ok = parse({"-H", std::string(63, 'l') + ".example,[fe80::1%eth0]:2,10.0.0.1", "true"});
  EXPECT_TRUE(ok.outcome.config.has_value()) << ok.err;
}

TEST(CliInputChecks, AnSshConfigThatIsNoneIsRefused) {
  EXPECT_TRUE(has(refusal({"--ssh-config", "/tmp", "-H", "a", "true"}), "--ssh-config /tmp"));
  EXPECT_TRUE(has(refusal({"--ssh-config", "/bin/true", "-H", "a", "true"}),
                  "--ssh-config /bin/true: not an ssh_config (it holds binary data)"));
}

}  // namespace
}  // namespace ferry
