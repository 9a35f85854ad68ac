// MASTER_PORT's default: a port free now, outside the range outgoing connections take theirs
// from, and not one the administrator reserved.
#include "ferry/daemon/free_port.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

namespace ferry {
namespace {

TEST(FreePort, IsOutsideTheEphemeralRangeAndFree) {
  int lo = 0, hi = 0;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  ASSERT_TRUE(range >> lo >> hi) << "no /proc/sys/net/ipv4/ip_local_port_range";
  ASSERT_TRUE(lo > 16384 || hi < 65535) << "no room outside " << lo << "-" << hi;
  for (int i = 0; i < 20; ++i) {
    const uint16_t port = find_free_port();
    ASSERT_NE(port, 0);
    EXPECT_TRUE(port < lo || port > hi) << port << " is inside " << lo << "-" << hi;
    // Free: a listener takes it.
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(port);
    EXPECT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << port;
    EXPECT_EQ(::listen(s, 1), 0);
    ::close(s);
  }
}

TEST(FreePort, ReservedPortsAreReadAsTheKernelWritesThem) {
  EXPECT_FALSE(port_is_reserved(8080, ""));
  EXPECT_FALSE(port_is_reserved(8080, "\n"));
  EXPECT_TRUE(port_is_reserved(8080, "8080\n"));
  EXPECT_TRUE(port_is_reserved(9050, "8080,9000-9100\n"));
  EXPECT_TRUE(port_is_reserved(9100, "8080,9000-9100"));
  EXPECT_FALSE(port_is_reserved(9101, "8080,9000-9100"));
  EXPECT_FALSE(port_is_reserved(8081, "8080,9000-9100"));
}

}  // namespace
}  // namespace ferry
