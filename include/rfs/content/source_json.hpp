// A document's `_source` rendered as JSON whatever content type it was indexed
// with (docs/formats.md D.5): Elasticsearch keeps the bytes the client sent, which
// may be JSON, SMILE, CBOR or YAML.
//
//  * JSON is appended as it is;
//  * SMILE goes through rfs::content::DecodeSmile (smile.hpp);
//  * CBOR (RFC 8949) is converted here: the subset Jackson's CBORGenerator
//    writes and its parser accepts — maps, arrays, text and byte strings of
//    definite and indefinite length, integers (the full 64-bit range of both
//    signs), half/single/double floats, true/false/null/undefined and the
//    self-describe tag 55799. Byte strings become standard padded base64 (as
//    Jackson renders binary values), NaN and infinities the quoted strings
//    "NaN"/"Infinity"/"-Infinity" (Jackson's QUOTE_NON_NUMERIC_NUMBERS), and
//    integer map keys their decimal text;
//  * YAML goes through libyaml's event parser and is read the way
//    Elasticsearch reads it, with Jackson's YAMLParser over SnakeYAML's YAML
//    1.1 resolver: mappings become objects, sequences arrays, and keys their
//    scalar text whatever it looks like ("1", "null", "0x10"). Quoted and
//    block scalars are strings; a plain scalar is null (empty, ~, null, Null,
//    NULL), a boolean (true/yes/on/false/no/off in lower, Capitalised or UPPER
//    case), an integer (decimal, 0x hex, 0b binary, 0-prefixed octal, with
//    '_' separators, printed in decimal at any size), a float (1.5, .5, 1e3,
//    with '_'), or else a string (timestamps, sexagesimal 1:30, "08").
//    Explicit tags !!str/!!int/!!float/!!bool/!!null/!!binary act as Jackson's
//    do; !!binary becomes standard padded base64. Jackson does not expand
//    aliases: an alias is the string of its anchor's name, and so it is here
//    (Elasticsearch indexed that string, and the migrated mappings expect
//    it; it also rules out "billion laughs" expansion). Inputs Jackson fails
//    on fail here too (as DataLoss, not a made-up string): .inf/.nan and
//    sexagesimal floats (Java's parseDouble cannot read them, so
//    Elasticsearch never indexed them as numbers), non-scalar or alias keys,
//    and a second document (Elasticsearch rejects data after the root
//    value). Numbers beyond double range are the strings
//    "Infinity"/"-Infinity", as Jackson writes them and as for CBOR.
//
// Every malformed input is DataLoss naming the source and the byte offset
// (YAML errors add libyaml's line and column); nothing reads out of bounds,
// nesting deeper than kMaxCborDepth / kMaxYamlDepth and YAML longer than
// kMaxYamlBytes are rejected, so the functions are safe on untrusted bytes.
// Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace rfs::content {

/// The content type of a `_source`, detected from its first bytes (D.5).
enum class SourceFormat : uint8_t { kNone, kJson, kSmile, kCbor, kYaml };

/// Deepest nesting of CBOR arrays and maps accepted.
inline constexpr int kMaxCborDepth = 512;
/// Deepest nesting of YAML sequences and mappings accepted.
inline constexpr int kMaxYamlDepth = 512;
/// Longest YAML `_source` converted: Elasticsearch's default
/// http.max_content_length, so no source it accepted over REST is refused.
inline constexpr size_t kMaxYamlBytes = size_t{100} << 20;
/// Longest number literal converted (digits, signs and '_'), as Jackson's
/// StreamReadConstraints default maxNumberLength: it bounds the work of
/// printing a hex, octal or binary integer in decimal.
inline constexpr size_t kMaxYamlNumberLength = 1000;

/// Appends one CBOR data item (`cbor` must hold exactly one, possibly after
/// tag 55799) to `out` as JSON. `source` names the bytes in errors (e.g.
/// "_source of doc 1"). On error `out` is left as it was.
absl::Status AppendCborAsJson(std::span<const uint8_t> cbor, std::string_view source,
                              std::string& out);

/// Appends the single YAML document in `yaml` to `out` as JSON. `source` names
/// the bytes in errors. On error `out` is left as it was.
absl::Status AppendYamlAsJson(std::span<const uint8_t> yaml, std::string_view source,
                              std::string& out);

/// Appends `source` (a `_source` of content type `format`) to `out` as JSON.
/// `what` names the document in errors. InvalidArgument for kNone. On error `out` is left as it
/// was.
absl::Status AppendSourceAsJson(std::span<const uint8_t> source, SourceFormat format,
                                std::string& out, std::string_view what = "_source");

}  // namespace rfs::content
