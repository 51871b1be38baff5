// ShardReader / DocumentCursor (docs/formats.md C.13, D.1-D.7).
#include "rfs/lucene/shard_reader.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "rfs/content/source_json.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/codecs/compound_internal.hpp"
#include "lucene/codecs/dispatch_internal.hpp"
#include "lucene/codecs/doc_values_internal.hpp"
#include "lucene/codecs/points_internal.hpp"
#include "lucene/codecs/stored_fields_internal.hpp"
#include "lucene/codecs/terms_internal.hpp"
#include "lucene/codecs/vectors_internal.hpp"
#include "lucene/rebuild/rebuilder_internal.hpp"
#include "lucene/uid_internal.hpp"

namespace rfs::lucene {

using core::StrCat;

struct ShardReader::State {
  std::shared_ptr<const core::IDirectory> dir;
  ShardReaderOptions options;
  SegmentInfos infos;
  std::vector<uint64_t> bases;  // segments + 1 entries
  // Each segment's `.fdt` is hashed once per reader, by the first cursor that opens it: the
  // parallel reader's threads each open every segment, and hashing a file is a pass over all of
  // it. The lock is held while hashing, so a second cursor waits for the verdict instead of
  // hashing too.
  mutable std::mutex verify_mu;
  mutable std::vector<bool> fdt_verified;  // by segment
};

namespace {

content::SourceFormat DetectFormat(std::span<const uint8_t> s) {
  if (s.size() >= 3 && s[0] == 0x3A && s[1] == 0x29 && s[2] == 0x0A) {
    return content::SourceFormat::kSmile;  // SMILE header ":)\n"
  }
  if (s.size() >= 3 && s[0] == 0xD9 && s[1] == 0xD9 && s[2] == 0xF7) {
    return content::SourceFormat::kCbor;  // self-described CBOR tag
  }
  if (!s.empty() && s[0] >= 0xA0 && s[0] <= 0xBF) {
    return content::SourceFormat::kCbor;  // CBOR major type 5 (map)
  }
  if (s.size() >= 3 && s[0] == '-' && s[1] == '-' && s[2] == '-') {
    return content::SourceFormat::kYaml;
  }
  return content::SourceFormat::kJson;
}

const char* FormatName(content::SourceFormat f) {
  switch (f) {
    case content::SourceFormat::kSmile:
      return "SMILE";
    case content::SourceFormat::kCbor:
      return "CBOR";
    case content::SourceFormat::kYaml:
      return "YAML";
    default:
      return "JSON";
  }
}

// A segment's files: the directory they are in (its compound file's when it has one, else the
// shard's) and its field infos.
struct SegmentFiles {
  std::shared_ptr<const core::IDirectory> dir;
  FieldInfos fields;
};

absl::StatusOr<SegmentFiles> OpenSegmentFiles(const std::shared_ptr<const core::IDirectory>& shard,
                                              const SegmentCommitInfo& s) {
  SegmentFiles out;
  out.dir = shard;
  if (s.info.is_compound) {
    RFS_ASSIGN_OR_RETURN(auto compound, CompoundDirectory::Open(shard, s.name, s.id));
    out.dir = std::move(compound);
  }
  RFS_ASSIGN_OR_RETURN(out.fields, ReadFieldInfos(*shard, *out.dir, s));
  return out;
}

// The `segment`th segment of a commit, OutOfRange past its last.
absl::StatusOr<const SegmentCommitInfo*> SegmentAt(const SegmentInfos& infos, size_t segment) {
  if (segment >= infos.segments.size()) {
    return absl::OutOfRangeError(StrCat("no segment ", segment));
  }
  return &infos.segments[segment];
}

}  // namespace

struct DocumentCursor::Impl {
  std::shared_ptr<const ShardReader::State> state;
  ReaderStats stats;
  size_t segment = 0;  // index into state->infos.segments
  int32_t doc = 0;     // next doc id within the segment

  // The open segment.
  bool open = false;
  std::shared_ptr<const core::IDirectory> segment_dir;
  LiveDocs live;
  std::unique_ptr<internal::ChunkCursor> chunks;
  int32_t id_field = -1, uid_field = -1, routing_field = -1, source_field = -1,
          recovery_source_field = -1;
  std::string uid_scratch;
  IStoredFieldsVerifier* verifier = nullptr;
  DocumentCursor::LargeChunkGate large_chunk_gate;
  // Source rebuilding (options.rebuild_plan): the open segment's field infos and doc values, the
  // stored fields the plan reads (by field number), and the last rebuilt source.
  FieldInfos fields;
  std::unique_ptr<internal::SegmentDocValues> doc_values;
  std::unique_ptr<internal::SegmentVectors> vectors;
  std::unique_ptr<internal::SegmentPoints> points;
  std::unique_ptr<internal::SegmentTerms> terms;
  std::unique_ptr<internal::SourceRebuilder> rebuilder;
  // options.read_versions: the open segment's `_version` doc values (in `doc_values`).
  internal::FieldDocValues* versions = nullptr;
  std::vector<int64_t> version_scratch;
  // Stored fields the rebuild reads, by field number: the plan field they give values to, and
  // whether they are its values over ignore_above.
  struct RebuildStoredField {
    size_t field = 0;
    bool original = false;
    bool ignored_source = false;
  };
  std::map<int32_t, RebuildStoredField> rebuild_stored;
  std::vector<internal::StoredValue> stored_values;
  std::string rebuilt_source;
  // Nested children of the block being read (live docs without an id since the last parent),
  // for plans with nested paths; `scan_back` after a seek into the middle of a segment, whose
  // first block may have begun before it.
  std::vector<int32_t> nested_children;
  bool scan_back = false;
  std::function<bool(size_t)> segment_filter;
  std::function<bool(size_t, int32_t)> doc_filter;

  const SegmentCommitInfo& seg() const { return state->infos.segments[segment]; }

  absl::Status OpenSegment() {
    const SegmentCommitInfo& s = seg();
    RFS_ASSIGN_OR_RETURN(SegmentFiles files, OpenSegmentFiles(state->dir, s));
    std::shared_ptr<const core::IDirectory> dir = std::move(files.dir);
    fields = std::move(files.fields);
    RFS_ASSIGN_OR_RETURN(live, ReadLiveDocs(*state->dir, *dir, s, fields));
    auto number = [&](std::string_view name) {
      const FieldInfo* f = fields.ByName(name);
      return f == nullptr ? -1 : f->number;
    };
    const SourceRebuildPlan* plan = state->options.rebuild_plan.get();
    // Solr's documents carry their uniqueKey as a plain stored string instead of `_id`.
    id_field = number(plan != nullptr && !plan->id_field.empty() ? plan->id_field : "_id");
    uid_field = number("_uid");
    routing_field = number("_routing");
    source_field = number("_source");
    recovery_source_field = number("_recovery_source");
    chunks.reset();
    if (live.CountLive() > 0) RFS_RETURN_IF_ERROR(OpenStoredFields(*dir));
    rebuild_stored.clear();
    doc_values.reset();
    vectors.reset();
    points.reset();
    terms.reset();
    if (state->options.rebuild_plan != nullptr) OpenRebuild(dir);
    versions = nullptr;
    if (state->options.read_versions && live.CountLive() > 0)
      RFS_RETURN_IF_ERROR(OpenVersions(dir));
    segment_dir = std::move(dir);
    open = true;
    return absl::OkStatus();
  }

  // The open segment's stored fields, checksummed first when asked and no one else does.
  absl::Status OpenStoredFields(const core::IDirectory& dir) {
    const SegmentCommitInfo& s = seg();
    const bool verified_elsewhere = verifier != nullptr && verifier->Covers(segment);
    std::unique_lock<std::mutex> verifying;
    bool verify = false;
    if (state->options.verify_checksums && !verified_elsewhere) {
      verifying = std::unique_lock(state->verify_mu);
      verify = !state->fdt_verified[segment];
      if (!verify) verifying.unlock();
    }
    RFS_ASSIGN_OR_RETURN(chunks, internal::ChunkCursor::Open(dir, s, verify));
    if (verify) state->fdt_verified[segment] = true;
    if (large_chunk_gate) chunks->set_large_chunk_gate(large_chunk_gate);
    if (verified_elsewhere && state->options.verify_checksums) {
      chunks->set_chunk_bytes_observer(
          [verifier = verifier, segment = segment](
              const std::shared_ptr<const core::IRandomAccessFile>& file, uint64_t offset,
              std::span<const uint8_t> bytes) { verifier->OnChunk(segment, file, offset, bytes); });
    }
    return absl::OkStatus();
  }

  // The open segment's readers for the rebuild plan, and the stored fields it reads.
  void OpenRebuild(const std::shared_ptr<const core::IDirectory>& dir) {
    const SegmentCommitInfo& s = seg();
    if (rebuilder == nullptr) {
      rebuilder = std::make_unique<internal::SourceRebuilder>(state->options.rebuild_plan);
    }
    doc_values = std::make_unique<internal::SegmentDocValues>(state->dir, dir, s, fields);
    vectors = std::make_unique<internal::SegmentVectors>(dir, s, fields);
    points = std::make_unique<internal::SegmentPoints>(dir, s, fields);
    terms = std::make_unique<internal::SegmentTerms>(dir, s, fields);
    rebuilder->StartSegment(*doc_values, *vectors, points.get(), terms.get());
    if (!state->options.rebuild_plan->child_path_field.empty()) {
      rebuilder->set_stored_reader([this](int32_t d, std::vector<internal::StoredValue>& out) {
        return StoredValuesOf(d, out);
      });
    }
    const auto& plan_fields = state->options.rebuild_plan->fields;
    for (size_t f = 0; f < plan_fields.size(); ++f) {
      if (plan_fields[f].stored) {
        if (const FieldInfo* info = fields.ByName(plan_fields[f].path)) {
          rebuild_stored[info->number] = {f, false};
        }
      }
      if (!plan_fields[f].original_values_field.empty()) {
        if (const FieldInfo* info = fields.ByName(plan_fields[f].original_values_field)) {
          rebuild_stored[info->number] = {f, true};
        }
      }
    }
    if (state->options.rebuild_plan->reads_ignored_source) {
      if (const FieldInfo* info = fields.ByName("_ignored_source")) {
        rebuild_stored[info->number] = {0, false, true};
      }
    }
  }

  // The open segment's `_version` doc values (options.read_versions).
  absl::Status OpenVersions(const std::shared_ptr<const core::IDirectory>& dir) {
    const SegmentCommitInfo& s = seg();
    if (doc_values == nullptr) {
      doc_values = std::make_unique<internal::SegmentDocValues>(state->dir, dir, s, fields);
    }
    RFS_ASSIGN_OR_RETURN(versions, doc_values->Field("_version"));
    if (versions == nullptr) {
      // Elasticsearch 6+ and OpenSearch give every document one (VersionFieldMapper).
      return absl::UnimplementedError(StrCat("segment ", s.name,
                                             " has no _version doc values: the versions of its "
                                             "documents cannot be read"));
    }
    return absl::OkStatus();
  }

  void CloseSegment() {
    open = false;
    chunks.reset();
    versions = nullptr;
    doc_values.reset();
    vectors.reset();
    points.reset();
    terms.reset();
    segment_dir.reset();
    live = LiveDocs();
    nested_children.clear();
    ++segment;
    doc = 0;
  }

  // A stored field the rebuild reads, copied out of its chunk.
  void KeepStoredValue(const StoredField& f, const RebuildStoredField& rebuild,
                       std::vector<internal::StoredValue>& into) {
    internal::StoredValue& v = into.emplace_back();
    v.field = rebuild.field;
    v.original = rebuild.original;
    v.ignored_source = rebuild.ignored_source;
    v.text.assign(f.string_value());
    v.long_value = f.long_value;
    v.double_value = f.double_value;
    v.is_number = f.type != StoredFieldType::kString && f.type != StoredFieldType::kBytes;
    if (f.type == StoredFieldType::kInt || f.type == StoredFieldType::kLong) {
      v.double_value = static_cast<double>(f.long_value);
    }
  }

  absl::Status MalformedStoredFields(const internal::DecodedChunk& chunk, int32_t d) const {
    return core::DataLossAt(chunks->file_name(), chunk.file_offset,
                            StrCat("malformed stored fields of doc ", d, " of segment ", seg().name,
                                   " in the chunk at this offset"));
  }

  // The stored values the plan reads of doc `d` of the open segment (a Solr child's).
  absl::Status StoredValuesOf(int32_t d, std::vector<internal::StoredValue>& out) {
    RFS_ASSIGN_OR_RETURN(const internal::DecodedChunk* chunk, chunks->ChunkFor(d));
    const int32_t index = d - chunk->doc_base;
    out.clear();
    const bool ok = internal::ParseFields(
        chunk->doc_bytes(index), chunk->num_fields[index], chunks->format().order,
        [&](const StoredField& f) {
          if (auto it = rebuild_stored.find(f.number); it != rebuild_stored.end()) {
            KeepStoredValue(f, it->second, out);
          }
          return true;
        },
        chunks->format().lucene4);
    if (!ok) {
      return MalformedStoredFields(*chunk, d);
    }
    return absl::OkStatus();
  }

  // Rebuilds doc `d`'s source through the plan where it has none (or always, with
  // rebuild_stored_sources), or completes a filtered one; `source` then views the result.
  absl::Status RebuildSource(int32_t d, Document& out, std::span<const uint8_t>& source,
                             bool& has_source) {
    if (has_source && rebuilder->plan().completes_partial_sources &&
        !state->options.rebuild_stored_sources) {
      // A filtered _source: completed with the fields the filter left out.
      std::string rebuilt_fields;
      RFS_RETURN_IF_ERROR(
          core::WithContext(rebuilder->Rebuild(d, stored_values, rebuilt_fields, nested_children),
                            StrCat("segment ", seg().name, " (_id ", out.id, ")")));
      if (rebuilt_fields != "{}") {
        rebuilt_source.clear();
        RFS_RETURN_IF_ERROR(
            content::AppendSourceAsJson(source, DetectFormat(source), rebuilt_source));
        RFS_RETURN_IF_ERROR(
            core::WithContext(MergeRebuiltFields(rebuilt_fields, rebuilt_source),
                              StrCat("segment ", seg().name, " (_id ", out.id, ")")));
        source = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(rebuilt_source.data()),
                                          rebuilt_source.size());
        out.rebuilt = true;
        out.rebuilt_inexact = rebuilder->last_inexact();
      }
    } else if (!has_source || state->options.rebuild_stored_sources) {
      RFS_RETURN_IF_ERROR(
          core::WithContext(rebuilder->Rebuild(d, stored_values, rebuilt_source, nested_children),
                            StrCat("segment ", seg().name, " (_id ", out.id, ")")));
      source = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(rebuilt_source.data()),
                                        rebuilt_source.size());
      has_source = true;
      out.rebuilt = true;
      out.rebuilt_inexact = rebuilder->last_inexact();
    }
    return absl::OkStatus();
  }

  // Fills `out` from doc `d` of the open segment. Returns false for a doc
  // without a stored id (nested child).
  absl::StatusOr<bool> Extract(int32_t d, Document& out) {
    RFS_ASSIGN_OR_RETURN(const internal::DecodedChunk* chunk, chunks->ChunkFor(d));
    const int32_t index = d - chunk->doc_base;
    bool has_id = false;
    bool has_routing = false;
    bool bad_id = false;
    std::span<const uint8_t> source, recovery;
    bool has_source = false, has_recovery = false;
    bool has_type = false;
    stored_values.clear();
    const bool keeps_id_value =
        rebuilder != nullptr && !rebuilder->plan().id_field.empty() && !rebuild_stored.empty();
    const bool ok = internal::ParseFields(
        chunk->doc_bytes(index), chunk->num_fields[index], chunks->format().order,
        [&](const StoredField& f) {
          const int32_t n = f.number;
          if (n == id_field) {
            if (f.type == StoredFieldType::kBytes) {
              bad_id = !DecodeUid(f.bytes, out.id).ok();
            } else {
              out.id.assign(f.string_value());
            }
            has_id = true;
            // Solr's uniqueKey is also one of the document's fields.
            if (keeps_id_value) {
              if (auto it = rebuild_stored.find(n); it != rebuild_stored.end()) {
                KeepStoredValue(f, it->second, stored_values);
              }
            }
          } else if (n == uid_field) {
            uid_scratch.assign(f.string_value());
            std::string type;
            bad_id = !SplitUid(uid_scratch, type, out.id).ok();
            out.type = std::move(type);
            has_type = true;
            has_id = true;
          } else if (n == routing_field) {
            if (!out.routing.has_value()) out.routing.emplace();
            out.routing->assign(f.string_value());
            has_routing = true;
          } else if (n == source_field) {
            source = f.bytes;
            has_source = true;
          } else if (n == recovery_source_field) {
            recovery = f.bytes;
            has_recovery = true;
          } else if (!rebuild_stored.empty()) {
            if (auto it = rebuild_stored.find(n); it != rebuild_stored.end()) {
              KeepStoredValue(f, it->second, stored_values);
            }
          }
          return true;
        },
        chunks->format().lucene4);
    if (!ok) {
      return MalformedStoredFields(*chunk, d);
    }
    if (bad_id) {
      return core::DataLossAt(chunks->file_name(), chunk->file_offset,
                              StrCat("invalid _id/_uid of doc ", d, " of segment ", seg().name));
    }
    if (!has_id) return false;
    if (rebuilder != nullptr && !rebuilder->plan().child_path_field.empty()) {
      // A Solr child has an id of its own: its nest path tells it apart.
      RFS_ASSIGN_OR_RETURN(bool child, rebuilder->IsChild(d));
      if (child) return false;
    }
    if (!has_type) out.type.reset();
    if (!has_routing) out.routing.reset();
    out.from_recovery_source = false;
    if (!has_source && has_recovery) {
      source = recovery;
      has_source = true;
      out.from_recovery_source = true;
    }
    out.rebuilt = false;
    out.rebuilt_inexact = false;
    out.deleted = false;
    if (rebuilder != nullptr) RFS_RETURN_IF_ERROR(RebuildSource(d, out, source, has_source));
    out.has_source = has_source;
    out.source = has_source ? source : std::span<const uint8_t>();
    out.source_format = has_source ? DetectFormat(source) : content::SourceFormat::kNone;
    // The last document of a huge chunk: no later document reads the chunk's bytes, so its
    // consumer may release them as it copies the source out.
    out.source_releasable = has_source && !out.rebuilt &&
                            chunk->total >= internal::ChunkDecoder::kLargeChunkBytes &&
                            index + 1 == chunk->chunk_docs;
    if (out.source_releasable) chunks->ForgetChunkBytes();
    return true;
  }

  absl::StatusOr<bool> Next(Document& out) {
    const auto& segments = state->infos.segments;
    while (segment < segments.size()) {
      if (!open) {
        if (segment_filter && !segment_filter(segment)) {
          ++segment;
          doc = 0;
          nested_children.clear();
          continue;
        }
        RFS_RETURN_IF_ERROR(OpenSegment());
      }
      const int32_t max_doc = seg().max_doc();
      const bool track_children = rebuilder != nullptr && rebuilder->has_nested();
      if (scan_back) {
        scan_back = false;
        if (track_children) RFS_RETURN_IF_ERROR(ChildrenBefore(doc));
      }
      while (doc < max_doc) {
        const int32_t d = doc++;
        if (!live.IsLive(d)) {
          ++stats.deleted_skipped;
          nested_children.clear();
          continue;
        }
        if (doc_filter && !doc_filter(segment, d)) {
          nested_children.clear();
          continue;
        }
        RFS_ASSIGN_OR_RETURN(bool has_id, Extract(d, out));
        if (!has_id) {
          ++stats.nested_skipped;
          if (track_children) nested_children.push_back(d);
          continue;
        }
        nested_children.clear();
        if (out.rebuilt) {
          ++stats.no_source_docs;
          ++stats.rebuilt_docs;
        } else if (!out.has_source) {
          ++stats.no_source_docs;
          if (state->options.skip_documents_without_source) continue;
        } else if (out.source_format != content::SourceFormat::kJson &&
                   !state->options.pass_through_non_json_source) {
          return absl::UnimplementedError(StrCat("segment ", seg().name, " doc ", d, " (_id ",
                                                 out.id, "): ", FormatName(out.source_format),
                                                 " _source is not supported yet"));
        }
        if (versions != nullptr) {
          RFS_RETURN_IF_ERROR(versions->Numbers(d, version_scratch));
          if (version_scratch.empty()) {
            return absl::DataLossError(StrCat("segment ", seg().name, " doc ", d, " (_id ", out.id,
                                              "): no _version doc value"));
          }
          out.version = version_scratch.front();
        }
        out.cursor = state->bases[segment] + static_cast<uint64_t>(d);
        ++stats.docs_emitted;
        stats.source_bytes += out.source.size();
        return true;
      }
      CloseSegment();
    }
    return false;
  }

  // Whether doc `d` of the open segment has a stored _id/_uid (a root document).
  absl::StatusOr<bool> HasStoredId(int32_t d) {
    RFS_ASSIGN_OR_RETURN(const internal::DecodedChunk* chunk, chunks->ChunkFor(d));
    const int32_t index = d - chunk->doc_base;
    bool has_id = false;
    const bool ok = internal::ParseFields(
        chunk->doc_bytes(index), chunk->num_fields[index], chunks->format().order,
        [&](const StoredField& f) {
          has_id = has_id || f.number == id_field || f.number == uid_field;
          return !has_id;
        },
        chunks->format().lucene4);
    if (!ok) {
      return MalformedStoredFields(*chunk, d);
    }
    return has_id;
  }

  // The live children just before `first` (a block that began before a seek), ascending.
  absl::Status ChildrenBefore(int32_t first) {
    nested_children.clear();
    if (chunks == nullptr) return absl::OkStatus();
    for (int32_t j = first - 1; j >= 0 && live.IsLive(j); --j) {
      bool root = false;
      if (!rebuilder->plan().child_path_field.empty()) {
        RFS_ASSIGN_OR_RETURN(bool child, rebuilder->IsChild(j));
        root = !child;
      } else {
        RFS_ASSIGN_OR_RETURN(root, HasStoredId(j));
      }
      if (root) break;
      nested_children.push_back(j);
    }
    std::reverse(nested_children.begin(), nested_children.end());
    return absl::OkStatus();
  }

  void Seek(uint64_t cursor) {
    const auto& bases = state->bases;
    // First segment whose range ends after `cursor`.
    size_t i = 0;
    while (i + 1 < bases.size() && bases[i + 1] <= cursor) ++i;
    const bool reopen = !open || i != segment;
    if (reopen && open) {
      open = false;
      chunks.reset();
      versions = nullptr;
      segment_dir.reset();
    }
    segment = i;
    doc = i < state->infos.segments.size() ? static_cast<int32_t>(cursor - bases[i]) : 0;
    nested_children.clear();
    scan_back = doc > 0;
  }
};

DocumentCursor::DocumentCursor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DocumentCursor::~DocumentCursor() = default;

absl::StatusOr<std::optional<Document>> DocumentCursor::Next() {
  Document doc;
  RFS_ASSIGN_OR_RETURN(bool more, impl_->Next(doc));
  if (!more) return std::optional<Document>();
  return std::optional<Document>(std::move(doc));
}

absl::StatusOr<bool> DocumentCursor::Next(Document& doc) { return impl_->Next(doc); }

absl::Status DocumentCursor::SeekTo(uint64_t cursor) {
  impl_->Seek(cursor);
  return absl::OkStatus();
}

uint64_t DocumentCursor::position() const {
  if (impl_->segment >= impl_->state->infos.segments.size()) {
    return impl_->state->bases.back();
  }
  return impl_->state->bases[impl_->segment] + static_cast<uint64_t>(impl_->doc);
}

const ReaderStats& DocumentCursor::stats() const { return impl_->stats; }

void DocumentCursor::set_segment_filter(std::function<bool(size_t)> filter) {
  impl_->segment_filter = std::move(filter);
}

void DocumentCursor::set_doc_filter(std::function<bool(size_t, int32_t)> filter) {
  impl_->doc_filter = std::move(filter);
}

void DocumentCursor::set_stored_fields_verifier(IStoredFieldsVerifier* verifier) {
  impl_->verifier = verifier;
}

void DocumentCursor::set_large_chunk_gate(LargeChunkGate gate) {
  impl_->large_chunk_gate = std::move(gate);
}

ShardReader::ShardReader(std::shared_ptr<const State> state) : state_(std::move(state)) {}
ShardReader::~ShardReader() = default;

namespace {

// "_<segment>_<generation>...": a file written by an update of the segment after it was flushed
// (field infos, deletes, doc values updates such as soft deletes), the generation in lower-case
// base 36. Codec suffixes ("_Lucene80_0") begin with an upper-case letter.
std::optional<std::string_view> UpdatedSegment(std::string_view name) {
  if (!name.starts_with('_')) return std::nullopt;
  const size_t first = name.find_first_of("_.", 1);
  if (first == std::string_view::npos || name[first] != '_') return std::nullopt;
  const size_t end = name.find_first_of("_.", first + 1);
  if (end == std::string_view::npos || end == first + 1) return std::nullopt;
  const std::string_view generation = name.substr(first + 1, end - first - 1);
  const bool base36 = std::all_of(generation.begin(), generation.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z');
  });
  if (!base36) return std::nullopt;
  return name.substr(0, first);
}

// The files a read of documents opens, roughly in the order it opens them: the commit, each
// segment's info, then its field infos (the newest generation), deletes (and soft deletes'
// doc-values updates) and stored fields (or its compound file); with a rebuild plan, every
// file. Handed to the directory as a prefetch hint, so that a remote one fetches them in
// parallel instead of one round trip after another.
std::vector<std::string> FilesReadForDocuments(const core::IDirectory& dir,
                                               const ShardReaderOptions& options) {
  static constexpr std::string_view kDocumentExtensions[] = {".liv", ".del", ".fdm",
                                                             ".fdt", ".cfe", ".cfs"};
  std::vector<std::string> files = dir.ListFiles();
  std::set<std::string_view> updated_field_infos;  // segments with a newer .fnm
  for (const std::string& name : files) {
    if (!name.ends_with(".fnm")) continue;
    if (auto segment = UpdatedSegment(name)) updated_field_infos.insert(*segment);
  }
  std::vector<std::string> commit, infos, rest;
  for (const std::string& name : files) {
    const bool updated = UpdatedSegment(name).has_value();
    if (name == options.segments_file ||
        (options.segments_file.empty() && name.starts_with("segments_"))) {
      commit.push_back(name);
    } else if (name.ends_with(".si")) {
      infos.push_back(name);
    } else if (options.rebuild_plan != nullptr ||
               (options.read_versions && (name.ends_with(".dvm") || name.ends_with(".dvd"))) ||
               std::any_of(std::begin(kDocumentExtensions), std::end(kDocumentExtensions),
                           [&](std::string_view ext) { return name.ends_with(ext); }) ||
               (updated &&
                (name.ends_with(".fnm") || name.ends_with(".dvm") || name.ends_with(".dvd"))) ||
               (name.ends_with(".fnm") &&
                !updated_field_infos.contains(name.substr(0, name.size() - 4)))) {
      rest.push_back(name);
    }
  }
  commit.insert(commit.end(), infos.begin(), infos.end());
  commit.insert(commit.end(), rest.begin(), rest.end());
  return commit;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShardReader>> ShardReader::Open(
    std::shared_ptr<const core::IDirectory> dir, ShardReaderOptions options) {
  dir->Prefetch(FilesReadForDocuments(*dir, options));
  auto state = std::make_shared<State>();
  RFS_ASSIGN_OR_RETURN(state->infos, ReadSegmentInfos(*dir, options.segments_file));
  state->dir = std::move(dir);
  state->options = std::move(options);
  state->bases.push_back(0);
  for (const auto& seg : state->infos.segments) {
    state->bases.push_back(state->bases.back() + static_cast<uint64_t>(seg.max_doc()));
  }
  state->fdt_verified.assign(state->infos.segments.size(), false);
  return std::unique_ptr<ShardReader>(new ShardReader(std::move(state)));
}

const SegmentInfos& ShardReader::segment_infos() const { return state_->infos; }
const std::vector<SegmentCommitInfo>& ShardReader::segments() const {
  return state_->infos.segments;
}
uint64_t ShardReader::segment_base(size_t i) const { return state_->bases[i]; }
uint64_t ShardReader::max_cursor() const { return state_->bases.back(); }

absl::StatusOr<std::unique_ptr<DocumentCursor>> ShardReader::OpenAt(uint64_t cursor) const {
  auto impl = std::make_unique<DocumentCursor::Impl>();
  impl->state = state_;
  impl->Seek(cursor);
  return std::unique_ptr<DocumentCursor>(new DocumentCursor(std::move(impl)));
}

absl::StatusOr<std::vector<bool>> ShardReader::LiveDocsOf(size_t segment) const {
  RFS_ASSIGN_OR_RETURN(const SegmentCommitInfo* found, SegmentAt(state_->infos, segment));
  const SegmentCommitInfo& s = *found;
  RFS_ASSIGN_OR_RETURN(SegmentFiles files, OpenSegmentFiles(state_->dir, s));
  RFS_ASSIGN_OR_RETURN(LiveDocs live, ReadLiveDocs(*state_->dir, *files.dir, s, files.fields));
  std::vector<bool> out(static_cast<size_t>(s.max_doc()));
  for (int32_t d = 0; d < s.max_doc(); ++d) out[static_cast<size_t>(d)] = live.IsLive(d);
  return out;
}

absl::StatusOr<std::vector<std::string>> ShardReader::FieldNamesOf(size_t segment) const {
  RFS_ASSIGN_OR_RETURN(const SegmentCommitInfo* s, SegmentAt(state_->infos, segment));
  RFS_ASSIGN_OR_RETURN(SegmentFiles files, OpenSegmentFiles(state_->dir, *s));
  std::vector<std::string> names;
  names.reserve(files.fields.fields().size());
  for (const FieldInfo& f : files.fields.fields()) names.push_back(f.name);
  return names;
}

}  // namespace rfs::lucene
