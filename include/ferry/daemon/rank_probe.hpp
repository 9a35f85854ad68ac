#pragma once
/// \file
/// What ferryd can see of one of its running ranks from outside, for the state report of a hung
/// job: its scheduler state and CPU time from /proc, and its stack from a debugger.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace ferry {

/// A rank's line of /proc/<pid>/stat, the parts the report shows.
struct ProcSample {
  bool ok = false;         ///< false: the process is gone
  char state = '?';        ///< R, S, D, Z, T, ...
  uint64_t cpu_ticks = 0;  ///< utime + stime, in clock ticks
  uint32_t threads = 0;
};

/// Parses the text of /proc/<pid>/stat (the command name may hold spaces and parentheses).
ProcSample parse_proc_stat(const std::string& text);
/// Reads /proc/<pid>/stat now.
ProcSample sample_proc(pid_t pid);
/// "running", "sleeping", "disk sleep (D)", ... for a /proc state letter.
std::string state_name(char state);
/// CPU used between two samples `elapsed` apart, 1000 = one core busy the whole time.
uint32_t cpu_permille(const ProcSample& before, const ProcSample& after,
                      std::chrono::milliseconds elapsed);

/// The stack of `pid` as text: its main thread's native frames, then its Python frames when it
/// is a Python interpreter, each part led by "native:" / "python:"; a part that cannot be had
/// says why in one line and names the Debian package that would give it. gdb in batch mode
/// (with CPython's gdb extension for the Python frames) where installed, else elfutils'
/// eu-stack (native frames only). The rank is stopped for as long as the debugger reads it.
std::string dump_stack(pid_t pid, std::chrono::seconds limit);

/// The "python:" part of dump_stack() read from the rank's memory (python_frames.hpp), for when
/// gdb cannot give it: the frames, each line indented as gdb's, or one line "python:
/// unavailable (WHY; from its memory: REASON)" where `why` says why gdb's part is missing.
std::string python_from_memory(pid_t pid, const std::string& why);

/// Picks the parts of gdb's batch output that dump_stack() shows (exposed for tests): the
/// frame lines ("#N ..."), each cut to a readable length, and the Python traceback after
/// `marker`.
std::string tidy_gdb_output(const std::string& out, const std::string& marker, bool python);

}  // namespace ferry
