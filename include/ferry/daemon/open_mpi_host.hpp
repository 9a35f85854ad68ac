#pragma once
/// \file
/// The facts of this host that decide which Open MPI transports its ranks need not load
/// (rendezvous/open_mpi_mca.hpp): its Omni-Path and TrueScale adapters and what Open MPI's
/// parameter files set.

#include <string>
#include <vector>

#include "ferry/rendezvous/open_mpi_mca.hpp"

namespace ferry {

/// Reads the adapters under `root`/sys/class/infiniband (hfi1_*: Omni-Path; qib*, ipath*:
/// TrueScale, InfiniPath) and `mtl` from the parameter files a rank with environment `env`
/// reads, in Open MPI's order: $HOME/.openmpi/mca-params.conf, then the system file
/// `root`/etc/openmpi/openmpi-mca-params.conf (Debian's and Ubuntu's place). The files are
/// known only where the system file is there and `env` names no other files
/// (OMPI_MCA_mca_base_param_files). `root` is "/" but in tests.
OpenMpiHost read_open_mpi_host(const std::string& root, const std::vector<std::string>& env);

}  // namespace ferry
