#include "ferry/frontend/state_report.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <sstream>
#include <string_view>

#include "ferry/common/text.hpp"

namespace ferry {
namespace {

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

std::string percent(uint32_t permille) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%u%%", (permille + 5) / 10);
  return buf;
}

std::string row_text(const std::string& program, const StateRow& r) {
  std::string head = program + ": rank " + std::to_string(r.rank) + " on " + r.host + ": ";
  if (!r.answered) return head + r.missing + "\n";
  const wire::RankState& s = r.state;
  head += "pid " + std::to_string(s.pid) + ", " + s.state + ", CPU " + percent(s.cpu_permille) +
          " over the last " + seconds(s.sample_ms / 1000.0);
  if (s.threads > 0) head += ", " + std::to_string(s.threads) + " thread(s)";
  if (r.since_output_s >= 0) head += ", last output " + seconds(r.since_output_s) + " ago";
  std::string text = head + "\n";
  std::istringstream in(s.stack);
  for (std::string line; std::getline(in, line);) text += "    " + line + "\n";
  return text;
}

// ---- where the ranks are, in short --------------------------------------------------------

// Frame lines of a native stack, "#3  0x00007f.. in PMPI_Barrier () from ..." (gdb), "#5
// PyObject_Vectorcall (...) at ..." (gdb, an inlined frame), "#0  0x00007f..
// __clock_nanosleep" (eu-stack): their function names, innermost first.
std::vector<std::string> native_functions(std::string_view stack) {
  std::vector<std::string> names;
  bool native = false;
  std::istringstream in{std::string(stack)};
  for (std::string line; std::getline(in, line);) {
    const std::string_view l = trim(line);
    if (!l.starts_with("#")) {
      native = (l == "native:") || (native && !l.ends_with(":"));
      continue;
    }
    if (!native) continue;
    std::istringstream words{std::string(l)};
    std::string word;
    words >> word;  // #N
    if (!(words >> word)) continue;
    if (word.starts_with("0x") && !(words >> word)) continue;
    if (word == "in" && !(words >> word)) continue;
    names.push_back(word.substr(0, word.find('(')));
  }
  return names;
}

std::string_view base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The innermost native frame of the program itself, as gdb prints it: not from a library
// (" from /usr/lib/..."), not of a Debian package's sources (" at ../sysdeps/...", relative
// paths): "main (mpi_world.c:129)", "main" without debug information; or "".
std::string program_frame(std::string_view stack) {
  std::istringstream in{std::string(stack)};
  for (std::string line; std::getline(in, line);) {
    const std::string_view l = trim(line);
    const size_t open = l.find(" (");
    if (!l.starts_with("#") || open == std::string_view::npos ||
        l.find(" from /") != std::string_view::npos)
      continue;
    const size_t at = l.rfind(") at ");
    if (at != std::string_view::npos && l.substr(at + 5).starts_with(".")) continue;
    std::string_view name = l.substr(0, open);
    name.remove_prefix(std::min(name.size(), name.rfind(' ') + 1));
    if (name.empty() || name == "??" || name.starts_with("_start") || name.starts_with("__libc_"))
      continue;
    if (at == std::string_view::npos) return std::string(name);
    const std::string_view file = l.substr(at + 5);
    return std::string(name) + " (" + std::string(base_name(file)) + ")";
  }
  return "";
}

struct PyFrame {
  std::string file;
  std::string line;
  std::string function;
};

// The Python frames (`File "t.py", line 3, in f`), innermost first as py-bt prints them.
std::vector<PyFrame> python_frames(std::string_view stack) {
  std::vector<PyFrame> frames;
  std::istringstream in{std::string(stack)};
  for (std::string line; std::getline(in, line);) {
    const std::string_view l = trim(line);
    if (!l.starts_with("File \"")) continue;
    const size_t end = l.find("\", line ", 6);
    const size_t in_at = l.find(", in ", end == std::string_view::npos ? 0 : end);
    if (end == std::string_view::npos || in_at == std::string_view::npos) continue;
    frames.push_back({std::string(l.substr(6, end - 6)),
                      std::string(l.substr(end + 8, in_at - end - 8)),
                      std::string(l.substr(in_at + 5))});
  }
  return frames;
}

// A frame of an installed library or of Python's own, not of the program that was started.
bool library_file(std::string_view file) {
  return file.find("/dist-packages/") != std::string_view::npos ||
         file.find("/site-packages/") != std::string_view::npos ||
         file.find("/lib/python3") != std::string_view::npos || file.starts_with("<frozen ");
}

// The MPI call a native frame is (PMPI_Barrier and MPI_Barrier both read MPI_Barrier), or "".
std::string mpi_call(const std::string& function) {
  if (function == "ompi_mpi_finalize" || function == "MPID_Finalize") return "MPI_Finalize";
  if (function == "ompi_mpi_init" || function == "MPID_Init") return "MPI_Init";
  std::string_view f = function;
  if (f.starts_with("P")) f.remove_prefix(1);
  if (f.size() > 4 && f.starts_with("MPI_") && std::isupper(static_cast<unsigned char>(f[4])))
    return std::string(f);
  return "";
}

// Python's exit: its exit functions run (mpi4py's calls MPI_Finalize there).
bool at_interpreter_exit(const std::vector<std::string>& functions) {
  return std::any_of(functions.begin(), functions.end(), [](const std::string& f) {
    return f == "Py_FinalizeEx" || f == "call_py_exitfuncs" || f == "call_ll_exitfuncs";
  });
}

constexpr std::string_view kFinalizeAtExit = "MPI_Finalize at Python's exit, its script over";

// A hint for a pattern whose cause is known, or "".
std::string hint(const std::map<std::string, std::vector<int>>& groups) {
  const auto at_exit = groups.find(std::string(kFinalizeAtExit));
  if (at_exit == groups.end() || groups.size() < 2) return "";
  const std::vector<int>& ranks = at_exit->second;
  const bool one = ranks.size() == 1;
  return std::string(one ? "rank " : "ranks ") + number_ranges(ranks) + (one ? " is" : " are") +
         " in MPI_Finalize at Python's exit while the others wait elsewhere: most likely "
         "an exception " +
         (one ? "it" : "they") + " did not catch ended " +
         (one ? "its script (its traceback is in its output)"
              : "their scripts (their tracebacks are in their output)") +
         ". mpi4py calls MPI_Finalize at exit, which waits for every rank; start the script "
         "as `python -m mpi4py script.py` and such an exception ends the job at once";
}

std::string whereabouts_section(const std::string& program, const std::vector<StateRow>& rows) {
  std::map<std::string, std::vector<int>> groups;
  std::vector<std::string> order;
  for (const StateRow& r : rows) {
    std::string where = rank_whereabouts(r);
    if (!groups.contains(where)) order.push_back(where);
    groups[where].push_back(r.rank);
  }
  std::string text = program + ": where the ranks are:\n";
  for (const std::string& where : order) {
    const std::vector<int>& ranks = groups[where];
    text += program + ":   " + (ranks.size() == 1 ? "rank " : "ranks ") + number_ranges(ranks) +
            ": " + where + "\n";
  }
  const std::string h = hint(groups);
  if (!h.empty()) text += program + ": " + h + "\n";
  return text;
}

}  // namespace

std::string rank_whereabouts(const StateRow& row) {
  if (!row.answered) return row.missing;
  const std::vector<std::string> native = native_functions(row.state.stack);
  const std::vector<PyFrame> python = python_frames(row.state.stack);
  std::string where;
  for (const std::string& f : native)
    if (!(where = mpi_call(f)).empty()) break;
  if (where == "MPI_Finalize" && python.empty() && at_interpreter_exit(native))
    return std::string(kFinalizeAtExit);
  if (where.empty() && !python.empty() && library_file(python.front().file)) {
    const std::string& file = python.front().file;
    size_t at = file.rfind("-packages/");
    at = at == std::string::npos ? file.rfind('/') + 1 : at + 10;
    where = python.front().function + " (" + file.substr(at) + ")";
  }
  const auto user = std::find_if(python.begin(), python.end(),
                                 [](const PyFrame& f) { return !library_file(f.file); });
  if (user != python.end()) {
    const std::string mine =
        std::string(base_name(user->file)) + ":" + user->line + " in " + user->function;
    where = where.empty() ? mine : where + ", from " + mine;
  }
  // Else the innermost named native frame; for a native program, from its own innermost (a
  // Python rank's are the interpreter's).
  if (where.empty()) {
    const auto named =
        std::find_if(native.begin(), native.end(), [](const std::string& f) { return f != "??"; });
    if (named == native.end()) return "no stack read";
    where = "in " + *named;
  }
  const bool python_rank = row.state.stack.starts_with("python:") ||
                           row.state.stack.find("\npython:") != std::string::npos;
  const std::string mine = python_rank ? "" : program_frame(row.state.stack);
  if (!mine.empty() && where != "in " + mine.substr(0, mine.find(' '))) where += ", from " + mine;
  return where;
}

std::string format_state_report(const std::string& program, const std::string& why,
                                std::vector<StateRow> rows) {
  std::sort(rows.begin(), rows.end(),
            [](const StateRow& a, const StateRow& b) { return a.rank < b.rank; });
  std::string text = program + ": state of every rank (" + why + "):\n";
  for (const StateRow& r : rows) text += row_text(program, r);
  if (!rows.empty()) text += whereabouts_section(program, rows);
  text += program + ": end of the state report\n";
  return text;
}

}  // namespace ferry
