#pragma once
/// \file
/// A Python rank's frames read from its memory, the way py-spy reads them: no debugger, no
/// debug symbols, and the rank is not stopped. For the state report of a hung job where gdb
/// has no CPython extension (python3.X-dbg is not installed on the host), or no gdb at all.
///
/// CPython keeps its state in the exported `_PyRuntime`; the main thread's frames hang from
/// it (interpreter, thread states, the thread's current frame, each frame's code object,
/// file, function and the instruction it is at). The structures' layout is CPython's own and
/// changes between minor versions: this reader knows 3.11's (Debian 12's python3.11) and
/// says so for any other.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// One Python frame: its file, the line it is at and its function.
struct PythonFrame {
  std::string file;
  int line = 0;
  std::string function;
};

/// The main thread's Python frames of process `pid`, innermost first, at most `max_frames`.
/// Error, in one line: not CPython 3.11, `_PyRuntime` not found, memory not readable (no
/// ptrace right over `pid`), or a structure that does not read as one.
Result<std::vector<PythonFrame>> read_python_frames(pid_t pid, size_t max_frames);

/// The frames as the report's "python:" part shows gdb's py-bt: "Traceback (most recent call
/// first):" then `  File "F", line N, in FUNC` a frame.
std::string format_python_frames(const std::vector<PythonFrame>& frames);

/// The line of instruction `index` (in code units; -1: not started) of a code object whose
/// first line is `first_line`, from its 3.11 location table (co_linetable). 0 when the table
/// gives none (exposed for tests).
int python311_line(std::string_view linetable, int first_line, int64_t index);

}  // namespace ferry
