// Logging: level filter, one write(2) per line, LogOnce keys.
#include "planner/base/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "planner/base/name_escape.h"

namespace clairfs {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_tag_mutex;  // guards g_tag
std::string g_tag = "clairfs";
std::mutex g_once_mutex;  // guards g_once_keys
std::set<std::string, std::less<>> g_once_keys;

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
  }
  return "?";
}

void WriteLine(LogLevel level, const char* format, va_list args) {
  char raw[2048];
  vsnprintf(raw, sizeof(raw), format, args);
  // Messages quote names from the backing tree: a newline or a terminal escape in one must not
  // forge a line of the log or reach the terminal.
  const std::string body = SanitizeText(raw);
  std::string tag;
  {
    std::lock_guard<std::mutex> lock(g_tag_mutex);
    tag = g_tag;
  }
  char line[2200];
  int n = snprintf(line, sizeof(line), "%s: %s: %s\n", tag.c_str(), LevelName(level), body.c_str());
  if (n < 0) return;
  size_t len = static_cast<size_t>(n) < sizeof(line) ? static_cast<size_t>(n) : sizeof(line) - 1;
  if (len > 0 && line[len - 1] != '\n') line[len - 1] = '\n';
  ssize_t ignored = write(STDERR_FILENO, line, len);
  (void)ignored;
}

}  // namespace

bool ParseLogLevel(std::string_view name, LogLevel* level) {
  if (name == "error")
    *level = LogLevel::kError;
  else if (name == "warn" || name == "warning")
    *level = LogLevel::kWarn;
  else if (name == "info")
    *level = LogLevel::kInfo;
  else if (name == "debug")
    *level = LogLevel::kDebug;
  else
    return false;
  return true;
}

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }
bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed);
}

void SetLogTag(std::string_view tag) {
  std::lock_guard<std::mutex> lock(g_tag_mutex);
  g_tag = std::string(tag);
}

void Log(LogLevel level, const char* format, ...) {
  if (!LogEnabled(level)) return;
  va_list args;
  va_start(args, format);
  WriteLine(level, format, args);
  va_end(args);
}

void LogOnce(std::string_view key, LogLevel level, const char* format, ...) {
  {
    std::lock_guard<std::mutex> lock(g_once_mutex);
    if (!g_once_keys.emplace(key).second) return;
  }
  if (!LogEnabled(level)) return;
  va_list args;
  va_start(args, format);
  WriteLine(level, format, args);
  va_end(args);
}

}  // namespace clairfs
