// SMILE ("binary JSON", Jackson's smile-format-specification) decoded into a
// boost::json::value.
//
// Elasticsearch and OpenSearch write every snapshot metadata blob body as SMILE
// (docs/formats.md A.3, B). DecodeSmile is a complete, bounds-checked decoder of
// one SMILE document: the 4-byte header (3A 29 0A + flags: shared names,
// shared values, raw binary, version), every value and key token, both
// back-reference tables with the 1024-entry reset rule (B.5), and an optional
// 0xFF end marker.
//
// How SMILE-only types become JSON (what Jackson's JSON generator would print,
// so the result matches ES's own SMILE-to-JSON conversion where JSON can
// express it):
//   * binary (raw 0xFD and 7-bit 0xE8) -> a base64 string, standard alphabet,
//     padded (Jackson's default Base64Variant);
//   * float32 -> the double nearest to the float's shortest decimal form, so
//     0.1f reads back as 0.1 rather than 0.10000000149011612;
//   * non-finite floats -> the strings "NaN", "Infinity", "-Infinity" (Jackson
//     quotes non-numeric numbers by default);
//   * BigInteger -> int64 or uint64 when it fits, else its decimal string;
//   * BigDecimal -> a double when finite in double range, else its decimal
//     string in Java BigDecimal.toString() form;
//   * duplicate keys in one object -> the last one wins.
//
// Untrusted input never reads out of bounds, never allocates more than a small
// multiple of its own size, and never recurses: nesting is bounded by
// kMaxSmileDepth. Every error is absl::DataLoss naming `source` and the
// absolute offset (base_offset + position) of the offending byte; a SMILE
// format version other than 0 is Unimplemented. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include <boost/json/value.hpp>

#include "absl/status/statusor.h"

namespace rfs::content {

/// Deepest nesting of arrays and objects DecodeSmile accepts.
inline constexpr int kMaxSmileDepth = 512;

/// True when `bytes` starts with the SMILE header signature 3A 29 0A (":)\n").
bool LooksLikeSmile(std::span<const uint8_t> bytes);

/// Decodes one SMILE document (header required) into JSON. Trailing bytes
/// after the root value are allowed only when they are 0xFF end markers.
/// `source` names the blob in errors; `base_offset` is the offset of bytes[0]
/// within it (e.g. the length of a codec header before the body).
absl::StatusOr<boost::json::value> DecodeSmile(std::span<const uint8_t> bytes,
                                               std::string_view source, uint64_t base_offset = 0);

}  // namespace rfs::content
