#include "ferry/common/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "ferry/common/posix_handles.hpp"
#include "ferry/common/read_text_file.hpp"

namespace ferry {

Result<MappedFile> MappedFile::open(const std::string& path, std::size_t limit,
                                    const std::string& what) {
  MappedFile f;
  {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return make_error(path + ": cannot read: " + std::generic_category().message(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        static_cast<std::size_t>(st.st_size) <= limit) {
      // Populated at once: one call maps every page, rather than a fault per page read.
      void* m = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ,
                       MAP_PRIVATE | MAP_POPULATE, fd.get(), 0);
      if (m != MAP_FAILED) {
        f.map_ = static_cast<const char*>(m);
        f.size_ = static_cast<std::size_t>(st.st_size);
        return f;
      }
    }
  }
  // Not a regular file, empty (it may still hold bytes: /proc), past the limit (said by the
  // read), or not mappable: read.
  auto text = read_text_file(path, limit, what);
  if (!text) return text.error();
  f.read_ = std::make_unique<std::string>(std::move(*text));
  return f;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : map_(std::exchange(o.map_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      read_(std::move(o.read_)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(const_cast<char*>(map_), size_);
    map_ = std::exchange(o.map_, nullptr);
    size_ = std::exchange(o.size_, 0);
    read_ = std::move(o.read_);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (map_) ::munmap(const_cast<char*>(map_), size_);
}

}  // namespace ferry
