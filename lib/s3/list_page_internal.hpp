// Just enough XML for S3's responses (ListObjectsV2 pages and error bodies): element text by
// name, entity-decoded, with every read bounds-checked. Not a general XML parser: S3 sends flat,
// attribute-free elements, and a body that does not look like that is DataLoss naming it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace rfs::s3::internal {

struct ListPage {
  std::vector<std::string> keys;      // Contents/Key
  std::vector<std::string> prefixes;  // CommonPrefixes/Prefix
  bool truncated = false;
  std::string next_token;
};

/// A ListObjectsV2 result; DataLoss naming `source` and the offset for malformed XML.
absl::StatusOr<ListPage> ParseListPage(std::string_view xml, std::string_view source);

}  // namespace rfs::s3::internal
