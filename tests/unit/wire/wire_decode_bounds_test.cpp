// What decoding a frame may allocate. A count in a frame is a claim, not a promise: a
// decoder must not make room for more elements than the frame's bytes could hold.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "ferry/wire/codec.hpp"
#include "ferry/wire/messages.hpp"

namespace {

// Bytes operator new hands out while `counting` is set. Replacing the global operator new
// is how a test sees what a decoder allocates without changing the decoder; it counts
// nothing unless a test here turns it on.
std::atomic<bool> counting{false};
std::atomic<std::size_t> allocated{0};

}  // namespace

void* operator new(std::size_t n) {
  if (counting.load(std::memory_order_relaxed)) allocated.fetch_add(n, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// The other forms too, so every allocation and every release goes through malloc/free
// (a sanitizer's own operator new paired with the free() below is a mismatch).
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept {
  return ::operator new(n, t);
}
// GCC 12 takes the free() below for a mismatch with operator new: it does not see that new
// is replaced too.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace ferry::wire {
namespace {

// Found by fuzz_frame: a host spec claiming about one rank per byte of the frame made
// ferryd allocate a RankLaunch (56 bytes) for each before finding out the ranks were not
// there, 900 MiB for one 16 MiB frame.
TEST(WireDecodeBounds, HostSpecRankCountIsCheckedBeforeAllocating) {
  Encoder e;
  e.u32(kProtocolVersion);
  e.str("");  // job id
  e.str("");  // wdir
  e.strs({});
  e.strs({});
  e.u32(1u << 20);                     // ranks claimed
  e.raw(std::string(1u << 20, '\0'));  // room for that many bytes, not that many ranks
  const Frame f{static_cast<uint8_t>(MsgType::kHostSpec), e.take()};

  allocated = 0;
  counting = true;
  auto spec = decode<HostSpec>(f);
  counting = false;
  EXPECT_FALSE(spec);
  EXPECT_LT(allocated.load(), f.payload.size());
}

}  // namespace
}  // namespace ferry::wire
