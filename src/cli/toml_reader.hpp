#pragma once
/// \file
/// Private to src/cli/: typed, checked access to the keys of one TOML table, keeping the
/// first error as "file:line: message" so that a job file is read in straight-line code.

#include <toml++/toml.h>

#include <optional>
#include <string>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry::cli_detail {

/// Reads keys of TOML tables. Every getter leaves its target untouched when the key is
/// absent, and once an error is recorded every later call does nothing.
class TomlReader {
 public:
  explicit TomlReader(std::string file) : file_(std::move(file)) {}

  /// The first error, if any.
  const std::optional<Error>& error() const { return error_; }
  /// Records `message` at `node`'s line unless an error is recorded already.
  void fail(const toml::source_region& region, const std::string& message);

  /// Fails on the first key of `table` not in `known`; `section` names it ("[defaults]").
  void check_keys(const toml::table& table, const std::string& section,
                  const std::vector<std::string>& known);

  void get(const toml::table& t, const char* key, bool& into);
  void get(const toml::table& t, const char* key, std::string& into);
  /// An integer in [lo, hi].
  void get(const toml::table& t, const char* key, long long& into, long long lo, long long hi);
  void get(const toml::table& t, const char* key, int& into, long long lo, long long hi);
  /// An integer or float in [lo, hi].
  void get(const toml::table& t, const char* key, double& into, double lo, double hi);
  /// An array of integers in [lo, hi].
  void get(const toml::table& t, const char* key, std::vector<int>& into, long long lo,
           long long hi);
  /// An array of strings; a single string is taken as a one-element array when
  /// `single_ok`.
  void get(const toml::table& t, const char* key, std::vector<std::string>& into, bool single_ok);
  /// The sub-table `key`, or null when absent (failing if it is not a table).
  const toml::table* table(const toml::table& t, const char* key);

  /// "file:line" of a node or key.
  std::string where(const toml::source_region& region) const;

 private:
  bool skip() const { return error_.has_value(); }

  std::string file_;
  std::optional<Error> error_;
};

/// The TOML type name of a node for messages ("a string", "an integer", ...).
const char* type_name(const toml::node& node);

}  // namespace ferry::cli_detail
