// What source_json.cpp (CBOR, dispatch) and yaml_source.cpp (YAML) share:
// JSON text (strings through core::AppendJsonStringIfUtf8) written the way Jackson's JSON generator
// writes it, so a value reads the same whichever content type the document was indexed with.
#pragma once

#include <string>
#include <string_view>

namespace rfs::content::internal {

/// Appends `d` as the shortest JSON number that reads back as the same value
/// (as a float when `single`), with ".0" on integral values; NaN and the
/// infinities as the quoted strings "NaN"/"Infinity"/"-Infinity" (Jackson's
/// QUOTE_NON_NUMERIC_NUMBERS).
void AppendJsonDouble(double d, bool single, std::string& out);

}  // namespace rfs::content::internal
