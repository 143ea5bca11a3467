#pragma once

#include <cstddef>
#include <string>
#include <string_view>

// JSON string escaping (RFC 8259) for arbitrary bytes: kernel names are C++ signatures
// that may hold quotes, backslashes, control characters, and (from a buggy binary or a
// truncated copy) bytes that are not UTF-8.
//
//   std::string out;
//   appendJsonString(out, "say \"hi\"\n");   // out == R"("say \"hi\"\n")"
//
// Invalid UTF-8 becomes U+FFFD, one per maximal invalid subpart (the Unicode "best
// practice" that browsers use), so a valid multi-byte character is never split and the
// output is always valid UTF-8.

namespace kinetrace::detail {

// The most bytes one input byte becomes: a control character as "\u00XX".
inline constexpr std::size_t kJsonEscapeMaxExpansion = 6;

// Writes the escaped body of `text` (no surrounding quotes) at `out`, which must have room
// for kJsonEscapeMaxExpansion * text.size() bytes. Returns the end of what was written.
char* writeJsonEscaped(char* out, std::string_view text) noexcept;

// The largest n <= maxBytes such that escaping text[0, n) and text[n, end) separately
// gives the same output as escaping all of text: a long string can be escaped in chunks
// through a bounded buffer. Requires maxBytes >= 4 (the longest UTF-8 sequence); the
// result is then > 0 for a non-empty text.
std::size_t jsonEscapeSplitPoint(std::string_view text, std::size_t maxBytes) noexcept;

// Appends `text` as a quoted JSON string literal.
void appendJsonString(std::string& out, std::string_view text);

}  // namespace kinetrace::detail
