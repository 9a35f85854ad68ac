#pragma once
// Private to src/daemon/: the pmix_info_t array that registers one attempt's namespace with
// libpmix, built from a PmixNamespace. It owns every string and nested array it points to,
// so it must outlive the (blocking) registration call.

#include <pmix_common.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "ferry/rendezvous/pmix_job.hpp"

namespace ferry {

/// The namespace of ferryd's PMIx server, as its ranks are told and libpmix is started with
/// (its rank is ferryd's pid, as libpmix's own default).
inline constexpr const char* kPmixServerNspace = "pmix-server";

/// What a rank needs to find its PMIx server.
struct PmixClient {
  std::string nspace;
  int rank = 0;
  std::string server;  ///< "<server nspace>.<server rank>"
  uint16_t port = 0;   ///< the loopback port it connects to
  std::string dir;     ///< the server's directory
  std::string node;    ///< this host's PMIx name
};

/// The variables PMIx_server_setup_fork would give the rank ("K=V"), made without libpmix:
/// namespace and rank, the server's address under every name a PMIx 2 to 5 client looks
/// for, the security and data modules every libpmix has (the "hash" store: job data reaches
/// each client through its connection), the server's directories and this host's name.
std::vector<std::string> pmix_client_environment(const PmixClient& c);

/// The server's port in a setup_fork environment (null-terminated), from the newest of the
/// PMIX_SERVER_URI* variables it has (PMIx 4.0 sets no URI41); 0 if none.
uint16_t pmix_uri_port(char** env);

class PmixInfoList {
 public:
  /// The job, node and process facts of `ns`; `tmpdir` is the job's session directory.
  PmixInfoList(const PmixNamespace& ns, const std::string& tmpdir);
  ~PmixInfoList() = default;
  PmixInfoList(const PmixInfoList&) = delete;
  PmixInfoList& operator=(const PmixInfoList&) = delete;

  pmix_info_t* data() { return job_.data(); }
  size_t size() const { return job_.size(); }

 private:
  void add(std::vector<pmix_info_t>& to, const char* key, const std::string& v);
  static void add_u32(std::vector<pmix_info_t>& to, const char* key, uint32_t v);
  static void add_u16(std::vector<pmix_info_t>& to, const char* key, uint16_t v);
  static pmix_info_t& added(std::vector<pmix_info_t>& to, const char* key);
  void add_apps(const PmixNamespace& ns);
  void add_array(const char* key, std::vector<pmix_info_t>& items, pmix_data_array_t& a);

  std::deque<std::string> strings_;
  std::vector<std::vector<pmix_info_t>> procs_;
  std::vector<pmix_data_array_t> arrays_;
  std::vector<std::vector<pmix_info_t>> apps_;
  std::vector<pmix_data_array_t> app_arrays_;
  std::vector<pmix_info_t> job_;
};

}  // namespace ferry
