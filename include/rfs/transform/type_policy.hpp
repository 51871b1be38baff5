// Where documents and mappings of Elasticsearch <= 6 indices with mapping types go on a typeless
// target (OpenSearch, Elasticsearch >= 7): the `--multi-type-behavior` option of the tools.
//
//   union (default): one target index per source index; the mappings of every type are merged
//     into one (a field mapped differently by two types fails that index, reported), and
//     documents keep their ids (ids that repeat across types overwrite each other, as the types'
//     documents now share one id space).
//   split: an index with several types becomes one target index per type, named
//     "<index>_<type>", each with that type's mapping; a single-type index keeps its name.
//
// Both MetadataMigration and DocumentsFromSnapshotMigration apply the same rule, so documents
// land in the indices the metadata created.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "absl/status/statusor.h"

namespace rfs::transform {

enum class MultiTypePolicy { kUnion, kSplit };

/// "union" or "split" (case-insensitive); InvalidArgument otherwise.
absl::StatusOr<MultiTypePolicy> ParseMultiTypePolicy(std::string_view text);
std::string_view ToString(MultiTypePolicy policy);

/// The number of mapping types in an index's mappings (type name -> mapping), not counting
/// `_default_`, which only seeds new types and holds no documents. Both tools pass this to
/// TargetIndexForType.
size_t CountMappingTypes(const boost::json::object& mappings);

/// The target index of a document of `type` in source index `index`, whose mappings hold
/// `type_count` types (0 or 1: always `index`).
std::string TargetIndexForType(std::string_view index, std::string_view type, size_t type_count,
                               MultiTypePolicy policy);

}  // namespace rfs::transform
