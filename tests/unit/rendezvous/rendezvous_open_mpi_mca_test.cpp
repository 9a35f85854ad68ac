// Open MPI's transports a rank need not load: the PSM and PSM2 MTLs left out where their
// adapters are absent, added to what the parameter files exclude; the user's choice and the
// files' own choice by name kept.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ferry/rendezvous/open_mpi_mca.hpp"

namespace ferry {
namespace {

// Debian 12's /etc/openmpi/openmpi-mca-params.conf, its settings and comments.
constexpr const char* kDebianFile =
    "# This is the default system-wide MCA parameters defaults file.\n"
    "#   mca_param_name = value\n"
    "btl_base_warn_component_unused=0\n"
    "# Avoid openib and ofi in the default configuration\n"
    "mtl = ^ofi\n"
    "btl = ^uct,openib,ofi\n"
    "pml = ^ucx\n"
    "osc = ^ucx,pt2pt\n";

TEST(OpenMpiMca, ParamFileValueIsTheLastSettingLineWithoutCommentsOrSpaces) {
  EXPECT_EQ(mca_param_file_value(kDebianFile, "mtl"), "^ofi");
  EXPECT_EQ(mca_param_file_value(kDebianFile, "btl"), "^uct,openib,ofi");
  EXPECT_EQ(mca_param_file_value(kDebianFile, "btl_base_warn_component_unused"), "0");
  EXPECT_EQ(mca_param_file_value(kDebianFile, "osc_base"), std::nullopt);
  EXPECT_EQ(mca_param_file_value("# mtl = psm2\n", "mtl"), std::nullopt);
  EXPECT_EQ(mca_param_file_value("mtl_psm2_priority = 9\n", "mtl"), std::nullopt);
  EXPECT_EQ(mca_param_file_value("mtl = ofi\r\n\tmtl\t=  ^psm  # later wins\nx=1", "mtl"), "^psm");
  EXPECT_EQ(mca_param_file_value("", "mtl"), std::nullopt);
}

OpenMpiHost debian_host() {
  OpenMpiHost h;
  h.files_known = true;
  h.file_mtl = "^ofi";
  return h;
}

TEST(OpenMpiMca, AbsentAdaptersAreAddedToTheFilesExclusions) {
  std::string why = "stale";
  EXPECT_EQ(open_mpi_mtl_variable(debian_host(), {"HOME=/root"}, why),
            "OMPI_MCA_mtl=^ofi,psm2,psm");
  EXPECT_EQ(why, "");

  OpenMpiHost none_set = debian_host();
  none_set.file_mtl.reset();
  EXPECT_EQ(open_mpi_mtl_variable(none_set, {}, why), "OMPI_MCA_mtl=^psm2,psm");

  OpenMpiHost already = debian_host();
  already.file_mtl = "^psm2 , ofi,";
  EXPECT_EQ(open_mpi_mtl_variable(already, {}, why), "OMPI_MCA_mtl=^psm2,ofi,psm");
}

TEST(OpenMpiMca, AnAdapterPresentKeepsItsTransport) {
  std::string why;
  OpenMpiHost opa = debian_host();
  opa.omnipath = true;
  EXPECT_EQ(open_mpi_mtl_variable(opa, {}, why), "OMPI_MCA_mtl=^ofi,psm");
  OpenMpiHost qib = debian_host();
  qib.truescale = true;
  EXPECT_EQ(open_mpi_mtl_variable(qib, {}, why), "OMPI_MCA_mtl=^ofi,psm2");
  OpenMpiHost both = opa;
  both.truescale = true;
  EXPECT_EQ(open_mpi_mtl_variable(both, {}, why), std::nullopt);
  EXPECT_EQ(why, "this host has Omni-Path and TrueScale adapters");
}

TEST(OpenMpiMca, TheUsersChoiceAndTheFilesChoiceByNameAreKept) {
  std::string why;
  EXPECT_EQ(open_mpi_mtl_variable(debian_host(), {"OMPI_MCA_mtl=psm2"}, why), std::nullopt);
  EXPECT_EQ(why, "OMPI_MCA_mtl=psm2 is the user's");
  // Set empty by the user: still the user's.
  EXPECT_EQ(open_mpi_mtl_variable(debian_host(), {"OMPI_MCA_mtl="}, why), std::nullopt);
  // A name like it is not it.
  EXPECT_TRUE(open_mpi_mtl_variable(debian_host(), {"OMPI_MCA_mtl_base_verbose=10"}, why));

  OpenMpiHost chosen = debian_host();
  chosen.file_mtl = "ofi";
  EXPECT_EQ(open_mpi_mtl_variable(chosen, {}, why), std::nullopt);
  EXPECT_EQ(why, "Open MPI's parameter files choose mtl ofi");

  OpenMpiHost unknown = debian_host();
  unknown.files_known = false;
  EXPECT_EQ(open_mpi_mtl_variable(unknown, {}, why), std::nullopt);
  EXPECT_EQ(why, "Open MPI's parameter files are not where Debian's are");
}

}  // namespace
}  // namespace ferry
