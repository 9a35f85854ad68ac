#pragma once
// ferryd's reading of its host's NVIDIA GPUs for the job's view: one `nvidia-smi
// --query-gpu=... --format=csv,noheader,nounits -lms N` for as long as the job samples, its
// lines read as they come (never a process per sample). Where nvidia-smi is not on ferryd's
// PATH, or exits, note() says so in a line the report shows.

#include <sys/types.h>

#include <array>
#include <asio.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "ferry/monitor/gpu_use.hpp"

namespace ferry {

class GpuWatch {
 public:
  explicit GpuWatch(asio::io_context& io) : out_(io) {}
  ~GpuWatch();
  GpuWatch(const GpuWatch&) = delete;
  GpuWatch& operator=(const GpuWatch&) = delete;

  /// Starts nvidia-smi printing every `interval`, if it is on PATH (a second call while it
  /// runs keeps it).
  void start(std::chrono::milliseconds interval);
  /// Ends nvidia-smi.
  void stop();
  /// Every GPU's latest line, by index.
  std::vector<GpuUse> latest() const;
  /// What the view should say of this host's GPUs: "NVIDIA, read with nvidia-smi", why they
  /// are not read, or "" (no nvidia-smi and no sign of an NVIDIA driver: nothing to say).
  const std::string& note() const { return note_; }

 private:
  void read();

  asio::posix::stream_descriptor out_;
  std::array<char, 4096> buf_{};
  std::string partial_;
  std::map<uint32_t, GpuUse> gpus_;
  std::string note_;
  pid_t pid_ = -1;
  bool started_ = false;
};

}  // namespace ferry
