// The frame limit on the sending side: a frame the other side would call corrupt is never
// emitted.
#include <gtest/gtest.h>

#include <string>

#include "ferry/wire/frame.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry::wire {
namespace {

TEST(FrameLimit, TheLargestFrameIsEncodedAndRead) {
  const std::string payload(kMaxFrame - 1, 'x');
  const std::string frame = encode_frame(7, payload);
  FrameReader r;
  r.feed(frame);
  auto f = r.next();
  ASSERT_TRUE(f);
  ASSERT_TRUE(f->has_value());
  EXPECT_EQ((*f)->payload.size(), payload.size());
}

TEST(FrameLimit, ALargerFrameThrowsInsteadOfBeingSent) {
  EXPECT_THROW(encode_frame(7, std::string(kMaxFrame, 'x')), FrameTooLarge);
  try {
    encode_frame(3, std::string(kMaxFrame + 10, 'x'));
  } catch (const FrameTooLarge& e) {
    EXPECT_EQ(std::string(e.what()), "frame of type 3 would be " + std::to_string(kMaxFrame + 11) +
                                         " bytes, over the limit of 16777216 bytes (16 MiB)");
  }
  // A message's encoder goes through the same check.
  HostSpec spec;
  spec.env.assign(17, std::string(1 << 20, 'e'));
  EXPECT_THROW(encode(spec), FrameTooLarge);
}

}  // namespace
}  // namespace ferry::wire
