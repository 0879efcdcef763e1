// libFuzzer target for name escapes (planner/base/name_escape.h), built with -DCLAIRFS_FUZZ=ON and
// run by .ci/fuzz. The input is a name of any bytes, and also text someone typed. Properties:
//   - EscapeName gives valid UTF-8 with no control character (so one line of JSON or a list file)
//     that UnescapeName takes back to the very bytes;
//   - escaping is idempotent in form: an escaped name is left as is by SanitizeText;
//   - any text UnescapeName accepts escapes back to a text that unescapes to the same bytes, and
//     text without a backslash unescapes to itself;
//   - an error names a position and is itself one line of valid UTF-8;
//   - SanitizeText gives one line of valid UTF-8, and leaves valid UTF-8 without controls as is.
#include <cstdint>
#include <string>
#include <string_view>

#include "planner/base/name_escape.h"

namespace {

using clairfs::EscapeName;
using clairfs::IsValidUtf8;
using clairfs::SanitizeText;
using clairfs::UnescapeName;

// True if `text` holds a byte below 0x20 or 0x7f (what would break a line).
bool HasAsciiControl(std::string_view text) {
  for (char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7f) return true;
  }
  return false;
}

bool OneLineOfText(std::string_view text) { return IsValidUtf8(text) && !HasAsciiControl(text); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // The input as a raw name.
  const std::string escaped = EscapeName(input);
  if (!OneLineOfText(escaped)) __builtin_trap();
  clairfs::Result<std::string> back = UnescapeName(escaped);
  if (!back.ok() || *back != input) __builtin_trap();
  if (SanitizeText(escaped) != escaped) __builtin_trap();
  if (input.find('\\') == std::string_view::npos && OneLineOfText(input)) {
    // Printable UTF-8 without C1 controls stands for itself.
    bool has_c1 = false;
    for (size_t i = 0; i + 1 < input.size(); ++i) {
      has_c1 = has_c1 || (static_cast<unsigned char>(input[i]) == 0xc2 &&
                          static_cast<unsigned char>(input[i + 1]) <= 0x9f);
    }
    if (!has_c1 && escaped != input) __builtin_trap();
  }

  // The input as typed text.
  clairfs::Result<std::string> typed = UnescapeName(input);
  if (typed.ok()) {
    clairfs::Result<std::string> again = UnescapeName(EscapeName(*typed));
    if (!again.ok() || *again != *typed) __builtin_trap();
    if (input.find('\\') == std::string_view::npos && *typed != input) __builtin_trap();
  } else {
    if (input.find('\\') == std::string_view::npos) __builtin_trap();
    const std::string& message = typed.status().message();
    if (typed.status().code() != EINVAL || !OneLineOfText(message) ||
        message.find("bad escape at byte ") != 0) {
      __builtin_trap();
    }
  }

  const std::string sanitized = SanitizeText(input);
  if (!OneLineOfText(sanitized)) __builtin_trap();
  if (OneLineOfText(input) && sanitized != input) __builtin_trap();
  return 0;
}
