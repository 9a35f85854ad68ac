#include "ferry/common/settings.hpp"

#include <charconv>
#include <optional>
#include <string_view>

#include "ferry/common/printable.hpp"

namespace ferry {
namespace {

using Value = std::function<std::optional<std::string_view>(const char*)>;

void read_ferryrun_settings(Settings& s, const Value& value, std::vector<std::string>& warnings) {
  if (auto n = value("FERRY_SSH_IO_THREADS")) {
    long v = 0;
    auto [end, ec] = std::from_chars(n->data(), n->data() + n->size(), v);
    if (ec == std::errc() && end == n->data() + n->size() && v >= -1 && v <= 64)
      s.ssh_io_threads = static_cast<int>(v);
    else
      warnings.push_back("FERRY_SSH_IO_THREADS='" + printable(*n) +
                         "' ignored (expected a whole number from -1 to 64)");
  }
  if (auto r = value("FERRY_OUTPUT_ROUTE")) {
    if (*r == "ssh")
      s.output_on_ssh = true;
    else
      warnings.push_back("FERRY_OUTPUT_ROUTE='" + printable(*r) +
                         "' ignored (the one value is ssh)");
  }
}

void read_ferryd_settings(Settings& s, const Value& value, std::vector<std::string>& warnings) {
  if (auto c = value("FERRY_OUTPUT_COPY")) {
    if (*c == "1")
      s.output_copy = true;
    else if (*c != "0")
      warnings.push_back("FERRY_OUTPUT_COPY='" + printable(*c) + "' ignored (1 or 0)");
  }
  if (auto root = value("FERRY_TEST_DEVICE_ROOT")) s.device_root = std::string(*root);
  if (auto net = value("FERRY_TEST_SYSFS_NET")) s.sysfs_net = std::string(*net);
}

}  // namespace

Settings read_settings(const std::function<const char*(const char*)>& lookup, SettingsOf who,
                       std::vector<std::string>& warnings) {
  const Value value = [&](const char* name) -> std::optional<std::string_view> {
    const char* v = lookup(name);
    if (!v || !*v) return std::nullopt;
    return std::string_view(v);
  };
  Settings s;
  if (who == SettingsOf::kFerryrun)
    read_ferryrun_settings(s, value, warnings);
  else
    read_ferryd_settings(s, value, warnings);
  return s;
}

}  // namespace ferry
