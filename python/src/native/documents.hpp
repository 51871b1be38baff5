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
  /// The same into rows[0, *filled), overwriting the rows already there so that their strings'
  /// memory is reused from batch to batch (the rows past *filled are left as they are).
  absl::Status ReadBatchInto(size_t max_rows, size_t max_bytes, std::vector<DocumentRow>& rows,
                             size_t* filled);
  /// Stops decoding and joins the reader threads; later batches are empty.
  void Close();

 private:
  explicit IndexDocumentReader(DocumentRequest request) : request_(std::move(request)) {}
  absl::Status OpenShard(int shard, uint64_t cursor);
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
  lucene::Document doc_;
};

}  // namespace rfs::python
