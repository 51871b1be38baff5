// IDocumentSink: where DocumentReindexer delivers batches of documents, and the two sinks rfs
// ships: OpenSearchBulkSink (`_bulk` into a cluster) and NdjsonDirectorySink (replayable bulk
// files, the embedded default target).
//
// A sink writes a batch and reports, per document, whether it failed; it never retries (the
// reindexer retries with backoff and decides which failures are permanent). A whole-call error
// means no document of the batch can be assumed written: transient codes (Unavailable,
// DeadlineExceeded, ResourceExhausted) are retried, any other code fails the shard. When Write
// returns, every document not listed as failed is durably accepted by the target.
//
// Thread safety: Write may be called concurrently (up to `--max-connections` batches in flight).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/reindex/bulk_format.hpp"
#include "rfs/reindex/failed_document_sink.hpp"
#include "rfs/reindex/source_document.hpp"

#include "absl/status/statusor.h"

namespace rfs::opensearch {
class OpenSearchClient;
}  // namespace rfs::opensearch

namespace rfs::reindex {

/// A document the target did not accept.
struct ItemFailure {
  /// Position within the span passed to Write.
  size_t position = 0;
  /// HTTP status of the item (429 and 5xx are worth retrying).
  int status = 0;
  /// OpenSearch error type, e.g. "mapper_parsing_exception", and its reason.
  std::string type;
  std::string reason;
};

/// A batch laid out as the request that writes it (IDocumentSink::Prepare). It keeps what it
/// needs to send any part of the batch again and to describe a document that failed, so the
/// documents it was made from can be freed while the request is in flight: for small documents
/// those hold more than their bulk lines do.
class IPreparedBatch {
 public:
  virtual ~IPreparedBatch() = default;
  /// Documents in the batch.
  virtual size_t size() const = 0;
  /// Memory the batch holds, with the most that writing part of it adds while that runs.
  virtual size_t held_bytes() const = 0;
  virtual uint64_t cursor(size_t position) const = 0;
  /// Bytes of the document's `_source` as sent.
  virtual size_t source_bytes(size_t position) const = 0;
  /// Whether the document goes with its source version (SourceDocument::version).
  virtual bool has_version(size_t position) const = 0;
  /// Writes the documents at `positions` (increasing, each below size()) as IDocumentSink::Write
  /// writes a batch; the failures' positions are indices into `positions`.
  virtual absl::StatusOr<std::vector<ItemFailure>> Write(std::span<const size_t> positions) = 0;
  /// The documents at `positions` (increasing) as failed-document records show them: index, id,
  /// cursor, and the action and source lines that were sent (failure fields left empty).
  virtual absl::StatusOr<std::vector<FailedDocument>> Describe(
      std::span<const size_t> positions) const = 0;
};

class IDocumentSink {
 public:
  virtual ~IDocumentSink() = default;
  /// Writes `docs` (non-empty, in order). Returns the failed documents (empty when every one was
  /// accepted) or an error for the whole batch. The pointed-to documents outlive the call.
  virtual absl::StatusOr<std::vector<ItemFailure>> Write(
      std::span<const SourceDocument* const> docs) = 0;
  /// The bulk action options this sink writes with, so failed-document records show the exact
  /// action that was sent.
  virtual BulkActionOptions action_options() const { return {}; }
  /// For messages, e.g. "OpenSearch bulk to https://host:9200".
  virtual std::string description() const = 0;
  /// Whether this sink's latency and refusals tell how loaded a shared target is, so that
  /// backpressure should follow them. A local directory's latency is its disk's and this
  /// process's own CPU's: following it only shrinks bulks and concurrency for nothing.
  virtual bool reports_target_load() const { return true; }
  /// Whether this sink writes lines laid out by the reader (SourceDocument::rendered) as they
  /// are, so that a reader should lay them out (with action_options()). Every sink accepts such
  /// documents; the others only read their sources from the lines.
  virtual bool writes_rendered_lines() const { return false; }
  /// Whether Write lays a batch out again in a buffer of its own (a request body) that lives
  /// while it runs: the reindexer then counts a batch's lines twice against its memory budget
  /// until the batch is prepared (those copies_rendered_lines says are copied).
  virtual bool copies_batches() const { return false; }
  /// For a copies_batches sink: whether lines the reader laid out (SourceDocument::rendered) are
  /// copied too, or sent from where they lie (then only the others count twice).
  virtual bool copies_rendered_lines() const { return true; }
  /// Lays `docs` out as the request that writes them, for a sink whose request holds all it
  /// needs (a copies_batches sink's body): the caller may then free the documents before it is
  /// sent. nullptr when this sink writes from the documents themselves (the default); an error
  /// when it cannot lay them out now (the caller writes them with Write instead, which reports
  /// the same error where it is worth a retry).
  virtual absl::StatusOr<std::unique_ptr<IPreparedBatch>> Prepare(
      std::span<const SourceDocument* const> docs) {
    (void)docs;
    return nullptr;
  }
};

/// Sends each batch as one `_bulk` request through `client` (which detects the target version
/// and compression on first use). `include_type` is taken from the target version: Elasticsearch
/// 5/6 targets get `_type` in each action. The client must outlive the sink.
class OpenSearchBulkSink final : public IDocumentSink {
 public:
  explicit OpenSearchBulkSink(opensearch::OpenSearchClient& client);
  absl::StatusOr<std::vector<ItemFailure>> Write(
      std::span<const SourceDocument* const> docs) override;
  BulkActionOptions action_options() const override;
  /// The gzipped body (streamed into gzip when huge); without gzip, the lines of documents not
  /// laid out by the reader with this sink's options.
  bool copies_batches() const override { return true; }
  /// Only when bulk bodies may be gzipped: otherwise laid-out lines are sent where they lie.
  bool copies_rendered_lines() const override;
  /// Runs of laid-out lines go into the body (or straight into gzip) as they are.
  bool writes_rendered_lines() const override { return true; }
  /// With gzip, the body as it is sent, each document's lines found again in it by their
  /// offsets; without, the lines where the reader laid them out, sent from there in pieces
  /// (opensearch::OpenSearchClient::BulkPieces). A part sent again, or a failed document, is
  /// read back from them.
  absl::StatusOr<std::unique_ptr<IPreparedBatch>> Prepare(
      std::span<const SourceDocument* const> docs) override;
  std::string description() const override;

 private:
  opensearch::OpenSearchClient& client_;
};

/// Why `name` cannot be an index of the embedded target (OpenSearch's index name rules, which
/// also keep it a single folder name, and not `.rfs`, the target's own state), or nullopt.
std::optional<std::string> InvalidIndexName(std::string_view name);

struct NdjsonDirectorySinkOptions {
  /// Root folder; created when missing.
  std::string directory;
  /// Shard label used in file paths, e.g. the source shard number.
  std::string shard = "0";
  /// fsync files and folders before acknowledging (turn off only for throwaway output).
  bool sync = true;
};

/// Writes each batch as bulk-format files, one per target index:
///   <directory>/<index>/<shard>/<first cursor>-<last cursor>.ndjson
/// Each file holds action and source lines as OpenSearchBulkSink sends them, so
/// `curl -H 'Content-Type: application/x-ndjson' --data-binary @file <target>/_bulk` replays it.
/// An action line may end in spaces (at most 4095) before its '\n': padding that places the
/// long piece after it where direct I/O writes it without a copy. JSON and `_bulk` ignore them.
/// A file is written under a temporary name, fsynced, renamed into place and its folder fsynced
/// before Write returns, so a killed worker never leaves a torn file and an acknowledged batch is
/// never lost. A batch resent after a crash rewrites the same name (same cursors) or adds a
/// file whose documents repeat earlier ids, which a replay overwrites in place. Documents whose
/// index name cannot be a folder name fail with invalid_index_name_exception, as OpenSearch
/// would reject them.
class NdjsonDirectorySink final : public IDocumentSink {
 public:
  static absl::StatusOr<std::unique_ptr<NdjsonDirectorySink>> Open(
      NdjsonDirectorySinkOptions options);
  absl::StatusOr<std::vector<ItemFailure>> Write(
      std::span<const SourceDocument* const> docs) override;
  std::string description() const override;
  bool reports_target_load() const override { return false; }
  bool writes_rendered_lines() const override { return true; }

 private:
  explicit NdjsonDirectorySink(NdjsonDirectorySinkOptions options) : options_(std::move(options)) {}
  NdjsonDirectorySinkOptions options_;
};

}  // namespace rfs::reindex
