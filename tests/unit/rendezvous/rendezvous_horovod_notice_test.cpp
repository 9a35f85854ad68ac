#include <gtest/gtest.h>

#include "ferry/rendezvous/horovod_notice.hpp"

namespace ferry {
namespace {

// codec.dumps_base64(({"eth0": [("10.231.0.11", 46604)],
//                      "eth1": [("192.168.7.2", 5), ("192.168.7.3", 70000)]}, b"k" * 32))
// as horovod 0.28.1 writes it: the last port cannot be a worker's.
constexpr const char* kAddressesBadPort =
    "gAWVeQAAAAAAAAB9lCiMBGV0aDCUXZSMCzEwLjIzMS4wLjExlE0MtoaUYYwEZXRoMZRdlCiMCzE5Mi4xNjguNy4ylEsF"
    "hpSMCzE5Mi4xNjguNy4zlEpwEQEAhpRldUMga2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2uUhpQu";
// The same with 65535 as the last port (Python's pickle, protocol 5).
constexpr const char* kAddresses =
    "gAWVdwAAAAAAAAB9lCiMBGV0aDCUXZSMCzEwLjIzMS4wLjExlE0MtoaUYYwEZXRoMZRdlCiMCzE5Mi4xNjguNy4ylEsF"
    "hpSMCzE5Mi4xNjguNy4zlE3//4aUZXVDIGtra2tra2tra2tra2tra2tra2tra2tra2tra2tra2trlIaULg==";

TEST(HorovodNotice, ReadsAWorkersAddresses) {
  auto a = parse_worker_addresses(kAddresses);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_EQ(a->addresses.size(), 3u);
  EXPECT_EQ(a->addresses[0], (std::pair<std::string, int>{"10.231.0.11", 46604}));
  EXPECT_EQ(a->addresses[1], (std::pair<std::string, int>{"192.168.7.2", 5}));
  EXPECT_EQ(a->addresses[2], (std::pair<std::string, int>{"192.168.7.3", 65535}));
  EXPECT_EQ(a->key, std::string(32, 'k'));
  EXPECT_FALSE(parse_worker_addresses("gAWVeQAAAAAA"));
  EXPECT_FALSE(parse_worker_addresses("not base64!"));
}

TEST(HorovodNotice, ImpossiblePortsAndAddressesAreRefused) {
  auto a = parse_worker_addresses(kAddressesBadPort);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message, "port 70000 in the worker's address");
  // ("1.2.3.4", 0) and ("1.2\n3.4", 2222), each with a 32-byte key.
  a = parse_worker_addresses("gAWMBzEuMi4zLjRLAEMga2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2su");
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message, "port 0 in the worker's address");
  a = parse_worker_addresses(
      "gAWMBzEuMgozLjRNrghDIGtra2tra2tra2tra2tra2tra2tra2tra2tra2tra2trLg==");
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message, "an address in the worker's address is not text");
  a = parse_worker_addresses(
      "gAWMBzEuMi4zLjRNrghDIGtra2tra2tra2tra2tra2tra2tra2tra2tra2tra2trLg==");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->addresses.at(0), (std::pair<std::string, int>{"1.2.3.4", 2222}));
}

TEST(HorovodNotice, HostsUpdatedRequestCarriesTheTimestamp) {
  const std::string p = hosts_updated_pickle(0x01020304, 2);
  EXPECT_EQ(p.substr(0, 2), "\x80\x05");
  const size_t at = p.find("timestamp");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(p.substr(at + 10, 5), std::string("J\x04\x03\x02\x01", 5));
  EXPECT_NE(p.find("added"), std::string::npos);
  EXPECT_NE(hosts_updated_pickle(1, 1).find("removed"), std::string::npos);
  const std::string m = service_message(std::string(32, 'd'), "abc");
  EXPECT_EQ(m, std::string(32, 'd') + std::string("\x03\0\0\0", 4) + "abc");
}

}  // namespace
}  // namespace ferry
