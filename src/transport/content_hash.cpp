// SHA-256 through libcrypto, in pieces: its SHA256_* calls where it has them, else EVP's.
#include "ferry/transport/content_hash.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "ferry/common/posix_handles.hpp"
#include "ferry/common/random_bytes.hpp"
#include "libcrypto.hpp"

namespace ferry {

void ContentHash::Free::operator()(void* ctx) const {
  if (!ctx) return;
  if (parts)
    std::free(ctx);
  else
    libcrypto::get().md_ctx_free(ctx);
}

ContentHash::~ContentHash() = default;

Result<ContentHash> ContentHash::start() {
  const auto& c = libcrypto::get();
  if (c.have_sha256_parts()) {
    void* ctx = std::malloc(libcrypto::kSha256CtxBytes);
    if (ctx && c.sha256_init(ctx) == 1) return ContentHash(ctx, true);
    std::free(ctx);
  }
  if (!c.have_digest()) return make_error("cannot compute SHA-256 here (libcrypto.so.3 not found)");
  void* ctx = c.md_ctx_new();
  if (!ctx || c.digest_init(ctx, c.sha256(), nullptr) != 1) {
    if (ctx) c.md_ctx_free(ctx);
    return make_error("cannot compute SHA-256 here (libcrypto refused the digest)");
  }
  return ContentHash(ctx, false);
}

void ContentHash::update(std::string_view bytes) {
  if (bytes.empty()) return;
  const auto& c = libcrypto::get();
  if (ctx_.get_deleter().parts)
    c.sha256_update(ctx_.get(), bytes.data(), bytes.size());
  else
    c.digest_update(ctx_.get(), bytes.data(), bytes.size());
}

std::string ContentHash::hex() {
  std::array<unsigned char, 32> md{};
  unsigned int len = md.size();
  const auto& c = libcrypto::get();
  if (ctx_.get_deleter().parts)
    c.sha256_final(md.data(), ctx_.get());
  else
    c.digest_final(ctx_.get(), md.data(), &len);
  ctx_.reset();
  return hex_text(
      std::string_view(reinterpret_cast<const char*>(md.data()), std::min<size_t>(len, md.size())));
}

Result<std::string> file_sha256(const std::string& path) {
  auto h = ContentHash::start();
  if (!h) return h.error();
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return make_error(path + ": " + std::strerror(errno));
  std::array<char, 1 << 16> buf{};
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error(path + ": " + std::strerror(errno));
    if (n == 0) break;
    h->update({buf.data(), static_cast<size_t>(n)});
  }
  return h->hex();
}

Result<std::string> bytes_sha256(std::string_view bytes) {
  auto h = ContentHash::start();
  if (!h) return h.error();
  h->update(bytes);
  return h->hex();
}

}  // namespace ferry
