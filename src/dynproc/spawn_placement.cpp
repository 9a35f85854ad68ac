#include "ferry/dynproc/spawn_placement.hpp"

#include <string>

namespace ferry {

Result<std::vector<int>> place_spawned(const std::vector<int>& free, int count,
                                       bool oversubscribe) {
  if (free.empty()) return make_error("the job has no host");
  long total_free = 0;
  for (int f : free) total_free += f > 0 ? f : 0;
  if (count > total_free && !oversubscribe)
    return make_error("asks for " + std::to_string(count) + " process(es), but the job's hosts " +
                      "have " + std::to_string(total_free) +
                      " free slot(s) (--oversubscribe starts them anyway, sharing slots)");
  std::vector<int> out;
  out.reserve(static_cast<size_t>(count > 0 ? count : 0));
  for (size_t h = 0; h < free.size() && static_cast<int>(out.size()) < count; ++h)
    for (int k = 0; k < free[h] && static_cast<int>(out.size()) < count; ++k)
      out.push_back(static_cast<int>(h));
  for (size_t h = 0; static_cast<int>(out.size()) < count; h = (h + 1) % free.size())
    out.push_back(static_cast<int>(h));
  return out;
}

}  // namespace ferry
