// A Solr schema (managed-schema.xml, managed-schema or schema.xml of a backed-up configset) and
// the OpenSearch mapping rfs makes of it, with every decision per field in words.
//
// Each field's properties are Solr's effective ones: the field's attributes over its type's over
// the defaults of the schema's version (Solr's schema/FieldType.java setArgs: indexed and stored
// by default; useDocValuesAsStored from version 1.6; docValues by default from 1.7). Dynamic
// fields are matched longest pattern first, as Solr's IndexSchema does.
//
// Thread safety: plain values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "absl/status/statusor.h"

namespace rfs::solr {

struct SolrAnalyzerStep {
  std::string kind;  ///< "tokenizer", "filter" or "charFilter"
  /// The SPI name ("standard", "lowercase"), from name= or derived from class=
  /// ("solr.LowerCaseFilterFactory" -> "lowercase").
  std::string name;
  std::map<std::string, std::string> attributes;  ///< the rest (words, pattern, minGramSize, ...)
};

struct SolrAnalyzer {
  std::string type;        ///< "" (both), "index", "query" or "multiterm"
  std::string class_name;  ///< an analyzer class instead of steps (e.g. a language analyzer)
  std::vector<SolrAnalyzerStep> steps;
};

struct SolrFieldType {
  std::string name;
  /// The class without its package: "StrField", "TextField", "IntPointField", ...
  std::string class_name;
  std::map<std::string, std::string> attributes;  ///< every attribute as written
  std::vector<SolrAnalyzer> analyzers;
};

struct SolrField {
  std::string name;  ///< a name, or a dynamic field's pattern ("*_s", "attr_*")
  std::string type;
  bool dynamic = false;
  // Effective properties.
  bool indexed = true;
  bool stored = true;
  bool doc_values = false;
  bool multi_valued = false;
  bool use_doc_values_as_stored = true;
  bool required = false;

  /// Whether Solr returns the field's values: stored, or from doc values
  /// (useDocValuesAsStored).
  bool returned() const { return stored || (doc_values && use_doc_values_as_stored); }
  /// Whether `field_name` matches this dynamic field's pattern (a leading or trailing '*').
  bool Matches(std::string_view field_name) const;
};

struct SolrCopyField {
  std::string source;
  std::string dest;
  int max_chars = 0;  ///< 0: no limit
};

struct SolrSchema {
  std::string name;
  double version = 1.6;
  std::string unique_key;
  std::map<std::string, SolrFieldType> types;
  std::vector<SolrField> fields;          ///< in schema order
  std::vector<SolrField> dynamic_fields;  ///< longest pattern first (Solr's matching order)
  std::vector<SolrCopyField> copy_fields;

  const SolrField* FindField(std::string_view name) const;
  /// The explicit field of this name, else the first dynamic field matching it.
  const SolrField* FieldFor(std::string_view name) const;
  const SolrFieldType* TypeOf(const SolrField& field) const;
  /// Whether documents may have child documents (the schema declares _root_).
  bool nested() const { return FindField("_root_") != nullptr; }
};

/// Solr's own fields, never migrated: `_version_`, `_root_`, `_nest_path_`.
bool IsInternalField(std::string_view name);

/// Parses a schema. DataLoss naming `source` (and the line where the XML parser says) for text
/// that is not XML, a field whose type is not declared, a missing name or class.
absl::StatusOr<SolrSchema> ParseSchema(std::string_view xml, std::string_view source);

/// The OpenSearch index body rfs makes of a schema.
struct SchemaMapping {
  /// {"properties": {...}, "dynamic_templates": [...]}.
  boost::json::object mappings;
  /// {"analysis": {...}} for the analyzers translated (empty when none).
  boost::json::object settings;
  /// One line per field, dynamic field, copy field and analyzer: "<name>: <what was decided>".
  std::vector<std::string> decisions;
  /// Fields whose values Solr does not return (neither stored nor usable doc values): "name:
  /// why". A migration cannot carry their values.
  std::vector<std::string> unrebuildable;
};

/// The mapping of `schema`: uniqueKey as `_id` (and kept as a keyword field), types by class,
/// dynamic fields as dynamic templates, copy fields as `copy_to`, child documents as `nested`,
/// analyzers translated where OpenSearch has the same tokenizer and filters and `standard`
/// otherwise. Solr's internal fields (_version_, _root_, _nest_path_) are not mapped.
/// `index_fields` are the field names the backed-up index holds (its segments' field infos):
/// each that a dynamic field matches is mapped by name too, since a dynamic template cannot map
/// every type (OpenSearch maps a new array's elements one by one, which a knn_vector refuses).
SchemaMapping MappingFromSchema(const SolrSchema& schema,
                                const std::vector<std::string>& index_fields = {});

}  // namespace rfs::solr
