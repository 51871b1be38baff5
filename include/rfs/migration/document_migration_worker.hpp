// DocumentMigrationWorker: the loop of one `DocumentsFromSnapshotMigration` worker. Any number
// of identical workers, in one process or many, on one host or many, share a snapshot's shards
// through an IWorkCoordinator; any of them may die at any moment without losing a document.
//
//   1. Shard setup, once across all workers (RunOneTimeSetup on "shard_setup"): one work item
//      per shard of every selected index, starting at cursor 0.
//   2. Acquire an item under a lease (initial lease x 2^attempts).
//   3. Open the shard in place from the snapshot (no download, no unpacking) at the item's
//      starting cursor; a shard larger than `max_shard_size_bytes` stops the worker with an
//      error naming it (it is released for a worker with a higher limit, never skipped).
//   4. Read live documents, transform them (non-JSON `_source` to JSON, mapping types per the
//      multi-type policy), and bulk them into the sink through DocumentReindexer.
//   5. While documents are acknowledged, the heartbeat renews the lease and records the
//      acknowledged cursor and counts on the item (lease_renewal_interval), so the lease of a
//      moving shard never runs out and its exponent stays low.
//   6. At the end of the shard: complete the item and go to 2. If the lease's early-checkpoint
//      time comes first (no progress for most of a lease): stop reading, let in-flight batches
//      finish, create a successor item (the same shard from the first unread cursor), complete
//      this one and exit with kLeaseHandoff, so the successor is picked up with a fresh lease.
//      No request is sent past the lease's deadline, retries included.
//
// Documents keep their `_id` (and routing), so work redone after a crash overwrites itself: a
// worker killed mid-shard costs at most the documents acknowledged since its last heartbeat,
// which the next holder (after the lease expires) resends from the recorded cursor. A run that
// ends in an error, or is asked to stop, releases its item with the cursor recorded.
//
// Live documents without any stored source cannot be migrated; each is reported through an
// event and recorded in the failed-document sink (error type "document_without_source"),
// never dropped silently.
//
// Thread safety: Run is called once per instance. Events are delivered on the calling thread or
// the reindexer's threads, one at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/coordination/retrying_work_coordinator.hpp"
#include "rfs/coordination/work_coordinator.hpp"
#include "rfs/core/clock.hpp"
#include "rfs/core/exit_codes.hpp"
#include "rfs/core/memory_budget.hpp"
#include "rfs/core/status_payloads.hpp"
#include "rfs/lucene/shard_delta.hpp"
#include "rfs/reindex/document_reindexer.hpp"
#include "rfs/reindex/document_sink.hpp"
#include "rfs/reindex/failed_document_sink.hpp"
#include "rfs/reindex/transforming_stream.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/transform/index_filter.hpp"
#include "rfs/transform/json_transformer.hpp"
#include "rfs/transform/type_policy.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::lucene {
struct ShardReaderOptions;
}

namespace rfs::migration {

struct WorkerCounters;
struct BackPressureTally;
namespace internal {
class GracefulStop;
class LeaseKeeper;
class ShardDocumentStream;
}  // namespace internal

/// How a worker run ended; each maps to the Java tool's process exit code (ExitCode).
enum class WorkerOutcome {
  kItemDone,            // 0: one item completed (single-work-item mode)
  kLeaseHandoff,        // 2: the lease ran short; a successor item carries the rest
  kNoWorkLeft,          // 3: every item is complete
  kAllLeasedElsewhere,  // 4: the remaining items are all leased by other workers
  kStopped,             // 2: asked to stop (SIGTERM); the item was released with its cursor
};
int ExitCode(WorkerOutcome outcome);
std::string_view ToString(WorkerOutcome outcome);

/// True when `status` came from reading the snapshot (repository, metadata or Lucene files)
/// rather than from the target or the coordination store.
bool IsSnapshotReadFailure(const absl::Status& status);
/// `status` tagged as a failure to read the snapshot (IsSnapshotReadFailure).
absl::Status MarkSnapshotReadFailure(absl::Status status);

struct WorkerEvent {
  enum class Kind {
    kShardSetup,                 // this worker created the work items (`docs` = items created)
    kAcquired,                   // an item was leased
    kProgress,                   // periodic, while an item is being migrated
    kCompleted,                  // the item's shard is done
    kCheckpointed,               // a successor item was created from `cursor`
    kLeaseLost,                  // another worker took the item over; this one moved on
    kDocumentWithoutSource,      // `message` names the document
    kShardTooLarge,              // `message` says by how much
    kReleased,                   // the item was given back with its cursor recorded (stop, error)
    kIndexCreatedByTarget,       // `message`: an index the target created itself at the first bulk
    kTargetRefused,              // `message`: documents failed for a target index or data stream
    kMetricsEndpoint,            // `message`: the URL the Prometheus metrics are served at
    kPreserveVersionNotApplied,  // `index`, `message`: a data stream's documents go unversioned
    kRetrying,  // `message`: bulk requests are being sent again, why and for how long so far
                // (at the first retry, then at most every retry_report_interval)
  };
  Kind kind = Kind::kProgress;
  std::string work_item;
  std::string index;
  int shard = 0;
  /// Progress of the current item: first cursor, last acknowledged cursor and the shard's end.
  uint64_t starting_cursor = 0;
  uint64_t cursor = 0;
  uint64_t max_cursor = 0;
  /// Counts for the current item so far.
  uint64_t docs = 0;
  uint64_t source_bytes = 0;
  uint64_t failed_docs = 0;
  /// kProgress: bulk requests allowed in flight now (backpressure lowers it under 429s).
  size_t concurrency = 0;
  /// Since the item was acquired.
  std::chrono::nanoseconds elapsed{0};
  std::string message;
};
std::string_view ToString(WorkerEvent::Kind kind);

/// What a worker asks the target about the names an item's documents go to
/// (DocumentMigrationOptions::target_indices). Thread safety: called from the reindexer's threads.
class ITargetIndices {
 public:
  virtual ~ITargetIndices() = default;
  /// The uuids of the indices `name` is on the target (an index, or an alias's indices), sorted;
  /// empty when nothing has that name (opensearch::OpenSearchClient::IndexUuids).
  virtual absl::StatusOr<std::vector<std::string>> IndexUuids(std::string_view name) = 0;
  /// The uuids of data stream `name`'s backing indices, sorted; nullopt when it is no data stream
  /// on the target (opensearch::OpenSearchClient::DataStreamIndexUuids).
  virtual absl::StatusOr<std::optional<std::vector<std::string>>> DataStreamIndexUuids(
      std::string_view name) = 0;
};

/// Target tuning for the load (--tune-target; lib/migration/target_tuning.cpp): an index the run
/// created empty gets `number_of_replicas: 0` and `refresh_interval: -1` before its first bulk,
/// its original settings kept in the coordination store, and they are put back (with a refresh)
/// once its last item is complete. Thread safety: called from the worker's thread.
class ITargetTuning {
 public:
  virtual ~ITargetTuning() = default;
  /// At the shard setup, once across all workers, before any item exists: the target indices of
  /// the selected ones (an implementation may record here which of them are empty).
  virtual absl::Status AtShardSetup(const std::vector<std::string>& target_indices) = 0;
  /// Before an item's documents go to `target_index`: tunes it once across all workers, when it
  /// was created empty by this run and was neither tuned nor restored before.
  virtual absl::Status BeforeBulk(const std::string& target_index) = 0;
  /// True while `target_index` is tuned and its original settings not yet put back.
  virtual absl::StatusOr<bool> NeedsRestore(const std::string& target_index) = 0;
  /// Puts the original settings back and refreshes the index (nothing when it needs none).
  virtual absl::Status Restore(const std::string& target_index) = 0;
};

struct DocumentMigrationOptions {
  /// Empty: the newest snapshot of the repository.
  std::string snapshot_name;
  /// A delta (catch-up) migration: only what changed since this older snapshot of the same
  /// repository is sent (docs/delta.md). Empty: a full migration.
  std::string previous_snapshot_name;
  lucene::DeltaMode delta_mode = lucene::DeltaMode::kUpdatesAndDeletes;
  /// A trial run: at most this many documents of each shard (0: all), into indices named
  /// `target_index_prefix` + their name. Its coordination store is its own (a full run's, or a
  /// trial's with other limits, refuses it, and it refuses them); its shards are never split.
  uint64_t max_docs_per_shard = 0;
  std::string target_index_prefix;
  bool trial() const { return max_docs_per_shard > 0 || !target_index_prefix.empty(); }
  /// Indices to migrate (empty: every non-system index).
  transform::Allowlist index_allowlist;
  transform::MultiTypePolicy multi_type_policy = transform::MultiTypePolicy::kUnion;
  /// Shards whose snapshot files exceed this stop the worker with an error (80 GiB as the Java
  /// tool).
  uint64_t max_shard_size_bytes = uint64_t{80} << 30;
  coordination::Duration initial_lease = std::chrono::minutes(10);
  reindex::DocumentReindexerOptions reindexer;
  /// Stop after one completed item (exit code 0), as the Java tool's default process model.
  bool single_work_item = false;
  /// At most one kProgress event per interval per item.
  std::chrono::milliseconds progress_interval{1000};
  /// Least time between two kRetrying events of an item: a worker that retries says so at once,
  /// then at this pace while retries go on.
  std::chrono::milliseconds retry_report_interval{30'000};
  /// Receives every event (may be empty).
  std::function<void(const WorkerEvent&)> on_event;
  /// Attempts per coordinator call that fails with a retryable code (429, 503, resets), and the
  /// backoff between them (`--coordinator-retry-*`).
  coordination::CoordinatorRetryPolicy coordinator_retries;
  /// The heartbeat: while an item moves, its lease is renewed and its acknowledged cursor and
  /// counts recorded at least this often (never less often than a quarter of the lease). A worker
  /// killed at any moment costs at most about one interval of re-sent documents. 0 turns the
  /// heartbeat off (the Java tool's model: a lease only runs out, then the item is handed on).
  std::chrono::milliseconds lease_renewal_interval{30'000};
  /// Between heartbeats, the acknowledged cursor and counts are recorded this often, the lease
  /// left as it is (IWorkCoordinator::RecordProgress), so that a progress report reads a steady
  /// rate instead of one step per renewal. At least kMinProgressReportInterval (stores are not
  /// flooded); 0, or not less than the renewal interval: only with the heartbeats.
  std::chrono::milliseconds progress_report_interval{5'000};
  static constexpr std::chrono::milliseconds kMinProgressReportInterval{1'000};
  /// Set (from a signal handler) to stop gracefully: reading stops, in-flight batches get up to
  /// `shutdown_timeout`, the item is released with its acknowledged cursor, and Run returns
  /// WorkerOutcome::kStopped. May be null.
  const std::atomic<bool>* stop_requested = nullptr;
  std::chrono::milliseconds shutdown_timeout{20'000};
  /// Shards whose snapshot files exceed this are set up as several work items over disjoint
  /// cursor ranges (about this many bytes each), so that several workers migrate one shard at
  /// once. 0 never splits.
  uint64_t split_shard_bytes = uint64_t{10} << 30;
  /// Threads decoding the shard ahead of the reindexer (lucene::ParallelDocumentReader; output
  /// stays in cursor order, so checkpoints are exact). 0 reads on the worker's thread.
  int reader_threads = 0;
  /// User transforms of every document (the Java tool's --doc-transformer-config format), applied
  /// after the source is JSON and placed by the multi-type policy; unset: documents go as read,
  /// unparsed. A configuration that does not load fails Run before any work is taken.
  std::optional<std::string> doc_transformer_config;
  /// Bounds on each batch's run through a jq or JavaScript transform (its stop flag and grace
  /// are `stop_requested` and `shutdown_timeout`, filled in by Run).
  transform::TransformLimits transform_limits;
  /// Metrics to keep up to date (rfs/migration/worker_metrics.hpp); may be null. Must outlive Run.
  WorkerCounters* counters = nullptr;
  /// 429s and retries to count for the progress reports; may be null. Must outlive Run.
  BackPressureTally* back_pressure = nullptr;
  reindex::DocumentTransformOptions transform_batch;
  /// Acquisitions of one work item before the run ends with an error naming it (0: no limit;
  /// RfsWorker sets its --max-attempts, and marks the migration FAILED).
  int max_item_attempts = 0;
  /// Rebuild documents of indices that keep no (or an incomplete) `_source` from their doc values
  /// and stored fields (lucene/source_rebuild.hpp), the Java tool's
  /// --enable-sourceless-migrations. Unset, such an index stops the run before any work is taken
  /// (IsSourcelessIndex).
  bool enable_sourceless_migrations = false;
  /// The target's indices, looked at before the first documents of each name an item sends and
  /// again when the item ends (null: not looked at, as for the embedded target):
  ///   - documents meant for a data stream go only into that stream: when it is not on the
  ///     target they fail (data_stream_not_on_target), never left for the target to create a
  ///     plain index of the stream's name;
  ///   - an index the target does not have is left for the target to create at the first bulk,
  ///     reported (kIndexCreatedByTarget, WorkerSummary::indices_created_by_target), or, with
  ///     `no_auto_create_indices`, its documents fail (index_not_on_target);
  ///   - an index deleted and created again on the target while the item sent documents to it
  ///     (its uuid at the item's start no longer there at its end) ends the run with an error,
  ///     the item given back from its start.
  ITargetIndices* target_indices = nullptr;
  bool no_auto_create_indices = false;
  /// Tunes the target indices for the load (ITargetTuning); null: settings are left alone. Never
  /// used by a delta. Must outlive Run.
  ITargetTuning* target_tuning = nullptr;
  /// `--preserve-version`: each document goes as an `index` with its source `_version`
  /// (`version_type=external`, read from the shard's `_version` doc values), so that a resent or
  /// older copy never overwrites a newer one on the target; a target that holds the document in
  /// an equal or higher version answers 409, counted as already newer (WorkerSummary), neither a
  /// failure nor retried. A data stream's documents go as `create` without a version (the engines
  /// take only internal versions there), and a delta's deletes carry none; Run warns about the
  /// first (kPreserveVersionNotApplied) and refuses (IsPreserveVersionRefusal) an index created
  /// before Elasticsearch 6, whose segments may keep `_version` in a form not read.
  bool preserve_version = false;
};

/// True for the refusal of `preserve_version` for an index whose versions cannot be read.
bool IsPreserveVersionRefusal(const absl::Status& status);

/// True for the error of a run that met an index without a complete `_source` while sourceless
/// migrations are off (or whose `_source` cannot be completed).
bool IsSourcelessIndex(const absl::Status& status);

/// True for the error of a run against a store set up for another snapshot or settings.
bool IsStoreMismatch(const absl::Status& status);

/// True for the refusal of a delta whose previous snapshot is the snapshot being migrated or did
/// not start before it (CheckDeltaSnapshots): a usage error.
bool IsDeltaOrderRefusal(const absl::Status& status);
/// A delta from `previous` to `current`: InvalidArgument (IsDeltaOrderRefusal) when they are the
/// same snapshot, or when `previous` did not start before `current` by the start times their own
/// checksummed SnapshotInfo blobs record (a delta back in time would delete the documents added
/// since); a snapshot read failure (IsSnapshotReadFailure) when those cannot be read.
absl::Status CheckDeltaSnapshots(const snapshot::SnapshotRepository& repository,
                                 const snapshot::SnapshotEntry& current,
                                 const snapshot::SnapshotEntry& previous);

/// True for the error of a run that met an item over `max_item_attempts`.
bool IsItemOverAttempts(const absl::Status& status);

/// Opens the sink for documents of one shard of `index` (e.g. one reindex::NdjsonDirectorySink
/// per shard folder, or a shared reindex::OpenSearchBulkSink). `shard_label` tells the shard
/// apart from every other whose documents go to the same target index: its number, or
/// "<number>-<backing index>" for a data stream's backing index (a stream gathers several).
using SinkFactory = std::function<absl::StatusOr<std::shared_ptr<reindex::IDocumentSink>>(
    std::string_view index, std::string_view shard_label)>;

struct WorkerSummary {
  WorkerOutcome outcome = WorkerOutcome::kNoWorkLeft;
  uint64_t items_completed = 0;
  uint64_t items_checkpointed = 0;
  uint64_t items_lost = 0;
  uint64_t docs_written = 0;
  uint64_t docs_allowed_errors = 0;
  /// preserve_version: documents the target holds in an equal or higher version (409), left as
  /// they are there; not in docs_written.
  uint64_t docs_already_newer = 0;
  uint64_t docs_failed = 0;
  uint64_t docs_without_source = 0;
  /// Documents whose source was rebuilt from doc values and stored fields
  /// (enable_sourceless_migrations), included in the documents read.
  uint64_t docs_rebuilt = 0;
  /// Of the documents read, the deletes of a delta run (documents gone since the previous
  /// snapshot), sent as bulk delete actions.
  uint64_t docs_deleted = 0;
  /// A delta run: selected indices of the previous snapshot that the current one no longer
  /// holds. Reported only: their documents stay on the target (delete the indices there if they
  /// are meant to go).
  std::vector<std::string> indices_only_in_previous;
  /// Indices the target created itself at their first bulk (they were not on it), sorted: their
  /// settings and mappings are the target's defaults and templates, not the source's.
  std::vector<std::string> indices_created_by_target;
  /// preserve_version: the data streams whose documents went as `create` without their source
  /// versions (data streams take only internal versions), sorted.
  std::vector<std::string> data_streams_without_versions;
  /// The embedded target: temporary files of killed workers removed from the output folder at
  /// the start (core::RemoveStaleTempFiles).
  uint64_t stale_temp_files_removed = 0;
  /// A trial run: what it was limited to, for the summary ("" for a full run).
  std::string trial;
  /// What became of the documents of each source index this worker read, items it finished or
  /// handed on (an item lost to another worker counts where that worker reports it).
  struct IndexAccount {
    uint64_t read = 0;     ///< taken from the snapshot (deletes and not convertible ones included)
    uint64_t written = 0;  ///< accepted by the target (allowed errors included)
    /// preserve_version: held by the target in an equal or higher version, left as they are
    uint64_t already_newer = 0;
    uint64_t rejected = 0;           ///< refused by the target after retries
    uint64_t not_convertible = 0;    ///< no `_source`, undecodable, refused by a data stream
    uint64_t transform_failed = 0;   ///< a user transform failed on them
    uint64_t transform_dropped = 0;  ///< a user transform dropped them, as configured
    /// Rebuilt without a stored `_source`, and of those, the ones with a value that may differ
    /// from the one indexed (RebuildExactness: arrays sorted, values rounded or normalized).
    uint64_t rebuilt = 0;
    uint64_t rebuilt_inexact = 0;
    /// Rebuilt indices (a Solr collection, or --enable-sourceless-migrations): the fields whose
    /// values the index keeps in no form that can be read back (an indexed-only field), so no
    /// document carries them; "field: why", as the plan lists them.
    std::vector<std::string> fields_not_migrated;
  };
  std::map<std::string, IndexAccount> by_index;
  /// Documents a user transform dropped (read but, by design, not written).
  uint64_t docs_dropped_by_transform = 0;
  uint64_t source_bytes = 0;
  uint64_t retries = 0;
  /// Heartbeats that renewed a lease.
  uint64_t lease_renewals = 0;
  std::chrono::nanoseconds elapsed{0};
};

/// The process exit code of a finished run: kDocumentsFailedExitCode when any document could
/// not be migrated, else ExitCode(outcome).
int ExitCode(const WorkerSummary& summary);

class DocumentMigrationWorker {
 public:
  /// Everything passed by reference must outlive Run, and `repository` the worker (it holds the
  /// worker's memory budget: ISourceRepo::ShareMemoryBudget). `failed_sink` may be null (failures
  /// are then only counted).
  DocumentMigrationWorker(const snapshot::SnapshotRepository& repository,
                          coordination::IWorkCoordinator& coordinator, SinkFactory sinks,
                          reindex::IFailedDocumentSink* failed_sink, core::IClock& clock,
                          DocumentMigrationOptions options);
  ~DocumentMigrationWorker();

  /// Runs the loop until one of the WorkerOutcomes. Errors: snapshot read failures
  /// (IsSnapshotReadFailure), a shard over the size limit (OutOfRange), an item over its attempts
  /// (ResourceExhausted, IsItemOverAttempts), target or store failures that retries did not fix.
  absl::StatusOr<WorkerSummary> Run();
  /// The counts so far; after a failed Run, those of the work done before the error.
  const WorkerSummary& summary() const { return summary_; }

 private:
  struct ItemResult;
  absl::Status RunLoop();
  /// Loads the transforms and finds the snapshots and data streams the run is about.
  absl::Status PrepareRun();
  /// Acquires and migrates items until one of the WorkerOutcomes.
  absl::Status TakeItems();
  absl::Status SetupShards();
  absl::Status CreateShardItems();
  std::vector<std::string> SelectedIndices() const;
  /// Fails (core::payload::kSourcelessIndex) when a selected index keeps no complete `_source` and
  /// it cannot be rebuilt under the options.
  absl::Status CheckSourceStorage() const;
  /// preserve_version: refuses (core::payload::kPreserveVersion) a selected index created before
  /// Elasticsearch 6, and warns once per data stream that its documents go without versions.
  absl::Status CheckPreserveVersion();
  /// The store records what it was set up for as completed bookkeeping items: a hash of the
  /// snapshot and the settings that shape the items (SetupIdentity, in the item
  /// kSetupForWorkItemId), and each selection of indices (SetupIndicesMarker).
  std::string SetupIdentity() const;
  std::string SetupIndicesMarker() const;
  /// FailedPrecondition (IsStoreMismatch) when the store was set up for another snapshot or
  /// other settings; sets up the items of a new selection of indices.
  absl::Status CheckStoreIsForThisRun();
  /// The work items of one shard: the whole shard, or the parts of a split one.
  absl::StatusOr<std::vector<coordination::WorkItemId>> ShardItems(const std::string& index,
                                                                   int shard) const;
  absl::StatusOr<ItemResult> MigrateItem(const coordination::Lease& lease);
  /// Target tuning (target_tuning.cpp): the target index an item's documents go to, when it is
  /// one that can be tuned (no data stream, no index split by mapping type); before the item's
  /// first bulk; once an item is complete (restores its index when no item of it is left); and
  /// for every selected index (`all_done`: every item is complete, else only indices whose items
  /// all are).
  std::optional<std::string> TunableTarget(const std::string& index, bool data_stream,
                                           int type_count) const;
  absl::Status TuningAtShardSetup();
  absl::Status TuneBeforeItem(const std::string& index, bool data_stream, int type_count);
  absl::Status RestoreIfIndexDone(const std::string& index);
  absl::Status RestoreTunedIndices(bool all_done);
  absl::StatusOr<bool> IndexItemsComplete(const std::string& index);
  // One grant of an item, in the order it goes: open the shard and the sink, send its documents,
  // count what they became, then end the grant (complete, hand on, release or lose the item).
  struct ItemRun;
  struct ItemSent;
  absl::StatusOr<ItemResult> MigrateLeasedItem(
      const coordination::Lease& lease, std::optional<coordination::ItemProgress>& progress_out);
  absl::Status OpenItem(const coordination::Lease& lease, ItemRun& run,
                        std::optional<coordination::ItemProgress>& progress_out);
  absl::Status OpenItemSource(ItemRun& run, const lucene::ShardReaderOptions& reader_options);
  /// A delta item's older side: the same shard, or every shard of an index reshaped since.
  absl::StatusOr<lucene::DeltaPrevious> OpenDeltaPrevious(
      const coordination::WorkItemId& item, const lucene::ShardReaderOptions& reader_options) const;
  ItemSent SendItem(ItemRun& run, internal::LeaseKeeper& keeper, internal::GracefulStop& stop,
                    internal::ShardDocumentStream& stream);
  /// Says that an item's bulk requests are being sent again (kRetrying): at the first retry,
  /// then at most once per retry_report_interval. Called from the reindexer's threads.
  struct RetryStreak;
  void ReportRetry(const ItemRun& run, const reindex::BulkAttempt& attempt,
                   RetryStreak& streak) const;
  void AccountItem(const ItemRun& run, const internal::ShardDocumentStream& stream,
                   const ItemSent& sent, internal::LeaseKeeper& keeper,
                   WorkerSummary::IndexAccount& account);
  /// Looks at the item's target indices again once its documents are sent: reports indices the
  /// target created and documents refused, and fails when an index was replaced meanwhile
  /// (`progress` then goes back to the item's start).
  absl::Status CheckTargetAfterItem(const ItemRun& run,
                                    std::optional<coordination::ItemProgress>& progress);
  absl::StatusOr<ItemResult> EndItem(const ItemRun& run, internal::LeaseKeeper& keeper,
                                     internal::GracefulStop& stop,
                                     const internal::ShardDocumentStream& stream,
                                     const ItemSent& sent, WorkerSummary::IndexAccount& account);
  absl::StatusOr<ItemResult> EndFailedItem(const ItemRun& run, internal::LeaseKeeper& keeper,
                                           internal::GracefulStop& stop,
                                           const internal::ShardDocumentStream& stream,
                                           const ItemSent& sent,
                                           const coordination::ItemProgress& acknowledged,
                                           WorkerSummary::IndexAccount& account);
  /// Hands the rest of the shard, from `next_cursor`, to a successor item and completes this one.
  absl::StatusOr<ItemResult> HandOn(const ItemRun& run, internal::LeaseKeeper& keeper,
                                    const internal::ShardDocumentStream& stream,
                                    uint64_t next_cursor);
  /// A graceful stop: the item goes back with the acknowledged cursor; the next worker resumes.
  absl::StatusOr<ItemResult> ReleaseOnStop(const ItemRun& run, internal::LeaseKeeper& keeper,
                                           const internal::ShardDocumentStream& stream,
                                           uint64_t next_cursor);
  void Emit(WorkerEvent event) const;
  void EmitItemEvent(const ItemRun& run, WorkerEvent::Kind kind,
                     const std::function<void(WorkerEvent&)>& fill = {}) const;

  const snapshot::SnapshotRepository& repository_;
  // Heartbeats go to the store directly (a failed one is simply tried again at the next); every
  // other call retries transient failures.
  coordination::IWorkCoordinator& raw_coordinator_;
  coordination::RetryingWorkCoordinator retrying_;
  coordination::IWorkCoordinator& coordinator_;
  SinkFactory sinks_;
  reindex::IFailedDocumentSink* failed_sink_;
  core::IClock& clock_;
  DocumentMigrationOptions options_;
  // One budget for the documents an item holds: bulks in flight and huge documents being decoded
  // (reindexer.max_in_flight_bytes).
  std::unique_ptr<core::MemoryBudget> memory_budget_;
  const snapshot::SnapshotEntry* snapshot_ = nullptr;
  const snapshot::SnapshotEntry* previous_snapshot_ = nullptr;  // delta migrations
  std::vector<snapshot::DataStream> data_streams_;              // of snapshot_
  std::unique_ptr<transform::IJsonTransformer> transformer_;
  WorkerSummary summary_;
  // Target tuning: the first work item of each shard (or part) of an index, by index.
  std::map<std::string, std::vector<std::string>> index_item_roots_;
};

}  // namespace rfs::migration
