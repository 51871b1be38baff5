// Values as the engines print them in a rebuilt source (JSON texts), from the forms Lucene keeps
// them in: sortable numbers of doc values and points, stored values, vectors, InetAddressPoint
// bytes and `_ignored_source` entries. JavaDoubleString, JavaFloatString and FormatDate are
// public (rfs/lucene/source_rebuild.hpp).
//
// Internal to rfs::lucene. Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/core/byte_reader.hpp"
#include "rfs/lucene/source_rebuild.hpp"

#include "absl/status/status.h"

namespace rfs::lucene::internal {

struct StoredValue;

/// `text` as a JSON string literal.
std::string JsonString(std::string_view text);

/// Lucene's InetAddressPoint bytes (16) as InetAddresses.toAddrString prints them; "" for
/// another length.
std::string IpString(std::string_view bytes);

/// A value `field` keeps as a number (in doc values, or stored as a long).
std::string PrintNumber(const RebuildField& field, int64_t v);

/// A JSON array of a vector's elements (floats as Java's Float.toString, bytes as integers).
std::string PrintVector(const RebuildField& field, const std::vector<float>& values);

/// Appends stored `value` of `field` to `out` (nothing for kinds never read from stored fields,
/// or numbers stored as text).
void PrintStoredValue(const RebuildField& field, const StoredValue& value,
                      std::vector<std::string>& out);

/// The value of an `_ignored_source` entry (`entry`, read by `in` up to its type byte) of field
/// `name` as JSON text; "" when the entry holds nothing to print.
absl::Status PrintIgnoredSourceValue(core::ByteReader& in, std::span<const uint8_t> entry,
                                     std::string_view name, std::string& json);

}  // namespace rfs::lucene::internal
