// How metadata_transform.cpp applies the rules of es_mapping_rules.hpp to one mapping.
#pragma once

#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "rfs/transform/metadata_transform.hpp"

namespace rfs::transform::internal {

/// What the rules changed in one mapping.
struct EsTranslation {
  /// One line per change: "field [p]: `dense_vector` translated to `knn_vector`: ...".
  std::vector<std::string> notes;
  /// One line per refused field; any refuses the index or template.
  std::vector<std::string> refusals;
  /// An indexed knn_vector was made: the index needs `index.knn: true`.
  bool knn = false;
};

/// One field mapping (a properties entry, a multi-field or a dynamic template's `mapping`) at
/// `path`, for an OpenSearch target, in place. Objects' `subobjects` and `dynamic` too; their
/// children are left to the caller's recursion.
void TranslateEsField(boost::json::object& field, const std::string& path,
                      const MetadataTransformOptions& options, EsTranslation& out);

/// The root of a typeless mapping: `runtime`, `dynamic: runtime`, `subobjects`, dynamic
/// templates that map to runtime fields.
void TranslateEsRoot(boost::json::object& mapping, const MetadataTransformOptions& options,
                     EsTranslation& out);

}  // namespace rfs::transform::internal
