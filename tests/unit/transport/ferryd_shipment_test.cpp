// The shell program that picks, checks or receives ferryd on a host, run here with /bin/sh
// against a cache folder of the test's own; and the parsing of its answers.

#include "ferry/transport/ferryd_shipment.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ferry {
namespace {

namespace fs = std::filesystem;

// The "ferryd" shipped: a script that says how it was started (the program execs it).
constexpr const char* kFerryd = "#!/bin/sh\necho ran \"$@\"\n";
constexpr const char* kFerrydSum =
    "10f1c5b137a66ae1a1081b51d937bdd73893ca6afa7f9731dfde55d03898d48a";

std::string arch() {
  utsname u{};
  ::uname(&u);
  return u.machine;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ShipProgram : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ferry-ship-test." + std::to_string(::getpid()));
    fs::create_directories(dir_);
    plan_.mode = ShipMode::kAlways;
    plan_.protocol = 9;
    plan_.files.push_back(ShippedFerryd::in_memory(arch(), kFerrydSum, kFerryd));
    std::ofstream(dir_ / "input") << kFerryd;
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Runs the program with XDG_CACHE_HOME=`cache`, `input` on stdin; its answer.
  std::string run(const std::string& cache, const std::string& installed = "/nonexistent",
                  const std::string& input = "input") {
    const std::string cmd = env_ + "XDG_CACHE_HOME='" + cache + "' " +
                            ship_command(plan_, installed) + " <'" + (dir_ / input).string() +
                            "' >'" + (dir_ / "out").string() + "' 2>/dev/null";
    EXPECT_EQ(0, std::system(cmd.c_str()));
    return slurp(dir_ / "out");
  }
  fs::path dir_;
  ShipPlan plan_;
  std::string env_;  // put before the command
};

TEST_F(ShipProgram, ReceivesThenReusesThenReplacesATamperedCopy) {
  const std::string cache = (dir_ / "cache").string();
  const std::string file = cache + "/ferry/" + kFerrydSum + "/ferryd";
  // Each answer that names a ferryd is followed by that ferryd's own output: the program
  // became it.
  EXPECT_EQ("send " + arch() + " raw\nuse " + file + "\nran --stdio\n", run(cache));
  EXPECT_EQ(kFerryd, slurp(file));
  struct stat st {};
  ASSERT_EQ(0, ::stat((cache + "/ferry").c_str(), &st));
  EXPECT_EQ(0700U, st.st_mode & 0777U);
  EXPECT_EQ("cached " + file + "\nran --stdio\n", run(cache));
  std::ofstream(file) << "#!/bin/sh\necho evil\n";
  EXPECT_EQ("send " + arch() + " raw\nuse " + file + "\nran --stdio\n", run(cache));
  EXPECT_EQ(kFerryd, slurp(file));
}

TEST_F(ShipProgram, ACopyThatMatchesItsRecordIsNotHashedAgain) {
  const std::string cache = (dir_ / "cache").string();
  const std::string file = cache + "/ferry/" + kFerrydSum + "/ferryd";
  run(cache);
  ASSERT_TRUE(fs::exists(file + ".ok"));
  // A sha256sum that always fails: a copy can only be used on its record's word.
  fs::create_directories(dir_ / "bin");
  std::ofstream(dir_ / "bin/sha256sum") << "#!/bin/sh\nexit 1\n";
  fs::permissions(dir_ / "bin/sha256sum", fs::perms::owner_all);
  env_ = "PATH='" + (dir_ / "bin").string() + ":/usr/bin:/bin' ";
  EXPECT_EQ("cached " + file + "\nran --stdio\n", run(cache));
  // Without its record the copy is hashed (which fails here), so it is asked for again.
  fs::remove(file + ".ok");
  EXPECT_EQ(0U, run(cache).rfind("send " + arch() + " raw\nfail ", 0));
  // With a working sha256sum it is checked, used, and its record written again.
  env_.clear();
  EXPECT_EQ("cached " + file + "\nran --stdio\n", run(cache));
  EXPECT_TRUE(fs::exists(file + ".ok"));
}

TEST_F(ShipProgram, SendsTheGzipCopyToHostsWithGzip) {
  const std::string gz = (dir_ / "input.gz").string();
  ASSERT_EQ(
      0, std::system(("gzip -9 -n -c '" + (dir_ / "input").string() + "' >'" + gz + "'").c_str()));
  plan_.files.front() = ShippedFerryd::in_memory(arch(), kFerrydSum, kFerryd, slurp(gz));
  const std::string cache = (dir_ / "cache").string();
  const std::string file = cache + "/ferry/" + kFerrydSum + "/ferryd";
  EXPECT_EQ("send " + arch() + " gz\nuse " + file + "\nran --stdio\n",
            run(cache, "/nonexistent", "input.gz"));
  EXPECT_EQ(kFerryd, slurp(file));
}

TEST_F(ShipProgram, RefusesACopyThatIsNotTheOneSent) {
  std::ofstream(dir_ / "other") << "#!/bin/sh\necho bye \"$@\"\n";  // as long, other bytes
  const std::string out = run((dir_ / "cache").string(), "/nonexistent", "other");
  EXPECT_EQ("send " + arch() +
                " raw\nfail the ferryd received is not the one sent (its SHA-256 differs)\n",
            out);
  EXPECT_FALSE(fs::exists(dir_ / "cache/ferry" / kFerrydSum / "ferryd"));
}

TEST_F(ShipProgram, RefusesAFolderOthersMayWrite) {
  const std::string cache = (dir_ / "cache").string();
  fs::create_directories(cache + "/ferry");
  fs::permissions(cache + "/ferry", fs::perms::all);
  EXPECT_EQ(0U, run(cache).rfind("fail refusing cache folder " + cache + "/ferry: ", 0));
}

TEST_F(ShipProgram, RefusesAFolderAnotherUserOwns) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (to give a folder to another user)";
  const std::string cache = (dir_ / "cache").string();
  fs::create_directories(cache + "/ferry");
  fs::permissions(cache + "/ferry", fs::perms::owner_all);
  ASSERT_EQ(0, ::chown((cache + "/ferry").c_str(), 65534, 65534));
  EXPECT_EQ("fail refusing cache folder " + cache +
                "/ferry: not private to user 0 (owner:mode 65534:drwx------; make it 0700 and "
                "yours)\n",
            run(cache));
}

TEST_F(ShipProgram, FallsBackToTmpWhenTheHomeCannotTakeIt) {
  // Nobody, root included, can make a folder below a regular file.
  std::ofstream(dir_ / "file") << "x";
  const std::string tmp = "/tmp/ferry-" + std::to_string(::getuid()) + "/" + kFerrydSum;
  EXPECT_EQ("send " + arch() + " raw\nuse " + tmp + "/ferryd\nran --stdio\n",
            run((dir_ / "file").string()));
  EXPECT_EQ(kFerryd, slurp(tmp + "/ferryd"));
  // Only this test writes there: removed here, not by every test's TearDown (which, with
  // CTest running tests side by side, removed it under this one).
  fs::remove_all(tmp);
}

TEST_F(ShipProgram, AutoUsesAnInstalledFerrydOfTheSameProtocol) {
  plan_.mode = ShipMode::kAuto;
  const fs::path fake = dir_ / "ferryd";
  std::ofstream(fake) << "#!/bin/sh\necho \"ferryd 0.1.0 (protocol 9) $*\"\n";
  fs::permissions(fake, fs::perms::owner_all);
  EXPECT_EQ("use " + fake.string() + "\nferryd 0.1.0 (protocol 9) --stdio\n",
            run((dir_ / "cache").string(), fake.string()));
  std::ofstream(fake) << "#!/bin/sh\necho 'ferryd 0.0.9 (protocol 8)'\n";
  EXPECT_EQ(0U, run((dir_ / "cache").string(), fake.string()).rfind("send ", 0));
}

TEST_F(ShipProgram, NamesTheHostsArchitectureWhenNoFileFits) {
  plan_.files.front().arch = "no-such-arch";
  EXPECT_EQ("arch " + arch() + "\n", run((dir_ / "cache").string()));
  EXPECT_EQ("the host is " + arch() +
                " and ferryrun holds a ferryd for no-such-arch only; give --ferryd-dir DIR "
                "with a ferryd-" +
                arch() + " in it",
            wrong_arch_message(plan_, arch()));
}

// --ferryd-dir with fake ELF files: what is read up front and what only when a host asks.
class ShipPlanFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ferry-ship-plan." + std::to_string(::getpid()));
    fs::create_directories(dir_);
    write("ferryd-" + arch(), body_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
  Result<ShipPlan> load() {
    return load_ship_plan(ShipMode::kAuto, 9, dir_.string(), "/nonexistent");
  }
  std::string sum(const std::string& name) {
    const std::string cmd =
        "sha256sum <'" + (dir_ / name).string() + "' >'" + (dir_ / "sum").string() + "'";
    EXPECT_EQ(0, std::system(cmd.c_str()));
    return slurp(dir_ / "sum").substr(0, 64);
  }
  fs::path dir_;
  std::string body_ = std::string(
                          "\x7f"
                          "ELF") +
                      std::string(1000, 'x');
};

TEST_F(ShipPlanFiles, WithoutARecordTheFileIsHashedAndKept) {
  auto plan = load();
  ASSERT_TRUE(plan) << plan.error().message;
  const ShippedFerryd& f = plan->files.front();
  EXPECT_EQ(sum("ferryd-" + arch()), f.sha256);
  EXPECT_EQ(body_.size(), f.size);
  EXPECT_EQ(0U, f.gzip_size);
  fs::remove(dir_ / ("ferryd-" + arch()));  // already read: still sent as it was
  auto bytes = f.contents(false);
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_EQ(body_, **bytes);
}

TEST_F(ShipPlanFiles, TheBuildsRecordSparesReadingUntilAHostAsks) {
  const std::string name = "ferryd-" + arch();
  write(name + ".sha256", sum(name) + "  " + name + "\n");
  write(name + ".gz",
        "\x1f\x8b"
        "gzipped");
  auto plan = load();
  ASSERT_TRUE(plan) << plan.error().message;
  const ShippedFerryd& f = plan->files.front();
  EXPECT_EQ(sum(name), f.sha256);
  EXPECT_EQ(9U, f.gzip_size);
  EXPECT_EQ(
      "\x1f\x8b"
      "gzipped",
      **f.contents(true));
  // Not read yet: a file changed since is caught when a host asks for it.
  write(name, std::string("\x7f"
                          "ELF") +
                  std::string(1000, 'y'));
  auto bytes = f.contents(false);
  ASSERT_FALSE(bytes);
  EXPECT_NE(std::string::npos, bytes.error().message.find("its SHA-256 is not the one in"))
      << bytes.error().message;
}

TEST_F(ShipPlanFiles, ARecordOlderThanTheFileIsIgnored) {
  const std::string name = "ferryd-" + arch();
  write(name + ".sha256", std::string(64, '0') + "\n");
  const auto old = fs::last_write_time(dir_ / name) - std::chrono::hours(1);
  fs::last_write_time(dir_ / (name + ".sha256"), old);
  auto plan = load();
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(sum(name), plan->files.front().sha256);
}

TEST_F(ShipPlanFiles, AFileThatIsNotAnExecutableIsRefused) {
  write("ferryd-" + arch(), "#!/bin/sh\n");
  auto plan = load();
  ASSERT_FALSE(plan);
  EXPECT_EQ((dir_ / ("ferryd-" + arch())).string() + ": not a ferryd (no ELF header)",
            plan.error().message);
}

TEST(ShipLines, ParseEachAnswerAndRefuseOthers) {
  auto use = parse_ship_line("use /a/b/ferryd");
  ASSERT_TRUE(use);
  EXPECT_EQ(ShipLine::Kind::kUse, use->kind);
  EXPECT_EQ("/a/b/ferryd", use->text);
  EXPECT_EQ(ShipLine::Kind::kSend, parse_ship_line("send x86_64")->kind);
  EXPECT_EQ(ShipLine::Kind::kCached, parse_ship_line("cached /x")->kind);
  EXPECT_EQ(ShipLine::Kind::kFail, parse_ship_line("fail why")->kind);
  EXPECT_FALSE(parse_ship_line("Welcome to the host!"));
  EXPECT_FALSE(parse_ship_mode("sometimes"));
  EXPECT_EQ(ShipMode::kAlways, *parse_ship_mode("always"));
}

}  // namespace
}  // namespace ferry
