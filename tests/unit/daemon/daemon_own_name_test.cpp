// Horovod's gloo binds to the address of the host's own name: ferryd checks that name as
// gloo looks it up before it starts Horovod ranks, and says what is wrong in one line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ferry/daemon/own_name.hpp"

namespace ferry {
namespace {

TEST(OwnName, HorovodGlooRanksAreThoseWithTheRendezvousAndTheGlooController) {
  const std::string addr = "HOROVOD_GLOO_RENDEZVOUS_ADDR=127.0.0.1";
  EXPECT_TRUE(uses_horovod_gloo({addr}));
  EXPECT_TRUE(uses_horovod_gloo({"HOROVOD_CONTROLLER=gloo", addr}));
  EXPECT_TRUE(uses_horovod_gloo({"HOROVOD_CONTROLLER=GLOO", addr}));
  EXPECT_TRUE(uses_horovod_gloo({"HOROVOD_CONTROLLER=", addr}));
  EXPECT_FALSE(uses_horovod_gloo({"HOROVOD_CONTROLLER=mpi", addr}));
  EXPECT_FALSE(uses_horovod_gloo({"HOROVOD_CONTROLLER=gloo", "HOROVOD_RANK=0"}));
  EXPECT_FALSE(uses_horovod_gloo({}));
}

TEST(OwnName, ANameOfThisHostPasses) {
  EXPECT_TRUE(check_own_name("localhost"));
  EXPECT_TRUE(check_own_name("127.0.0.1"));
}

TEST(OwnName, ANameThatDoesNotResolveIsNamedWithTheFileToFix) {
  // .invalid never resolves (RFC 6761).
  const std::string name = "ferry-no-such-host.invalid";
  Status st = check_own_name(name);
  ASSERT_FALSE(st);
  const std::string& m = st.error().message;
  EXPECT_NE(m.find("'" + name + "' does not resolve here"), std::string::npos) << m;
  EXPECT_NE(m.find("Horovod's gloo"), std::string::npos) << m;
  EXPECT_NE(m.find("/etc/hosts on " + name), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(OwnName, ANameOfAnotherMachineNamesItsAddress) {
  // 203.0.113.0/24 is TEST-NET-3: never an address of this machine.
  Status st = check_own_name("203.0.113.7");
  ASSERT_FALSE(st);
  const std::string& m = st.error().message;
  EXPECT_NE(m.find("'203.0.113.7' resolves here to 203.0.113.7, not an address of this host"),
            std::string::npos)
      << m;
}

}  // namespace
}  // namespace ferry
