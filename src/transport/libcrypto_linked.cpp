// The libcrypto that libssh's static archive brings into the portable ferryrun and ferry
// (cmake/portable.cmake): ferry's own hashes and seals use it too, instead of loading the
// host's shared one, which on Debian 11 is another OpenSSL (1.1) and without libssl-dev has
// no unversioned name. Compiled into those two binaries only, never into a part's library:
// ferryd loads libcrypto only when a job needs it (libcrypto.hpp).

// SHA256_Init and its kin are deprecated in OpenSSL 3, not gone (libcrypto.hpp says why
// they are used).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "libcrypto.hpp"

namespace ferry::libcrypto {

namespace {

const EVP_MD* md(const void* p) { return static_cast<const EVP_MD*>(p); }
const EVP_CIPHER* cipher(const void* p) { return static_cast<const EVP_CIPHER*>(p); }
EVP_CIPHER_CTX* cctx(void* p) { return static_cast<EVP_CIPHER_CTX*>(p); }
EVP_MD_CTX* mctx(void* p) { return static_cast<EVP_MD_CTX*>(p); }
ENGINE* engine(void* p) { return static_cast<ENGINE*>(p); }

}  // namespace

bool linked(Functions& f) {
  f.hmac = [](const void* m, const void* key, int key_len, const unsigned char* data,
              size_t data_len, unsigned char* out, unsigned int* out_len) {
    return ::HMAC(md(m), key, key_len, data, data_len, out, out_len);
  };
  f.sha256 = [] { return static_cast<const void*>(::EVP_sha256()); };
  f.aes_128_gcm = [] { return static_cast<const void*>(::EVP_aes_128_gcm()); };
  f.ctx_new = [] { return static_cast<void*>(::EVP_CIPHER_CTX_new()); };
  f.ctx_free = [](void* c) { ::EVP_CIPHER_CTX_free(cctx(c)); };
  f.encrypt_init = [](void* c, const void* ci, void* e, const unsigned char* key,
                      const unsigned char* iv) {
    return ::EVP_EncryptInit_ex(cctx(c), cipher(ci), engine(e), key, iv);
  };
  f.encrypt_update = [](void* c, unsigned char* out, int* out_len, const unsigned char* in,
                        int in_len) {
    return ::EVP_EncryptUpdate(cctx(c), out, out_len, in, in_len);
  };
  f.encrypt_final = [](void* c, unsigned char* out, int* out_len) {
    return ::EVP_EncryptFinal_ex(cctx(c), out, out_len);
  };
  f.decrypt_init = [](void* c, const void* ci, void* e, const unsigned char* key,
                      const unsigned char* iv) {
    return ::EVP_DecryptInit_ex(cctx(c), cipher(ci), engine(e), key, iv);
  };
  f.decrypt_update = [](void* c, unsigned char* out, int* out_len, const unsigned char* in,
                        int in_len) {
    return ::EVP_DecryptUpdate(cctx(c), out, out_len, in, in_len);
  };
  f.decrypt_final = [](void* c, unsigned char* out, int* out_len) {
    return ::EVP_DecryptFinal_ex(cctx(c), out, out_len);
  };
  f.ctrl = [](void* c, int type, int arg, void* ptr) {
    return ::EVP_CIPHER_CTX_ctrl(cctx(c), type, arg, ptr);
  };
  f.sha256_digest = [](const unsigned char* data, size_t len, unsigned char* out) {
    return ::SHA256(data, len, out);
  };
  f.md_ctx_new = [] { return static_cast<void*>(::EVP_MD_CTX_new()); };
  f.md_ctx_free = [](void* c) { ::EVP_MD_CTX_free(mctx(c)); };
  f.digest_init = [](void* c, const void* m, void* e) {
    return ::EVP_DigestInit_ex(mctx(c), md(m), engine(e));
  };
  f.digest_update = [](void* c, const void* data, size_t len) {
    return ::EVP_DigestUpdate(mctx(c), data, len);
  };
  f.digest_final = [](void* c, unsigned char* out, unsigned int* len) {
    return ::EVP_DigestFinal_ex(mctx(c), out, len);
  };
  f.sha256_init = [](void* c) { return ::SHA256_Init(static_cast<SHA256_CTX*>(c)); };
  f.sha256_update = [](void* c, const void* data, size_t len) {
    return ::SHA256_Update(static_cast<SHA256_CTX*>(c), data, len);
  };
  f.sha256_final = [](unsigned char* out, void* c) {
    return ::SHA256_Final(out, static_cast<SHA256_CTX*>(c));
  };
  static_assert(sizeof(SHA256_CTX) <= kSha256CtxBytes);
  return true;
}

}  // namespace ferry::libcrypto
