#pragma once
/// \file
/// How busy a host's NVIDIA GPUs are, as `nvidia-smi`'s query mode prints it, and which of
/// them a rank holds. ferryd runs one `nvidia-smi --query-gpu=... -lms N` per job that asks
/// for samples (daemon/gpu_watch.*) and reads its lines; the parsing is here.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferry {

/// The fields asked of `nvidia-smi --query-gpu`, in the order parse_nvidia_smi_line reads.
inline constexpr const char* kNvidiaSmiQuery =
    "index,uuid,utilization.gpu,memory.used,memory.total";

/// One GPU at one moment.
struct GpuUse {
  uint32_t index = 0;
  std::string uuid;
  uint32_t util_percent = 0;
  uint32_t mem_used_mib = 0;
  uint32_t mem_total_mib = 0;
};

/// One line of `--format=csv,noheader,nounits` output for kNvidiaSmiQuery
/// ("0, GPU-8f2c..., 87, 30511, 81559"); "[N/A]" reads as 0; nothing for a line that is not
/// one (a header, an error message).
std::optional<GpuUse> parse_nvidia_smi_line(std::string_view line);

/// The GPUs (indexes into `gpus`) a rank was given: its devices as the sampler reads them
/// ("CUDA_VISIBLE_DEVICES=0,2", or GPU UUIDs, or "MIG-..." which match nothing); only
/// CUDA_VISIBLE_DEVICES names NVIDIA GPUs.
std::vector<size_t> gpus_of(const std::string& devices, const std::vector<GpuUse>& gpus);

}  // namespace ferry
