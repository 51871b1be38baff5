// DocumentReindexer: moves a stream of documents into an IDocumentSink in batches, with up to
// `max_concurrent_batches` in flight, retries, and a progress cursor a restarted worker can
// resume from.
//
// Batches are cut by document count (`--documents-per-bulk-request`, unbounded by default) and
// by bytes of bulk body (`--documents-size-per-bulk-request`, 10 MiB by default; a single larger
// document travels alone). A failed batch call with a transient code, and items that fail with
// 429 or 5xx or because a block on the index or cluster refuses writes (cluster_block_exception:
// index.blocks.write, read_only_allow_delete, ...; a block is lifted), are retried with
// exponential backoff and jitter, resending only the documents still pending. Items that fail in a
// way no retry fixes (mapper_parsing_exception, strict_dynamic_mapping_exception,
// illegal_argument_exception, ...: any other 4xx) go to the failed-document sink and do not fail
// the shard; error types listed in `allowed_exception_types` (`--allowed-doc-exception-types`, e.g.
// version_conflict_engine_ exception) count as success. A document written with its source version
// (SourceDocument::version) that the target refuses with 409 version_conflict_engine_exception is
// already there in a newer version: counted apart (docs_already_newer), neither retried nor
// recorded as failed. When retries run out, or a non-transient error occurs, Reindex stops reading,
// lets in-flight batches finish and returns the error.
//
// Progress: a document is acknowledged once the sink accepted it, it was recorded as failed, or
// its error type is allowed. The progress callback receives the cursor of the last document such
// that it and every document before it are acknowledged; batches finish out of order, so this
// trails the newest completed batch. A worker that dies resumes after that cursor and at worst
// resends documents that were already written, which overwrite themselves (same `_id`).
//
// Thread safety: one Reindex call at a time per instance. The callback runs on worker threads,
// one call at a time. Sink, failed-document sink and clock must outlive the reindexer.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "rfs/core/clock.hpp"
#include "rfs/core/memory_budget.hpp"
#include "rfs/reindex/document_sink.hpp"
#include "rfs/reindex/failed_document_sink.hpp"
#include "rfs/reindex/source_document.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::reindex {

struct RetryOptions {
  /// Attempts per batch, the first included. Transient failures beyond that fail the shard. 0:
  /// no limit but `send_deadline` (a worker retries for as long as its lease allows).
  int max_attempts = 10;
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{30'000};
};

/// One bulk request as the reindexer saw it, for metrics.
struct BulkAttempt {
  size_t docs = 0;
  /// Bytes of `_source` in the request.
  uint64_t source_bytes = 0;
  std::chrono::nanoseconds latency{0};
  /// The whole request's error (OK when the target answered with per-item results).
  absl::StatusCode error = absl::StatusCode::kOk;
  /// Items answered 429 (or rejected execution), and items that will be retried.
  size_t items_rejected = 0;
  size_t items_retried = 0;
  /// Why (part of) the request is sent again: "", "too_many_requests" (429s, whole or per item),
  /// "server_error" (5xx items), "blocked" (items refused by a block: cluster_block_exception),
  /// "unavailable", "timeout" or "too_large" (split and resent).
  std::string retry_cause;
  /// With a retry cause, what the target said: the request's error, or the first retried item's
  /// "HTTP <status> <type>: <reason>" (at most 300 bytes).
  std::string retry_reason;
};

struct DocumentReindexerOptions {
  /// Documents per bulk request; 0 means unbounded (only the byte limit applies).
  size_t max_docs_per_batch = 0;
  /// Bytes of bulk body per request; 0 means unbounded (only the document limit applies). A
  /// document larger than the limit travels alone.
  size_t max_bytes_per_batch = size_t{10} << 20;
  /// Bulk requests in flight (`--max-connections`).
  size_t max_concurrent_batches = 10;
  /// Bulk bytes cut but not yet acknowledged, queued and in flight together; the reader waits
  /// beyond it (one batch always goes). Bounds memory whatever the connections and batch size.
  /// 0: no bound but the window of 2 x max_concurrent_batches batches.
  size_t max_in_flight_bytes = size_t{96} << 20;
  /// The pipeline's shared budget (core::MemoryBudget): when set, in-flight bulks are charged to
  /// it (their bytes, and what each document holds besides: IDocumentStream::
  /// bytes_held_per_document), and its limit replaces max_in_flight_bytes, so the readers that
  /// wait on it for a huge document see the bulks' bytes. A batch the sink prepares
  /// (IDocumentSink::Prepare) frees its documents once it is laid out, and keeps only what the
  /// prepared batch holds charged (IPreparedBatch::held_bytes) while its request is in flight.
  core::MemoryBudget* memory_budget = nullptr;
  RetryOptions retry;
  /// Item error types that count as success (`--allowed-doc-exception-types`).
  std::vector<std::string> allowed_exception_types;
  /// Seed of the backoff jitter; 0 seeds from std::random_device.
  uint64_t random_seed = 0;
  /// When set, no request is sent (and no backoff sleeps) past the time it returns, read before
  /// every attempt (a lease that renewals move forward, or a shutdown's grace period). A batch
  /// still pending then fails the reindex with DeadlineExceeded.
  std::function<core::IClock::TimePoint()> send_deadline;
  /// When set, called before every backoff sleep (on the sending thread; may run concurrently):
  /// a caller within its retry budget keeps its lease while requests wait out a transient
  /// failure (a blocked index, 429s), which may move `send_deadline`. An error stops the reindex
  /// with it.
  std::function<absl::Status()> keep_alive;
  /// Backpressure (AdaptiveConcurrency): fewer and smaller bulks in flight while the target
  /// answers 429s or slows down, back to `max_concurrent_batches` and `max_bytes_per_batch` as it
  /// recovers. Off: always the configured numbers. Sinks that do not report a target's load
  /// (IDocumentSink::reports_target_load, e.g. bulk files) always get the configured numbers.
  bool backpressure = true;
  /// Called after every bulk request (on the sending thread; may run concurrently).
  std::function<void(const BulkAttempt&)> on_bulk_attempt;
};

struct ReindexSummary {
  /// Documents the sink accepted.
  uint64_t docs_written = 0;
  /// Documents whose error type was allowed (counted as success).
  uint64_t docs_allowed_errors = 0;
  /// Documents sent with their source version (SourceDocument::version) that the target holds
  /// in an equal or higher version (409 version_conflict_engine_exception): left as they are there.
  uint64_t docs_already_newer = 0;
  /// Documents recorded in the failed-document sink.
  uint64_t docs_failed = 0;
  /// Bytes of `_source` of every acknowledged document.
  uint64_t source_bytes = 0;
  uint64_t batches = 0;
  /// Sink calls made again after a transient failure.
  uint64_t retries = 0;
  /// Cursor of the last document such that it and all before it are acknowledged.
  std::optional<uint64_t> last_acknowledged_cursor;
  /// Backpressure: how often the in-flight limit was cut, and the lowest it went.
  uint64_t concurrency_decreases = 0;
  size_t lowest_concurrency = 0;
};

/// The acknowledged prefix of the stream: its last cursor, and the documents and `_source` bytes
/// in it (written, allowed, already newer or recorded as failed).
struct AcknowledgedProgress {
  uint64_t cursor = 0;
  uint64_t docs = 0;
  uint64_t bytes = 0;
  /// Bulk requests allowed in flight now (backpressure), for progress displays.
  size_t concurrency = 0;
};

/// Called as the acknowledged prefix grows. Returning an error stops the reindex (for example
/// when the caller's lease was lost); Reindex then returns that error.
using ProgressCallback = std::function<absl::Status(const AcknowledgedProgress& acknowledged)>;

/// Whether an item failure may succeed on retry: 429, 408 and 5xx, plus the error types that
/// mean "busy" whatever their status (rejected execution, circuit breaking, unavailable shards)
/// and blocked writes (cluster_block_exception, 403 or 429: a block is lifted).
bool IsRetryableItemFailure(int status, std::string_view error_type);

class DocumentReindexer {
 public:
  /// `failed_sink` may be null: permanently failed documents are then only counted (and the
  /// reindex still succeeds), which suits tests and dry runs.
  DocumentReindexer(IDocumentSink& sink, IFailedDocumentSink* failed_sink, core::IClock& clock,
                    DocumentReindexerOptions options = {});

  /// Reads `docs` to the end, writing every document. Cursors must not decrease along the stream.
  /// On success every document is acknowledged. On error the summary is lost but the progress
  /// callback has seen the last safe cursor.
  absl::StatusOr<ReindexSummary> Reindex(IDocumentStream& docs,
                                         const ProgressCallback& on_progress = {});

 private:
  IDocumentSink& sink_;
  IFailedDocumentSink* failed_sink_;
  core::IClock& clock_;
  DocumentReindexerOptions options_;
};

}  // namespace rfs::reindex
