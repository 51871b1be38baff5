// A document's `_source` rendered as JSON whatever content type it was indexed
// with (FORMATS.md D.5): Elasticsearch keeps the bytes the client sent, which
// may be JSON, SMILE, CBOR or YAML.
//
//  * JSON is appended as it is;
//  * SMILE goes through rfs::snapshot::DecodeSmile;
//  * CBOR (RFC 8949) is converted here: the subset Jackson's CBORGenerator
//    writes and its parser accepts — maps, arrays, text and byte strings of
//    definite and indefinite length, integers (the full 64-bit range of both
//    signs), half/single/double floats, true/false/null/undefined and the
//    self-describe tag 55799. Byte strings become standard padded base64 (as
//    Jackson renders binary values), NaN and infinities the quoted strings
//    "NaN"/"Infinity"/"-Infinity" (Jackson's QUOTE_NON_NUMERIC_NUMBERS), and
//    integer map keys their decimal text;
//  * YAML is Unimplemented.
//
// Every malformed input is DataLoss naming the source and the byte offset;
// nothing reads out of bounds and nesting deeper than kMaxCborDepth is
// rejected, so the functions are safe on untrusted bytes. Stateless;
// thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "rfs/lucene/shard_reader.hpp"

#include "absl/status/status.h"

namespace rfs::lucene {

/// Deepest nesting of CBOR arrays and maps accepted.
inline constexpr int kMaxCborDepth = 512;

/// Appends one CBOR data item (`cbor` must hold exactly one, possibly after
/// tag 55799) to `out` as JSON. `source` names the bytes in errors (e.g.
/// "_source of doc 1"). On error `out` is left as it was.
absl::Status AppendCborAsJson(std::span<const uint8_t> cbor, std::string_view source,
                              std::string& out);

/// Appends `source` (a `_source` of content type `format`) to `out` as JSON.
/// `what` names the document in errors. Unimplemented for YAML,
/// InvalidArgument for kNone. On error `out` is left as it was.
absl::Status AppendSourceAsJson(std::span<const uint8_t> source, SourceFormat format,
                                std::string& out, std::string_view what = "_source");

}  // namespace rfs::lucene
