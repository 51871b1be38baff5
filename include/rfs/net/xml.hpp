// Element text from simple XML responses (S3, STS, IMDS errors): flat, attribute-free elements
// read by name, entity-decoded, every read bounds-checked. Not a general XML parser.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rfs::net {

/// Decodes XML's five named entities and numeric character references into `out` (UTF-8).
/// False for anything else (an unknown entity, a code point past U+10FFFF).
bool XmlDecodeText(std::string_view in, std::string& out);

/// The decoded text of the first <name>...</name> in `xml`, or nullopt.
std::optional<std::string> XmlElementText(std::string_view xml, std::string_view name);

}  // namespace rfs::net
