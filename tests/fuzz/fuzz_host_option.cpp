// libFuzzer: `-H` text. The first byte picks the default slot count.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ferry/hosts/host_list.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  int default_slots = data[0] % 4;  // 0 must be refused, not crash
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto hosts = ferry::parse_host_option(text, default_slots);
  if (hosts.ok()) {
    for (const auto& h : *hosts)
      if (h.name.empty() || h.slots < 1) __builtin_trap();
  } else if (hosts.error().message.find('\n') != std::string::npos &&
             text.find('\n') == std::string::npos) {
    __builtin_trap();  // errors are one line
  }
  return 0;
}
