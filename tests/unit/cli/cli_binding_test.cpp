// mpirun's binding words and plm_rsh_args, parsed on their own.

#include <gtest/gtest.h>

#include "ferry/cli/binding_flags.hpp"
#include "ferry/cli/ssh_args.hpp"

namespace ferry {
namespace {

TEST(CliBinding, BindToUnitsAndModifiers) {
  BindingOptions b;
  ASSERT_TRUE(apply_bind_to("core:overload-allowed", b).ok());
  EXPECT_EQ(b.bind_to, BindTo::kCore);
  ASSERT_TRUE(apply_bind_to("NONE", b).ok());
  EXPECT_EQ(b.bind_to, BindTo::kNone);
  ASSERT_TRUE(apply_bind_to("hwthread", b).ok());
  EXPECT_EQ(b.bind_to, BindTo::kHwthread);
  ASSERT_TRUE(apply_bind_to("numa:if-supported", b).ok());
  EXPECT_EQ(b.bind_to, BindTo::kNuma);
  ASSERT_TRUE(apply_bind_to("socket", b).ok());
  EXPECT_EQ(b.bind_to, BindTo::kSocket);
  auto bad = apply_bind_to("core:sticky", b);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "unknown modifier 'sticky' in 'core:sticky' (expected overload-allowed, "
            "if-supported, or a count: core:N)");
}

// MPICH hydra's `-bind-to core:N`: N cores per rank, as Open MPI's PE=N.
TEST(CliBinding, BindToCoreTakesHydrasCount) {
  BindingOptions b;
  ASSERT_TRUE(apply_bind_to("core:2", b).ok());
  EXPECT_EQ(b.bind_to, BindTo::kCore);
  EXPECT_EQ(b.pe, 2);
  ASSERT_TRUE(apply_bind_to("socket:1", b).ok());
  EXPECT_EQ(b.bind_to, BindTo::kSocket);
  auto sockets = apply_bind_to("socket:2", b);
  ASSERT_FALSE(sockets.ok());
  EXPECT_EQ(sockets.error().message,
            "'socket:2': only core takes a count (core:N, N cores per rank)");
  auto zero = apply_bind_to("core:0", b);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().message, "bad count '0' in 'core:0'");
}

TEST(CliBinding, MapByResetsWhatItDoesNotName) {
  JobOptions job;
  ASSERT_TRUE(apply_map_by("ppr:2:node:pe=3,oversubscribe", job).ok());
  EXPECT_EQ(job.placement.per_host, 2);
  EXPECT_EQ(job.binding.pe, 3);
  EXPECT_TRUE(job.oversubscribe);
  ASSERT_TRUE(apply_map_by("node:NOOVERSUBSCRIBE", job).ok());
  EXPECT_EQ(job.placement.per_host, 0);
  EXPECT_EQ(job.binding.pe, 0);
  EXPECT_FALSE(job.oversubscribe);
  EXPECT_EQ(job.placement.mapping, HostMapping::kByNode);
  ASSERT_TRUE(apply_map_by("core", job).ok());
  EXPECT_EQ(job.placement.mapping, HostMapping::kBySlot);
  EXPECT_EQ(job.binding.bind_to, BindTo::kCore);  // core mapping binds to cores by default
  JobOptions none;
  none.binding.bind_to = BindTo::kNone;
  ASSERT_TRUE(apply_map_by("core", none).ok());
  EXPECT_EQ(none.binding.bind_to, BindTo::kNone);
  ASSERT_TRUE(apply_map_by("socket:SPAN", job).ok());
  EXPECT_EQ(job.binding.map_by, MapBy::kSocket);
  for (const char* bad :
       {"ppr", "ppr:x:node", "ppr:0:node", "slot:PE=0", "slot:PE=x", "slot:FAST", "", "board"})
    EXPECT_FALSE(apply_map_by(bad, job).ok()) << bad;
}

TEST(CliBinding, DeviceLists) {
  auto d = parse_device_list("0, 2,4");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, (std::vector<int>{0, 2, 4}));
  EXPECT_FALSE(parse_device_list("0,,1").ok());
  EXPECT_FALSE(parse_device_list("1,1").ok());
  EXPECT_FALSE(parse_device_list("-1").ok());
  EXPECT_FALSE(parse_device_list("gpu0").ok());
}

TEST(CliSshArgs, ShortOptionsJoinedOrSeparate) {
  SshSettings s;
  int heartbeat_s = 0;
  std::vector<std::string> notes;
  ASSERT_TRUE(
      apply_plm_rsh_args("-p2222 -i '/my keys/id' -l root -F /cfg -q -x", s, heartbeat_s, notes)
          .ok());
  EXPECT_EQ(s.port, 2222);
  EXPECT_EQ(s.identity_file, "/my keys/id");
  EXPECT_EQ(s.user, "root");
  EXPECT_EQ(s.config_file, "/cfg");
  EXPECT_EQ(notes.size(), 2u);
}

TEST(CliSshArgs, DashOOptions) {
  SshSettings s;
  int heartbeat_s = 0;
  std::vector<std::string> notes;
  ASSERT_TRUE(
      apply_plm_rsh_args("-oPort=2301 -o \"User alice\" -o StrictHostKeyChecking=accept-new "
                         "-o ServerAliveInterval=15 -o UserKnownHostsFile=/dev/null",
                         s, heartbeat_s, notes)
          .ok());
  EXPECT_EQ(s.port, 2301);
  EXPECT_EQ(s.user, "alice");
  EXPECT_TRUE(s.accept_new);
  EXPECT_EQ(heartbeat_s, 15);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("UserKnownHostsFile"), std::string::npos);
}

TEST(CliSshArgs, ErrorsNameTheWord) {
  SshSettings s;
  int heartbeat_s = 0;
  std::vector<std::string> notes;
  auto e = [&](const char* text) {
    auto st = apply_plm_rsh_args(text, s, heartbeat_s, notes);
    return st.ok() ? std::string("(ok)") : st.error().message;
  };
  EXPECT_EQ(e("-p"), "'-p' needs a value");
  EXPECT_EQ(e("-p 0"), "bad port '0' in '-p 0' (expected 1-65535)");
  EXPECT_EQ(e("-l 'a b'"), "bad user 'a b' in '-l a b'");
  EXPECT_EQ(e("-J jump"),
            "ssh option '-J' is not supported here; put it in ~/.ssh/config (or a "
            "file given with --ssh-config)");
  EXPECT_EQ(e("-o Port"), "'-o Port' is not Key=Value");
  EXPECT_EQ(e("-o StrictHostKeyChecking=maybe"),
            "bad value in '-o StrictHostKeyChecking=maybe' (expected yes, no or accept-new)");
  EXPECT_EQ(e("host"), "unexpected 'host' (expected ssh options such as -p 2222)");
  EXPECT_EQ(e("-p '2222"), "unbalanced quote in '-p '2222'");
}

}  // namespace
}  // namespace ferry
