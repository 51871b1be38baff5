// What the document migration checks of a data stream's documents before it sends them.
#pragma once

#include <string_view>

namespace rfs::migration::internal {

/// Whether `source` (JSON) holds the data stream's timestamp field `path` with one value, not
/// null: written as nested objects ({"event":{"created":..}}), as a dotted key
/// ({"event.created":..}) or a mix, as the engines map all of them to one field. A one-element
/// array counts as one value; a source that is not JSON has none.
bool HasTimestampField(std::string_view source, std::string_view path);

}  // namespace rfs::migration::internal
