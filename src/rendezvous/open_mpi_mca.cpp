#include "ferry/rendezvous/open_mpi_mca.hpp"

#include <algorithm>

#include "ferry/common/environ.hpp"

namespace ferry {
namespace {

std::string_view trimmed(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

}  // namespace

std::optional<std::string> mca_param_file_value(std::string_view text, std::string_view key) {
  std::optional<std::string> value;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    line = line.substr(0, line.find('#'));
    const size_t eq = line.find('=');
    if (eq != std::string_view::npos && trimmed(line.substr(0, eq)) == key)
      value = std::string(trimmed(line.substr(eq + 1)));
  }
  return value;
}

std::optional<std::string> open_mpi_mtl_variable(const OpenMpiHost& host,
                                                 const std::vector<std::string>& env,
                                                 std::string& why) {
  if (auto v = env_value(env, "OMPI_MCA_mtl")) {
    why = "OMPI_MCA_mtl=" + std::string(*v) + " is the user's";
    return std::nullopt;
  }
  if (host.omnipath && host.truescale) {
    why = "this host has Omni-Path and TrueScale adapters";
    return std::nullopt;
  }
  if (!host.files_known) {
    why = "Open MPI's parameter files are not where Debian's are";
    return std::nullopt;
  }
  std::vector<std::string> excluded;
  if (host.file_mtl && !host.file_mtl->empty()) {
    if (host.file_mtl->front() != '^') {
      why = "Open MPI's parameter files choose mtl " + *host.file_mtl;
      return std::nullopt;
    }
    std::string_view rest = std::string_view(*host.file_mtl).substr(1);
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string_view name = trimmed(rest.substr(0, comma));
      if (!name.empty()) excluded.emplace_back(name);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  for (const auto& [present, name] :
       {std::pair{host.omnipath, "psm2"}, std::pair{host.truescale, "psm"}})
    if (!present && std::find(excluded.begin(), excluded.end(), name) == excluded.end())
      excluded.emplace_back(name);
  std::string value = "OMPI_MCA_mtl=^";
  for (size_t i = 0; i < excluded.size(); ++i) value += (i ? "," : "") + excluded[i];
  why.clear();
  return value;
}

}  // namespace ferry
