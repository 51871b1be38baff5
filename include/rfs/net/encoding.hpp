// Small text codecs shared by the reindex layer (and its test double): JSON parsing without
// exceptions and URL percent-encoding. Not installed. Thread-safe (pure functions).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>

namespace rfs::net {

/// Parses `text` as one JSON value nesting at most `max_depth` levels (Boost.JSON's default
/// 32, unless given); std::nullopt when it is not valid JSON.
std::optional<boost::json::value> ParseJson(std::string_view text, size_t max_depth = 32);

/// Whether `text` is one valid JSON value nesting at most `max_depth` levels, checked without
/// building it (a huge document is not held twice).
bool IsJson(std::string_view text, size_t max_depth = 1000);

/// Percent-encodes every byte except the RFC 3986 unreserved characters (A-Z a-z 0-9 - _ . ~)
/// and, when `keep_slash`, '/'. Upper-case hex, as SigV4 requires.
std::string PercentEncode(std::string_view text, bool keep_slash);

/// Decodes %XX escapes; malformed escapes are kept as they are. '+' stays '+'.
std::string PercentDecode(std::string_view text);

}  // namespace rfs::net
