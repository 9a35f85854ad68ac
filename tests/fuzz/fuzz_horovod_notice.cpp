// libFuzzer: the worker-address pickle an elastic Horovod worker PUTs into the KV store
// (base64 of a cloudpickled ({iface: [(ip, port), ...]}, key)). Any rank can PUT any body,
// so the parser must refuse what does not fit, in one line, and what it accepts must keep
// its promises: a 32-byte key, at least one address, ports 1-65535, addresses that are
// printable and lie in the decoded body.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ferry/rendezvous/horovod_notice.hpp"

namespace {

std::string base64(std::string_view raw) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : raw) {
    acc = (acc << 8) | static_cast<uint8_t>(c);
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  while (out.size() % 4 != 0) out.push_back('=');
  return out;
}

void check(const ferry::Result<ferry::WorkerAddresses>& r, std::string_view raw) {
  if (!r) {
    const std::string& m = r.error().message;
    if (m.empty() || m.find('\n') != std::string::npos) __builtin_trap();
    return;
  }
  if (r->key.size() != 32 || r->addresses.empty()) __builtin_trap();
  for (const auto& [ip, port] : r->addresses) {
    if (port < 1 || port > 65535) __builtin_trap();
    if (ip.empty() || (!raw.empty() && raw.find(ip) == std::string_view::npos)) __builtin_trap();
    for (char c : ip)
      if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e)
        __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (in.empty()) return 0;
  // Byte 0, bit 0: the rest is the body as sent (any text); else the pickle itself, sent
  // as base64 (so that the fuzzer reaches the pickle walk at once).
  std::string_view rest = in.substr(1);
  if (in[0] & 1) {
    check(ferry::parse_worker_addresses(rest), "");
    return 0;
  }
  check(ferry::parse_worker_addresses(base64(rest)), rest);
  return 0;
}
