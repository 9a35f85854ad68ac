#pragma once
/// \file
/// A file's bytes mapped read-only instead of copied: for the large files a launch reads whole
/// and only looks at (the hash index of a synced tree, the stamps of a spare copy). A fresh
/// process's new memory costs a page fault per 4 KiB page, and on a virtual machine whose page
/// tables the hypervisor keeps, far more (12-26 us a page on this project's VM: a 300 KiB file
/// read into new memory took 1.9 ms, mapped 0.3 ms). Only for files ferry replaces by a rename and
/// never rewrites in place: a file truncated while mapped faults its reader (SIGBUS).

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "ferry/common/result.hpp"

namespace ferry {

class MappedFile {
 public:
  /// `path` mapped (a regular file), or read as read_text_file() reads it (anything else, an
  /// empty file, or where mapping fails). Errors as read_text_file()'s, its `limit` and `what`
  /// included.
  static Result<MappedFile> open(const std::string& path, std::size_t limit,
                                 const std::string& what);

  MappedFile() = default;
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  /// The bytes; they stay where they are when the MappedFile is moved.
  std::string_view text() const {
    return map_ ? std::string_view(map_, size_) : read_ ? std::string_view(*read_) : "";
  }
  /// Whether the bytes are mapped (not read into memory).
  bool mapped() const { return map_ != nullptr; }

 private:
  const char* map_ = nullptr;
  std::size_t size_ = 0;
  /// The bytes where they were read (not mapped): apart, so that a move leaves them in place.
  std::unique_ptr<std::string> read_;
};

}  // namespace ferry
