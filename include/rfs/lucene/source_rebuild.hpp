// Rebuilding a document's `_source` from what Lucene kept when the snapshot holds none: `_source`
// disabled, Elasticsearch's synthetic source, OpenSearch's derived source (docs/sourceless.md).
//
// A SourceRebuildPlan is made once per index from its mapping: for each mapped leaf field, where
// its value lives (doc values, a stored field, a keyword sub-field) and how it prints. The shard
// reader then rebuilds each document without a source through the plan, field by field, the way
// the engines print their own synthetic/derived source: one value as a scalar, several as an
// array (in doc-values order: sorted; keyword, ip and wildcard without duplicates), numbers as
// Java prints them, dates in the mapping's first format, object paths as nested objects.
//
// A number, date or address with neither doc values nor a stored value comes from its points
// (ascending, duplicates kept), a keyword or boolean from its terms and postings (sorted, each
// once), as the Java tool's fallbacks do.
//
// Vectors come from the Lucene vector files (Lucene 9.0-9.8 HNSW formats, Lucene 9.9+ flat
// format) or, where the engine kept
// them as binary doc values (Elasticsearch 7 dense_vector, OpenSearch k-NN before 2.17), from
// those.
//
// Nested objects are rebuilt from the child documents Lucene keeps just before their parent: each
// child's values say which nested path it belongs to, and children attach to the next document
// of the path above them.
//
// What cannot be rebuilt (a field with neither doc values nor a stored value) is listed by the
// plan, and each rebuilt document that would have held such a field is only as
// exact as the plan says.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "rfs/core/java_number.hpp"

#include "absl/status/statusor.h"

namespace rfs::lucene {

/// How an index keeps `_source`, from its mapping and settings.
struct SourceStorage {
  enum class Mode { kStored, kDisabled, kSynthetic, kDerived };
  Mode mode = Mode::kStored;
  /// `_source.includes` / `_source.excludes` (fields left out of the stored source).
  std::vector<std::string> includes, excludes;
  /// Whether documents of this index may lack (part of) their `_source`.
  bool incomplete() const {
    return mode != Mode::kStored || !includes.empty() || !excludes.empty();
  }
  std::string Describe() const;
};

/// `mapping` is one type's mapping (`{"_source": ..., "properties": ...}`), `settings` the
/// index settings (flat or nested).
SourceStorage DescribeSourceStorage(const boost::json::object& mapping,
                                    const boost::json::object& settings);

enum class RebuildKind : uint8_t {
  kKeyword,  // keyword, wildcard, constant-like strings in SORTED_SET doc values
  kText,     // stored text, or its keyword sub-field
  kLong,     // byte, short, integer, long
  kUnsignedLong,
  kDouble,
  kFloat,
  kHalfFloat,
  kScaledFloat,
  kBoolean,
  kDate,
  kDateNanos,
  kIp,
  kBinary,
  kGeoPoint,
  kVector,  // dense_vector, knn_vector: from the Lucene vector files or binary doc values
};

/// When a rebuilt value may differ from the one indexed; what the plan's `inexact` says in words,
/// for counting the documents it concerns.
enum class RebuildExactness : uint8_t {
  kExact,
  kArraysReordered,  // several values come back sorted (keywords: without duplicates)
  kApproximate,      // any value may differ: normalized, rounded, quantized, from a sub-field
};

struct RebuildField {
  std::string path;  ///< dotted full name, as Lucene names the field
  RebuildKind kind = RebuildKind::kKeyword;
  std::string type;  ///< the mapping's type name
  bool doc_values = true;
  bool stored = false;
  /// Neither doc values nor a stored value, but indexed as points (numbers, dates, addresses):
  /// the values come from the segment's points, sorted.
  bool points = false;
  /// Neither doc values, a stored value nor points, but indexed (keyword, boolean): the values
  /// come from the segment's terms dictionary and postings, sorted and each once.
  bool terms = false;
  /// Lucene field to read instead (a text field's keyword sub-field).
  std::string value_field;
  /// Elasticsearch 8's synthetic source keeps a keyword's values over its `ignore_above` in
  /// the stored field `<keyword>._original`, printed after those of the doc values, in
  /// document order. Set for keywords (and text read from a keyword sub-field) with
  /// `ignore_above`; a segment without that field simply adds nothing.
  std::string original_values_field;
  /// Elasticsearch's synthetic source that keeps arrays as sent (logsdb indices from 8.19)
  /// writes each array's order, repeats and nulls to `<field>.offsets`: positions into the
  /// document's distinct values. Set where such a field may exist; absent in a segment, the
  /// values stay sorted.
  std::string array_offsets_field;
  /// The innermost `nested` object path above the field ("" for fields of the root document):
  /// its values live in the nested child documents Lucene keeps before their parent.
  std::string nested_path;
  double scaling_factor = 1;
  std::string date_format;  ///< the mapping's first format
  /// Vectors: dimension, whether elements are bytes (printed as integers), and the byte order of
  /// floats an Elasticsearch dense_vector keeps in binary doc values (little-endian from 8.9).
  int32_t dims = 0;
  bool byte_elements = false;
  bool little_endian_binary_vectors = false;
  /// A cosine dense_vector of Elasticsearch 8.x keeps its indexed vectors normalized to unit
  /// length and each original magnitude (when not 1) in the numeric doc values of
  /// `<field>._magnitude`, as the float's bits; synthetic source multiplies it back
  /// (Elasticsearch `NormalizedCosineFloatVectorValues`). Set for float cosine dense_vectors.
  std::string magnitude_field;
  RebuildExactness exactness = RebuildExactness::kExact;
  /// Printed as an array even with one value (Solr's multiValued fields).
  bool multi_valued = false;
  /// A float or double whose single-valued NUMERIC doc values hold its raw bits
  /// (Float.floatToIntBits, Double.doubleToLongBits: Solr's point fields) rather than the
  /// sortable form the engines and multi-valued fields use.
  bool raw_float_bits = false;
};

/// What the mapping alone does not say: defaults that depend on the engine and version that
/// created the index.
struct RebuildPlanOptions {
  /// Whether fields without a `doc_values` setting have them (false for indices created by
  /// Elasticsearch 1.x).
  bool doc_values_by_default = true;
  /// Whether dense_vector floats in binary doc values are little-endian (Elasticsearch 8.9+).
  bool little_endian_binary_vectors = false;
  /// Whether a `date_nanos` field without a format prints nanoseconds
  /// (`strict_date_optional_time_nanos`, Elasticsearch's default since 7.13 on every index)
  /// rather than milliseconds (OpenSearch's derived source).
  bool date_nanos_prints_nanos = false;
  /// Whether a `text` field without `store` and without a keyword sub-field is stored anyway
  /// (Elasticsearch 8's synthetic source stores such text itself).
  bool text_stored_by_default = false;
  /// Whether fields read from doc values may have an `<field>.offsets` companion giving their
  /// arrays' order (Elasticsearch's synthetic source).
  bool array_offsets = false;
};

struct SourceRebuildPlan {
  std::vector<RebuildField> fields;
  /// Every `nested` object path of the mapping, sorted (parents before their children).
  std::vector<std::string> nested_paths;
  /// The plan completes stored sources that `_source.includes`/`excludes` cut: `fields` are
  /// only the fields left out, and their rebuilt values are added to each stored source (never
  /// replacing a value it holds).
  bool completes_partial_sources = false;
  /// Elasticsearch's synthetic source keeps some values whole in the stored field
  /// `_ignored_source` (logsdb arrays before 8.19, values its doc values cannot give back): read
  /// them, and let each replace the rebuilt values of its field.
  bool reads_ignored_source = false;
  /// Solr's documents (rfs/solr/documents.hpp): each is identified by this stored string field
  /// (the schema's uniqueKey) instead of `_id`/`_uid`, every one is rebuilt through the plan,
  /// and fields are written flat, by their whole names ("" for the engines' documents).
  std::string id_field;
  /// Solr's nested documents: a document with a value in this SORTED doc values field
  /// (`_nest_path_`, e.g. "/kids#0/grand#") is a child, written into the next document of the
  /// path above it under its last step's name: an array for "name#N", an object for "name#".
  std::string child_path_field;
  /// "path: reason" for every mapped field that cannot be rebuilt.
  std::vector<std::string> unrebuildable;
  /// "path: what differs" for fields rebuilt but not always exactly as indexed.
  std::vector<std::string> inexact;

  /// The plan of one type's mapping, with the defaults `options` gives. InvalidArgument for a
  /// mapping that is not an object tree.
  static absl::StatusOr<SourceRebuildPlan> FromMapping(const boost::json::object& mapping,
                                                       const RebuildPlanOptions& options = {});
};

/// Restricts `plan` to the fields a `_source` with these includes/excludes leaves out (the
/// engines' simple wildcard patterns, matched against a field's path and each object path above
/// it) and marks it as completing partial sources.
void RestrictToLeftOutFields(const SourceStorage& storage, SourceRebuildPlan& plan);

/// Adds to `source` (a JSON object text) every value of `rebuilt` (another) at a path `source`
/// does not hold. InvalidArgument when either is not a JSON object.
absl::Status MergeRebuiltFields(std::string_view rebuilt, std::string& source);

/// Java's Double.toString / Float.toString (rfs/core/java_number.hpp), as the engines print numbers
/// in a rebuilt source.
using core::JavaDoubleString;
using core::JavaFloatString;

/// Prints epoch milliseconds (or nanoseconds) in a date format of the mapping: the built-in ISO
/// formats, epoch_millis / epoch_second, and `yyyy MM dd HH mm ss SSS` patterns. The
/// strict_date_optional_time printers when the format is not understood. "iso_instant" is
/// java.time's DateTimeFormatter.ISO_INSTANT, as Solr prints dates: the fraction only when not
/// zero, in groups of three digits ("2020-01-01T03:04:05Z", "...:05.500Z").
std::string FormatDate(int64_t value, bool nanos, std::string_view format);

}  // namespace rfs::lucene
