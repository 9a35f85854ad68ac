// libFuzzer: hostfile text in any of the dialects.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ferry/hosts/host_list.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto hosts = ferry::parse_hostfile_text(text, "fuzz-hosts", 1);
  if (hosts.ok()) {
    if (hosts->empty()) __builtin_trap();  // "no hosts" is an error
    for (const auto& h : *hosts)
      if (h.name.empty() || h.slots < 1 || h.port < 0 || h.port > 65535) __builtin_trap();
  } else if (!hosts.error().message.starts_with("fuzz-hosts")) {
    __builtin_trap();  // every error names the file
  }
  return 0;
}
