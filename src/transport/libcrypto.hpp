#pragma once
// Private to src/transport/: OpenSSL's libcrypto, loaded on first use with dlopen, or the one
// linked in where a binary has one (the portable ferryrun and ferry). ferryd links no crypto
// library: libcrypto (already loaded in ferryrun through libssh) costs a process about
// 1.5 MiB, which only a ferryd that proves a secret (srun's connect-back) or seals its output
// (a direct output route) pays.

#include <cstddef>

namespace ferry::libcrypto {

using HmacFn = unsigned char* (*)(const void* md, const void* key, int key_len,
                                  const unsigned char* data, size_t data_len, unsigned char* out,
                                  unsigned int* out_len);
using MdFn = const void* (*)();
using Sha256Fn = unsigned char* (*)(const unsigned char* data, size_t len, unsigned char* out);
using CipherFn = const void* (*)();
using CtxNewFn = void* (*)();
using CtxFreeFn = void (*)(void* ctx);
using InitFn = int (*)(void* ctx, const void* cipher, void* engine, const unsigned char* key,
                       const unsigned char* iv);
using UpdateFn = int (*)(void* ctx, unsigned char* out, int* out_len, const unsigned char* in,
                         int in_len);
using FinalFn = int (*)(void* ctx, unsigned char* out, int* out_len);
using CtrlFn = int (*)(void* ctx, int type, int arg, void* ptr);
using MdCtxNewFn = void* (*)();
using MdCtxFreeFn = void (*)(void* ctx);
using DigestInitFn = int (*)(void* ctx, const void* md, void* engine);
using DigestUpdateFn = int (*)(void* ctx, const void* data, size_t len);
using DigestFinalFn = int (*)(void* ctx, unsigned char* out, unsigned int* len);
using Sha256InitFn = int (*)(void* ctx);
using Sha256UpdateFn = int (*)(void* ctx, const void* data, size_t len);
using Sha256FinalFn = int (*)(unsigned char* out, void* ctx);

/// SHA256_CTX's size (openssl/sha.h: eight words of state, two of length, sixteen of block,
/// two more; the same in OpenSSL 1.1 and 3), with room to spare.
inline constexpr size_t kSha256CtxBytes = 256;

// EVP_CIPHER_CTX_ctrl commands (openssl/evp.h).
inline constexpr int kGcmGetTag = 0x10;
inline constexpr int kGcmSetTag = 0x11;

struct Functions {
  HmacFn hmac = nullptr;
  MdFn sha256 = nullptr;
  CipherFn aes_128_gcm = nullptr;
  CtxNewFn ctx_new = nullptr;
  CtxFreeFn ctx_free = nullptr;
  InitFn encrypt_init = nullptr;
  UpdateFn encrypt_update = nullptr;
  FinalFn encrypt_final = nullptr;
  InitFn decrypt_init = nullptr;
  UpdateFn decrypt_update = nullptr;
  FinalFn decrypt_final = nullptr;
  CtrlFn ctrl = nullptr;
  Sha256Fn sha256_digest = nullptr;  ///< SHA256(): a whole buffer at once
  MdCtxNewFn md_ctx_new = nullptr;   ///< EVP_MD_CTX_new and the digest in parts
  MdCtxFreeFn md_ctx_free = nullptr;
  DigestInitFn digest_init = nullptr;
  DigestUpdateFn digest_update = nullptr;
  DigestFinalFn digest_final = nullptr;
  /// SHA256_Init, _Update, _Final: the digest without EVP, whose first use in a process
  /// (fetching the algorithm from OpenSSL 3's default provider) costs some 1.7 ms and 250 KiB;
  /// kept in OpenSSL 3 though deprecated, and preferred where present.
  Sha256InitFn sha256_init = nullptr;
  Sha256UpdateFn sha256_update = nullptr;
  Sha256FinalFn sha256_final = nullptr;

  bool have_hmac() const { return hmac && sha256; }
  bool have_digest() const {
    return sha256 && md_ctx_new && md_ctx_free && digest_init && digest_update && digest_final;
  }
  bool have_sha256_parts() const { return sha256_init && sha256_update && sha256_final; }
  bool have_gcm() const {
    return aes_128_gcm && ctx_new && ctx_free && encrypt_init && encrypt_update && encrypt_final &&
           decrypt_init && decrypt_update && decrypt_final && ctrl;
  }
};

/// The functions, loaded once; a missing library leaves them null.
const Functions& get();

/// Defined only in the binaries that link libcrypto in (libcrypto_linked.cpp): fills `f`
/// from it, and get() then loads nothing.
[[gnu::weak]] bool linked(Functions& f);

}  // namespace ferry::libcrypto
