// Source rebuild plans (docs/sourceless.md): what a mapping says of each field, and of where
// its values are kept (doc values, stored fields, points, terms); how an index keeps `_source`;
// merging rebuilt fields into partial sources.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/source_rebuild.hpp"

#include "lucene/rebuild/rebuilder_internal.hpp"

namespace rfs::lucene {

namespace json = boost::json;
using core::StrCat;

namespace {

std::string_view S(json::string_view s) { return {s.data(), s.size()}; }

const json::value* Find(const json::object& object, std::string_view key) {
  return object.if_contains(json::string_view(key.data(), key.size()));
}

std::vector<std::string> StringList(const json::value* v) {
  std::vector<std::string> out;
  if (v == nullptr) return out;
  if (v->is_string()) out.emplace_back(S(v->get_string()));
  if (v->is_array()) {
    for (const auto& item : v->get_array()) {
      if (item.is_string()) out.emplace_back(S(item.get_string()));
    }
  }
  return out;
}

// The kinds Lucene indexes as one-dimensional points (LongPoint, IntPoint, DoublePoint,
// FloatPoint, HalfFloatPoint, InetAddressPoint): the same sortable bytes their doc values hold.
bool HasPoints(RebuildKind kind) {
  switch (kind) {
    case RebuildKind::kLong:
    case RebuildKind::kUnsignedLong:
    case RebuildKind::kDouble:
    case RebuildKind::kFloat:
    case RebuildKind::kHalfFloat:
    case RebuildKind::kScaledFloat:
    case RebuildKind::kDate:
    case RebuildKind::kDateNanos:
    case RebuildKind::kIp:
      return true;
    default:
      return false;
  }
}

bool Flag(const json::object& object, std::string_view key, bool fallback) {
  const json::value* v = Find(object, key);
  if (v == nullptr) return fallback;
  if (v->is_bool()) return v->get_bool();
  if (v->is_string()) return S(v->get_string()) == "true";
  return fallback;
}

std::string FirstFormat(const json::object& field, bool nanos_default) {
  // OpenSearch's derived source prints a date_nanos without a format of its own to the
  // millisecond, as a date; Elasticsearch prints it to the nanosecond (docs/sourceless.md).
  std::string format =
      nanos_default ? "strict_date_optional_time_nanos" : "strict_date_optional_time";
  if (const json::value* v = Find(field, "format"); v != nullptr && v->is_string()) {
    format = std::string(S(v->get_string()));
  }
  if (const json::value* v = Find(field, "print_format"); v != nullptr && v->is_string()) {
    return std::string(S(v->get_string()));
  }
  const size_t bar = format.find("||");
  return bar == std::string::npos ? format : format.substr(0, bar);
}

// Mapping -> plan: one function per mapping type, each filling what its type says of the field
// and returning false when the field cannot be rebuilt (the reason then noted in the plan).
struct PlanBuilder {
  SourceRebuildPlan plan;
  RebuildPlanOptions options;

  // The innermost nested path above the fields being read.
  std::string nested_scope;

  void Properties(const json::object& properties, const std::string& prefix) {
    for (const auto& [key, value] : properties) {
      if (!value.is_object()) continue;
      const std::string path = prefix.empty() ? std::string(S(key)) : StrCat(prefix, ".", S(key));
      Field(value.get_object(), path);
    }
  }

  void Field(const json::object& field, const std::string& path) {
    const size_t before = plan.fields.size();
    FieldOrObject(field, path);
    for (size_t i = before; i < plan.fields.size(); ++i) {
      RebuildField& added = plan.fields[i];
      if (!added.nested_path.empty() || nested_scope.empty()) continue;
      added.nested_path = nested_scope;
    }
  }

  void FieldOrObject(const json::object& field, const std::string& path) {
    const json::value* type_value = Find(field, "type");
    const std::string type = type_value != nullptr && type_value->is_string()
                                 ? std::string(S(type_value->get_string()))
                                 : std::string();
    if (type.empty() || type == "object") return Object(field, path);
    if (type == "nested") return Nested(field, path);
    RebuildField out;
    out.path = path;
    out.type = type;
    out.doc_values = Flag(field, "doc_values", options.doc_values_by_default);
    out.stored = Flag(field, "store", false);
    if (!Typed(field, out) || !ChooseSource(field, out)) return;
    Finish(out);
    plan.fields.push_back(std::move(out));
  }

  void Object(const json::object& field, const std::string& path) {
    if (!Flag(field, "enabled", true)) {
      plan.unrebuildable.push_back(StrCat(path, ": object with enabled false (never indexed)"));
      return;
    }
    if (const json::value* props = Find(field, "properties"); props && props->is_object()) {
      Properties(props->get_object(), path);
    }
  }

  void Nested(const json::object& field, const std::string& path) {
    plan.nested_paths.push_back(path);
    plan.inexact.push_back(StrCat(path,
                                  ": nested objects come back in document order; one without "
                                  "any rebuildable value is left out, and a single one is "
                                  "printed as an object"));
    if (const json::value* props = Find(field, "properties"); props && props->is_object()) {
      const std::string outer = nested_scope;
      nested_scope = path;
      Properties(props->get_object(), path);
      nested_scope = outer;
    }
  }

  // Sets out.kind and what the mapping type decides; false: the field is not rebuilt.
  bool Typed(const json::object& field, RebuildField& out) {
    const std::string& type = out.type;
    if (type == "keyword" || type == "wildcard" || type == "constant_keyword" ||
        type == "version") {
      return Keyword(field, out);
    }
    if (type == "text" || type == "match_only_text" || type == "annotated_text") {
      return Text(field, out);
    }
    if (type == "long" || type == "integer" || type == "short" || type == "byte") {
      return Kind(out, RebuildKind::kLong);
    }
    if (type == "unsigned_long") return Kind(out, RebuildKind::kUnsignedLong);
    if (type == "double") return Kind(out, RebuildKind::kDouble);
    if (type == "float") return Kind(out, RebuildKind::kFloat);
    if (type == "half_float") return HalfFloat(out);
    if (type == "scaled_float") return ScaledFloat(field, out);
    if (type == "boolean") return Kind(out, RebuildKind::kBoolean);
    if (type == "date" || type == "date_nanos") return Date(field, out);
    if (type == "ip") return Kind(out, RebuildKind::kIp);
    if (type == "binary") return Binary(field, out);
    if (type == "dense_vector" || type == "knn_vector") return Vector(field, out);
    if (type == "geo_point") return GeoPoint(out);
    plan.unrebuildable.push_back(StrCat(out.path, ": type ", type, " is not rebuilt"));
    return false;
  }

  // A type that only names its kind.
  static bool Kind(RebuildField& out, RebuildKind kind) {
    out.kind = kind;
    return true;
  }

  void Approximate(RebuildField& out, std::string_view why) {
    plan.inexact.push_back(StrCat(out.path, ": ", why));
    out.exactness = RebuildExactness::kApproximate;
  }

  bool Keyword(const json::object& field, RebuildField& out) {
    const std::string& path = out.path;
    out.kind = RebuildKind::kKeyword;
    if (out.type == "wildcard") out.doc_values = Flag(field, "doc_values", false);
    if (out.type == "version" || out.type == "constant_keyword") {
      plan.unrebuildable.push_back(StrCat(path, ": ", out.type, " fields are not rebuilt yet"));
      return false;
    }
    if (Find(field, "normalizer") != nullptr) {
      Approximate(out, "normalized keyword (the normalized form)");
    }
    if (Find(field, "ignore_above") != nullptr) {
      out.original_values_field = StrCat(path, "._original");
      plan.inexact.push_back(StrCat(path,
                                    ": values over ignore_above have no doc values (Elasticsearch "
                                    "8's synthetic source keeps them: read from ",
                                    out.original_values_field, ")"));
    }
    if (out.doc_values && !out.stored) {
      plan.inexact.push_back(StrCat(path, ": arrays come back sorted without duplicates"));
    }
    return true;
  }

  bool Text(const json::object& field, RebuildField& out) {
    out.kind = RebuildKind::kText;
    out.doc_values = false;
    if (out.stored) return true;
    KeywordSubField(field, out);
    if (out.value_field.empty() && options.text_stored_by_default) {
      out.stored = true;
    } else if (out.value_field.empty()) {
      plan.unrebuildable.push_back(
          StrCat(out.path, ": text with neither a stored value nor a keyword sub-field"));
      return false;
    }
    return true;
  }

  // A keyword sub-field of a text without normalizer or ignore_above holds the whole value.
  void KeywordSubField(const json::object& field, RebuildField& out) {
    const json::value* fields = Find(field, "fields");
    if (fields == nullptr || !fields->is_object()) return;
    for (const auto& [name, sub] : fields->get_object()) {
      if (!sub.is_object()) continue;
      const auto& s = sub.get_object();
      const json::value* st = Find(s, "type");
      if (st && st->is_string() && S(st->get_string()) == "keyword" &&
          Flag(s, "doc_values", options.doc_values_by_default) &&
          Find(s, "normalizer") == nullptr) {
        out.value_field = StrCat(out.path, ".", S(name));
        if (Find(s, "ignore_above") != nullptr) {
          out.original_values_field = StrCat(out.value_field, "._original");
        }
        out.doc_values = true;
        plan.inexact.push_back(StrCat(out.path, ": from keyword sub-field ", out.value_field,
                                      " (sorted, without duplicates; values over its "
                                      "ignore_above are lost)"));
        return;
      }
    }
  }

  bool HalfFloat(RebuildField& out) {
    out.kind = RebuildKind::kHalfFloat;
    Approximate(out, "half_float keeps 11 significant bits");
    return true;
  }

  bool ScaledFloat(const json::object& field, RebuildField& out) {
    out.kind = RebuildKind::kScaledFloat;
    if (const json::value* f = Find(field, "scaling_factor"); f && f->is_number()) {
      out.scaling_factor = f->to_number<double>();
    } else if (f && f->is_string()) {
      out.scaling_factor = std::strtod(std::string(S(f->get_string())).c_str(), nullptr);
    }
    Approximate(out, "scaled_float rounded to its scaling factor");
    return true;
  }

  bool Date(const json::object& field, RebuildField& out) {
    const bool nanos = out.type == "date_nanos";
    out.kind = nanos ? RebuildKind::kDateNanos : RebuildKind::kDate;
    out.date_format = FirstFormat(field, nanos && options.date_nanos_prints_nanos);
    if (nanos && out.date_format.find("nanos") == std::string::npos &&
        out.date_format.find('S') == std::string::npos) {
      Approximate(out,
                  StrCat("date_nanos printed to the millisecond by its format ", out.date_format));
    }
    return true;
  }

  bool Binary(const json::object& field, RebuildField& out) {
    out.kind = RebuildKind::kBinary;
    out.doc_values = Flag(field, "doc_values", false);
    return true;
  }

  bool Vector(const json::object& field, RebuildField& out) {
    const bool dense = out.type == "dense_vector";
    out.kind = RebuildKind::kVector;
    const json::value* dims = Find(field, dense ? "dims" : "dimension");
    if (dims != nullptr && dims->is_number()) out.dims = dims->to_number<int32_t>();
    if (dims != nullptr && dims->is_string()) {
      out.dims = std::atoi(std::string(S(dims->get_string())).c_str());
    }
    const json::value* element = Find(field, dense ? "element_type" : "data_type");
    const std::string element_type =
        element != nullptr && element->is_string() ? std::string(S(element->get_string())) : "";
    out.byte_elements = element_type == "byte";
    out.little_endian_binary_vectors = options.little_endian_binary_vectors;
    if (out.dims <= 0 || (element_type != "" && element_type != "float" && !out.byte_elements)) {
      plan.unrebuildable.push_back(StrCat(out.path, ": ", out.type, " of element type ",
                                          element_type.empty() ? "float" : element_type,
                                          " and dimension ", out.dims, " is not rebuilt"));
      return false;
    }
    // The values live in the vector files or in binary doc values, whatever the mapping says
    // of doc_values.
    out.doc_values = true;
    out.stored = false;
    if (const json::value* sim = Find(field, "similarity");
        dense && sim != nullptr && sim->is_string() && S(sim->get_string()) == "cosine" &&
        !out.byte_elements) {
      // Normalized vectors get their magnitude back, in the engine's own float arithmetic:
      // the same values it prints (a segment without the field kept them as sent).
      out.magnitude_field = StrCat(out.path, "._magnitude");
    }
    return true;
  }

  bool GeoPoint(RebuildField& out) {
    out.kind = RebuildKind::kGeoPoint;
    Approximate(out, "geo_point to Lucene's 1e-7 degree precision");
    return true;
  }

  // Where the values come from when neither doc values nor a stored field hold them (points,
  // terms); false when nothing does, or only stored fields inside nested objects.
  bool ChooseSource(const json::object& field, RebuildField& out) {
    const std::string& path = out.path;
    if (!out.doc_values && !out.stored && HasPoints(out.kind) && Flag(field, "index", true)) {
      // Indexed numbers, dates and addresses keep their values as points.
      out.points = true;
      if (out.exactness == RebuildExactness::kExact) {
        plan.inexact.push_back(StrCat(path, ": from points (arrays come back sorted)"));
        out.exactness = RebuildExactness::kArraysReordered;
      }
    }
    if (!out.doc_values && !out.stored && !out.points &&
        (out.type == "keyword" || out.type == "boolean") && Flag(field, "index", true)) {
      // Indexed keywords and booleans keep each distinct value of a document as a term.
      out.terms = true;
      if (out.exactness == RebuildExactness::kExact) {
        plan.inexact.push_back(
            StrCat(path, ": from the terms index (arrays come back sorted, without duplicates)"));
        out.exactness = RebuildExactness::kArraysReordered;
      }
    }
    if (!out.doc_values && !out.stored && !out.points && !out.terms) {
      plan.unrebuildable.push_back(
          StrCat(path, ": ", out.type, " with neither doc values nor store"));
      return false;
    }
    if (!out.doc_values && !out.points && !out.terms && !nested_scope.empty()) {
      plan.unrebuildable.push_back(StrCat(path, ": stored ", out.type,
                                          " inside nested objects (read from doc values only)"));
      return false;
    }
    if (Find(field, "copy_to") != nullptr) {
      // Targets of copy_to are filled at index time: rebuilding them would add values the
      // document never had.
    }
    return true;
  }

  // What follows from the chosen source: array order, the offsets companion, original values.
  void Finish(RebuildField& out) const {
    // Doc values keep several values sorted (sorted sets: without duplicates); a stored field
    // keeps them in order, and vectors are one value.
    if (out.exactness == RebuildExactness::kExact && out.doc_values && !out.stored &&
        out.kind != RebuildKind::kVector) {
      out.exactness = RebuildExactness::kArraysReordered;
    }
    if (options.array_offsets && out.doc_values && !out.stored && out.value_field.empty() &&
        nested_scope.empty() && out.kind != RebuildKind::kVector &&
        out.kind != RebuildKind::kBinary && out.kind != RebuildKind::kGeoPoint &&
        out.kind != RebuildKind::kText) {
      out.array_offsets_field = StrCat(out.path, ".offsets");
    }
    // Values over ignore_above complete doc values only; stored values of nested child
    // documents are not read.
    if (out.stored || !out.doc_values || out.points || out.terms || !nested_scope.empty()) {
      out.original_values_field.clear();
    }
  }
};

}  // namespace

std::string SourceStorage::Describe() const {
  std::string out;
  switch (mode) {
    case Mode::kStored:
      out = "stored";
      break;
    case Mode::kDisabled:
      out = "_source disabled";
      break;
    case Mode::kSynthetic:
      out = "synthetic _source";
      break;
    case Mode::kDerived:
      out = "derived _source";
      break;
  }
  if (!includes.empty()) out += ", _source.includes";
  if (!excludes.empty()) out += ", _source.excludes";
  return out;
}

SourceStorage DescribeSourceStorage(const json::object& mapping, const json::object& settings) {
  SourceStorage out;
  if (const json::value* source = Find(mapping, "_source"); source && source->is_object()) {
    const auto& s = source->get_object();
    if (!Flag(s, "enabled", true)) out.mode = SourceStorage::Mode::kDisabled;
    if (const json::value* mode = Find(s, "mode"); mode && mode->is_string()) {
      if (S(mode->get_string()) == "synthetic") out.mode = SourceStorage::Mode::kSynthetic;
      if (S(mode->get_string()) == "disabled") out.mode = SourceStorage::Mode::kDisabled;
    }
    out.includes = StringList(Find(s, "includes"));
    out.excludes = StringList(Find(s, "excludes"));
  }
  const std::string setting_mode = internal::IndexSetting(settings, "index.mapping.source.mode");
  if (setting_mode == "synthetic") out.mode = SourceStorage::Mode::kSynthetic;
  if (setting_mode == "disabled") out.mode = SourceStorage::Mode::kDisabled;
  const std::string index_mode = internal::IndexSetting(settings, "index.mode");
  if ((index_mode == "time_series" || index_mode == "logsdb") && setting_mode.empty() &&
      out.mode == SourceStorage::Mode::kStored) {
    out.mode = SourceStorage::Mode::kSynthetic;
  }
  if (internal::IndexSetting(settings, "index.derived_source.enabled") == "true") {
    out.mode = SourceStorage::Mode::kDerived;
  }
  return out;
}

absl::StatusOr<SourceRebuildPlan> SourceRebuildPlan::FromMapping(
    const json::object& mapping, const RebuildPlanOptions& options) {
  PlanBuilder builder;
  builder.options = options;
  builder.plan.reads_ignored_source = options.array_offsets;
  const json::value* properties = Find(mapping, "properties");
  if (properties != nullptr && !properties->is_object()) {
    return absl::InvalidArgumentError("mapping properties is not an object");
  }
  if (properties != nullptr) builder.Properties(properties->get_object(), "");
  std::sort(builder.plan.fields.begin(), builder.plan.fields.end(),
            [](const RebuildField& a, const RebuildField& b) { return a.path < b.path; });
  std::sort(builder.plan.nested_paths.begin(), builder.plan.nested_paths.end());
  return std::move(builder.plan);
}

namespace {

// Regex.simpleMatch: '*' matches any run of characters.
bool SimpleMatch(std::string_view pattern, std::string_view text) {
  const size_t star = pattern.find('*');
  if (star == std::string_view::npos) return pattern == text;
  if (text.substr(0, star) != pattern.substr(0, star)) return false;
  const std::string_view rest = pattern.substr(star + 1);
  for (size_t i = star; i <= text.size(); ++i) {
    if (SimpleMatch(rest, text.substr(i))) return true;
  }
  return false;
}

// Whether a pattern names `path` or an object above it.
bool MatchesPathOrParent(const std::vector<std::string>& patterns, std::string_view path) {
  for (const auto& pattern : patterns) {
    for (size_t end = path.find('.');; end = path.find('.', end + 1)) {
      if (SimpleMatch(pattern, path.substr(0, end))) return true;
      if (end == std::string_view::npos) break;
    }
  }
  return false;
}

void MergeInto(json::object& target, const json::object& rebuilt) {
  for (const auto& [key, value] : rebuilt) {
    json::value* existing = target.if_contains(key);
    if (existing == nullptr) {
      target[key] = value;
    } else if (existing->is_object() && value.is_object()) {
      MergeInto(existing->get_object(), value.get_object());
    }
  }
}

}  // namespace

void RestrictToLeftOutFields(const SourceStorage& storage, SourceRebuildPlan& plan) {
  std::erase_if(plan.fields, [&](const RebuildField& field) {
    const bool included =
        storage.includes.empty() || MatchesPathOrParent(storage.includes, field.path);
    const bool excluded = MatchesPathOrParent(storage.excludes, field.path);
    return included && !excluded;  // kept in the stored source: nothing to rebuild
  });
  plan.completes_partial_sources = true;
}

absl::Status MergeRebuiltFields(std::string_view rebuilt, std::string& source) {
  boost::system::error_code ec;
  json::value stored = json::parse(json::string_view(source.data(), source.size()), ec);
  if (ec || !stored.is_object()) {
    return absl::InvalidArgumentError("the stored _source is not a JSON object");
  }
  json::value made = json::parse(json::string_view(rebuilt.data(), rebuilt.size()), ec);
  if (ec || !made.is_object()) return absl::InvalidArgumentError("rebuilt fields not an object");
  if (made.get_object().empty()) return absl::OkStatus();
  MergeInto(stored.get_object(), made.get_object());
  source = json::serialize(stored);
  return absl::OkStatus();
}

namespace internal {

std::string IndexSetting(const json::object& settings, std::string_view flat) {
  if (const json::value* v = Find(settings, flat)) {
    if (v->is_string()) return std::string(S(v->get_string()));
    return json::serialize(*v);
  }
  // Nested form: {"index": {"mapping": {...}}}.
  const json::object* at = &settings;
  std::string_view rest = flat;
  while (!rest.empty()) {
    const size_t dot = rest.find('.');
    const std::string_view part = rest.substr(0, dot);
    const json::value* v = Find(*at, part);
    if (v == nullptr) return "";
    if (dot == std::string_view::npos) {
      return v->is_string() ? std::string(S(v->get_string())) : json::serialize(*v);
    }
    if (!v->is_object()) return "";
    at = &v->get_object();
    rest = rest.substr(dot + 1);
  }
  return "";
}

}  // namespace internal

}  // namespace rfs::lucene
