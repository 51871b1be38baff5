// The per-cursor side of source rebuilding (source_rebuild.hpp): renders one document of a
// segment from its doc values and stored fields through a plan (plan.cpp makes plans,
// rebuilder.cpp renders, value_printing.cpp prints each value). Internal to rfs::lucene; not
// thread-safe (one per cursor).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "rfs/lucene/source_rebuild.hpp"

#include "absl/status/status.h"

namespace rfs::lucene::internal {

/// An index setting as text, from flat ("index.mapping.source.mode") or nested settings; "" when
/// absent.
std::string IndexSetting(const boost::json::object& settings, std::string_view flat);

class SegmentDocValues;
class FieldDocValues;
class SegmentVectors;
class SegmentPoints;
class SegmentTerms;

/// A stored field of the document other than the metadata ones, copied out of its chunk.
struct StoredValue {
  size_t field = 0;  ///< index in the plan's fields
  std::string text;  ///< strings and bytes
  int64_t long_value = 0;
  double double_value = 0;
  bool is_number = false;
  /// A value of the field's `original_values_field` (over `ignore_above`), not of the field.
  bool original = false;
  /// An `_ignored_source` entry (`field` unused): a field's name and its whole value.
  bool ignored_source = false;
};

class SourceRebuilder {
 public:
  explicit SourceRebuilder(std::shared_ptr<const SourceRebuildPlan> plan);

  const SourceRebuildPlan& plan() const { return *plan_; }
  /// Reads the documents of a new segment from `doc_values`, `vectors`, `points` and `terms`
  /// (which must outlive the calls of Rebuild until the next StartSegment).
  void StartSegment(SegmentDocValues& doc_values, SegmentVectors& vectors,
                    SegmentPoints* points = nullptr, SegmentTerms* terms = nullptr);
  /// The JSON source of `doc` of the current segment (its fields in name order; "{}" when none
  /// has a value). `children`: the live nested documents of its block, ascending (they come
  /// just before it in the segment).
  absl::Status Rebuild(int32_t doc, const std::vector<StoredValue>& stored, std::string& out,
                       std::span<const int32_t> children = {});
  bool has_nested() const {
    return !plan_->nested_paths.empty() || !plan_->child_path_field.empty();
  }
  /// Plans with a child_path_field (Solr): whether `doc` of the current segment is a nested
  /// child, i.e. has a nest path.
  absl::StatusOr<bool> IsChild(int32_t doc);
  /// How a Solr plan's rebuild reads the stored fields of a child document (the reader's
  /// chunks): the values of the plan's stored fields, as for the document itself.
  using StoredReader = std::function<absl::Status(int32_t doc, std::vector<StoredValue>& out)>;
  void set_stored_reader(StoredReader reader) { stored_reader_ = std::move(reader); }
  /// Whether the last Rebuild gave a field a value the plan says may differ from the one
  /// indexed (RebuildField::exactness), in the document or one of its nested objects.
  bool last_inexact() const { return last_inexact_; }

 private:
  struct Node {
    std::map<std::string, size_t> children;
    int field = -1;
    int nested = -1;  // index in the plan's nested paths
  };
  size_t NodeFor(const std::string& path);
  // Renders nested child `doc` into pending_ of its path (none when no field has a value).
  absl::Status RebuildChild(int32_t doc);
  // Sets last_inexact_ when field `f`'s values (values_[f]) may differ from those indexed.
  void NoteExactness(size_t f);
  absl::Status FieldValues(size_t f, int32_t doc, const std::vector<StoredValue>& stored,
                           std::vector<std::string>& out);
  // A field's values from its doc values (numbers, terms, addresses, binary).
  absl::Status DocValues(size_t f, int32_t doc, std::vector<std::string>& out);
  // The doc-values reader of plan field `f` in the current segment (nullptr: none), looked up
  // once per segment.
  absl::StatusOr<FieldDocValues*> Reader(size_t f);
  bool Write(size_t node, std::string& out);
  // A vector field's value: from the segment's vector files, else its binary doc values.
  absl::Status VectorValue(size_t f, int32_t doc, std::vector<std::string>& out);
  // A field's values from the segment's points.
  absl::Status PointValues(size_t f, int32_t doc, std::vector<std::string>& out);
  // A keyword's (or a text's keyword sub-field's) doc values, then its values over ignore_above
  // that Elasticsearch's synthetic source keeps in stored fields, as that source prints them.
  absl::Status KeywordWithOriginalValues(size_t f, int32_t doc,
                                         const std::vector<StoredValue>& stored,
                                         std::vector<std::string>& out);
  // Replaces the values of each field an `_ignored_source` entry of `stored` names with the
  // entry's value.
  absl::Status ApplyIgnoredSource(const std::vector<StoredValue>& stored);
  // Puts field `f`'s values (sorted, from doc values) in the order of the document's arrays
  // when its `<field>.offsets` companion says it (repeats and nulls included).
  absl::Status ApplyArrayOffsets(size_t f, int32_t doc, std::vector<std::string>& values);
  // Solr's documents (plan id_field): fields written flat by their whole names, each child (a
  // document with a nest path) inside the next document of the path above it.
  absl::Status RebuildSolr(int32_t doc, const std::vector<StoredValue>& stored, std::string& out,
                           std::span<const int32_t> children);
  // One Solr document's own fields as a JSON object.
  absl::Status WriteSolrFields(int32_t doc, const std::vector<StoredValue>& stored,
                               std::string& out);
  // The nest path of `doc` ("" for none).
  absl::Status NestPath(int32_t doc, std::string& path);
  // A keyword's or boolean's values from the segment's terms and postings.
  absl::Status TermValues(size_t f, int32_t doc, std::vector<std::string>& out);

  std::shared_ptr<const SourceRebuildPlan> plan_;
  std::vector<Node> nodes_;
  std::vector<std::vector<std::string>> values_;   // JSON texts by field
  std::vector<int> field_scope_;                   // nested path index by field, -1: the root
  std::vector<size_t> nested_nodes_;               // node by nested path index
  std::vector<std::vector<std::string>> pending_;  // rendered objects by nested path index
  std::string child_text_;
  bool last_inexact_ = false;
  SegmentDocValues* doc_values_ = nullptr;
  SegmentVectors* vectors_ = nullptr;
  SegmentPoints* points_ = nullptr;
  SegmentTerms* terms_index_ = nullptr;
  std::vector<std::vector<uint8_t>> point_values_;
  std::vector<std::string> term_values_;
  std::vector<FieldDocValues*> readers_;  // by field, valid where resolved_
  std::vector<bool> resolved_;
  std::vector<FieldDocValues*> offsets_readers_;  // array_offsets_field's, as readers_
  std::vector<bool> offsets_resolved_;
  std::vector<std::string> terms_;
  std::vector<int64_t> numbers_;
  std::string binary_;
  std::vector<float> vector_;
  StoredReader stored_reader_;
  FieldDocValues* nest_paths_ = nullptr;  // child_path_field's doc values, when resolved
  bool nest_paths_resolved_ = false;
  std::vector<StoredValue> child_stored_;
};

}  // namespace rfs::lucene::internal
