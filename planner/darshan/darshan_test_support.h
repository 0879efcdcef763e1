// Test-only helpers for the Darshan tests: the shared logs, and which lines of darshan-parser
// text are compared.
//
// Comparable lines of a darshan-parser text (ours or the reference .parser.txt):
//  - the job summary and region table: every non-empty line from the top up to the first
//    module section, except "# mount entry" lines (the reference files omit them);
//  - the "# POSIX module data" and "# STDIO module data" section titles;
//  - every POSIX and STDIO record line (not starting with '#', first column POSIX or STDIO).
// Everything else (darshan-parser's description blocks, other modules' sections) is ignored.
// RecordLines keeps only the record lines.
#pragma once

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace clairfs::darshan::testing {

inline std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline bool IsRecordLine(const std::string& line) {
  return line.rfind("POSIX\t", 0) == 0 || line.rfind("STDIO\t", 0) == 0;
}

inline std::vector<std::string> ComparableLines(const std::string& text) {
  std::vector<std::string> out;
  bool in_summary = true;
  for (const std::string& line : SplitLines(text)) {
    if (line.empty()) continue;
    if (in_summary) {
      if (line.rfind("# description of columns", 0) == 0 || line.rfind("# ****", 0) == 0 ||
          line.rfind("# no module data", 0) == 0) {
        in_summary = false;
      } else {
        if (line.rfind("# mount entry", 0) != 0) out.push_back(line);
        continue;
      }
    }
    if (line == "# POSIX module data" || line == "# STDIO module data" || IsRecordLine(line)) {
      out.push_back(line);
    }
  }
  return out;
}

inline std::vector<std::string> RecordLines(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& line : SplitLines(text)) {
    if (IsRecordLine(line)) out.push_back(line);
  }
  return out;
}

inline std::string DataDir() { return clairfs::testing::SharedDir() + "/data/darshan"; }

// Base names (without .darshan) of every shared log, sorted.
inline std::vector<std::string> SharedLogNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(DataDir(), ec)) {
    if (entry.path().extension() == ".darshan") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

inline std::string LogPath(const std::string& name) { return DataDir() + "/" + name + ".darshan"; }
inline std::string ParserTextPath(const std::string& name) {
  return DataDir() + "/" + name + ".parser.txt";
}

}  // namespace clairfs::darshan::testing
