// Result<T>: the return type of every fallible pure function (an expected-like type; C++20 has no
// std::expected). Pure code never throws; it returns an Error with a stable code and a message a
// user can act on.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace mpo {

struct Error {
  std::string code;     // stable, machine-readable: "json.parse", "rfc3339.range", ...
  std::string message;  // for a person: what is wrong and, where possible, what to do
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

inline Error make_error(std::string code, std::string message) { return Error{std::move(code), std::move(message)}; }

}  // namespace mpo
