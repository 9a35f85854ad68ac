#pragma once
/// \file
/// The PMI-1 "simple" wire format (MPICH `src/pmi/src/pmi_wire.c`):
/// one command per line, `cmd=NAME key=val key=val\n`, values without spaces (a backslash
/// escapes the next character in MPICH >= 4.1; ferry passes values through unchanged, so
/// escapes survive a put/get round trip). Multi-line commands (`mcmd=spawn\n` ... `endcmd\n`,
/// one `key=value` per line) are read whole (a spawn is served from the whole block).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// One command from a rank (or a reply, when parsing what a server sent).
struct PmiCommand {
  std::string cmd;     ///< "init", "put", ...; for a multi-line command the mcmd value
  bool multi = false;  ///< came as an `mcmd=` block
  /// Arguments in order; a bare token without '=' has an empty value.
  std::vector<std::pair<std::string, std::string>> args;

  /// The value of the first argument named `key`, or nothing.
  std::optional<std::string_view> get(std::string_view key) const;
};

/// Longest line accepted: MPICH's own limit is 1024 (PMIU_MAXLINE), with room to spare.
inline constexpr std::size_t kPmiMaxLine = 4096;

/// Cuts one rank's PMI byte stream into commands. Feed bytes as they arrive, then call
/// next() until it returns nothing.
class PmiReader {
 public:
  explicit PmiReader(std::size_t max_line = kPmiMaxLine) : max_line_(max_line) {}
  void feed(std::string_view bytes);
  /// The next complete command, nothing if incomplete, or an Error for a malformed line or
  /// one over the limit; after an error the reader stays failed.
  Result<std::optional<PmiCommand>> next();
  /// Bytes held that do not yet form a command.
  std::size_t buffered() const { return buf_.size() - pos_; }

 private:
  Result<std::optional<PmiCommand>> fail(std::string why);
  std::size_t max_line_;
  std::string buf_;
  std::size_t pos_ = 0;
  std::optional<PmiCommand> multi_;  // an mcmd block being read
  std::optional<std::string> error_;
};

/// Parses one single-line command (without its '\n'); an Error names what is wrong.
Result<PmiCommand> parse_pmi_line(std::string_view line);

/// Formats `cmd=NAME k=v ...\n`. Values are written as given (no spaces expected).
std::string format_pmi(std::string_view cmd,
                       const std::vector<std::pair<std::string, std::string>>& args);

}  // namespace ferry
