// libFuzzer: the TOML job file, through toml++ and ferry's checks of every table.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ferry/cli/job_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto file = ferry::parse_job_file_text(text, "fuzz.toml", ferry::FrontendConfig{});
  if (file.ok()) {
    for (const auto& h : file->config.job.hosts)
      if (h.name.empty() || h.slots < 1) __builtin_trap();
  } else if (!file.error().message.starts_with("fuzz.toml")) {
    __builtin_trap();  // every error names the file
  }
  return 0;
}
