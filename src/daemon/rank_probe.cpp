#include "ferry/daemon/rank_probe.hpp"

#include <unistd.h>

#include <charconv>
#include <sstream>
#include <vector>

#include "ferry/common/environ.hpp"
#include "ferry/common/read_text_file.hpp"
#include "ferry/daemon/python_frames.hpp"
#include "ferry/process/run_capture.hpp"
#include "ferry/process/spawn.hpp"

namespace ferry {
namespace {

constexpr size_t kFrameWidth = 160;  // a frame line past this is cut: arguments, long paths
constexpr int kMaxFrames = 40;

bool installed(const std::string& tool) {
  return static_cast<bool>(resolve_command(tool, {"PATH=/usr/local/bin:/usr/bin:/bin"}, ""));
}

// The interpreter's name ("python3.11") when `pid` runs one, else "".
std::string python_name(pid_t pid) {
  char buf[4096];
  const std::string link = "/proc/" + std::to_string(pid) + "/exe";
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string exe(buf, static_cast<size_t>(n));
  exe = exe.substr(exe.rfind('/') + 1);
  return exe.starts_with("python") ? exe : "";
}

// The Debian package with CPython's gdb extension and debug symbols for `python`.
std::string dbg_package(const std::string& python) {
  return (python.size() > 7 && python.find('.') != std::string::npos ? python : "python3.X") +
         "-dbg";
}

std::string cut(const std::string& line) {
  return line.size() > kFrameWidth ? line.substr(0, kFrameWidth - 3) + "..." : line;
}

std::string gdb_stack(pid_t pid, const std::string& python, std::chrono::seconds limit) {
  const std::string marker = "@@ferry-python-frames@@";
  // Every library's symbols are read (libtorch's take gdb seconds): without a library's
  // unwind tables the stack stops at its first frame, short of the interpreter's.
  std::vector<std::string> argv = {"gdb",
                                   "-nx",
                                   "-batch",
                                   "-p",
                                   std::to_string(pid),
                                   "-ex",
                                   "set pagination off",
                                   "-ex",
                                   "set print frame-arguments none",
                                   "-ex",
                                   "bt " + std::to_string(kMaxFrames)};
  if (!python.empty()) argv.insert(argv.end(), {"-ex", "echo " + marker + "\\n", "-ex", "py-bt"});
  auto out = run_capture_limited(argv, limit);
  if (!out) return "native: unavailable (" + out.error().message + ")\n";
  std::string text = tidy_gdb_output(*out, marker, !python.empty());
  if (text.find("native:\n") == std::string::npos)
    text = "native: unavailable (gdb could not attach to pid " + std::to_string(pid) +
           ": ptrace not permitted?)\n" + text;
  if (!python.empty() && text.find("python:\n") == std::string::npos)
    text += python_from_memory(pid, "gdb has no CPython extension: install " + dbg_package(python));
  return text;
}

std::string eu_stack(pid_t pid, const std::string& python, std::chrono::seconds limit) {
  auto out = run_capture_limited(
      {"eu-stack", "-1", "-n", std::to_string(kMaxFrames), "-p", std::to_string(pid)}, limit);
  std::string text;
  if (!out) {
    text = "native: unavailable (" + out.error().message + ")\n";
  } else {
    std::istringstream in(*out);
    for (std::string line; std::getline(in, line);)
      if (line.starts_with("#")) text += "    " + cut(line) + "\n";
    text = text.empty()
               ? "native: unavailable (eu-stack could not read pid " + std::to_string(pid) + ")\n"
               : "native:\n" + text;
  }
  if (!python.empty()) text += python_from_memory(pid, "install gdb and " + dbg_package(python));
  return text;
}

}  // namespace

std::string python_from_memory(pid_t pid, const std::string& why) {
  auto frames = read_python_frames(pid, kMaxFrames);
  if (!frames || frames->empty())
    return "python: unavailable (" + why +
           "; from its memory: " + (frames ? std::string("no frame") : frames.error().message) +
           ")\n";
  std::string text = "python:\n";
  std::istringstream in(format_python_frames(*frames));
  for (std::string line; std::getline(in, line);) text += "    " + cut(line) + "\n";
  return text;
}

ProcSample parse_proc_stat(const std::string& text) {
  ProcSample s;
  const auto f = stat_fields(text);
  if (f.size() < 18) return s;
  auto number = [](std::string_view v, uint64_t& out) {
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    return ec == std::errc() && end == v.data() + v.size();
  };
  uint64_t user = 0, system = 0, threads = 0;
  if (!number(f[11], user) || !number(f[12], system) || !number(f[17], threads)) return s;
  s.state = f[0].empty() ? '?' : f[0][0];
  s.cpu_ticks = user + system;
  s.threads = static_cast<uint32_t>(threads);
  s.ok = true;
  return s;
}

ProcSample sample_proc(pid_t pid) {
  auto text = read_text_file("/proc/" + std::to_string(pid) + "/stat", 4096, "stat file");
  return text ? parse_proc_stat(*text) : ProcSample{};
}

std::string state_name(char state) {
  switch (state) {
    case 'R':
      return "running";
    case 'S':
      return "sleeping";
    case 'D':
      return "disk sleep (D)";
    case 'Z':
      return "zombie";
    case 'T':
      return "stopped";
    case 't':
      return "traced";
    default:
      return std::string("state ") + state;
  }
}

uint32_t cpu_permille(const ProcSample& before, const ProcSample& after,
                      std::chrono::milliseconds elapsed) {
  if (!before.ok || !after.ok || elapsed.count() <= 0 || after.cpu_ticks < before.cpu_ticks)
    return 0;
  const auto ticks_per_s = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double used_ms =
      static_cast<double>(after.cpu_ticks - before.cpu_ticks) * 1000.0 / ticks_per_s;
  return static_cast<uint32_t>(used_ms * 1000.0 / static_cast<double>(elapsed.count()));
}

std::string dump_stack(pid_t pid, std::chrono::seconds limit) {
  const std::string python = python_name(pid);
  if (installed("gdb")) return gdb_stack(pid, python, limit);
  if (installed("eu-stack")) return eu_stack(pid, python, limit);
  std::string text = "stack: unavailable (install gdb, or elfutils for native frames only)\n";
  if (!python.empty()) text += python_from_memory(pid, "install gdb and " + dbg_package(python));
  return text;
}

std::string tidy_gdb_output(const std::string& out, const std::string& marker, bool python) {
  std::string native, py;
  bool in_python = false;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line == marker) {
      in_python = true;
      continue;
    }
    if (!in_python) {
      if (line.starts_with("#")) native += "    " + cut(line) + "\n";
      continue;
    }
    if (line.starts_with("[Inferior ") || line.empty()) continue;
    py += "    " + cut(line) + "\n";
  }
  std::string text = native.empty() ? "" : "native:\n" + native;
  if (python && !py.empty()) text += "python:\n" + py;
  return text;
}

}  // namespace ferry
