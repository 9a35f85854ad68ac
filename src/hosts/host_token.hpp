#pragma once
/// \file
/// Private to src/hosts/: the pieces `-H` items and hostfile lines share — one host token
/// (`[user@]host[:slots]`, IPv6 forms) and bounded decimal counts.

#include <optional>
#include <string>
#include <string_view>

#include "ferry/common/result.hpp"

namespace ferry::hosts_detail {

/// Largest slot count accepted anywhere; keeps sums of slots far from `int` overflow.
inline constexpr int slots_limit = 1'000'000;

/// Parses a decimal count in [1, limit]: digits only, no sign, no spaces. The error is the
/// reason alone ("expected a positive integer"), for the caller to wrap with context.
Result<int> parse_count(std::string_view text, int limit);

/// One host as written in a `-H` item or at the start of a hostfile line.
struct HostToken {
  std::string user;          ///< before `@`; empty when absent
  std::string name;          ///< host name or address; IPv6 without brackets
  std::optional<int> slots;  ///< the `:N` suffix, when present
};

/// Splits `[user@]host[:N]`, `[user@][v6addr][:N]` or a bare IPv6 address (two or more
/// colons, no brackets: the whole text is the address, no slots). Errors are one phrase
/// naming the bad part and quoting `token` ("bad slot count 'x' in 'a:x' (...)"), without a
/// file or flag prefix.
Result<HostToken> split_host_token(std::string_view token);

/// True for a non-empty name of letters, digits, '.', '-', '_' that does not start with
/// '-' (host and user names reach an ssh command line, where '-' would start an option).
bool is_plain_name(std::string_view text);

}  // namespace ferry::hosts_detail
