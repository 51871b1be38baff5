// The live documents of one index of a snapshot (every shard, or one from a cursor), read in
// batches with their sources as one-line JSON: what the module's iterator and Arrow stream share.
// Decoding runs on lucene::ParallelDocumentReader's threads (the tools' reader threads) or on the
// calling thread; the reader owns those threads and joins them when closed or destroyed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rfs/lucene/parallel_reader.hpp"
#include "rfs/lucene/shard_reader.hpp"
#include "rfs/snapshot/models.hpp"

#include "absl/status/statusor.h"
#include "repository.hpp"

namespace rfs::python {

struct DocumentRow {
  int shard = 0;
  uint64_t cursor = 0;
  std::string id;
  /// The mapping type: from `_uid` (Elasticsearch 5) or the index's single type (before 7).
  std::optional<std::string> type;
  std::optional<std::string> routing;
  /// `_source` as one line of JSON (SMILE, CBOR and YAML sources converted).
  std::string source;
};

/// The documents of one range of a shard (or of a part of one) as a decoding thread formats them
/// for the Arrow stream: each text column's values laid end to end, with each row's end offset in
/// it. The stream's batches are slices of it and keep it until they are released.
struct RowRange : lucene::ScannedRange {
  std::string ids, routings, sources;
  std::vector<size_t> id_ends, routing_ends, source_ends;
  std::vector<uint8_t> routed;  ///< 1 where the row has a routing
  uint64_t without_source = 0;
  uint64_t unconvertible = 0;
  size_t rows() const { return source_ends.size(); }
};

struct DocumentRequest {
  std::shared_ptr<const OpenRepository> repository;
  const snapshot::SnapshotEntry* snapshot = nullptr;
  std::string index;
  /// Default: every shard, in order.
  std::optional<int> shard;
  /// Needs `shard`.
  uint64_t from_cursor = 0;
  bool rebuild_sourceless = false;
  /// Decoding threads per shard; 0 decodes on the calling thread.
  int reader_threads = 0;
};

/// What a read left out, as SnapshotInspector docs leaves it out.
struct SkippedCounts {
  uint64_t without_source = 0;
  uint64_t unconvertible = 0;
};

class IndexDocumentReader {
 public:
  /// Checks the request (the index exists, the shard is in range, a cursor has a shard, the
  /// index keeps a complete `_source` unless rebuilding) before any shard is opened.
  static absl::StatusOr<std::unique_ptr<IndexDocumentReader>> Open(DocumentRequest request);
  ~IndexDocumentReader();

  const snapshot::IndexMetadata& metadata() const { return metadata_; }
  const SkippedCounts& skipped() const { return skipped_; }

  /// Appends up to `max_rows` documents to `rows`, stopping early once their sources reach
  /// `max_bytes`; appends none at the end of the index.
  absl::Status ReadBatch(size_t max_rows, size_t max_bytes, std::vector<DocumentRow>& rows);
  /// The next range of documents, formatted on the decoding threads (at least one, whatever
  /// reader_threads says), across the shards in order; null after the last one.
  absl::StatusOr<std::unique_ptr<RowRange>> NextRange();
  /// Stops decoding and joins the reader threads; later batches are empty.
  void Close();

 private:
  explicit IndexDocumentReader(DocumentRequest request) : request_(std::move(request)) {}
  // Opens shard `shard`'s reader (closing the previous one and what reads through it).
  absl::Status OpenShardReader(int shard);
  absl::Status OpenShard(int shard, uint64_t cursor);
  absl::Status OpenShardScan(int shard, uint64_t cursor);
  // Fills `row` from `doc`; false when it is left out (no source, or no JSON form).
  absl::StatusOr<bool> FillRow(const lucene::Document& doc, DocumentRow& row);

  DocumentRequest request_;
  snapshot::IndexMetadata metadata_;
  lucene::ShardReaderOptions reader_options_;
  std::optional<std::string> mapping_type_;
  int next_shard_ = 0;
  int last_shard_ = -1;
  int current_shard_ = -1;
  bool closed_ = false;
  SkippedCounts skipped_;
  // The documents reader reads through shard_reader_: declared after it, destroyed before it.
  std::unique_ptr<lucene::ShardReader> shard_reader_;
  std::unique_ptr<lucene::IDocumentReader> documents_;
  std::unique_ptr<lucene::ParallelShardScan> scan_;  // NextRange's, in place of documents_
  lucene::Document doc_;
};

}  // namespace rfs::python
