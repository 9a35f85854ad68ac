#pragma once
// Inside the sync part: the stamps of a job's copy (copy_stamps.cpp), used where spares are kept,
// taken and mended (spare_copies.cpp). A stamp is "CTIME:INO:SIZE"; a line of a spare's stamps
// file is "STAMP LEN:PATH KIND MODE SIZE HASH TARGET".

#include <sys/stat.h>

#include <array>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/common/posix_handles.hpp"
#include "ferry/sync/file_cache.hpp"
#include "ferry/sync/tree.hpp"

namespace ferry::sync_detail {

int64_t time_ns(const timespec& t);
/// The stamp of what `st` describes, written into `buf` (a directory's size is 0: it changes
/// with its names, which are checked apart).
std::string_view stamp_chars(const struct stat& st, std::array<char, 64>& buf);
/// The lines of a stamps file; none when it cannot be read.
FileCache::CopyStamps read_stamps(const std::string& file);
/// Returns once the clock is past the tick of `newest` (a change time): any later change gets
/// a later change time, so a stamp taken now tells it.
void wait_past(int64_t newest);
/// Into `out`: the line a stamps file holds for `e` as `st` finds it ("STAMP LEN:PATH KIND MODE
/// SIZE HASH TARGET"), built in place (no string of its own per entry).
void stamp_line(std::string& out, const struct stat& st, const TreeEntry& e);
/// The path in a line of a stamps file ("" when it is not one).
std::string_view stamp_line_path(std::string_view line);
std::string parent_of(const std::string& path);
/// The kind of entry a line of a stamps file is (TreeEntry::Kind's number), -1 when it is not
/// a line of one.
int stamp_line_kind(std::string_view line);
/// Whether the copy at `at` is untouched since `stamps` were taken: every entry's stamp as
/// kept (a stat each), and its top holds no other name.
bool copy_untouched(const std::string& at, const FileCache::CopyStamps& stamps);

// Stats entries of a copy by their paths inside it, each from the copy's open top (fstatat):
// the kernel's lookup of a few names costs less than a system call, so no directory is opened
// on the way (on a VM where a call costs 1-2 us, opening each directory once cost a fifth
// more than the stats themselves).
class CopyStatter {
 public:
  explicit CopyStatter(int top) : top_(top) {}

  /// `path`'s lstat, the entry named relative to the copy's top. False: it cannot be stat-ed.
  bool stat(std::string_view path, struct stat& st);

 private:
  int top_;
  std::string path_;
};

}  // namespace ferry::sync_detail
