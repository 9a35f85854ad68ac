#pragma once
/// \file
/// Errors are values: `Result<T>` holds either a T or a one-line message for the user.

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace ferry {

/// A failure: one line a user can act on (it names the host, file:line or flag), and, where a
/// caller may branch on the cause, the system's error number: code compares `code`, never
/// the text.
struct Error {
  std::string message;
  int code = 0;  ///< errno of the failed call (ENOENT, EACCES...), or 0
};

/// Makes an Error from a message (and the errno behind it, where there is one).
inline Error make_error(std::string message, int code = 0) {
  return Error{std::move(message), code};
}

/// Either a value or an Error. Never throws; check `ok()` before `value()`.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

/// Result of an operation with no value.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}
  bool ok() const { return !error_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

using Status = Result<void>;

}  // namespace ferry
