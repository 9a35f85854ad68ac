#include "ferry/output/line_assembler.hpp"

#include <utility>

namespace ferry {

LineAssembler::LineAssembler(std::size_t cap) : cap_(cap == 0 ? 1 : cap) {}

std::string LineAssembler::take_held() {
  std::string out;
  out.swap(held_);
  mid_line_ = true;
  return out;
}

void LineAssembler::clear_held() {
  // A refused line may have grown the buffer far past the cap; keep at most a cap's worth.
  if (held_.capacity() > 2 * cap_) {
    std::string().swap(held_);
  } else {
    held_.clear();
  }
}

}  // namespace ferry
