#include "ferry/transport/sealed_records.hpp"

#include <cstring>

#include "ferry/transport/connect_back.hpp"
#include "libcrypto.hpp"

namespace ferry {
namespace {

constexpr size_t kNonceBytes = 12;

// The nonce of record `seq`: 4 zero bytes, then the number big-endian.
void nonce_of(uint64_t seq, unsigned char (&out)[kNonceBytes]) {
  std::memset(out, 0, sizeof out);
  for (int i = 0; i < 8; ++i) out[kNonceBytes - 1 - i] = static_cast<unsigned char>(seq >> (8 * i));
}

void put_be32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (24 - 8 * i));
}

uint32_t get_be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// An EVP_CIPHER_CTX keyed for AES-128-GCM, encrypting or decrypting.
struct CipherCtx {
  void* ctx = nullptr;
  uint64_t seq = 0;
  CipherCtx() = default;
  CipherCtx(const CipherCtx&) = delete;
  CipherCtx& operator=(const CipherCtx&) = delete;
  ~CipherCtx() {
    if (ctx) libcrypto::get().ctx_free(ctx);
  }
};

Status make_ctx(CipherCtx& c, std::string_view key, bool encrypt) {
  const libcrypto::Functions& f = libcrypto::get();
  if (!f.have_gcm()) return make_error("cannot load AES-GCM from libcrypto.so.3 (OpenSSL)");
  if (key.size() != kRouteKeySize) return make_error("an output route key has 16 bytes");
  c.ctx = f.ctx_new();
  if (!c.ctx) return make_error("cannot create a cipher context");
  const auto* k = reinterpret_cast<const unsigned char*>(key.data());
  const int ok = encrypt ? f.encrypt_init(c.ctx, f.aes_128_gcm(), nullptr, k, nullptr)
                         : f.decrypt_init(c.ctx, f.aes_128_gcm(), nullptr, k, nullptr);
  if (ok != 1) return make_error("cannot key AES-128-GCM");
  return {};
}

}  // namespace

std::string output_route_key(std::string_view secret, std::string_view nonce_f,
                             std::string_view nonce_d) {
  std::string mac =
      hmac_sha256(secret, "ferry output" + std::string(nonce_f) + std::string(nonce_d));
  if (mac.size() < kRouteKeySize) return "";
  mac.resize(kRouteKeySize);
  return mac;
}

bool have_record_cipher() { return libcrypto::get().have_gcm(); }

struct RecordSealer::Ctx : CipherCtx {};
struct RecordOpener::Ctx : CipherCtx {};

RecordSealer::~RecordSealer() = default;
RecordSealer::RecordSealer(RecordSealer&&) noexcept = default;
RecordSealer& RecordSealer::operator=(RecordSealer&&) noexcept = default;
RecordOpener::~RecordOpener() = default;
RecordOpener::RecordOpener(RecordOpener&&) noexcept = default;
RecordOpener& RecordOpener::operator=(RecordOpener&&) noexcept = default;

Result<RecordSealer> RecordSealer::create(std::string_view key) {
  RecordSealer s;
  s.ctx_ = std::make_unique<Ctx>();
  if (Status st = make_ctx(*s.ctx_, key, true); !st) return st.error();
  return s;
}

void RecordSealer::seal(std::string_view plain, std::string& out) {
  const libcrypto::Functions& f = libcrypto::get();
  const size_t at = out.size();
  out.resize(at + kRecordHeader + plain.size() + kRecordTag);
  auto* p = reinterpret_cast<unsigned char*>(out.data() + at);
  put_be32(p, static_cast<uint32_t>(plain.size()));
  unsigned char nonce[kNonceBytes];
  nonce_of(ctx_->seq++, nonce);
  int len = 0;
  // Keyed once; each record only sets its nonce. None of these fail for GCM with a valid
  // context and lengths below 2^31.
  f.encrypt_init(ctx_->ctx, nullptr, nullptr, nullptr, nonce);
  f.encrypt_update(ctx_->ctx, nullptr, &len, p, kRecordHeader);
  f.encrypt_update(ctx_->ctx, p + kRecordHeader, &len,
                   reinterpret_cast<const unsigned char*>(plain.data()),
                   static_cast<int>(plain.size()));
  f.encrypt_final(ctx_->ctx, p + kRecordHeader + plain.size(), &len);
  f.ctrl(ctx_->ctx, libcrypto::kGcmGetTag, kRecordTag, p + kRecordHeader + plain.size());
}

Result<RecordOpener> RecordOpener::create(std::string_view key) {
  RecordOpener o;
  o.ctx_ = std::make_unique<Ctx>();
  if (Status st = make_ctx(*o.ctx_, key, false); !st) return st.error();
  return o;
}

Result<size_t> RecordOpener::open(std::span<char> buf, std::string_view& plain) {
  if (buf.size() < kRecordHeader) return size_t{0};
  auto* p = reinterpret_cast<unsigned char*>(buf.data());
  const uint32_t n = get_be32(p);
  if (n > kMaxRecord) return make_error("a sealed output record is too long");
  const size_t whole = kRecordHeader + n + kRecordTag;
  if (buf.size() < whole) return size_t{0};
  const libcrypto::Functions& f = libcrypto::get();
  unsigned char nonce[kNonceBytes];
  nonce_of(ctx_->seq++, nonce);
  int len = 0;
  unsigned char* body = p + kRecordHeader;
  f.decrypt_init(ctx_->ctx, nullptr, nullptr, nullptr, nonce);
  f.decrypt_update(ctx_->ctx, nullptr, &len, p, kRecordHeader);
  f.decrypt_update(ctx_->ctx, body, &len, body, static_cast<int>(n));
  f.ctrl(ctx_->ctx, libcrypto::kGcmSetTag, kRecordTag, body + n);
  if (f.decrypt_final(ctx_->ctx, body + n, &len) != 1)
    return make_error("a sealed output record failed authentication");
  plain = std::string_view(buf.data() + kRecordHeader, n);
  return whole;
}

}  // namespace ferry
