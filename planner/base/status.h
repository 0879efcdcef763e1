// Status and Result: errors as values, carrying an errno and a message.
//
// Every function in clairfs that can fail returns a Status (no value) or a Result<T> (a value or
// a Status). No exceptions cross a library boundary or leave a FUSE callback. errno values are
// turned into messages in exactly one place (Status::FromErrno). A cache miss is not an error:
// lookups that can miss return std::optional or a Result holding an optional.
//
// Thread-safety: values; copy freely.
#pragma once

#include <cerrno>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace clairfs {

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK

  static Status Ok() { return Status(); }
  // An error with errno `code` (must be > 0) and a message that names what failed.
  static Status Error(int code, std::string message) { return Status(code, std::move(message)); }
  // "<context>: <strerror(code)>".
  static Status FromErrno(int code, std::string_view context);
  // Shorthand for a usage/input error (EINVAL).
  static Status Invalid(std::string message) { return Status(EINVAL, std::move(message)); }

  bool ok() const { return code_ == 0; }
  int code() const { return code_; }
  const std::string& message() const { return message_; }
  // The message, or "ok".
  std::string ToString() const { return ok() ? "ok" : message_; }
  // A copy whose message is prefixed with "<context>: ".
  Status WithContext(std::string_view context) const;

 private:
  Status(int code, std::string message) : code_(code), message_(std::move(message)) {}
  int code_ = 0;
  std::string message_;
};

// A value of type T or an error Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Status::Error(EINVAL, "internal: Result built from OK status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace clairfs

// Return early from the enclosing function if `expr` (a Status) is an error.
#define CLAIRFS_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::clairfs::Status clairfs_status_ = (expr);        \
    if (!clairfs_status_.ok()) return clairfs_status_; \
  } while (0)
