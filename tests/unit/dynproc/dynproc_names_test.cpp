#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ferry/dynproc/group_ops.hpp"
#include "ferry/dynproc/name_directory.hpp"

namespace ferry {
namespace {

const ProcId kA{"ferry.j.0", 0};
const ProcId kB{"ferry.j.0", 3};

// ---- the name service -----------------------------------------------------------------------

TEST(NameDirectory, PublishedNameIsFoundWithItsOwner) {
  NameDirectory d;
  std::vector<NameDirectory::Answer> released;
  EXPECT_EQ(d.publish(kA, {{"svc", "port-1"}}, false, released), kPmixSuccess);
  EXPECT_TRUE(released.empty());
  auto a = d.lookup(7, {"svc"}, false);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->ticket, 7u);
  EXPECT_EQ(a->status, kPmixSuccess);
  ASSERT_EQ(a->found.size(), 1u);
  EXPECT_EQ(a->found[0], (NameDirectory::Entry{"svc", "port-1", kA}));
  // Not first-read: a second lookup finds it again.
  EXPECT_EQ(d.lookup(8, {"svc"}, false)->status, kPmixSuccess);
}

TEST(NameDirectory, ByteObjectsKeepTheirKind) {
  NameDirectory d;
  std::vector<NameDirectory::Answer> released;
  const std::string raw("\0\1\2", 3);
  ASSERT_EQ(d.publish(kA, {{"cid", raw, {}, true}}, false, released), kPmixSuccess);
  auto a = d.lookup(1, {"cid"}, false);
  ASSERT_EQ(a->found.size(), 1u);
  EXPECT_TRUE(a->found[0].bytes);
  EXPECT_EQ(a->found[0].value, raw);
}

TEST(NameDirectory, MissingNameWithoutWaitIsNotFoundAtOnce) {
  NameDirectory d;
  auto a = d.lookup(1, {"nothing"}, false);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, kPmixErrNotFound);
  EXPECT_TRUE(a->found.empty());
  std::vector<NameDirectory::Answer> released;
  d.publish(kA, {{"x", "1"}}, false, released);
  auto p = d.lookup(2, {"x", "y"}, false);
  EXPECT_EQ(p->status, kPmixErrPartialSuccess);
  EXPECT_EQ(p->found.size(), 1u);
}

TEST(NameDirectory, DuplicateKeyPublishesNothing) {
  NameDirectory d;
  std::vector<NameDirectory::Answer> released;
  ASSERT_EQ(d.publish(kA, {{"svc", "1"}}, false, released), kPmixSuccess);
  EXPECT_EQ(d.publish(kB, {{"other", "2"}, {"svc", "3"}}, false, released), kPmixErrDuplicateKey);
  EXPECT_EQ(d.lookup(1, {"other"}, false)->status, kPmixErrNotFound);
  EXPECT_EQ(d.lookup(2, {"svc"}, false)->found[0].value, "1");
  EXPECT_EQ(d.publish(kB, {{"k", "1"}, {"k", "2"}}, false, released), kPmixErrDuplicateKey);
  EXPECT_EQ(d.publish(kB, {{"", "1"}}, false, released), kPmixErrBadParam);
}

TEST(NameDirectory, WaitingLookupIsReleasedWhenAllItsNamesArePublished) {
  NameDirectory d;
  EXPECT_FALSE(d.lookup(5, {"p:accept", "extra"}, true));
  EXPECT_EQ(d.waiting(), 1u);
  std::vector<NameDirectory::Answer> released;
  d.publish(kA, {{"p:accept", "procs-a"}}, true, released);
  EXPECT_TRUE(released.empty()) << "one of its two names is still missing";
  d.publish(kB, {{"extra", "e"}}, false, released);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].ticket, 5u);
  EXPECT_EQ(released[0].status, kPmixSuccess);
  ASSERT_EQ(released[0].found.size(), 2u);
  EXPECT_EQ(released[0].found[0].value, "procs-a");
  EXPECT_EQ(released[0].found[1].owner, kB);
  EXPECT_EQ(d.waiting(), 0u);
  // First-read: gone once read; the other name stays.
  EXPECT_EQ(d.lookup(6, {"p:accept"}, false)->status, kPmixErrNotFound);
  EXPECT_EQ(d.lookup(7, {"extra"}, false)->status, kPmixSuccess);
}

TEST(NameDirectory, FirstReadNameGoesToTheFirstWaiterOnly) {
  NameDirectory d;
  EXPECT_FALSE(d.lookup(1, {"k"}, true));
  EXPECT_FALSE(d.lookup(2, {"k"}, true));
  std::vector<NameDirectory::Answer> released;
  d.publish(kA, {{"k", "v1"}}, true, released);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].ticket, 1u);
  EXPECT_EQ(d.waiting(), 1u);
  released.clear();
  d.publish(kA, {{"k", "v2"}}, true, released);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].ticket, 2u);
  EXPECT_EQ(released[0].found[0].value, "v2");
  EXPECT_EQ(d.published(), 0u);
}

TEST(NameDirectory, UnpublishRemovesOnlyTheOwnersNames) {
  NameDirectory d;
  std::vector<NameDirectory::Answer> released;
  d.publish(kA, {{"a1", "1"}, {"a2", "2"}}, false, released);
  d.publish(kB, {{"b1", "3"}}, false, released);
  EXPECT_EQ(d.unpublish(kB, {"a1"}), kPmixErrNotFound) << "another process's name";
  EXPECT_EQ(d.unpublish(kA, {"a1"}), kPmixSuccess);
  EXPECT_EQ(d.lookup(1, {"a1"}, false)->status, kPmixErrNotFound);
  EXPECT_EQ(d.unpublish(kA, {}), kPmixSuccess) << "all of its names";
  EXPECT_EQ(d.published(), 1u);
}

TEST(NameDirectory, DroppedAndBoundedWaiting) {
  NameDirectory d;
  EXPECT_FALSE(d.lookup(1, {"k"}, true));
  EXPECT_TRUE(d.drop(1));
  EXPECT_FALSE(d.drop(1));
  std::vector<NameDirectory::Answer> released;
  d.publish(kA, {{"k", "v"}}, false, released);
  EXPECT_TRUE(released.empty()) << "a dropped lookup is not answered";
  for (uint64_t t = 0; t < NameDirectory::kMaxWaiting; ++t)
    EXPECT_FALSE(d.lookup(100 + t, {"z"}, true));
  auto over = d.lookup(9999, {"z"}, true);
  ASSERT_TRUE(over);
  EXPECT_EQ(over->status, kPmixErrOutOfResource);
}

TEST(NameDirectory, BytesAreBounded) {
  NameDirectory d;
  std::vector<NameDirectory::Answer> released;
  std::string big(NameDirectory::kMaxBytes / 2, 'x');
  EXPECT_EQ(d.publish(kA, {{"a", big}}, true, released), kPmixSuccess);
  EXPECT_EQ(d.publish(kA, {{"b", big}}, false, released), kPmixErrOutOfResource);
  EXPECT_EQ(d.lookup(1, {"a"}, false)->status, kPmixSuccess);  // read: removed, its bytes freed
  EXPECT_EQ(d.publish(kA, {{"b", big}}, false, released), kPmixSuccess);
}

// ---- collectives over some processes ----------------------------------------------------------

// Ranks 0,1 on host 0; 2,3 on host 1; 4,5 on host 2 (namespace "n"); namespace "c" (children)
// has rank 0 on host 2 and rank 1 on host 0.
std::vector<int> hosts_of(const ProcId& p) {
  if (p.nspace == "n") {
    if (p.rank == kWildcardRank) return {0, 1, 2};
    if (p.rank < 6) return {static_cast<int>(p.rank / 2)};
  }
  if (p.nspace == "c") {
    if (p.rank == kWildcardRank) return {2, 0};
    if (p.rank == 0) return {2};
    if (p.rank == 1) return {0};
  }
  return {};
}

TEST(GroupOps, CompletesWhenEveryHostOfTheProcessesReported) {
  GroupOps ops(hosts_of);
  // Ranks 1 and 2 of "n": hosts 0 and 1; host 2 is not part of it.
  auto first = ops.arrive(1, 11, GroupOps::Kind::kConnect, {{"n", 2}, {"n", 1}}, "b");
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_FALSE(*first);
  EXPECT_EQ(ops.missing_hosts(), std::vector<int>{0});
  auto second = ops.arrive(0, 5, GroupOps::Kind::kConnect, {{"n", 1}, {"n", 2}}, "a");
  ASSERT_TRUE(second && *second);
  const auto& done = **second;
  EXPECT_EQ(done.status, kPmixSuccess);
  EXPECT_EQ(done.data, "ab") << "host order";
  EXPECT_EQ(done.hosts, (std::vector<GroupOps::Arrival>{{0, 5}, {1, 11}}));
  EXPECT_EQ(ops.pending(), 0u);
}

TEST(GroupOps, SpansNamespacesAndWildcards) {
  GroupOps ops(hosts_of);
  // Every child, and parent rank 0: hosts 0 and 2.
  std::vector<ProcId> procs{{"c", kWildcardRank}, {"n", 0}};
  EXPECT_FALSE(*ops.arrive(2, 1, GroupOps::Kind::kFence, procs, "x"));
  EXPECT_FALSE(ops.arrive(1, 1, GroupOps::Kind::kFence, procs, "y")) << "host 1 holds none";
  auto done = ops.arrive(0, 9, GroupOps::Kind::kFence, procs, "w");
  ASSERT_TRUE(done && *done);
  EXPECT_EQ((*done)->data, "wx");
}

TEST(GroupOps, KindsAndRepeatedRoundsAreKeptApart) {
  GroupOps ops(hosts_of);
  std::vector<ProcId> procs{{"n", 0}, {"n", 2}};
  EXPECT_FALSE(*ops.arrive(0, 1, GroupOps::Kind::kConnect, procs, ""));
  EXPECT_FALSE(*ops.arrive(0, 2, GroupOps::Kind::kDisconnect, procs, ""));
  // Host 0 is already in the next connect before host 1 joined the first.
  EXPECT_FALSE(*ops.arrive(0, 3, GroupOps::Kind::kConnect, procs, ""));
  EXPECT_EQ(ops.pending(), 3u);
  auto c1 = ops.arrive(1, 7, GroupOps::Kind::kConnect, procs, "");
  ASSERT_TRUE(c1 && *c1);
  EXPECT_EQ((*c1)->hosts.front(), (GroupOps::Arrival{0, 1}));
  auto c2 = ops.arrive(1, 8, GroupOps::Kind::kConnect, procs, "");
  ASSERT_TRUE(c2 && *c2);
  EXPECT_EQ((*c2)->hosts.front(), (GroupOps::Arrival{0, 3}));
  EXPECT_EQ(ops.pending(), 1u);
}

TEST(GroupOps, UnknownProcessesAreErrors) {
  GroupOps ops(hosts_of);
  EXPECT_FALSE(ops.arrive(0, 1, GroupOps::Kind::kConnect, {{"n", 40}}, ""));
  EXPECT_FALSE(ops.arrive(0, 1, GroupOps::Kind::kConnect, {{"other", 0}}, ""));
  EXPECT_FALSE(ops.arrive(0, 1, GroupOps::Kind::kConnect, {}, ""));
}

TEST(GroupOps, LostHostEndsItsOperationsForTheOthers) {
  GroupOps ops(hosts_of);
  EXPECT_FALSE(*ops.arrive(0, 4, GroupOps::Kind::kConnect, {{"n", 0}, {"n", 4}}, ""));
  EXPECT_FALSE(*ops.arrive(0, 5, GroupOps::Kind::kConnect, {{"n", 0}, {"n", 2}}, ""));
  auto lost = ops.host_lost(2);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].status, kPmixErrUnreach);
  EXPECT_EQ(lost[0].hosts, (std::vector<GroupOps::Arrival>{{0, 4}}));
  EXPECT_EQ(ops.pending(), 1u) << "the operation without host 2 goes on";
}

}  // namespace
}  // namespace ferry
