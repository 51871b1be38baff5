// JSON string literals (RFC 8259 section 7), written straight into an output buffer: the one
// escaper of the library, used on the hot path of the bulk writer and by the source converters.
// Beside it, the library's UTF-8: the check of a text and the encoding of a code point.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rfs::core {

/// Appends `value` as a JSON string literal, quotes included: '"', '\\' and the control
/// characters escaped, every other byte copied as it is (so UTF-8 passes through unchanged).
void AppendJsonString(std::string_view value, std::string& out);

/// Reads the JSON string literal that starts at text[pos] (its opening quote) into `out`, the
/// inverse of AppendJsonString: escapes decoded (\uXXXX as UTF-8, a surrogate pair as one code
/// point), every other byte copied as it is, whether or not it is valid UTF-8. Leaves `pos` past
/// the closing quote. False, with `pos` unchanged, when no whole literal starts there.
bool ReadJsonString(std::string_view text, size_t& pos, std::string& out);

/// True when `value` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
/// above U+10FFFF).
bool IsValidUtf8(std::string_view value);

/// AppendJsonString for text that must be UTF-8: false, with `out` unchanged, when it is not.
bool AppendJsonStringIfUtf8(std::string_view value, std::string& out);

/// Appends the UTF-8 encoding of `code_point` (at most 0x10FFFF) to `out`: one to four bytes,
/// a surrogate encoded as any other code point.
void AppendUtf8(uint32_t code_point, std::string& out);

/// Appends the JSON text `json` to `out` on one line: each raw CR or LF becomes a space. In valid
/// JSON a raw CR or LF can only be whitespace between tokens (inside strings they must be escaped
/// as \r and \n), so the document is unchanged and needs no parse. Copies and scans in one pass.
void AppendJsonOneLine(std::string_view json, std::string& out);

/// AppendJsonOneLine in place: each raw CR or LF of `json` becomes a space.
void MakeJsonOneLine(std::string& json);

/// The position of the first raw CR or LF in `text`, or text.size() when there is none.
size_t FindLineBreak(std::string_view text);

}  // namespace rfs::core
