#include "ferry/process/unique_fd.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <utility>

namespace ferry {
namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

TEST(UniqueFd, ClosesWhenDestroyedOrReset) {
  auto p = make_pipe();
  ASSERT_TRUE(p) << p.error().message;
  const int r = p->read.get(), w = p->write.get();
  p->read.reset();
  EXPECT_FALSE(is_open(r));
  EXPECT_FALSE(p->read);
  {
    UniqueFd moved = std::move(p->write);
    EXPECT_FALSE(p->write) << "a moved-from fd owns nothing";
    EXPECT_EQ(w, moved.get());
    EXPECT_TRUE(is_open(w));
  }
  EXPECT_FALSE(is_open(w));
}

TEST(UniqueFd, ReleaseHandsTheFdOver) {
  auto p = make_pipe();
  ASSERT_TRUE(p);
  const int r = p->read.release();
  EXPECT_FALSE(p->read);
  p = make_pipe();  // the old ends are destroyed: the released one stays open
  EXPECT_TRUE(is_open(r));
  ::close(r);
}

TEST(UniqueFd, PipeEndsAreCloseOnExec) {
  auto p = make_pipe();
  ASSERT_TRUE(p);
  EXPECT_TRUE(::fcntl(p->read.get(), F_GETFD) & FD_CLOEXEC);
  EXPECT_TRUE(::fcntl(p->write.get(), F_GETFD) & FD_CLOEXEC);
  UniqueFd null = open_dev_null();
  ASSERT_TRUE(null);
  EXPECT_TRUE(::fcntl(null.get(), F_GETFD) & FD_CLOEXEC);
}

}  // namespace
}  // namespace ferry
