#include "gpu_watch.hpp"

#include <sys/stat.h>

#include <csignal>

#include "ferry/process/spawn.hpp"
#include "ferry/process/unique_fd.hpp"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace ferry {

GpuWatch::~GpuWatch() { stop(); }

void GpuWatch::start(std::chrono::milliseconds interval) {
  if (started_) return;
  started_ = true;
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  auto path = resolve_command("nvidia-smi", env, "");
  struct stat st {};
  const bool driver = ::stat("/proc/driver/nvidia", &st) == 0;
  if (!path) {
    if (driver) note_ = "NVIDIA driver loaded but no nvidia-smi on ferryd's PATH: use not read";
    return;
  }
  auto pipe = make_pipe();
  if (!pipe) {
    note_ = "nvidia-smi not started: " + pipe.error().message;
    return;
  }
  UniqueFd null = open_dev_null();
  SpawnRequest req;
  req.path = *path;
  req.argv = {"nvidia-smi", std::string("--query-gpu=") + kNvidiaSmiQuery,
              "--format=csv,noheader,nounits", "-lms", std::to_string(interval.count())};
  req.env = env;
  req.stdin_fd = null.get();
  req.stdout_fd = pipe->write.get();
  req.stderr_fd = null.get();
  auto pid = spawn_process(req);
  if (!pid) {
    note_ = "nvidia-smi not started: " + pid.error().message;
    return;
  }
  pid_ = *pid;
  note_ = "NVIDIA, read with nvidia-smi every " + std::to_string(interval.count()) + " ms";
  out_.assign(pipe->read.release());
  read();
}

void GpuWatch::read() {
  out_.async_read_some(asio::buffer(buf_), [this](std::error_code ec, size_t n) {
    if (ec) {
      if (ec != asio::error::operation_aborted && pid_ > 0)
        note_ = "nvidia-smi ended; GPU use not read since";
      return;
    }
    partial_.append(buf_.data(), n);
    size_t nl = 0;
    while ((nl = partial_.find('\n')) != std::string::npos) {
      if (auto g = parse_nvidia_smi_line(std::string_view(partial_).substr(0, nl)))
        gpus_[g->index] = *g;
      partial_.erase(0, nl + 1);
    }
    if (partial_.size() > 4096) partial_.clear();  // not nvidia-smi's lines
    read();
  });
}

void GpuWatch::stop() {
  std::error_code ec;
  out_.close(ec);
  if (pid_ > 0) ::kill(pid_, SIGTERM);  // reaped with ferryd's other children
  pid_ = -1;
  started_ = false;
}

std::vector<GpuUse> GpuWatch::latest() const {
  std::vector<GpuUse> out;
  out.reserve(gpus_.size());
  for (const auto& [index, g] : gpus_) out.push_back(g);
  return out;
}

}  // namespace ferry
