// The per-document side of source rebuilding (rebuilder_internal.hpp): each field's values from
// doc values, stored fields, points, terms or vectors, printed (value_printing_internal.hpp) and
// written as one JSON object, nested documents included (docs/sourceless.md).
#include <algorithm>
#include <bit>

#include "rfs/core/base64.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/json_string.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/codecs/doc_values_internal.hpp"
#include "lucene/codecs/points_internal.hpp"
#include "lucene/codecs/terms_internal.hpp"
#include "lucene/codecs/vectors_internal.hpp"
#include "lucene/rebuild/rebuilder_internal.hpp"
#include "lucene/rebuild/value_printing_internal.hpp"

namespace rfs::lucene::internal {

using core::StrCat;

SourceRebuilder::SourceRebuilder(std::shared_ptr<const SourceRebuildPlan> plan)
    : plan_(std::move(plan)) {
  // The object tree of the plan's paths, children in name order.
  nodes_.emplace_back();
  for (size_t k = 0; k < plan_->nested_paths.size(); ++k) {
    const size_t node = NodeFor(plan_->nested_paths[k]);
    nodes_[node].nested = static_cast<int>(k);
    nested_nodes_.push_back(node);
  }
  field_scope_.assign(plan_->fields.size(), -1);
  for (size_t f = 0; f < plan_->fields.size(); ++f) {
    const RebuildField& field = plan_->fields[f];
    nodes_[NodeFor(field.path)].field = static_cast<int>(f);
    if (!field.nested_path.empty()) {
      const auto& paths = plan_->nested_paths;
      field_scope_[f] = static_cast<int>(
          std::lower_bound(paths.begin(), paths.end(), field.nested_path) - paths.begin());
    }
  }
  values_.resize(plan_->fields.size());
  pending_.resize(plan_->nested_paths.size());
}

size_t SourceRebuilder::NodeFor(const std::string& path) {
  size_t node = 0;
  size_t start = 0;
  for (;;) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    auto it = nodes_[node].children.find(part);
    size_t child;
    if (it == nodes_[node].children.end()) {
      child = nodes_.size();
      nodes_[node].children.emplace(part, child);
      nodes_.emplace_back();
    } else {
      child = it->second;
    }
    node = child;
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

void SourceRebuilder::StartSegment(SegmentDocValues& doc_values, SegmentVectors& vectors,
                                   SegmentPoints* points, SegmentTerms* terms) {
  doc_values_ = &doc_values;
  vectors_ = &vectors;
  points_ = points;
  terms_index_ = terms;
  readers_.assign(plan_->fields.size(), nullptr);
  resolved_.assign(plan_->fields.size(), false);
  offsets_readers_.assign(plan_->fields.size(), nullptr);
  offsets_resolved_.assign(plan_->fields.size(), false);
  nest_paths_ = nullptr;
  nest_paths_resolved_ = false;
}

absl::StatusOr<FieldDocValues*> SourceRebuilder::Reader(size_t f) {
  if (!resolved_[f]) {
    const RebuildField& field = plan_->fields[f];
    RFS_ASSIGN_OR_RETURN(
        readers_[f],
        doc_values_->Field(field.value_field.empty() ? field.path : field.value_field));
    resolved_[f] = true;
  }
  return readers_[f];
}

absl::Status SourceRebuilder::KeywordWithOriginalValues(size_t f, int32_t doc,
                                                        const std::vector<StoredValue>& stored,
                                                        std::vector<std::string>& out) {
  RFS_ASSIGN_OR_RETURN(FieldDocValues * values, Reader(f));
  if (values != nullptr) {
    RFS_RETURN_IF_ERROR(values->Terms(doc, terms_));
    for (const auto& term : terms_) out.push_back(JsonString(term));
  }
  for (const auto& value : stored) {
    if (value.field == f && value.original) out.push_back(JsonString(value.text));
  }
  return absl::OkStatus();
}

absl::Status SourceRebuilder::FieldValues(size_t f, int32_t doc,
                                          const std::vector<StoredValue>& stored,
                                          std::vector<std::string>& out) {
  const RebuildField& field = plan_->fields[f];
  out.clear();
  // Stored values keep the document's order and duplicates: prefer them.
  if (field.stored) {
    for (const auto& value : stored) {
      if (value.field != f || value.original || value.ignored_source) continue;
      PrintStoredValue(field, value, out);
    }
    if (!out.empty() || !field.doc_values) return absl::OkStatus();
  }
  if (field.points) return PointValues(f, doc, out);
  if (field.terms) return TermValues(f, doc, out);
  if (!field.original_values_field.empty()) return KeywordWithOriginalValues(f, doc, stored, out);
  if (!field.doc_values) return absl::OkStatus();
  if (field.kind == RebuildKind::kVector) return VectorValue(f, doc, out);
  return DocValues(f, doc, out);
}

absl::Status SourceRebuilder::DocValues(size_t f, int32_t doc, std::vector<std::string>& out) {
  const RebuildField& field = plan_->fields[f];
  RFS_ASSIGN_OR_RETURN(FieldDocValues * values, Reader(f));
  if (values == nullptr) return absl::OkStatus();  // no document of the segment has a value
  switch (field.kind) {
    case RebuildKind::kBoolean:
      // Solr's BoolField keeps "T" and "F" as terms; the engines keep 0 and 1 as numbers.
      if (values->type() != DvmType::kSorted && values->type() != DvmType::kSortedSet) break;
      RFS_RETURN_IF_ERROR(values->Terms(doc, terms_));
      for (const auto& term : terms_) out.push_back(term == "T" ? "true" : "false");
      return absl::OkStatus();
    case RebuildKind::kKeyword:
    case RebuildKind::kText:
    case RebuildKind::kIp: {
      RFS_RETURN_IF_ERROR(values->Terms(doc, terms_));
      for (const auto& term : terms_) {
        out.push_back(JsonString(field.kind == RebuildKind::kIp ? IpString(term) : term));
      }
      return absl::OkStatus();
    }
    case RebuildKind::kBinary: {
      RFS_ASSIGN_OR_RETURN(bool has, values->Binary(doc, binary_));
      if (!has) return absl::OkStatus();
      // CustomBinaryDocValuesField: VInt count, then VInt length + bytes per value.
      core::ByteReader in(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(binary_.data()),
                                                   binary_.size()),
                          field.path);
      RFS_ASSIGN_OR_RETURN(uint32_t count, in.ReadVInt());
      for (uint32_t i = 0; i < count; ++i) {
        RFS_ASSIGN_OR_RETURN(uint32_t length, in.ReadVInt());
        RFS_ASSIGN_OR_RETURN(auto bytes, in.ReadBytes(length));
        out.push_back(JsonString(core::Base64Encode(bytes)));
      }
      return absl::OkStatus();
    }
    default:
      break;
  }
  RFS_RETURN_IF_ERROR(values->Numbers(doc, numbers_));
  if (field.kind == RebuildKind::kUnsignedLong) {
    std::sort(numbers_.begin(), numbers_.end(), [](int64_t a, int64_t b) {
      return static_cast<uint64_t>(a) < static_cast<uint64_t>(b);
    });
  }
  for (int64_t v : numbers_) out.push_back(PrintNumber(field, v));
  return absl::OkStatus();
}

namespace {

float FloatAt(std::string_view bytes, size_t i, bool little_endian) {
  uint32_t bits = 0;
  for (size_t b = 0; b < 4; ++b) {
    const auto byte = static_cast<uint8_t>(bytes[4 * i + b]);
    bits |= little_endian ? uint32_t{byte} << (8 * b) : uint32_t{byte} << (8 * (3 - b));
  }
  return std::bit_cast<float>(bits);
}

}  // namespace

absl::Status SourceRebuilder::PointValues(size_t f, int32_t doc, std::vector<std::string>& out) {
  const RebuildField& field = plan_->fields[f];
  if (points_ == nullptr) return absl::OkStatus();
  point_values_.clear();
  RFS_ASSIGN_OR_RETURN(bool has, points_->Values(field.path, doc, point_values_));
  if (!has) return absl::OkStatus();
  for (const auto& bytes : point_values_) {
    if (field.kind == RebuildKind::kIp) {
      out.push_back(JsonString(
          IpString(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()))));
      continue;
    }
    // NumericUtils' sortable bytes: big-endian with the sign bit flipped, 2, 4 or 8 of them; the
    // number is what the field's doc values would hold.
    if (bytes.empty() || bytes.size() > 8) {
      return absl::DataLossError(
          StrCat("field ", field.path, ": a point of ", bytes.size(), " bytes is not a number"));
    }
    uint64_t raw = 0;
    for (uint8_t b : bytes) raw = raw << 8 | b;
    const int bits = static_cast<int>(bytes.size()) * 8;
    raw ^= uint64_t{1} << (bits - 1);
    const int64_t value =
        bits == 64 ? static_cast<int64_t>(raw)
                   : static_cast<int64_t>(raw << (64 - bits)) >> (64 - bits);  // sign-extend
    out.push_back(PrintNumber(field, value));
  }
  return absl::OkStatus();
}

absl::Status SourceRebuilder::TermValues(size_t f, int32_t doc, std::vector<std::string>& out) {
  const RebuildField& field = plan_->fields[f];
  if (terms_index_ == nullptr) return absl::OkStatus();
  term_values_.clear();
  RFS_ASSIGN_OR_RETURN(bool has, terms_index_->Values(field.path, doc, term_values_));
  if (!has) return absl::OkStatus();
  for (const std::string& term : term_values_) {
    if (field.kind == RebuildKind::kBoolean) {
      // BooleanFieldMapper indexes "T" and "F".
      out.push_back(term == "T" ? "true" : "false");
    } else {
      out.push_back(JsonString(term));
    }
  }
  return absl::OkStatus();
}

absl::Status SourceRebuilder::VectorValue(size_t f, int32_t doc, std::vector<std::string>& out) {
  const RebuildField& field = plan_->fields[f];
  RFS_ASSIGN_OR_RETURN(FieldVectors * vectors, vectors_->Field(field.path));
  if (vectors != nullptr) {
    RFS_ASSIGN_OR_RETURN(bool has, vectors->Vector(doc, vector_));
    if (!has) return absl::OkStatus();
    if (!field.magnitude_field.empty()) {
      RFS_ASSIGN_OR_RETURN(FieldDocValues * magnitudes, doc_values_->Field(field.magnitude_field));
      if (magnitudes != nullptr) {
        RFS_RETURN_IF_ERROR(magnitudes->Numbers(doc, numbers_));
        if (!numbers_.empty()) {
          // Float.floatToIntBits of the magnitude, in the low 32 bits.
          const float magnitude =
              std::bit_cast<float>(static_cast<uint32_t>(static_cast<uint64_t>(numbers_[0])));
          for (float& element : vector_) element *= magnitude;
        }
      }
    }
    out.push_back(PrintVector(field, vector_));
    return absl::OkStatus();
  }
  RFS_ASSIGN_OR_RETURN(FieldDocValues * values, Reader(f));
  if (values == nullptr || values->type() != DvmType::kBinary) return absl::OkStatus();
  RFS_ASSIGN_OR_RETURN(bool has, values->Binary(doc, binary_));
  if (!has) return absl::OkStatus();
  const auto dims = static_cast<size_t>(field.dims);
  std::string_view bytes = binary_;
  vector_.clear();
  if (field.byte_elements) {
    // One signed byte per element (Elasticsearch adds a 4-byte magnitude after them).
    if (bytes.size() != dims && bytes.size() != dims + 4) {
      return absl::DataLossError(
          StrCat("byte vector of ", bytes.size(), " bytes for ", dims, " dimensions in doc ", doc));
    }
    for (size_t i = 0; i < dims; ++i) vector_.push_back(static_cast<int8_t>(bytes[i]));
  } else {
    bool little_endian = field.little_endian_binary_vectors;
    if (field.type == "knn_vector") {
      // OpenSearch k-NN: big-endian floats, or (older indices) a Java-serialized float[] whose
      // elements end the bytes, preceded by their count.
      little_endian = false;
      if (bytes.size() > dims * 4 + 4 && static_cast<uint8_t>(bytes[0]) == 0xAC &&
          static_cast<uint8_t>(bytes[1]) == 0xED) {
        bytes = bytes.substr(bytes.size() - dims * 4);
      }
    }
    // Elasticsearch's dense_vector adds the vector's magnitude as a fifth float after them
    // (indices created by 7.5+).
    if (bytes.size() != dims * 4 &&
        !(field.type == "dense_vector" && bytes.size() == dims * 4 + 4)) {
      return absl::DataLossError(StrCat("vector of ", bytes.size(), " bytes for ", dims,
                                        " float dimensions in doc ", doc));
    }
    for (size_t i = 0; i < dims; ++i) vector_.push_back(FloatAt(bytes, i, little_endian));
  }
  out.push_back(PrintVector(field, vector_));
  return absl::OkStatus();
}

void SourceRebuilder::NoteExactness(size_t f) {
  switch (plan_->fields[f].exactness) {
    case RebuildExactness::kExact:
      return;
    case RebuildExactness::kArraysReordered:
      if (values_[f].size() > 1) last_inexact_ = true;
      return;
    case RebuildExactness::kApproximate:
      if (!values_[f].empty()) last_inexact_ = true;
      return;
  }
}

absl::Status SourceRebuilder::RebuildChild(int32_t doc) {
  // A child's values say which nested path it belongs to: it has values only for the fields
  // of its own path (deeper ones live in its own children).
  static const std::vector<StoredValue> kNoStored;
  int scope = -1;
  for (size_t f = 0; f < plan_->fields.size(); ++f) {
    values_[f].clear();
    if (field_scope_[f] < 0 || (scope >= 0 && field_scope_[f] != scope)) continue;
    auto status = FieldValues(f, doc, kNoStored, values_[f]);
    if (!status.ok()) {
      return core::WithContext(
          status, StrCat("rebuilding field '", plan_->fields[f].path, "' of nested doc ", doc));
    }
    if (scope < 0 && !values_[f].empty()) scope = field_scope_[f];
  }
  if (scope < 0) return absl::OkStatus();
  for (size_t f = 0; f < plan_->fields.size(); ++f) {
    if (field_scope_[f] != scope) values_[f].clear();
    NoteExactness(f);
  }
  child_text_.clear();
  if (!Write(nested_nodes_[static_cast<size_t>(scope)], child_text_)) child_text_ = "{}";
  pending_[static_cast<size_t>(scope)].push_back(child_text_);
  return absl::OkStatus();
}

absl::Status SourceRebuilder::ApplyArrayOffsets(size_t f, int32_t doc,
                                                std::vector<std::string>& values) {
  const RebuildField& field = plan_->fields[f];
  if (field.array_offsets_field.empty()) return absl::OkStatus();
  if (!offsets_resolved_[f]) {
    RFS_ASSIGN_OR_RETURN(offsets_readers_[f], doc_values_->Field(field.array_offsets_field));
    offsets_resolved_[f] = true;
  }
  if (offsets_readers_[f] == nullptr) return absl::OkStatus();
  RFS_RETURN_IF_ERROR(offsets_readers_[f]->Terms(doc, terms_));
  if (terms_.empty()) return absl::OkStatus();  // a single value or none: nothing to reorder
  // FieldArrayContext: ZigZag VInt count, then per position the ZigZag VInt index of its value
  // among the document's distinct values (-1: null).
  const std::string& encoded = terms_.front();
  core::ByteReader in(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size()),
      field.array_offsets_field);
  auto zigzag = [&]() -> absl::StatusOr<int64_t> {
    RFS_ASSIGN_OR_RETURN(uint32_t v, in.ReadVInt());
    return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
  };
  RFS_ASSIGN_OR_RETURN(int64_t count, zigzag());
  std::vector<std::string> distinct = values;
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (count < 0 || static_cast<uint64_t>(count) > encoded.size()) {
    return in.Error(StrCat("invalid array length ", count, " of doc ", doc));
  }
  values.clear();
  for (int64_t i = 0; i < count; ++i) {
    RFS_ASSIGN_OR_RETURN(int64_t ord, zigzag());
    if (ord == -1) {
      values.push_back("null");
    } else if (ord < 0 || static_cast<uint64_t>(ord) >= distinct.size()) {
      return in.Error(StrCat("array position ", i, " of doc ", doc, " names value ", ord, " of ",
                             distinct.size()));
    } else {
      values.push_back(distinct[static_cast<size_t>(ord)]);
    }
  }
  return absl::OkStatus();
}

absl::Status SourceRebuilder::NestPath(int32_t doc, std::string& path) {
  path.clear();
  RFS_ASSIGN_OR_RETURN(bool child, IsChild(doc));
  if (child) path = terms_.front();
  return absl::OkStatus();
}

absl::StatusOr<bool> SourceRebuilder::IsChild(int32_t doc) {
  if (plan_->child_path_field.empty()) return false;
  if (!nest_paths_resolved_) {
    RFS_ASSIGN_OR_RETURN(nest_paths_, doc_values_->Field(plan_->child_path_field));
    nest_paths_resolved_ = true;
  }
  if (nest_paths_ == nullptr) return false;
  // Every document of a Solr shard is asked: the path stays in terms_, not copied out.
  RFS_RETURN_IF_ERROR(nest_paths_->Terms(doc, terms_));
  return !terms_.empty() && !terms_.front().empty();
}

absl::Status SourceRebuilder::WriteSolrFields(int32_t doc, const std::vector<StoredValue>& stored,
                                              std::string& out) {
  out = "{";
  for (size_t f = 0; f < plan_->fields.size(); ++f) {
    const RebuildField& field = plan_->fields[f];
    auto& values = values_[f];
    values.clear();
    auto status = FieldValues(f, doc, stored, values);
    if (!status.ok()) {
      return core::WithContext(status, StrCat("rebuilding field '", field.path, "' of doc ", doc));
    }
    NoteExactness(f);
    if (values.empty()) continue;
    if (out.size() > 1) out += ',';
    core::AppendJsonString(field.path, out);
    out += ':';
    const bool array = field.multi_valued || values.size() > 1;
    if (array) out += '[';
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) out += ',';
      out += values[i];
    }
    if (array) out += ']';
  }
  out += '}';
  return absl::OkStatus();
}

namespace {

// A rendered Solr child waiting for the document of the path above it.
struct SolrChild {
  std::string path;
  std::string json;
};

// Adds to `object` (a JSON object text) the children of `pending` whose nest path is one step
// below `path`, removing them: "<path>/<name>#<N>" go into an array under name, "<path>/<name>#"
// is the object itself.
void AttachSolrChildren(const std::string& path, std::vector<SolrChild>& pending,
                        std::string& object) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;  // name, then objects
  std::vector<bool> grouped_as_array;
  auto rest = pending.begin();
  for (auto it = pending.begin(); it != pending.end(); ++it) {
    const std::string& child = it->path;
    const bool below = child.size() > path.size() + 1 && child.starts_with(path) &&
                       child[path.size()] == '/' &&
                       child.find('/', path.size() + 1) == std::string::npos;
    if (!below) {
      if (rest != it) *rest = std::move(*it);
      ++rest;
      continue;
    }
    const std::string step = child.substr(path.size() + 1);
    const size_t hash = step.rfind('#');
    const std::string name = step.substr(0, hash);
    const bool array = hash != std::string::npos && hash + 1 < step.size();
    size_t g = 0;
    while (g < groups.size() && groups[g].first != name) ++g;
    if (g == groups.size()) {
      groups.emplace_back(name, std::vector<std::string>());
      grouped_as_array.push_back(array);
    }
    groups[g].second.push_back(std::move(it->json));
  }
  pending.erase(rest, pending.end());
  if (groups.empty()) return;
  object.pop_back();  // '}'
  for (size_t g = 0; g < groups.size(); ++g) {
    if (object.size() > 1) object += ',';
    core::AppendJsonString(groups[g].first, object);
    object += ':';
    const auto& objects = groups[g].second;
    const bool array = grouped_as_array[g] || objects.size() > 1;
    if (array) object += '[';
    for (size_t i = 0; i < objects.size(); ++i) {
      if (i > 0) object += ',';
      object += objects[i];
    }
    if (array) object += ']';
  }
  object += '}';
}

}  // namespace

absl::Status SourceRebuilder::RebuildSolr(int32_t doc, const std::vector<StoredValue>& stored,
                                          std::string& out, std::span<const int32_t> children) {
  std::vector<SolrChild> pending;
  for (int32_t child : children) {
    SolrChild rendered;
    RFS_RETURN_IF_ERROR(NestPath(child, rendered.path));
    child_stored_.clear();
    if (stored_reader_) RFS_RETURN_IF_ERROR(stored_reader_(child, child_stored_));
    RFS_RETURN_IF_ERROR(WriteSolrFields(child, child_stored_, rendered.json));
    // Its own children came before it: those one step below its path.
    AttachSolrChildren(rendered.path, pending, rendered.json);
    pending.push_back(std::move(rendered));
  }
  RFS_RETURN_IF_ERROR(WriteSolrFields(doc, stored, out));
  AttachSolrChildren("", pending, out);
  return absl::OkStatus();
}

absl::Status SourceRebuilder::Rebuild(int32_t doc, const std::vector<StoredValue>& stored,
                                      std::string& out, std::span<const int32_t> children) {
  if (!plan_->id_field.empty()) {
    last_inexact_ = false;
    return RebuildSolr(doc, stored, out, children);
  }
  for (auto& objects : pending_) objects.clear();
  last_inexact_ = false;
  for (int32_t child : children) RFS_RETURN_IF_ERROR(RebuildChild(child));
  for (size_t f = 0; f < plan_->fields.size(); ++f) {
    values_[f].clear();
    if (field_scope_[f] >= 0) continue;
    auto status = FieldValues(f, doc, stored, values_[f]);
    if (status.ok()) status = ApplyArrayOffsets(f, doc, values_[f]);
    if (!status.ok()) {
      return core::WithContext(
          status, StrCat("rebuilding field '", plan_->fields[f].path, "' of doc ", doc));
    }
    NoteExactness(f);
  }
  if (plan_->reads_ignored_source) RFS_RETURN_IF_ERROR(ApplyIgnoredSource(stored));
  out.clear();
  Write(0, out);
  if (out.empty()) out = "{}";
  return absl::OkStatus();
}

absl::Status SourceRebuilder::ApplyIgnoredSource(const std::vector<StoredValue>& stored) {
  for (const auto& entry : stored) {
    if (!entry.ignored_source) continue;
    // IgnoredSourceFieldMapper: i32 LE (name length + 65536 × the parent's offset in the name),
    // the name, then the value: one type byte and its bytes (XContentDataHelper).
    const auto* bytes = reinterpret_cast<const uint8_t*>(entry.text.data());
    core::ByteReader in(std::span<const uint8_t>(bytes, entry.text.size()), "_ignored_source");
    RFS_ASSIGN_OR_RETURN(uint32_t packed, in.ReadLeU32());
    RFS_ASSIGN_OR_RETURN(std::span<const uint8_t> name_bytes, in.ReadBytes(packed & 0xFFFF));
    const std::string name(name_bytes.begin(), name_bytes.end());
    auto it = std::lower_bound(
        plan_->fields.begin(), plan_->fields.end(), name,
        [](const RebuildField& field, const std::string& path) { return field.path < path; });
    // Whole objects and fields the plan does not rebuild are left as they are.
    if (it == plan_->fields.end() || it->path != name) continue;
    const size_t f = static_cast<size_t>(it - plan_->fields.begin());
    if (field_scope_[f] >= 0) continue;
    std::string json;
    RFS_RETURN_IF_ERROR(PrintIgnoredSourceValue(
        in, std::span<const uint8_t>(bytes, entry.text.size()), name, json));
    values_[f].clear();
    if (!json.empty()) values_[f].push_back(std::move(json));
  }
  return absl::OkStatus();
}

// Writes node `node` as an object; false (nothing written) when no field below it has a value.
bool SourceRebuilder::Write(size_t node, std::string& out) {
  const size_t start = out.size();
  out += '{';
  bool any = false;
  for (const auto& [name, child] : nodes_[node].children) {
    const size_t before = out.size();
    if (any) out += ',';
    core::AppendJsonString(name, out);
    out += ':';
    const int field = nodes_[child].field;
    const int nested = nodes_[child].nested;
    bool wrote = false;
    if (nested >= 0) {
      // Objects of a nested path below: rendered from the children before this document.
      auto& objects = pending_[static_cast<size_t>(nested)];
      if (objects.size() == 1) {
        out += objects[0];
        wrote = true;
      } else if (!objects.empty()) {
        out += '[';
        for (size_t i = 0; i < objects.size(); ++i) {
          if (i > 0) out += ',';
          out += objects[i];
        }
        out += ']';
        wrote = true;
      }
      objects.clear();
    } else if (field >= 0 && !values_[field].empty()) {
      const auto& values = values_[field];
      if (values.size() == 1) {
        out += values[0];
      } else {
        out += '[';
        for (size_t i = 0; i < values.size(); ++i) {
          if (i > 0) out += ',';
          out += values[i];
        }
        out += ']';
      }
      wrote = true;
    } else if (!nodes_[child].children.empty()) {
      wrote = Write(child, out);
    }
    if (wrote) {
      any = true;
    } else {
      out.resize(before);
    }
  }
  if (!any) {
    out.resize(start);
    return false;
  }
  out += '}';
  return true;
}

}  // namespace rfs::lucene::internal
