#include "ferry/daemon/open_mpi_host.hpp"

#include <filesystem>
#include <system_error>

#include "ferry/common/environ.hpp"
#include "ferry/common/read_text_file.hpp"

namespace ferry {
namespace {

constexpr size_t kParamFileLimit = size_t{1} << 20;

}  // namespace

OpenMpiHost read_open_mpi_host(const std::string& root, const std::vector<std::string>& env) {
  namespace fs = std::filesystem;
  OpenMpiHost host;
  std::error_code ec;
  for (fs::directory_iterator it(fs::path(root) / "sys/class/infiniband", ec), end;
       !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    host.omnipath = host.omnipath || name.starts_with("hfi1_");
    host.truescale = host.truescale || name.starts_with("qib") || name.starts_with("ipath");
  }
  if (env_value(env, "OMPI_MCA_mca_base_param_files")) return host;
  const std::string system = (fs::path(root) / "etc/openmpi/openmpi-mca-params.conf").string();
  auto system_text = read_text_file(system, kParamFileLimit, "parameter file");
  if (!system_text) return host;
  host.files_known = true;
  if (auto home = env_value(env, "HOME"); home && !home->empty()) {
    auto text = read_text_file(std::string(*home) + "/.openmpi/mca-params.conf", kParamFileLimit,
                               "parameter file");
    if (text) host.file_mtl = mca_param_file_value(*text, "mtl");
  }
  if (!host.file_mtl) host.file_mtl = mca_param_file_value(*system_text, "mtl");
  return host;
}

}  // namespace ferry
