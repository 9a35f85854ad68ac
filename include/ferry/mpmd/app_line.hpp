#pragma once
/// \file
/// An MPMD command line read into its parts ("apps" in Open MPI's and PMIx's words):
/// `-np 1 ./controller : -np 4 -x K=V ./worker args`, Open MPI's `--app FILE` and hydra's
/// `-configfile FILE` (one part a line). Pure: words in, parts out; the hosts, exports and
/// placement of the parts are resolved by the caller.

#include <string>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// One part as written: its own options and its command. Nothing here is resolved yet:
/// `hosts` is -H's text, `exports` are -x items ("K", "K=V", patterns) and hydra's
/// `-env K V` as "K=V".
struct AppPart {
  std::vector<std::string> command;
  int np = 0;                        ///< 0: not given (the free slots of its hosts)
  std::vector<std::string> hosts;    ///< -H / --host / -host / -hosts values, in order
  int per_host = 0;                  ///< -N / -ppn / --npernode; 0: the job's
  std::vector<std::string> exports;  ///< -x items and -env K V, in order
  std::string wdir;                  ///< --wdir / -wdir / -wd / --wd; "": the job's
  std::string where;                 ///< for messages: "part 2" or "apps.txt:3"
};

/// The word that separates parts on a command line.
inline constexpr const char* kPartSeparator = ":";

/// True when `command` holds the separator word (an MPMD line).
bool has_part_separator(const std::vector<std::string>& command);

/// Cuts `command` at each ":" word. The first part is the command as given (its options were
/// the job's, read before); every later part is read by parse_app_part. An empty part
/// (`A : : B`, a leading or trailing ":") is an error naming its position.
Result<std::vector<AppPart>> split_app_line(const std::vector<std::string>& command);

/// Reads one part's words: the options a part may carry (`-np/-n/-c/--np N`, `-H/--host/-host/
/// -hosts LIST`, `-x VAR[=V]`, `-env NAME VALUE`, `--wdir/-wdir/-wd DIR`, `-N/-ppn/--npernode N`,
/// also as `--opt=V`), then the command from the first word that is not an option. Any other
/// option is an error naming it and `where`; so is a part with no command.
Result<AppPart> parse_app_part(const std::vector<std::string>& words, const std::string& where);

/// An appfile's text (Open MPI `--app`, hydra `-configfile`): one part a line, words split
/// as a shell does for plain words and '...'/"..." quoting, `#` starting a comment line,
/// blank lines skipped, a line ending in `\` continued on the next. Errors name
/// "file:line". A file with no part is an error.
Result<std::vector<AppPart>> parse_app_file_text(const std::string& text, const std::string& file);

/// Reads and parses an appfile (`path` names it in messages).
Result<std::vector<AppPart>> read_app_file(const std::string& path);

}  // namespace ferry
