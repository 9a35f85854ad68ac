#pragma once
// Private to src/daemon/: the pmix_info_t array that registers one attempt's namespace with
// libpmix, built from a PmixNamespace. It owns every string and nested array it points to,
// so it must outlive the (blocking) registration call.

#include <pmix_common.h>

#include <deque>
#include <string>
#include <vector>

#include "ferry/rendezvous/pmix_job.hpp"

namespace ferry {

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

  std::deque<std::string> strings_;
  std::vector<std::vector<pmix_info_t>> procs_;
  std::vector<pmix_data_array_t> arrays_;
  std::vector<pmix_info_t> job_;
};

}  // namespace ferry
