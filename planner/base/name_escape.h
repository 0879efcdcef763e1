// Name escapes: how a file name of any bytes crosses text (the control protocol's JSON, the CLI's
// output, list files, arguments, log lines) and comes back unchanged.
//
// A name in the backing tree is any bytes but '/' and NUL; JSON and terminals take UTF-8 text, and
// a newline in a name would split one line of a list file into two. So every name that leaves as
// text is escaped, and every name that comes in as text is unescaped:
//   - EscapeName: printable UTF-8 passes as is; a backslash becomes "\\"; every other byte (ASCII
//     controls 0x00-0x1f and 0x7f, the bytes of C1 controls U+0080-U+009F, and every byte that is
//     not part of a well-formed UTF-8 sequence) becomes "\xHH" (two lowercase hex digits).
//     The result is valid UTF-8 with no control characters.
//   - UnescapeName: "\\" gives a backslash and "\xHH" (either case) the byte 0xHH; any other use
//     of a backslash is an error naming its position. Bytes that are not UTF-8 pass as they are, so
//     a raw name from a shell ($'\xff') is accepted too. UnescapeName(EscapeName(s)) == s for all
//     s.
// Scripts that want no escapes at all use the NUL-separated forms of the commands (-0), which
// carry raw bytes.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "planner/base/status.h"

namespace clairfs {

std::string EscapeName(std::string_view raw);
Result<std::string> UnescapeName(std::string_view text);

// Whether `text` is well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool IsValidUtf8(std::string_view text);

// Escapes only what breaks a line of text: ASCII controls (newline, tab, escape...) and 0x7f, and
// bytes that are not well-formed UTF-8, as "\xHH"; backslashes stay as they are. For messages
// (logs, error replies) that quote names: readable, valid UTF-8, one line; not reversible.
std::string SanitizeText(std::string_view text);

}  // namespace clairfs
