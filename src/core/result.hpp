// Result<T>: the return type of every fallible pure function (an expected-like type; C++20 has no
// std::expected). Pure code never throws; it returns an Error with a stable code and a message a
// user can act on.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "core/error_codes.hpp"

namespace mpo {

struct Error {
  std::string code;     // stable, machine-readable: "json.parse", "rfc3339.range", ... (core/error_codes.hpp)
  std::string message;  // for a person: what is wrong and, where possible, what to do
  std::string subject;  // what it is about, where a caller needs it apart: a request's parameter
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }

  template <typename U>
  T value_or(U&& fallback) const {
    return ok() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Error> v_;
};

// Result<void> equivalent.
struct Ok {};
using Status = Result<Ok>;

inline Error make_error(ErrorCode code, std::string message) {
  return Error{std::string(code.name()), std::move(message), {}};
}
// The same error told again with more context: the cause's code and subject, a new message.
inline Error make_error(const Error& cause, std::string message) {
  return Error{cause.code, std::move(message), cause.subject};
}
// The exit code of a command that stops on `e` (its catalog entry; 1 where it ends no command).
inline int exit_code_of(const Error& e) {
  const ErrorInfo* info = find_error(e.code);
  return info && info->exit_code != 0 ? info->exit_code : 1;
}

}  // namespace mpo
