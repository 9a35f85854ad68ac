#pragma once
/// \file
/// Shipping ferryd to hosts that have none (docs/design.md, "Shipping ferryd"): the files
/// ferryrun can send, one per architecture, with their SHA-256; and the small POSIX shell
/// program each host runs first, over the host's SSH session, to say which ferryd to start
/// (the installed one, or a cached copy it checked) or to receive one into its cache.

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

/// One file ferryrun can send.
struct ShippedFerryd {
  std::string arch;    ///< `uname -m` of the hosts it runs on ("x86_64", "aarch64")
  std::string source;  ///< where ferryrun read it
  std::string sha256;  ///< hex, lower case: the name of its cache folder on the hosts
  std::shared_ptr<const std::string> bytes;
  /// The same compressed with gzip (`<source>.gz`, made by the build), sent to hosts that
  /// have gzip; null when there is none.
  std::shared_ptr<const std::string> gzip;
};

/// What SSH sessions need to ship ferryd; shared by every host of a job.
struct ShipPlan {
  ShipMode mode = ShipMode::kNever;
  int protocol = 0;  ///< the protocol version an installed ferryd must speak (auto)
  std::vector<ShippedFerryd> files;

  /// The file for `arch`, or null.
  const ShippedFerryd* find(std::string_view arch) const;
};

/// Reads the files to ship: every `ferryd-<arch>` in `ferryd_dir` (when given), and for this
/// machine's architecture, unless the folder has one, `<self_dir>/../libexec/ferry/ferryd-<arch>`
/// or else `<self_dir>/ferryd`; each with its `.gz` copy when one is there, as new. `protocol` is
/// the version an installed ferryd must speak. Errors name the file or the option.
Result<ShipPlan> load_ship_plan(ShipMode mode, int protocol, const std::string& ferryd_dir,
                                const std::string& self_dir);

/// The command a host runs first (`sh -c '<program>' ...`): with `installed` the path of
/// ferryd the host is configured with. It answers lines that parse_ship_line() reads.
std::string ship_command(const ShipPlan& plan, const std::string& installed);

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
