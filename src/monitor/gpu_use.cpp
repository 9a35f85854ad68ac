#include "ferry/monitor/gpu_use.hpp"

#include <charconv>

namespace ferry {
namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// A number, or 0 for "[N/A]" / "[Not Supported]"; nothing for anything else.
std::optional<uint32_t> field_number(std::string_view s) {
  s = trimmed(s);
  if (!s.empty() && s.front() == '[') return 0;
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<GpuUse> parse_nvidia_smi_line(std::string_view line) {
  std::vector<std::string_view> f;
  while (true) {
    const size_t comma = line.find(',');
    f.push_back(trimmed(line.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    line.remove_prefix(comma + 1);
  }
  if (f.size() != 5) return std::nullopt;
  auto index = field_number(f[0]);
  auto util = field_number(f[2]);
  auto used = field_number(f[3]);
  auto total = field_number(f[4]);
  if (!index || !util || !used || !total || f[0].starts_with("[")) return std::nullopt;
  return GpuUse{*index, std::string(f[1]), *util, *used, *total};
}

std::vector<size_t> gpus_of(const std::string& devices, const std::vector<GpuUse>& gpus) {
  constexpr std::string_view kCuda = "CUDA_VISIBLE_DEVICES=";
  std::vector<size_t> out;
  if (!std::string_view(devices).starts_with(kCuda)) return out;
  std::string_view list = std::string_view(devices).substr(kCuda.size());
  while (!list.empty()) {
    const size_t comma = std::min(list.find(','), list.size());
    const std::string_view item = trimmed(list.substr(0, comma));
    list.remove_prefix(std::min(comma + 1, list.size()));
    uint32_t n = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    const bool number = ec == std::errc{} && end == item.data() + item.size() && !item.empty();
    for (size_t i = 0; i < gpus.size(); ++i)
      if ((number && gpus[i].index == n) || (!number && !item.empty() && gpus[i].uuid == item))
        out.push_back(i);
  }
  return out;
}

}  // namespace ferry
