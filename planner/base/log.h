// Logging to stderr (journald collects it when run under systemd).
//
// One global level, set once at start from --log-level; messages below it cost one atomic load.
// Each line is written with a single write(2), so lines from concurrent threads do not interleave.
// Control characters and bytes that are not UTF-8 in a message are written as \xHH
// (SanitizeText), so a name quoted in a message cannot split or forge a line.
// LogOnce() logs a given key only the first time (for events that may repeat at high rates, such
// as cache-device errors on every staging attempt).
#pragma once

#include <string_view>

namespace clairfs {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// Parses "error", "warn", "info" or "debug"; false if the name is unknown.
bool ParseLogLevel(std::string_view name, LogLevel* level);
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
bool LogEnabled(LogLevel level);

// Prefix for every line, e.g. "clairfs[1234]" (default "clairfs").
void SetLogTag(std::string_view tag);

void Log(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));
// Logs only the first call for each distinct `key` in this process.
void LogOnce(std::string_view key, LogLevel level, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

}  // namespace clairfs

#define CLAIRFS_LOG_ERROR(...) ::clairfs::Log(::clairfs::LogLevel::kError, __VA_ARGS__)
#define CLAIRFS_LOG_WARN(...) ::clairfs::Log(::clairfs::LogLevel::kWarn, __VA_ARGS__)
#define CLAIRFS_LOG_INFO(...) ::clairfs::Log(::clairfs::LogLevel::kInfo, __VA_ARGS__)
#define CLAIRFS_LOG_DEBUG(...)                                  \
  do {                                                          \
    if (::clairfs::LogEnabled(::clairfs::LogLevel::kDebug))     \
      ::clairfs::Log(::clairfs::LogLevel::kDebug, __VA_ARGS__); \
  } while (0)
