// Per-host devices (`[[hosts]] devices = [...]` in the job file) reach each host's ferryd
// in its HostSpec; hosts without their own list get the job's (`--devices`). Hosts are told
// apart by name, user and port: two containers behind one address are two hosts.
#include <gtest/gtest.h>

#include "fake_daemon.hpp"

namespace ferry {
namespace {

using test_support::run_with_fake_daemons;
using test_support::SentSpec;

HostEntry host(const std::string& name, int port, const std::string& user = "") {
  HostEntry h;
  h.name = name;
  h.port = port;
  h.user = user;
  return h;
}

const wire::HostSpec& spec_of(const std::vector<SentSpec>& specs, const HostEntry& h) {
  for (const auto& s : specs)
    if (s.host.name == h.name && s.host.port == h.port && s.host.user == h.user) return s.spec;
  throw std::runtime_error("no HostSpec for " + h.name + ":" + std::to_string(h.port));
}

TEST(JobHostDevices, EachHostGetsItsOwnListElseTheJobs) {
  JobOptions o;
  HostEntry a = host("10.0.0.5", 2201), b = host("10.0.0.5", 2202), c = host("10.0.0.6", 22),
            d = host("10.0.0.5", 2201, "bob");
  o.hosts = {a, b, c, d};
  o.command = {"true"};
  o.wdir = "/tmp";
  o.binding.devices = {7};
  o.host_devices = {{"10.0.0.5", "", 2201, {0, 1}}, {"10.0.0.5", "", 2202, {2, 3}}};
  auto r = run_with_fake_daemons(o);
  ASSERT_EQ(r.status, 0) << r.diag;
  ASSERT_EQ(r.specs.size(), 4u);
  EXPECT_EQ(spec_of(r.specs, a).binding.devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(spec_of(r.specs, b).binding.devices, (std::vector<int>{2, 3}));
  EXPECT_EQ(spec_of(r.specs, c).binding.devices, (std::vector<int>{7}));
  // Same address and port, another user: another host, with no list of its own.
  EXPECT_EQ(spec_of(r.specs, d).binding.devices, (std::vector<int>{7}));
}

}  // namespace
}  // namespace ferry
