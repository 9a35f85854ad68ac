#pragma once
/// \file
/// Shipping ferryd to hosts that have none (docs/design.md, "Shipping ferryd"): the files
/// ferryrun can send, one per architecture, with their SHA-256; and the small POSIX shell
/// program each host runs first, over the host's SSH session, to say which ferryd to start
/// (the installed one, or a cached copy it checked) or to receive one into its cache.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// --ship-ferryd: when ferryrun sends its own ferryd.
enum class ShipMode {
  kAuto,    ///< where the host's ferryd is missing or speaks another protocol version
  kAlways,  ///< to every host (the installed one is not looked at)
  kNever,   ///< never: a missing ferryd fails the host, as before
};

/// Parses "auto", "always" or "never".
Result<ShipMode> parse_ship_mode(std::string_view text);

struct ShippedBytes;

/// One file ferryrun can send. Only its size and SHA-256 are known up front (the SHA-256
/// from the `<source>.sha256` the build writes beside it, else computed); the bytes are
/// read when a host first asks for them, so a job whose hosts have ferryd reads nothing.
struct ShippedFerryd {
  std::string arch;    ///< `uname -m` of the hosts it runs on ("x86_64", "aarch64")
  std::string source;  ///< where ferryrun read it
  std::string sha256;  ///< hex, lower case: the name of its cache folder on the hosts
  uint64_t size = 0;
  /// The size of the same compressed with gzip (`<source>.gz`, made by the build), which
  /// is what goes to hosts that have gzip; 0 when there is none.
  uint64_t gzip_size = 0;
  std::shared_ptr<ShippedBytes> loaded;  ///< shared by every session; filled on first use

  /// The bytes to send (`gzip`: the gzip copy), read once for all hosts and checked against
  /// the size (and, for the file itself, the SHA-256) announced; an error names the file.
  /// Safe to call from several threads.
  Result<const std::string*> contents(bool gzip) const;

  /// A file held in memory (tests): `gzip` may be empty.
  static ShippedFerryd in_memory(std::string arch, std::string sha256, std::string bytes,
                                 std::string gzip = {});
};

/// What SSH sessions need to ship ferryd; shared by every host of a job.
struct ShipPlan {
  ShipMode mode = ShipMode::kNever;
  int protocol = 0;  ///< the protocol version an installed ferryd must speak (auto)
  /// What an installed ferryd that speaks `protocol` writes first, `greeting_offset` bytes
  /// into its stdout (the app sets them from the wire format: its Hello's fixed part).
  /// With `auto` and a greeting, a session starts the installed ferryd at once and checks
  /// these bytes; only where it is missing, fails or greets otherwise does the host run
  /// ship_command(), on a second channel. Empty: ship_command() runs first and asks the
  /// installed ferryd for its `--version`.
  std::string greeting;
  size_t greeting_offset = 0;
  std::vector<ShippedFerryd> files;

  /// The file for `arch`, or null.
  const ShippedFerryd* find(std::string_view arch) const;
};

/// Finds the files to ship: every `ferryd-<arch>` in `ferryd_dir` (when given), and for this
/// machine's architecture, unless the folder has one, `<self_dir>/../libexec/ferry/ferryd-<arch>`
/// or else `<self_dir>/ferryd`; each with its `.gz` copy and `.sha256` when they are there, as
/// new. `protocol` is the version an installed ferryd must speak. Errors name the file or the
/// option.
Result<ShipPlan> load_ship_plan(ShipMode mode, int protocol, const std::string& ferryd_dir,
                                const std::string& self_dir);

/// The command a host runs first (`sh -c '<program>' ...`): with `installed` the path of
/// ferryd the host is configured with, which the program looks at only in `auto` mode and
/// unless `installed_tried` (its greeting was already found wrong). It answers lines that
/// parse_ship_line() reads.
std::string ship_command(const ShipPlan& plan, const std::string& installed,
                         bool installed_tried = false);

/// One line of the host's answer.
struct ShipLine {
  enum class Kind {
    kUse,        ///< start the ferryd at `text` (installed, cached or just received)
    kCached,     ///< like kUse, for a cached copy that was already there (nothing sent)
    kSend,       ///< send the file for `text` ("x86_64 gz" or "x86_64 raw") now
    kWrongArch,  ///< the host is `text` and ferryrun has no file for it
    kFail,       ///< `text` says why
  };
  Kind kind = Kind::kFail;
  std::string text;
};

/// Parses one line (without its newline); an unknown line is an error.
Result<ShipLine> parse_ship_line(std::string_view line);

/// The one-line error for a host of architecture `arch` that ferryrun has no file for.
std::string wrong_arch_message(const ShipPlan& plan, const std::string& arch);

}  // namespace ferry
