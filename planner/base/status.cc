// Status: the single place where errno values become text.
#include "planner/base/status.h"

#include <cstring>

namespace clairfs {

Status Status::FromErrno(int code, std::string_view context) {
  if (code <= 0) code = EIO;
  std::string message(context);
  message += ": ";
  message += std::strerror(code);
  return Status(code, std::move(message));
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string message(context);
  message += ": ";
  message += message_;
  return Status(code_, std::move(message));
}

}  // namespace clairfs
