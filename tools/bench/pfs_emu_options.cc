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

namespace {

// Splits "[read:|open:]GLOB:VALUE" into the operation, the glob and the value's text; false when
// there is no glob or no ':'.
bool SplitRule(std::string_view text, PfsFailRule::Op* op, std::string* glob,
               std::string_view* value) {
  std::string_view rest = text;
  *op = PfsFailRule::Op::kOpen;
  if (rest.rfind("read:", 0) == 0) {
    *op = PfsFailRule::Op::kRead;
    rest.remove_prefix(5);
  } else if (rest.rfind("open:", 0) == 0) {
    rest.remove_prefix(5);
  }
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  *glob = std::string(rest.substr(0, colon));
  *value = rest.substr(colon + 1);
  return true;
}

}  // namespace

Result<PfsFailRule> ParseFailRule(std::string_view text) {
  PfsFailRule rule;
  std::string_view value;
  if (!SplitRule(text, &rule.op, &rule.glob, &value)) {
    return Status::Invalid("invalid --fail '" + std::string(text) +
                           "' (expected GLOB:ERRNO or read:GLOB:ERRNO, e.g. 'class_0001/*:EIO')");
  }
  auto error = ParseErrno(value);
  if (!error.ok()) return error.status().WithContext("invalid --fail '" + std::string(text) + "'");
  rule.error = *error;
  return rule;
}

Result<PfsSlowRule> ParseSlowRule(std::string_view text) {
  PfsSlowRule rule;
  std::string_view value;
  if (!SplitRule(text, &rule.op, &rule.glob, &value)) {
    return Status::Invalid("invalid --slow '" + std::string(text) +
                           "' (expected GLOB:MS or read:GLOB:MS, e.g. 'class_0001/*:20000')");
  }
  auto delay = ParseLatencyMs(value);
  if (!delay.ok()) return delay.status().WithContext("invalid --slow '" + std::string(text) + "'");
  rule.delay_ns = *delay;
  return rule;
}

uint64_t MatchSlowRule(const std::vector<PfsSlowRule>& rules, PfsFailRule::Op op,
                       std::string_view relpath) {
  if (rules.empty()) return 0;
  std::string path(relpath);
  for (const auto& rule : rules) {
    if (rule.op == op && fnmatch(rule.glob.c_str(), path.c_str(), 0) == 0) return rule.delay_ns;
  }
  return 0;
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
