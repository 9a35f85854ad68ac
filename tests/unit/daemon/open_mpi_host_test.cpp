// The host facts behind an Open MPI rank's transports, read from a fake root: the adapters
// under sys/class/infiniband and `mtl` from the parameter files, the user's file first.
#include "ferry/daemon/open_mpi_host.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace ferry {
namespace {

namespace fs = std::filesystem;

class OpenMpiHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/ferry-open-mpi-host-test.XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    root_ = templ;
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  fs::path root_;
};

TEST_F(OpenMpiHostTest, NoSystemFileMeansTheFilesAreNotKnown) {
  const OpenMpiHost h = read_open_mpi_host(root_.string(), {});
  EXPECT_FALSE(h.files_known);
  EXPECT_FALSE(h.omnipath);
  EXPECT_FALSE(h.truescale);
}

TEST_F(OpenMpiHostTest, ReadsTheAdaptersAndTheSystemFile) {
  write("etc/openmpi/openmpi-mca-params.conf", "mtl = ^ofi\n");
  write("sys/class/infiniband/mlx5_0/node_type", "1: CA\n");
  OpenMpiHost h = read_open_mpi_host(root_.string(), {"HOME=" + (root_ / "home").string()});
  EXPECT_TRUE(h.files_known);
  EXPECT_EQ(h.file_mtl, "^ofi");
  EXPECT_FALSE(h.omnipath) << "a Mellanox adapter is neither";
  EXPECT_FALSE(h.truescale);

  write("sys/class/infiniband/hfi1_0/node_type", "1: CA\n");
  write("sys/class/infiniband/qib0/node_type", "1: CA\n");
  h = read_open_mpi_host(root_.string(), {});
  EXPECT_TRUE(h.omnipath);
  EXPECT_TRUE(h.truescale);
}

TEST_F(OpenMpiHostTest, TheUsersFileComesFirstAndOtherFilesAreNotGuessed) {
  write("etc/openmpi/openmpi-mca-params.conf", "mtl = ^ofi\n");
  write("home/.openmpi/mca-params.conf", "# mine\nmtl = psm2\n");
  const std::vector<std::string> env = {"HOME=" + (root_ / "home").string()};
  EXPECT_EQ(read_open_mpi_host(root_.string(), env).file_mtl, "psm2");

  write("home/.openmpi/mca-params.conf", "btl = self,tcp\n");
  EXPECT_EQ(read_open_mpi_host(root_.string(), env).file_mtl, "^ofi");

  // Files named by the rank's environment are Open MPI's to read, not ferry's to guess.
  const OpenMpiHost other = read_open_mpi_host(
      root_.string(), {"HOME=/nonexistent", "OMPI_MCA_mca_base_param_files=/opt/x.conf"});
  EXPECT_FALSE(other.files_known);
}

}  // namespace
}  // namespace ferry
