#pragma once
/// \file
/// The last lines each rank printed, for the live view: a rank's last line in its row, its
/// recent lines on demand. Bounded: kLines lines of at most kLineBytes bytes per rank (the
/// rest of a longer line is dropped), so a chatty job costs a few tens of KB per rank.

#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ferry {

class OutputTail {
 public:
  static constexpr size_t kLines = 50;
  static constexpr size_t kLineBytes = 300;

  /// Bytes `rank` printed (stdout and stderr alike), in arrival order.
  void append(int rank, std::string_view bytes);
  /// The line `rank` is printing now, or its last whole line; "" none.
  std::string last_line(int rank) const;
  /// Its last lines, oldest first (the unfinished one last).
  std::vector<std::string> lines(int rank) const;

 private:
  struct Tail {
    std::deque<std::string> lines;
    std::string partial;
  };
  std::map<int, Tail> ranks_;
};

}  // namespace ferry
