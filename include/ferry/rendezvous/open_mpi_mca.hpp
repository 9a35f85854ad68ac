#pragma once
/// \file
/// Which of Open MPI's transport components a rank need not load on its host. Debian's and
/// Ubuntu's Open MPI 4.1 load the PSM2 and PSM MTLs (Intel Omni-Path, QLogic TrueScale) in
/// every rank's MPI_Init, and each one's library (libpsm2, libpsm_infinipath) calibrates the
/// CPU clock in its constructor: 100 ms of sleeping, pinned to CPU 0, before the component
/// sees that there is no such adapter and unloads. ferryd knows the host's adapters, so it
/// adds the absent ones to the rank's `mtl` exclusions: the same transports are chosen, 0.2 s
/// sooner. Pure: ferryd's daemon/open_mpi_host.hpp reads the facts.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferry {

/// What decides a rank's Open MPI components on one host.
struct OpenMpiHost {
  bool omnipath = false;   ///< an Omni-Path adapter (hfi1): PSM2 can run
  bool truescale = false;  ///< a TrueScale or InfiniPath adapter (qib, ipath): PSM can run
  /// Where Open MPI's parameter files are known (the system file found where Debian's and
  /// Ubuntu's Open MPI read it); otherwise a variable could override a setting not seen.
  bool files_known = false;
  /// `mtl` as the parameter files set it (the first file in Open MPI's order that does).
  std::optional<std::string> file_mtl;
};

/// The value one mca-params.conf text gives `key` ("key = value" lines; '#' starts a
/// comment), its last line that sets it; nullopt when none does.
std::optional<std::string> mca_param_file_value(std::string_view text, std::string_view key);

/// "OMPI_MCA_mtl=^..." for a rank with environment `env` on `host`: the exclusions the
/// parameter files set, plus psm2 and psm where their adapter is absent. Nullopt, with the
/// reason in `why` (for --verbose), where `env` sets OMPI_MCA_mtl (the user's wins), both
/// adapters are present, the files are not known, or they select MTLs by name.
std::optional<std::string> open_mpi_mtl_variable(const OpenMpiHost& host,
                                                 const std::vector<std::string>& env,
                                                 std::string& why);

}  // namespace ferry
