// The shell program that picks, checks or receives ferryd on a host, run here with /bin/sh
// against a cache folder of the test's own; and the parsing of its answers.

#include "ferry/transport/ferryd_shipment.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ferry {
namespace {

namespace fs = std::filesystem;

// sha256("hello\n")
constexpr const char* kHelloSum =
    "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

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
    plan_.files.push_back(
        {arch(), "test", kHelloSum, std::make_shared<const std::string>("hello\n"), nullptr});
    std::ofstream(dir_ / "input") << "hello\n";
  }
  void TearDown() override {
    fs::remove_all(dir_);
    fs::remove_all(fs::path("/tmp/ferry-" + std::to_string(::getuid())) / kHelloSum);
  }
  // Runs the program with XDG_CACHE_HOME=`cache`, `input` on stdin; its answer.
  std::string run(const std::string& cache, const std::string& installed = "/nonexistent",
                  const std::string& input = "input") {
    const std::string cmd = "XDG_CACHE_HOME='" + cache + "' " + ship_command(plan_, installed) +
                            " <'" + (dir_ / input).string() + "' >'" + (dir_ / "out").string() +
                            "' 2>/dev/null";
    EXPECT_EQ(0, std::system(cmd.c_str()));
    return slurp(dir_ / "out");
  }
  fs::path dir_;
  ShipPlan plan_;
};

TEST_F(ShipProgram, ReceivesThenReusesThenReplacesATamperedCopy) {
  const std::string cache = (dir_ / "cache").string();
  const std::string file = cache + "/ferry/" + kHelloSum + "/ferryd";
  EXPECT_EQ("send " + arch() + " raw\nuse " + file + "\n", run(cache));
  EXPECT_EQ("hello\n", slurp(file));
  struct stat st {};
  ASSERT_EQ(0, ::stat((cache + "/ferry").c_str(), &st));
  EXPECT_EQ(0700U, st.st_mode & 0777U);
  EXPECT_EQ("cached " + file + "\n", run(cache));
  std::ofstream(file) << "evil\n";
  EXPECT_EQ("send " + arch() + " raw\nuse " + file + "\n", run(cache));
  EXPECT_EQ("hello\n", slurp(file));
}

TEST_F(ShipProgram, SendsTheGzipCopyToHostsWithGzip) {
  const std::string gz = (dir_ / "input.gz").string();
  ASSERT_EQ(
      0, std::system(("gzip -9 -n -c '" + (dir_ / "input").string() + "' >'" + gz + "'").c_str()));
  plan_.files.front().gzip = std::make_shared<const std::string>(slurp(gz));
  const std::string cache = (dir_ / "cache").string();
  const std::string file = cache + "/ferry/" + kHelloSum + "/ferryd";
  EXPECT_EQ("send " + arch() + " gz\nuse " + file + "\n", run(cache, "/nonexistent", "input.gz"));
  EXPECT_EQ("hello\n", slurp(file));
}

TEST_F(ShipProgram, RefusesACopyThatIsNotTheOneSent) {
  std::ofstream(dir_ / "other") << "bye!!\n";  // as long as the file, other bytes
  const std::string out = run((dir_ / "cache").string(), "/nonexistent", "other");
  EXPECT_EQ("send " + arch() +
                " raw\nfail the ferryd received is not the one sent (its SHA-256 differs)\n",
            out);
  EXPECT_FALSE(fs::exists(dir_ / "cache/ferry" / kHelloSum / "ferryd"));
}

TEST_F(ShipProgram, RefusesAFolderOthersMayWrite) {
  const std::string cache = (dir_ / "cache").string();
  fs::create_directories(cache + "/ferry");
  fs::permissions(cache + "/ferry", fs::perms::all);
  EXPECT_EQ(0U, run(cache).rfind("fail refusing cache folder " + cache + "/ferry: ", 0));
}

TEST_F(ShipProgram, FallsBackToTmpWhenTheHomeCannotTakeIt) {
  // Nobody, root included, can make a folder below a regular file.
  std::ofstream(dir_ / "file") << "x";
  const std::string tmp = "/tmp/ferry-" + std::to_string(::getuid()) + "/" + kHelloSum;
  EXPECT_EQ("send " + arch() + " raw\nuse " + tmp + "/ferryd\n", run((dir_ / "file").string()));
  EXPECT_EQ("hello\n", slurp(tmp + "/ferryd"));
}

TEST_F(ShipProgram, AutoUsesAnInstalledFerrydOfTheSameProtocol) {
  plan_.mode = ShipMode::kAuto;
  const fs::path fake = dir_ / "ferryd";
  std::ofstream(fake) << "#!/bin/sh\necho 'ferryd 0.1.0 (protocol 9)'\n";
  fs::permissions(fake, fs::perms::owner_all);
  EXPECT_EQ("use " + fake.string() + "\n", run((dir_ / "cache").string(), fake.string()));
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
