// Every live Elasticsearch/OpenSearch document of one shard's Lucene index
// (docs/formats.md C.13 and D).
//
// ShardReader opens the commit (segments_N) of an IDirectory: a plain Lucene
// folder or a snapshot shard viewed as one. Segments are ordered by name (see
// segment_infos.hpp) and every document gets a shard-global cursor: the sum of
// maxDoc of the segments before its own plus its doc id. A DocumentCursor
// pulls the live documents in cursor order, skipping hard- and soft-deleted
// docs and nested child docs (no stored `_id`/`_uid`); it can start at any
// cursor, so an interrupted migration resumes exactly where it stopped.
//
// Per document: `_id` (Uid-decoded, D.2) or `_uid` "type#id" (ES 5, D.3),
// `_routing`, and the `_source` bytes as stored (D.5; `_recovery_source`
// when `_source` is missing). Documents without any source are counted and
// surfaced (Document::has_source == false) unless the options skip them. On request, the
// document's `_version` from its doc values (ShardReaderOptions::read_versions).
//
// Thread-safety: a ShardReader is immutable after Open and may be shared by
// threads, each opening its own DocumentCursor. A DocumentCursor is not
// thread-safe: one per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rfs/content/source_json.hpp"
#include "rfs/core/memory_budget.hpp"
#include "rfs/core/random_access.hpp"
#include "rfs/lucene/segment_infos.hpp"
#include "rfs/lucene/source_rebuild.hpp"

#include "absl/status/statusor.h"

namespace rfs::lucene {

struct ShardReaderOptions {
  /// The commit to read, e.g. "segments_5"; empty for the newest.
  std::string segments_file;
  /// Skip (but still count) live documents that have no `_source` nor
  /// `_recovery_source`. When false they are returned with has_source false.
  bool skip_documents_without_source = false;
  /// Return SMILE/CBOR/YAML sources as they are instead of failing the read
  /// with Unimplemented.
  bool pass_through_non_json_source = false;
  /// Check the CRC-32 of every `.fdt` before reading it (small files are
  /// always checked). Costs one extra pass over the stored fields data.
  bool verify_checksums = true;
  /// When set, a live document without `_source` (nor `_recovery_source`) is rebuilt from its
  /// doc values and stored fields through this plan (source_rebuild.hpp) and returned with
  /// `rebuilt` true.
  std::shared_ptr<const SourceRebuildPlan> rebuild_plan;
  /// With a plan: rebuild every document, also those with a stored `_source` (to check what a
  /// plan gives against the sources a snapshot holds).
  bool rebuild_stored_sources = false;
  /// Fill Document::version from the `_version` NumericDocValues field, which Elasticsearch 6+
  /// and OpenSearch write for every document (VersionFieldMapper; the engine sets the value as it
  /// indexes, InternalEngine). A segment without them, or in a doc-values format not read
  /// (Lucene 6 and older: Elasticsearch 5 and older), fails the read naming the segment. Off, no
  /// doc values are opened for it.
  bool read_versions = false;
};

struct Document {
  std::string id;
  std::optional<std::string> type;     ///< from `_uid` (ES 5) only
  std::optional<std::string> routing;  ///< `_routing`
  /// `_source` bytes; valid until the next call on the cursor.
  std::span<const uint8_t> source;
  bool has_source = false;
  bool from_recovery_source = false;  ///< source came from _recovery_source
  bool rebuilt = false;               ///< source rebuilt from doc values and stored fields
  /// Rebuilt with a value that may differ from the one indexed (RebuildField::exactness).
  bool rebuilt_inexact = false;
  /// A delete of `id` (with its `routing`) rather than a document to index: delta readers
  /// (shard_delta.hpp) emit these for documents gone since the previous snapshot. No source.
  bool deleted = false;
  content::SourceFormat source_format = content::SourceFormat::kNone;
  /// The document's `_version` in the source, with ShardReaderOptions::read_versions (0 without:
  /// versions start at 1).
  int64_t version = 0;
  /// Shard-global document number (segment base + doc id).
  uint64_t cursor = 0;
  /// The reader does not read `source`'s bytes again (the last document of a huge stored-fields
  /// chunk, which is decoded afresh if asked for again): a consumer that copies the source out
  /// may give its pages back as it goes (core::AppendJsonOneLineReleasing), so a huge document
  /// is not held twice. They then read as zeros.
  bool source_releasable = false;
};

struct ReaderStats {
  uint64_t docs_emitted = 0;
  uint64_t deleted_skipped = 0;  ///< hard or soft deleted
  uint64_t nested_skipped = 0;   ///< live docs without stored _id/_uid
  uint64_t no_source_docs = 0;   ///< live docs with an id but no source (rebuilt ones included)
  uint64_t rebuilt_docs = 0;     ///< of those, rebuilt through the options' plan
  uint64_t source_bytes = 0;     ///< total bytes of emitted sources
};

class ShardReader;

/// Live documents of a shard in cursor order, one at a time: a DocumentCursor,
/// or a ParallelDocumentReader (parallel_reader.hpp) decoding ahead on threads.
class IDocumentReader {
 public:
  virtual ~IDocumentReader() = default;
  /// Fills `doc` with the next live document (its source valid until the
  /// next call); false at the end.
  virtual absl::StatusOr<bool> Next(Document& doc) = 0;
  /// The cursor the next call starts from: every document before it was
  /// returned or is not live.
  virtual uint64_t position() const = 0;
};

/// Verifies the checksums of stored-fields files (`.fdt`) from the chunks cursors decode, instead
/// of the pass over each whole file a cursor otherwise makes before reading it: the bytes are
/// hashed while in cache, and the file is read once (ParallelShardScan does this for the segments
/// it reads whole). Called from several cursors' threads at once.
class IStoredFieldsVerifier {
 public:
  virtual ~IStoredFieldsVerifier() = default;
  /// Whether segment `segment`'s `.fdt` is verified here (cursors then skip their own pass).
  virtual bool Covers(size_t segment) const = 0;
  /// The compressed bytes of one chunk of that `.fdt`, at `offset` of `file`.
  virtual void OnChunk(size_t segment, const std::shared_ptr<const core::IRandomAccessFile>& file,
                       uint64_t offset, std::span<const uint8_t> bytes) = 0;
};

class DocumentCursor final : public IDocumentReader {
 public:
  ~DocumentCursor() override;

  /// Hands the `.fdt` checksums of the segments `verifier` covers to it (see
  /// IStoredFieldsVerifier). Set before the first Next; `verifier` must outlive the cursor.
  void set_stored_fields_verifier(IStoredFieldsVerifier* verifier);

  /// Called with the decoded size of each stored-fields chunk of 4 MiB or more (a huge
  /// document's) before it is decompressed, on the cursor's thread, so the caller can wait for
  /// memory (core::MemoryBudget); an error ends the read with it. What it returns (a
  /// MemoryBudget::HoldLargeDocument, or nullptr) is kept until the cursor decodes the next chunk.
  /// Set before the first Next.
  using LargeChunkGate =
      std::function<absl::StatusOr<core::MemoryBudget::LargeDocumentHold>(size_t decoded_bytes)>;
  void set_large_chunk_gate(LargeChunkGate gate);

  /// The next live document, std::nullopt at the end of the shard.
  absl::StatusOr<std::optional<Document>> Next();
  /// Same, filling `doc` in place (reusing its string buffers). Returns
  /// false at the end of the shard.
  absl::StatusOr<bool> Next(Document& doc) override;

  /// Positions the cursor so the next document returned is the first live
  /// one with cursor >= `cursor` (past the end: the cursor is exhausted).
  absl::Status SeekTo(uint64_t cursor);
  /// The cursor the next call starts from.
  uint64_t position() const override;
  const ReaderStats& stats() const;

  /// Reads only the segments (by index in ShardReader::segments()) `filter` accepts, without
  /// opening the others. Set before the first Next.
  void set_segment_filter(std::function<bool(size_t segment)> filter);
  /// Reads only the live documents `filter` accepts (by segment index and doc id); the others
  /// are skipped as if deleted, without decoding them. Set before the first Next.
  void set_doc_filter(std::function<bool(size_t segment, int32_t doc)> filter);

 private:
  friend class ShardReader;
  struct Impl;
  explicit DocumentCursor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class ShardReader {
 public:
  /// Reads segments_N and every `.si`. Per-segment files are opened lazily by
  /// cursors.
  static absl::StatusOr<std::unique_ptr<ShardReader>> Open(
      std::shared_ptr<const core::IDirectory> dir, ShardReaderOptions options = {});
  ~ShardReader();

  const SegmentInfos& segment_infos() const;
  /// Segments in cursor order.
  const std::vector<SegmentCommitInfo>& segments() const;
  /// The cursor of doc 0 of segments()[i].
  uint64_t segment_base(size_t i) const;
  /// One past the largest cursor (sum of maxDoc).
  uint64_t max_cursor() const;

  /// A cursor positioned at `cursor` (see DocumentCursor::SeekTo).
  absl::StatusOr<std::unique_ptr<DocumentCursor>> OpenAt(uint64_t cursor = 0) const;
  /// Which docs of segments()[i] are live (hard and soft deletes applied), by doc id.
  absl::StatusOr<std::vector<bool>> LiveDocsOf(size_t segment) const;
  /// The names of the fields of segments()[i] (its field infos), in file order.
  absl::StatusOr<std::vector<std::string>> FieldNamesOf(size_t segment) const;

 private:
  friend class DocumentCursor;
  struct State;
  explicit ShardReader(std::shared_ptr<const State> state);
  std::shared_ptr<const State> state_;
};

}  // namespace rfs::lucene
