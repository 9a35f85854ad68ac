#pragma once
/// \file
/// One host given field by field, as a job file's `[[hosts]]` table does, checked by the
/// same rules as `-H` items and hostfile lines.

#include <optional>
#include <string>

#include "ferry/common/result.hpp"
#include "ferry/hosts/host_list.hpp"

namespace ferry {

/// The fields of one host before checking.
struct HostFields {
  std::string name;    ///< host name, address, `[v6addr]` or bare IPv6 address
  std::string user;    ///< empty = the default
  long long port = 0;  ///< 0 = the default; else 1-65535
  std::optional<long long> slots;
  std::optional<long long> max_slots;
  std::string ferryd;  ///< empty = the default
};

/// Checks `fields` and makes the HostEntry (slots default to `default_slots`, capped by
/// max_slots as in hostfiles). `name` must not carry a user or a slot count (those have
/// their own fields). Errors are one phrase naming the field and quoting the value, with
/// no file or line prefix: "bad port 70000 (expected 1-65535)".
Result<HostEntry> host_from_fields(const HostFields& fields, int default_slots,
                                   const std::string& origin);

/// True when `path` is usable as a ferryd path on a remote command line: not empty, not
/// starting with '-', only letters, digits, '/', '.', '-', '_', '+'.
bool is_safe_ferryd_path(const std::string& path);

}  // namespace ferry
