#include "libcrypto.hpp"

#include <dlfcn.h>

namespace ferry::libcrypto {
namespace {

template <class Fn>
void load(void* lib, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(lib, name));
}

}  // namespace

const Functions& get() {
  static const Functions fns = [] {
    Functions f;
    if (&linked != nullptr && linked(f)) return f;
    void* h = ::dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = ::dlopen("libcrypto.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) return f;
    load(h, "HMAC", f.hmac);
    load(h, "EVP_sha256", f.sha256);
    load(h, "EVP_aes_128_gcm", f.aes_128_gcm);
    load(h, "EVP_CIPHER_CTX_new", f.ctx_new);
    load(h, "EVP_CIPHER_CTX_free", f.ctx_free);
    load(h, "EVP_EncryptInit_ex", f.encrypt_init);
    load(h, "EVP_EncryptUpdate", f.encrypt_update);
    load(h, "EVP_EncryptFinal_ex", f.encrypt_final);
    load(h, "EVP_DecryptInit_ex", f.decrypt_init);
    load(h, "EVP_DecryptUpdate", f.decrypt_update);
    load(h, "EVP_DecryptFinal_ex", f.decrypt_final);
    load(h, "EVP_CIPHER_CTX_ctrl", f.ctrl);
    load(h, "SHA256", f.sha256_digest);
    load(h, "EVP_MD_CTX_new", f.md_ctx_new);
    load(h, "EVP_MD_CTX_free", f.md_ctx_free);
    load(h, "EVP_DigestInit_ex", f.digest_init);
    load(h, "EVP_DigestUpdate", f.digest_update);
    load(h, "EVP_DigestFinal_ex", f.digest_final);
    load(h, "SHA256_Init", f.sha256_init);
    load(h, "SHA256_Update", f.sha256_update);
    load(h, "SHA256_Final", f.sha256_final);
    return f;
  }();
  return fns;
}

}  // namespace ferry::libcrypto
