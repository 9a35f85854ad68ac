#include "ferry/binding/cpu_quota.hpp"

#include <charconv>
#include <filesystem>
#include <sstream>
#include <string_view>
#include <vector>

#include "ferry/common/read_text_file.hpp"
#include "ferry/common/text.hpp"

namespace ferry {

namespace fs = std::filesystem;

namespace {

// The kernel accepts periods from 1 ms to 1 s (sched-bwc.rst, cgroup-v2.rst); anything else
// in the file is not a period the kernel wrote.
constexpr long long kMinPeriodUs = 1000;
constexpr long long kMaxPeriodUs = 1000000;

// cgroup files and /proc/self/cgroup hold a line or a few; a fake or broken one must not
// make ferryd read without bound.
constexpr std::size_t kCgroupFileLimit = 64u << 10;

// A small kernel file; nullopt when it cannot be read. Regular files only: a FIFO in a fake
// tree would block ferryd's start.
std::optional<std::string> read_small_file(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return std::nullopt;
  auto text = read_text_file(p.string(), kCgroupFileLimit, "cgroup file");
  if (!text) return std::nullopt;
  return std::move(*text);
}

std::vector<std::string_view> fields(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    size_t j = i;
    while (j < s.size() && !is_space(s[j])) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// A whole decimal integer ("-1" included), nothing else.
std::optional<long long> integer(std::string_view s) {
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<CpuQuota> make_quota(long long quota, long long period, CgroupVersion version,
                                   const fs::path& rel_file) {
  if (quota <= 0 || period < kMinPeriodUs || period > kMaxPeriodUs) return std::nullopt;
  return CpuQuota{quota, period, version, "/" + rel_file.generic_string()};
}

// cgroup v2 cpu.max: "max 100000" (no limit) or "QUOTA PERIOD".
std::optional<CpuQuota> read_v2_level(const fs::path& root, const fs::path& dir) {
  const fs::path rel = dir / "cpu.max";
  auto text = read_small_file(root / rel);
  if (!text) return std::nullopt;
  auto f = fields(*text);
  if (f.size() != 2 || f[0] == "max") return std::nullopt;
  auto quota = integer(f[0]);
  auto period = integer(f[1]);
  if (!quota || !period) return std::nullopt;
  return make_quota(*quota, *period, CgroupVersion::kV2, rel);
}

// cgroup v1 cpu.cfs_quota_us (-1: no limit) and cpu.cfs_period_us.
std::optional<CpuQuota> read_v1_level(const fs::path& root, const fs::path& dir) {
  const fs::path rel = dir / "cpu.cfs_quota_us";
  auto q = read_small_file(root / rel);
  auto p = read_small_file(root / dir / "cpu.cfs_period_us");
  if (!q || !p) return std::nullopt;
  auto qf = fields(*q);
  auto pf = fields(*p);
  if (qf.size() != 1 || pf.size() != 1) return std::nullopt;
  auto quota = integer(qf[0]);
  auto period = integer(pf[0]);
  if (!quota || !period) return std::nullopt;
  return make_quota(*quota, *period, CgroupVersion::kV1, rel);
}

// The parts of an absolute cgroup path; nullopt for one that leaves the visible hierarchy
// ("/../.." when the process sits outside its cgroup namespace) or is not absolute.
std::optional<std::vector<std::string>> path_parts(std::string_view path) {
  if (path.empty() || path.front() != '/') return std::nullopt;
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view part = path.substr(i, j - i);
    if (part == "..") return std::nullopt;
    if (!part.empty() && part != ".") parts.emplace_back(part);
    i = j + 1;
  }
  return parts;
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// The directories (relative to root) whose limits bind the process: its own cgroup and every
// parent up to the mount. Inside a container the mount's root is often the container's own
// cgroup while proc/self/cgroup names the host's path ("/docker/<id>", "/kubepods/..."):
// then the path's trailing parts are tried, down to the mount itself.
std::vector<fs::path> levels(const fs::path& root, const fs::path& mount,
                             const std::vector<std::string>& parts) {
  std::vector<fs::path> out;
  if (!is_dir(root / mount)) return out;
  for (size_t skip = 0; skip <= parts.size(); ++skip) {
    fs::path dir = mount;
    for (size_t k = skip; k < parts.size(); ++k) dir /= parts[k];
    if (!is_dir(root / dir)) continue;
    for (size_t depth = parts.size() - skip;; --depth) {
      out.push_back(dir);
      if (depth == 0) break;
      dir = dir.parent_path();
    }
    break;
  }
  return out;
}

bool tighter(const CpuQuota& a, const std::optional<CpuQuota>& b) {
  return !b || static_cast<long double>(a.quota_us) * b->period_us <
                   static_cast<long double>(b->quota_us) * a.period_us;
}

// A /proc/self/cgroup line: "hierarchy-ID:controller-list:cgroup-path" (the path may hold
// colons). cgroup v2's line is "0::<path>".
struct CgroupLine {
  std::string id;
  std::string controllers;
  std::string path;
};

std::vector<CgroupLine> parse_proc_cgroup(const std::string& text) {
  std::vector<CgroupLine> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':');
    if (a == std::string::npos) continue;
    const size_t b = line.find(':', a + 1);
    if (b == std::string::npos) continue;
    out.push_back({line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1)});
  }
  return out;
}

bool has_cpu_controller(const std::string& list) {
  size_t i = 0;
  while (i <= list.size()) {
    size_t j = list.find(',', i);
    if (j == std::string::npos) j = list.size();
    if (list.compare(i, j - i, "cpu") == 0) return true;
    i = j + 1;
  }
  return false;
}

}  // namespace

double CpuQuota::cpus() const {
  return period_us > 0 ? static_cast<double>(quota_us) / static_cast<double>(period_us) : 0.0;
}

std::string CpuQuota::cpus_text() const {
  if (period_us <= 0) return "0";
  const long long whole = quota_us / period_us;
  // period_us <= 1 s, so the remainder times 1000 cannot overflow; a valid quota (>= 1 ms
  // per period of <= 1 s) is at least 0.001 CPUs.
  long long frac = (quota_us % period_us) * 1000 / period_us;
  std::string s = std::to_string(whole);
  if (frac > 0) {
    std::string digits = std::to_string(1000 + frac).substr(1);
    while (digits.back() == '0') digits.pop_back();
    s += "." + digits;
  }
  return s;
}

std::string CpuQuota::cpus_phrase() const {
  const std::string n = cpus_text();
  return n + (n == "1" ? " CPU" : " CPUs");
}

int CpuQuota::threads_per_rank(int ranks) const {
  if (ranks <= 0 || period_us <= 0) return 1;
  // floor(floor(q / p) / r) == floor(q / (p * r)) for positive integers, without overflow.
  const long long t = quota_us / period_us / ranks;
  return t < 1 ? 1 : (t > 1 << 20 ? 1 << 20 : static_cast<int>(t));
}

bool CpuQuota::less_than(int n) const {
  // q < n * p  <=>  floor(q / p) < n, for positive integers.
  return period_us > 0 && quota_us / period_us < n;
}

std::string CpuQuota::source() const {
  return std::string(version == CgroupVersion::kV2 ? "cgroup v2 " : "cgroup v1 ") + file + ": " +
         std::to_string(quota_us) + "/" + std::to_string(period_us);
}

std::optional<CpuQuota> read_cpu_quota(const std::string& root_dir) {
  const fs::path root(root_dir.empty() ? "/" : root_dir);
  auto text = read_small_file(root / "proc/self/cgroup");
  if (!text) return std::nullopt;
  const fs::path base("sys/fs/cgroup");
  std::optional<CpuQuota> best;
  for (const auto& line : parse_proc_cgroup(*text)) {
    const bool v2 = line.id == "0" && line.controllers.empty();
    if (!v2 && !has_cpu_controller(line.controllers)) continue;
    auto parts = path_parts(line.path);
    if (!parts) continue;
    fs::path mount;
    if (v2) {
      mount = base;
    } else {
      // The mount is named after its controllers; "cpu" is usually a link to the joint one.
      for (const std::string& name : {line.controllers, std::string("cpu,cpuacct"),
                                      std::string("cpuacct,cpu"), std::string("cpu")}) {
        if (name.find('/') == std::string::npos && is_dir(root / base / name)) {
          mount = base / name;
          break;
        }
      }
      if (mount.empty()) continue;
    }
    for (const auto& dir : levels(root, mount, *parts)) {
      auto q = v2 ? read_v2_level(root, dir) : read_v1_level(root, dir);
      if (q && tighter(*q, best)) best = std::move(q);
    }
  }
  return best;
}

}  // namespace ferry
