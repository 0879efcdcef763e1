// PfsEmuOptions parsers (see pfs_emu_options.h).
#include "tools/bench/pfs_emu_options.h"

#include <fnmatch.h>

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace clairfs {
namespace {

struct ErrnoEntry {
  const char* name;
  int value;
};

// The errnos a storage client plausibly returns; numbers work for the rest.
constexpr ErrnoEntry kErrnos[] = {
    {"EPERM", EPERM},
    {"ENOENT", ENOENT},
    {"EIO", EIO},
    {"ENXIO", ENXIO},
    {"EBADF", EBADF},
    {"EAGAIN", EAGAIN},
    {"ENOMEM", ENOMEM},
    {"EACCES", EACCES},
    {"EBUSY", EBUSY},
    {"EEXIST", EEXIST},
    {"ENOTDIR", ENOTDIR},
    {"EISDIR", EISDIR},
    {"EINVAL", EINVAL},
    {"ENFILE", ENFILE},
    {"EMFILE", EMFILE},
    {"EFBIG", EFBIG},
    {"ENOSPC", ENOSPC},
    {"EROFS", EROFS},
    {"ENAMETOOLONG", ENAMETOOLONG},
    {"ENOSYS", ENOSYS},
    {"ELOOP", ELOOP},
    {"ENODATA", ENODATA},
    {"ETIMEDOUT", ETIMEDOUT},
    {"ESTALE", ESTALE},
    {"EREMOTEIO", EREMOTEIO},
    {"ENOTCONN", ENOTCONN},
    {"ECONNRESET", ECONNRESET},
    {"EHOSTDOWN", EHOSTDOWN},
    {"EINTR", EINTR},
    {"EOVERFLOW", EOVERFLOW},
    {"EDQUOT", EDQUOT},
    {"ECANCELED", ECANCELED},
};

}  // namespace

Result<uint64_t> ParseLatencyMs(std::string_view text) {
  std::string s(text);
  char* end = nullptr;
  errno = 0;
  double ms = std::strtod(s.c_str(), &end);
  if (s.empty() || end == s.c_str() || *end != '\0' || errno != 0 || !(ms >= 0) ||
      ms > 3600.0 * 1000) {
    return Status::Invalid("invalid latency '" + s + "' (expected milliseconds, e.g. 2 or 0.5)");
  }
  return static_cast<uint64_t>(std::llround(ms * 1e6));
}

Result<int> ParseErrno(std::string_view text) {
  std::string s(text);
  if (!s.empty() && std::isdigit(static_cast<unsigned char>(s[0]))) {
    char* end = nullptr;
    long v = std::strtol(s.c_str(), &end, 10);
    if (*end == '\0' && v > 0 && v < 4096) return static_cast<int>(v);
  } else {
    std::string upper;
    for (char c : s) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (const auto& e : kErrnos) {
      if (upper == e.name) return e.value;
    }
  }
  return Status::Invalid("invalid errno '" + s +
                         "' (expected a name such as EIO or ENOENT, or a "
                         "positive number)");
}

std::string ErrnoName(int error) {
  for (const auto& e : kErrnos) {
    if (e.value == error) return e.name;
  }
  return std::to_string(error);
}

Result<PfsFailRule> ParseFailRule(std::string_view text) {
  PfsFailRule rule;
  std::string_view rest = text;
  if (rest.rfind("read:", 0) == 0) {
    rule.op = PfsFailRule::Op::kRead;
    rest.remove_prefix(5);
  } else if (rest.rfind("open:", 0) == 0) {
    rest.remove_prefix(5);
  }
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status::Invalid("invalid --fail '" + std::string(text) +
                           "' (expected GLOB:ERRNO or read:GLOB:ERRNO, e.g. 'class_0001/*:EIO')");
  }
  auto error = ParseErrno(rest.substr(colon + 1));
  if (!error.ok()) return error.status().WithContext("invalid --fail '" + std::string(text) + "'");
  rule.glob = std::string(rest.substr(0, colon));
  rule.error = *error;
  return rule;
}

int MatchFailRule(const std::vector<PfsFailRule>& rules, PfsFailRule::Op op,
                  std::string_view relpath) {
  if (rules.empty()) return 0;
  std::string path(relpath);
  for (const auto& rule : rules) {
    if (rule.op == op && fnmatch(rule.glob.c_str(), path.c_str(), 0) == 0) return rule.error;
  }
  return 0;
}

}  // namespace clairfs
