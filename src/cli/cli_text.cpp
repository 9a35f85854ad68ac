#include "cli_text.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <utility>

namespace ferry::cli_detail {

std::optional<long long> parse_int(std::string_view text, long long lo, long long hi) {
  if (text.empty()) return std::nullopt;
  long long v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

std::optional<double> parse_number(std::string_view text, double lo, double hi) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  for (char c : text) {
    bool ok = std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' ||
              c == '-' || c == '+';
    if (!ok) return std::nullopt;
  }
  std::string s(text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v) || v < lo || v > hi) return std::nullopt;
  return v;
}

namespace {

// The word --help shows for each option's value, by its first long name.
constexpr std::pair<std::string_view, std::string_view> kValueWords[] = {
    {"np", "N"},
    {"num-proc", "N"},
    {"x", "VAR[=VALUE]"},
    {"wdir", "DIR"},
    {"sync", "DIR[:DEST]"},
    {"sync-exclude", "PATTERN"},
    {"sync-max", "SIZE"},
    {"journal-max", "SIZE"},
    {"rankfile", "FILE"},
    {"preload-files", "FILE,..."},
    {"stdin", "RANK|none"},
    {"network-interface", "IFACES"},
    {"network-interfaces", "IFACES"},
    {"env-file", "FILE"},
    {"config", "FILE"},
    {"app", "FILE"},
    {"configfile", "FILE"},
    {"config-file", "FILE"},
    {"kill-grace", "SECONDS"},
    {"min-np", "N"},
    {"max-np", "N"},
    {"nnodes", "MIN:MAX"},
    {"max-restarts", "N"},
    {"min-hosts", "M"},
    {"host", "HOSTS"},
    {"hosts", "HOSTS"},
    {"hostfile", "FILE"},
    {"default-hostfile", "FILE"},
    {"f", "FILE"},
    {"default-slots", "N"},
    {"start-timeout", "SECONDS"},
    {"ferryd", "PATH"},
    {"pool", "NAME"},
    {"ssh-port", "PORT"},
    {"ssh-identity-file", "FILE"},
    {"l", "USER"},
    {"ssh-user", "USER"},
    {"ssh-config", "FILE"},
    {"heartbeat", "SECONDS"},
    {"output-filename", "DIR"},
    {"console-ranks", "RANKS"},
    {"bind-to", "UNIT"},
    {"map-by", "POLICY"},
    {"rank-by", "ORDER"},
    {"npernode", "N"},
    {"ppn", "N"},
    {"ppr", "N:node"},
    {"cpus-per-rank", "N"},
    {"devices", "LIST"},
    {"devices-per-rank", "N"},
    {"timeout", "SECONDS"},
    {"stall-timeout", "SECONDS"},
    {"report", "FILE.html"},
    {"trace", "FILE.json"},
    {"stragglers", "SECONDS"},
    {"straggler-fraction", "F"},
    {"compat", "LAUNCHER"},
    {"mca", "NAME VALUE"},
    {"genv", "NAME VALUE"},
    {"genvlist", "NAMES"},
    {"prefix", "DIR"},
    {"iface", "IFACE"},
    {"host-discovery-script", "SCRIPT"},
    {"slots-per-host", "N"},
    {"elastic-timeout", "SECONDS"},
    {"reset-limit", "N"},
    {"blacklist-cooldown-range", "LOW HIGH"},
    {"log-level", "LEVEL"},
    {"timeline-filename", "FILE"},
    {"autotune-log-file", "FILE"},
    {"fusion-threshold-mb", "MB"},
    {"cycle-time-ms", "MS"},
    {"cache-capacity", "N"},
    {"gloo-timeout-seconds", "SECONDS"},
    {"stall-check-warning-time-seconds", "SECONDS"},
    {"stall-check-shutdown-time-seconds", "SECONDS"},
    {"num-nccl-streams", "N"},
    {"thread-affinity", "N"},
    {"autotune-warmup-samples", "N"},
    {"autotune-steps-per-sample", "N"},
    {"autotune-bayes-opt-max-samples", "N"},
    {"autotune-gaussian-process-noise", "X"},
    {"mpi-args", "ARGS"},
    {"binding-args", "ARGS"},
};

}  // namespace

std::string value_placeholder(std::string_view name, std::string_view type_name) {
  const size_t colon = type_name.find(':');
  const std::string_view base = type_name.substr(0, colon);
  const std::string_view check =
      colon == std::string_view::npos ? std::string_view{} : type_name.substr(colon + 1);
  if (check.starts_with('{')) return std::string(check);  // the choices say it best
  for (const auto& [option, word] : kValueWords)
    if (option == name) return std::string(word);
  if (!check.empty()) return std::string(check);
  if (base == "INT" || base == "UINT") return "N";
  if (base == "FLOAT") return "X";
  return base.empty() || base == "TEXT" ? "VALUE" : std::string(base);
}

std::string base_name(std::string_view path) {
  auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// "256M", "1G", "65536", "64K": bytes. nullopt for anything else.
std::optional<uint64_t> parse_size(const std::string& text) {
  if (text.empty()) return std::nullopt;
  uint64_t unit = 1;
  std::string digits = text;
  switch (text.back()) {
    case 'K':
    case 'k':
      unit = uint64_t{1} << 10;
      break;
    case 'M':
    case 'm':
      unit = uint64_t{1} << 20;
      break;
    case 'G':
    case 'g':
      unit = uint64_t{1} << 30;
      break;
    default:
      break;
  }
  if (unit > 1) digits.pop_back();
  auto n = parse_int(digits, 1, 1LL << 40);
  if (!n) return std::nullopt;
  return static_cast<uint64_t>(*n) * unit;
}

}  // namespace ferry::cli_detail
