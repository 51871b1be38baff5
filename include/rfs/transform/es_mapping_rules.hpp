// The translation table of Elasticsearch-only mapping features for OpenSearch targets: field
// types OpenSearch does not have (or has only since some version), parameters it does not know,
// mapping sections and index settings. CleanMapping (metadata_transform.hpp) applies it wherever
// a mapping appears -- index mappings, legacy, index and component templates, the `mapping` of
// each dynamic template -- and reports every change per field: translated, dropped or refused
// (a refused field fails its index or template with the reason and the way out; every other
// item still migrates).
//
// Each rule says what happens from an OpenSearch version on (`since`) and before it, so the same
// mapping lands as each target can hold it. docs/es-mapping-compatibility.md is rendered from this
// table (RenderCompatibilityTable); a unit test compares the two.
//
// Thread safety: the table is immutable; every function is pure, and a
// DocumentValueConversions may be applied from several threads at once.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "rfs/core/version.hpp"

#include "absl/status/statusor.h"

namespace rfs::transform {

/// The k-NN engine of the `knn_vector` fields translated from `dense_vector`.
/// lucene (default): the HNSW implementation Elasticsearch itself uses, without native libraries.
/// faiss: OpenSearch's own default engine.
enum class KnnEngine { kLucene, kFaiss };
/// "lucene" or "faiss" (case-insensitive); InvalidArgument otherwise.
absl::StatusOr<KnnEngine> ParseKnnEngine(std::string_view text);
std::string_view ToString(KnnEngine engine);

enum class RuleSubject { kType, kParameter, kMapping, kSetting };
enum class RuleAction { kKeep, kTranslate, kDrop, kRefuse };
std::string_view ToString(RuleAction action);

/// One row: what rfs does with an Elasticsearch mapping feature on an OpenSearch target.
struct MappingRule {
  RuleSubject subject;
  /// The type name, parameter name, mapping section or setting as the mapping spells it.
  std::string_view name;
  /// From this OpenSearch version on (0.0: every version): `action`, into `to`, as `how` says.
  int since_major;
  int since_minor;
  RuleAction action;
  std::string_view to;
  std::string_view how;
  /// Before `since`.
  RuleAction before_action;
  std::string_view before_to;
  std::string_view before_how;
  /// The test that proves the rule (a Catch test name).
  std::string_view test;
};

/// The whole table, in the order the doc lists it.
std::span<const MappingRule> EsMappingRules();
/// The rule for `name` of `subject`, or nullptr.
const MappingRule* FindRule(RuleSubject subject, std::string_view name);

/// What a rule does on one target.
struct RuleOutcome {
  RuleAction action;
  std::string_view to;
  std::string_view how;
};
/// The rule's action on `target` (an OpenSearch version).
RuleOutcome OutcomeFor(const MappingRule& rule, const core::ClusterVersion& target);

/// The markdown table of docs/es-mapping-compatibility.md, one row per rule, a column per
/// OpenSearch major.
std::string RenderCompatibilityTable();

/// Documents follow their mapping: the values of a source index's documents that its translated
/// mapping needs in another form (docs/es-mapping-compatibility.md, "Documents"):
///   - `dense_vector` of `element_type` byte or bit written as a hex string (Elasticsearch 8.14+
///     takes both forms) -> the array of signed bytes `knn_vector` takes (data_type byte or
///     binary); a string that is not hex is left as it is (the target then says why);
///   - `semantic_text` in Elasticsearch's legacy source form, `{"text": ..., "inference": ...}`
///     -> its text (the `text` field takes strings only).
/// Every other translated type takes the values as they are. A value is looked up by its full
/// path, through objects, arrays of objects and dotted keys.
class DocumentValueConversions {
 public:
  /// From a source index's mappings (type name -> mapping, or a typeless mapping).
  static DocumentValueConversions ForMappings(const boost::json::object& mappings);
  bool empty() const { return fields_.empty(); }
  /// Converts `source` (a document's `_source`) in place; true when a value changed.
  bool Apply(boost::json::object& source) const;

 private:
  enum class Kind { kHexVector, kSemanticText };
  struct Field {
    std::vector<std::string> path;
    Kind kind;
  };
  std::vector<Field> fields_;
};

}  // namespace rfs::transform
