#pragma once
/// \file
/// The buffer a connection reads into, left uninitialised. A `std::array<char, N> buf{}` in a
/// per-connection object is zeroed when the object is made: 256 KiB of memset, and a page
/// fault per 4 KiB, for each host of each job, on bytes every read overwrites before use.
/// Here the pages are touched only as reads fill them (most reads fill one).

#include <cstddef>
#include <memory>

namespace ferry {

class ReadBuffer {
 public:
  explicit ReadBuffer(std::size_t size)
      : data_(std::make_unique_for_overwrite<char[]>(size)), size_(size) {}

  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  std::unique_ptr<char[]> data_;
  std::size_t size_;
};

}  // namespace ferry
