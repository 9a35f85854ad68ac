#include "ferry/rendezvous/open_mpi_mca.hpp"

#include <algorithm>

#include "ferry/common/environ.hpp"
#include "ferry/common/text.hpp"

namespace ferry {

std::optional<std::string> mca_param_file_value(std::string_view text, std::string_view key) {
  std::optional<std::string> value;
  for (const std::string& full : split(text, '\n')) {
    const std::string_view line = std::string_view(full).substr(0, full.find('#'));
    const size_t eq = line.find('=');
    if (eq != std::string_view::npos && trim(line.substr(0, eq)) == key)
      value = std::string(trim(line.substr(eq + 1)));
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
    for (const std::string& piece : split(std::string_view(*host.file_mtl).substr(1), ','))
      if (!trim(piece).empty()) excluded.emplace_back(trim(piece));
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
