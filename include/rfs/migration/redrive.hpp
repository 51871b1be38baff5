// Redrive: send the documents earlier runs recorded as failed to the target again, once the
// cause is fixed (a mapping, a transform, a full disk), as DocumentsFromSnapshotMigration
// --redrive-failed-documents SOURCE.
//
// SOURCE is a failed-documents folder (gzip NDJSON files, as GzipFailedDocumentSink writes them)
// or the S3 failed-document stream (s3://bucket/prefix, as S3FailedDocumentStream writes it, the
// Java tool's format); files are found at any depth. Each file is one work item, leased through
// the same stores as the migration's (in a space of their own), so a fleet of workers shares a
// redrive and one that dies costs only its file. The first worker lists the files once (a setup
// item); files written while the redrive runs are not taken up again by it.
//
// A record of a document the target refused holds the document as it was sent: it goes again as
// it is. A record of a document whose transform failed holds its source as read: it goes through
// the transforms again. The target's answers are handled as in a migration: documents it takes
// are counted as accepted, those it refuses again are recorded anew in the failed-document sink
// (the old records stay where they are, for the record). A record without a source (a document
// that could not be read) is recorded again as it is.
//
// A redrive carries out only `index` and `create` (and the delete of a record's own document, as
// rfs records a delta's delete the target refused), never into rfs's own state indices: any
// other record is refused, named and counted. A file that cannot be read or parsed (empty, cut,
// damaged) is skipped and named; the other files go on.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rfs/coordination/work_coordinator.hpp"
#include "rfs/core/clock.hpp"
#include "rfs/migration/document_migration_worker.hpp"
#include "rfs/reindex/document_reindexer.hpp"
#include "rfs/reindex/failed_document_sink.hpp"
#include "rfs/snapshot/source_repo.hpp"
#include "rfs/transform/json_transformer.hpp"

#include "absl/status/statusor.h"

namespace rfs::migration {

struct RedriveOptions {
  /// Where the records are (for messages): the folder or s3:// URI given.
  std::string source_description;
  std::chrono::milliseconds initial_lease{std::chrono::minutes(10)};
  reindex::DocumentReindexerOptions reindexer;
  reindex::DocumentTransformOptions transform_batch;
  /// Called with a line of progress per file; may be empty.
  std::function<void(const std::string&)> on_progress;
};

struct RedriveSummary {
  uint64_t files = 0;  // files this worker redrove
  uint64_t records = 0;
  /// Documents the target took this time (or whose error type is allowed).
  uint64_t accepted = 0;
  /// Recorded again: refused again, failed their transform again, or without a source.
  uint64_t still_failed = 0;
  /// Documents the transforms dropped this time.
  uint64_t dropped = 0;
  /// Records never sent because of what they ask for (RedriveRecord::refusal), and the first
  /// few of them, each naming its file, line and why.
  uint64_t refused = 0;
  std::vector<std::string> refusals;
  struct IndexCounts {
    uint64_t records = 0, accepted = 0, still_failed = 0, refused = 0;
  };
  std::map<std::string, IndexCounts> by_index;
  /// Files that could not be read or parsed (empty, cut, damaged): skipped, the others redriven.
  /// Their records are in no count above.
  struct BadFile {
    std::string path;
    std::string reason;
  };
  std::vector<BadFile> bad_files;
};

/// The failed-document records in one file's bytes (gzip NDJSON, either format), as documents to
/// send: `needs_transform` tells a source as read (its transform failed) from a document as sent.
struct RedriveRecord {
  reindex::SourceDocument doc;
  bool needs_transform = false;
  bool has_source = true;
  std::string error_type;
  /// Non-empty for a record a redrive must not carry out, naming the file, the line and why: an
  /// action other than `index` or `create` (a `delete` only of the record's own document, as rfs
  /// records a delta's refused delete), or a write into rfs's own state indices
  /// (`.migrations_working_state*`).
  std::string refusal;
};
absl::StatusOr<std::vector<RedriveRecord>> ParseFailedDocumentRecords(std::string_view gzip_bytes,
                                                                      std::string_view file);

/// Runs the redrive until every file is done (by this worker or others). A file that cannot be
/// read or parsed is skipped and named (RedriveSummary::bad_files), a refused record counted and
/// named; neither stops the others. `transformer` may be null; `failed_sink` must not be.
/// `so_far`, when given, receives the counts even when the run ends in an error.
absl::StatusOr<RedriveSummary> RedriveFailedDocuments(
    const snapshot::ISourceRepo& source, coordination::IWorkCoordinator& coordinator,
    const SinkFactory& sinks, reindex::IFailedDocumentSink& failed_sink,
    transform::IJsonTransformer* transformer, core::IClock& clock, const RedriveOptions& options,
    RedriveSummary* so_far = nullptr);

}  // namespace rfs::migration
