// One grant of a work item, as DocumentMigrationWorker runs it: open the shard and the sink, send
// the documents through the pipeline (document_pipeline_internal.hpp) under the lease
// (lease_keeper_internal.hpp), count what they became, and end the grant: complete the item, hand
// the rest on to a successor (a checkpoint), release it on a stop, or lose it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/migration/document_migration_worker.hpp"
#include "rfs/migration/worker_metrics.hpp"

#include "migration/data_stream_internal.hpp"
#include "migration/document_migration_worker_internal.hpp"
#include "migration/document_pipeline_internal.hpp"
#include "migration/lease_keeper_internal.hpp"

namespace rfs::migration {

using coordination::Lease;
using coordination::WorkItemId;
using reindex::DocumentReindexer;
using reindex::IDocumentSink;
using reindex::ProgressCallback;
using reindex::SourceDocument;

namespace {

// Adds what an item's documents became to the per-index metric when it goes out of scope,
// whatever ended the item.
class IndexAccountToMetrics {
 public:
  IndexAccountToMetrics(WorkerCounters* counters, const std::string& index,
                        const WorkerSummary::IndexAccount& account)
      : counters_(counters), index_(index), account_(account), before_(account) {}
  IndexAccountToMetrics(const IndexAccountToMetrics&) = delete;
  IndexAccountToMetrics& operator=(const IndexAccountToMetrics&) = delete;
  ~IndexAccountToMetrics() {
    if (counters_ == nullptr) return;
    Add("read", account_.read, before_.read);
    Add("written", account_.written, before_.written);
    Add("rejected", account_.rejected, before_.rejected);
    Add("not_convertible", account_.not_convertible, before_.not_convertible);
    Add("transform_failed", account_.transform_failed, before_.transform_failed);
    Add("transform_dropped", account_.transform_dropped, before_.transform_dropped);
    Add("already_newer", account_.already_newer, before_.already_newer);
  }

 private:
  void Add(const char* outcome, uint64_t now, uint64_t then) const {
    if (now > then) counters_->index_documents.With({index_, outcome}).Add(now - then);
  }

  WorkerCounters* const counters_;
  const std::string& index_;
  const WorkerSummary::IndexAccount& account_;
  const WorkerSummary::IndexAccount before_;
};

}  // namespace

struct DocumentMigrationWorker::ItemRun {
  WorkItemId item;
  WorkerEvent base;  // every event of the item starts from it
  core::IClock::TimePoint acquired_at;
  coordination::Duration setup_time{0};
  internal::IndexPlacement placement;
  coordination::ItemProgress recorded;  // where earlier holders left the item
  uint64_t start = 0;                   // the first cursor this grant reads
  uint64_t end = 0;                     // the item's end: its part's, or the shard's
  std::shared_ptr<IDocumentSink> sink;
  std::shared_ptr<internal::TargetIndexGuard> target_guard;  // in front of `sink`, when set
  std::unique_ptr<lucene::ShardReader> reader;  // read by `source`, so declared before it
  std::unique_ptr<internal::IConvertedSource> source;
};

// What sending an item's documents came to.
struct DocumentMigrationWorker::ItemSent {
  absl::StatusOr<reindex::ReindexSummary> reindexed;
  uint64_t transform_failures = 0;
  uint64_t transform_dropped = 0;
  bool acknowledged_any = false;
};

// The retries of an item's bulk requests since the last request that went through whole.
struct DocumentMigrationWorker::RetryStreak {
  std::mutex mu;
  std::optional<core::IClock::TimePoint> since;
  std::optional<core::IClock::TimePoint> last_report;
  uint64_t retries = 0;
};

void DocumentMigrationWorker::EmitItemEvent(const ItemRun& run, WorkerEvent::Kind kind,
                                            const std::function<void(WorkerEvent&)>& fill) const {
  WorkerEvent event = run.base;
  event.kind = kind;
  event.elapsed = clock_.Now() - run.acquired_at;
  if (fill) fill(event);
  Emit(std::move(event));
}

absl::StatusOr<DocumentMigrationWorker::ItemResult> DocumentMigrationWorker::MigrateLeasedItem(
    const Lease& lease, std::optional<coordination::ItemProgress>& progress_out) {
  ItemRun run;
  run.acquired_at = clock_.Now();
  RFS_ASSIGN_OR_RETURN(run.item, WorkItemId::Parse(lease.work_item_id));
  run.base.work_item = lease.work_item_id;
  run.base.index = run.item.index_name;
  run.base.shard = static_cast<int>(run.item.shard);
  run.base.starting_cursor = run.item.starting_cursor;
  run.base.cursor = run.item.starting_cursor;
  RFS_RETURN_IF_ERROR(OpenItem(lease, run, progress_out));
  run.base.max_cursor = run.end;
  run.base.cursor = run.start;
  EmitItemEvent(run, WorkerEvent::Kind::kAcquired, [&](WorkerEvent& e) {
    if (run.start > run.item.starting_cursor) {
      e.message = core::StrCat("resuming at cursor ", run.start, " recorded by an earlier holder");
    }
  });
  run.setup_time = clock_.Now() - run.acquired_at;
  RFS_RETURN_IF_ERROR(TuneBeforeItem(run.item.index_name, run.placement.data_stream.has_value(),
                                     static_cast<int>(run.placement.type_count)));

  internal::LeaseKeeper keeper(raw_coordinator_, clock_, lease, options_.lease_renewal_interval,
                               run.recorded, options_.progress_report_interval);
  internal::GracefulStop stop(options_.stop_requested, clock_, options_.shutdown_timeout);
  // A trial item is never handed to a successor (its limit counts the documents of one item);
  // a trial is small by design.
  const bool checkpoints = options_.max_docs_per_shard == 0;
  internal::ShardDocumentStream stream(
      *run.source, run.end,
      [&] {
        return stop.requested() || (checkpoints && clock_.CoarseNow() >= keeper.checkpoint_at());
      },
      failed_sink_,
      [&](const SourceDocument& doc) {
        EmitItemEvent(run, WorkerEvent::Kind::kDocumentWithoutSource, [&](WorkerEvent& e) {
          e.cursor = doc.cursor;
          e.message = core::StrCat("document ", doc.id, " of ", run.item.index_name, " (target ",
                                   doc.index, ") has no _source and cannot be migrated");
        });
      });
  stream.set_counters(options_.counters);
  if (options_.max_docs_per_shard > 0) {
    // What earlier holders of the item had sent counts against the limit.
    stream.set_max_docs(options_.max_docs_per_shard > run.recorded.docs
                            ? options_.max_docs_per_shard - run.recorded.docs
                            : 0);
  }

  ItemSent sent = SendItem(run, keeper, stop, stream);
  WorkerSummary::IndexAccount& account = summary_.by_index[run.item.index_name];
  // Whatever ends the item, what its documents became goes to the per-index metric too (when
  // this object goes out of scope, after the outcome is counted).
  const IndexAccountToMetrics account_to_metrics(options_.counters, run.item.index_name, account);
  AccountItem(run, stream, sent, keeper, account);
  progress_out = keeper.acknowledged();
  if (!sent.reindexed.ok()) {
    return EndFailedItem(run, keeper, stop, stream, sent, *progress_out, account);
  }
  RFS_RETURN_IF_ERROR(CheckTargetAfterItem(run, progress_out));
  RFS_ASSIGN_OR_RETURN(ItemResult ended, EndItem(run, keeper, stop, stream, sent, account));
  // The index's last item done: whichever worker finishes it puts its settings back.
  if (ended.kind == ItemResult::Kind::kCompleted) {
    RFS_RETURN_IF_ERROR(RestoreIfIndexDone(run.item.index_name));
  }
  return ended;
}

absl::Status DocumentMigrationWorker::OpenItem(
    const Lease& lease, ItemRun& run, std::optional<coordination::ItemProgress>& progress_out) {
  const WorkItemId& item = run.item;
  auto metadata = repository_.ReadIndexMetadata(*snapshot_, item.index_name);
  if (!metadata.ok()) return MarkSnapshotReadFailure(metadata.status());
  // Index placement: how many mapping types the index has (multi-type policy).
  run.placement.type_count = transform::CountMappingTypes(metadata->mappings);
  run.placement.mapping_type = lucene::IndexMappingType(*metadata);
  run.placement.target_prefix = options_.target_index_prefix;
  if (auto values = transform::DocumentValueConversions::ForMappings(metadata->mappings);
      !values.empty()) {
    run.placement.values =
        std::make_shared<const transform::DocumentValueConversions>(std::move(values));
  }
  if (const snapshot::DataStream* stream = snapshot::DataStreamOf(data_streams_, item.index_name)) {
    run.placement.data_stream = stream->name;
    run.placement.timestamp_field = stream->timestamp_field;
  }

  auto shard_snapshot =
      repository_.ReadShardSnapshot(*snapshot_, item.index_name, static_cast<int>(item.shard));
  if (!shard_snapshot.ok()) return MarkSnapshotReadFailure(shard_snapshot.status());
  const uint64_t shard_bytes = shard_snapshot->total_file_bytes();
  // A part of a split shard reads only its range: the limit is for whole shards.
  if (!item.ending_cursor && shard_bytes > options_.max_shard_size_bytes) {
    const std::string message =
        core::StrCat("shard ", item.shard, " of index ", item.index_name, " is ", shard_bytes,
                     " bytes, over --max-shard-size-bytes ", options_.max_shard_size_bytes,
                     "; it was released for a worker with a higher limit");
    EmitItemEvent(run, WorkerEvent::Kind::kShardTooLarge,
                  [&](WorkerEvent& e) { e.message = message; });
    // MigrateItem gives the item back at once, so that it is not held for a whole lease.
    return absl::OutOfRangeError(message);
  }

  // Where to start: after what earlier holders had acknowledged (their heartbeats), if anything.
  run.recorded = coordination::ItemProgress{item.starting_cursor, 0, 0};
  if (lease.recorded_progress) {
    run.recorded = *lease.recorded_progress;
    run.recorded.next_cursor = std::max(run.recorded.next_cursor, item.starting_cursor);
  }
  progress_out = run.recorded;
  auto reader_options = internal::ShardReaderOptionsFor(
      *metadata, options_.enable_sourceless_migrations, options_.preserve_version);
  if (!reader_options.ok()) return MarkSnapshotReadFailure(reader_options.status());
  if (reader_options->rebuild_plan != nullptr) {
    summary_.by_index[item.index_name].fields_not_migrated =
        reader_options->rebuild_plan->unrebuildable;
  }
  auto reader = lucene::OpenSnapshotShard(repository_, *snapshot_, item.index_name,
                                          static_cast<int>(item.shard), *reader_options);
  if (!reader.ok()) return MarkSnapshotReadFailure(reader.status());
  run.reader = *std::move(reader);
  // The item's end: its part's ending cursor, or the shard's end (a delta's deletes follow it).
  run.end =
      previous_snapshot_ != nullptr
          ? UINT64_MAX
          : std::min<uint64_t>(item.ending_cursor.value_or(UINT64_MAX), run.reader->max_cursor());
  run.start = std::min<uint64_t>(run.recorded.next_cursor, run.end);
  RFS_ASSIGN_OR_RETURN(run.sink,
                       sinks_(item.index_name, run.placement.data_stream
                                                   ? core::StrCat(item.shard, "-", item.index_name)
                                                   : std::to_string(item.shard)));
  if (options_.target_indices != nullptr) {
    // A trial's prefixed stream name is no stream the metadata step made: a plain index.
    std::optional<std::string> stream;
    if (run.placement.target_prefix.empty()) stream = run.placement.data_stream;
    run.target_guard = std::make_shared<internal::TargetIndexGuard>(
        run.sink, *options_.target_indices, std::move(stream), options_.no_auto_create_indices);
    run.sink = run.target_guard;
  }
  return OpenItemSource(run, *reader_options);
}

absl::StatusOr<lucene::DeltaPrevious> DocumentMigrationWorker::OpenDeltaPrevious(
    const WorkItemId& item, const lucene::ShardReaderOptions& reader_options) const {
  lucene::DeltaPrevious previous;
  const auto before = repository_.IndicesIn(*previous_snapshot_);
  if (std::find(before.begin(), before.end(), item.index_name) == before.end()) {
    return previous;  // a new index: every document is sent
  }
  RFS_ASSIGN_OR_RETURN(auto old_meta,
                       repository_.ReadIndexMetadata(*previous_snapshot_, item.index_name));
  RFS_ASSIGN_OR_RETURN(auto new_meta, repository_.ReadIndexMetadata(*snapshot_, item.index_name));
  const int shard = static_cast<int>(item.shard);
  // The same index (uuid) with the same shards: a document stays in its shard, and the shard is
  // compared with its older self. Re-created, split or shrunk (docs/delta.md): a document may
  // now be in any shard, so each shard is compared with the whole older index.
  const auto uuid_of = [](const snapshot::IndexMetadata& meta) -> std::string {
    const auto* uuid = meta.settings.if_contains("index.uuid");
    return uuid != nullptr && uuid->is_string() ? std::string(uuid->get_string()) : "";
  };
  const bool reshaped = old_meta.number_of_shards != new_meta.number_of_shards ||
                        uuid_of(old_meta) != uuid_of(new_meta);
  if (!reshaped) {
    auto opened = lucene::OpenSnapshotShard(repository_, *previous_snapshot_, item.index_name,
                                            shard, reader_options);
    if (opened.ok()) {
      previous.same_shard = *std::move(opened);
    } else if (!absl::IsNotFound(opened.status())) {
      return opened.status();
    }
    return previous;
  }
  for (int s = 0; s < old_meta.number_of_shards; ++s) {
    RFS_ASSIGN_OR_RETURN(
        auto opened, lucene::OpenSnapshotShard(repository_, *previous_snapshot_, item.index_name, s,
                                               reader_options));
    previous.reshaped.push_back(std::move(opened));
  }
  previous.delete_gone = shard == 0;
  if (previous.delete_gone) {
    for (int s = 1; s < new_meta.number_of_shards; ++s) {
      RFS_ASSIGN_OR_RETURN(
          auto opened,
          lucene::OpenSnapshotShard(repository_, *snapshot_, item.index_name, s, reader_options));
      previous.other_current.push_back(std::move(opened));
    }
  }
  return previous;
}

absl::Status DocumentMigrationWorker::OpenItemSource(
    ItemRun& run, const lucene::ShardReaderOptions& reader_options) {
  const internal::ConversionTarget conversion{
      run.item.index_name, run.placement, options_.multi_type_policy, options_.preserve_version};
  if (previous_snapshot_ != nullptr) {
    auto previous = OpenDeltaPrevious(run.item, reader_options);
    if (!previous.ok()) return MarkSnapshotReadFailure(previous.status());
    auto delta = lucene::ShardDeltaReader::Open(*std::move(previous), std::move(run.reader),
                                                options_.delta_mode, run.start);
    if (!delta.ok()) return MarkSnapshotReadFailure(delta.status());
    run.source = internal::OpenSerialSource(*std::move(delta), conversion);
    return absl::OkStatus();
  }
  if (options_.reader_threads > 0) {
    // The sink's laid-out-lines capability (document_pipeline_internal.hpp): not when a transform
    // is to change the documents first, nor for a data stream's documents (their sources are
    // checked once converted).
    std::optional<reindex::BulkActionOptions> render;
    if (run.sink->writes_rendered_lines() && !transformer_ && !run.placement.data_stream) {
      render = run.sink->action_options();
    }
    auto opened =
        internal::OpenParallelSource(*run.reader, run.start, run.end, options_.reader_threads,
                                     conversion, render, memory_budget_.get());
    if (!opened.ok()) return MarkSnapshotReadFailure(opened.status());
    run.source = *std::move(opened);
    return absl::OkStatus();
  }
  auto opened = run.reader->OpenAt(run.start);
  if (!opened.ok()) return MarkSnapshotReadFailure(opened.status());
  internal::AdmitLargeChunks(**opened, *memory_budget_);
  run.source = internal::OpenSerialSource(*std::move(opened), conversion);
  return absl::OkStatus();
}

DocumentMigrationWorker::ItemSent DocumentMigrationWorker::SendItem(
    ItemRun& run, internal::LeaseKeeper& keeper, internal::GracefulStop& stop,
    internal::ShardDocumentStream& stream) {
  ItemSent sent;
  // Progress: the reindexer reports the acknowledged prefix; the heartbeat renews the lease;
  // events are throttled.
  std::mutex progress_mu;
  auto last_event = run.acquired_at;
  const ProgressCallback on_progress =
      [&](const reindex::AcknowledgedProgress& acked) -> absl::Status {
    {
      std::lock_guard lock(progress_mu);
      sent.acknowledged_any = true;
    }
    RFS_RETURN_IF_ERROR(keeper.OnAcknowledged(acked));
    const auto now = clock_.Now();
    std::lock_guard lock(progress_mu);
    if (now - last_event >= options_.progress_interval) {
      last_event = now;
      EmitItemEvent(run, WorkerEvent::Kind::kProgress, [&](WorkerEvent& e) {
        e.cursor = acked.cursor;
        e.docs = stream.docs_read();
        e.source_bytes = stream.bytes_read();
        e.concurrency = acked.concurrency;
      });
    }
    return absl::OkStatus();
  };

  // No request goes out past the lease (as renewals move it) or a shutdown's grace period.
  reindex::DocumentReindexerOptions reindexer_options = options_.reindexer;
  reindexer_options.send_deadline = [&] {
    auto deadline = keeper.deadline();
    if (auto shutdown = stop.deadline()) deadline = std::min(deadline, *shutdown);
    return deadline;
  };
  // Within a retry budget (--max-retries), a transient refusal (a blocked index, 429s) keeps the
  // item: the lease is renewed while requests wait, so a block lifted within the budget costs no
  // lease. Without a budget the lease is the budget: nothing renews it but progress.
  if (reindexer_options.retry.max_attempts > 0) {
    reindexer_options.keep_alive = [&keeper] { return keeper.KeepAlive(); };
  }
  RetryStreak streak;
  reindexer_options.on_bulk_attempt = [&, c = options_.counters, tally = options_.back_pressure](
                                          const reindex::BulkAttempt& attempt) {
    ReportRetry(run, attempt, streak);
    const uint64_t rejected =
        attempt.items_rejected + (attempt.error == absl::StatusCode::kResourceExhausted ? 1 : 0);
    if (tally != nullptr) {
      tally->rejected_429.fetch_add(rejected, std::memory_order_relaxed);
      if (!attempt.retry_cause.empty()) tally->retries.fetch_add(1, std::memory_order_relaxed);
    }
    if (c == nullptr) return;
    c->documents_sent.Add(attempt.docs);
    c->source_bytes_sent.Add(attempt.source_bytes);
    c->bulk_latency.Observe(std::chrono::duration<double>(attempt.latency).count());
    c->rejections.Add(rejected);
    if (!attempt.retry_cause.empty()) c->retries.With({attempt.retry_cause}).Add();
  };
  DocumentReindexer reindexer(*run.sink, failed_sink_, clock_, reindexer_options);
  if (!transformer_) {
    sent.reindexed = reindexer.Reindex(stream, on_progress);
  } else {
    reindex::DocumentTransformOptions transform_options = options_.transform_batch;
    transform_options.memory_budget = memory_budget_.get();
    transform_options.transform_memory_bytes = options_.transform_limits.memory_bytes;
    reindex::TransformingDocumentStream transformed(stream, *transformer_, failed_sink_,
                                                    transform_options);
    sent.reindexed = reindexer.Reindex(transformed, on_progress);
    sent.transform_failures = transformed.docs_failed();
    sent.transform_dropped = transformed.docs_dropped();
  }
  return sent;
}

void DocumentMigrationWorker::ReportRetry(const ItemRun& run, const reindex::BulkAttempt& attempt,
                                          RetryStreak& streak) const {
  const auto now = clock_.Now();
  std::lock_guard lock(streak.mu);
  if (attempt.retry_cause.empty()) {
    // A bulk went through whole: the target answers again.
    if (attempt.error == absl::StatusCode::kOk) {
      streak.since.reset();
      streak.retries = 0;
    }
    return;
  }
  if (!streak.since) streak.since = now;
  ++streak.retries;
  if (streak.last_report && now - *streak.last_report < options_.retry_report_interval) return;
  streak.last_report = now;
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f",
                std::chrono::duration<double>(now - *streak.since).count());
  const int max_attempts = options_.reindexer.retry.max_attempts;
  EmitItemEvent(run, WorkerEvent::Kind::kRetrying, [&](WorkerEvent& e) {
    e.message = core::StrCat(
        run.sink->description(), ": bulk requests sent again (", attempt.retry_cause,
        "): ", attempt.retry_reason.empty() ? "no reason given" : attempt.retry_reason, "; ",
        streak.retries, streak.retries == 1 ? " retry" : " retries", " in ", seconds, " s so far, ",
        max_attempts > 0 ? core::StrCat("up to ", max_attempts, " attempts per request")
                         : std::string("until the lease runs out"));
  });
}

void DocumentMigrationWorker::AccountItem(const ItemRun& run,
                                          const internal::ShardDocumentStream& stream,
                                          const ItemSent& sent, internal::LeaseKeeper& keeper,
                                          WorkerSummary::IndexAccount& account) {
  const uint64_t rejected = sent.reindexed.ok() ? sent.reindexed->docs_failed : 0;
  summary_.docs_without_source += stream.without_source();
  summary_.docs_rebuilt += stream.rebuilt();
  summary_.docs_deleted += stream.deletes();
  summary_.docs_failed += stream.conversion_failures() + sent.transform_failures;
  summary_.docs_dropped_by_transform += sent.transform_dropped;
  summary_.lease_renewals += keeper.renewals();
  if (WorkerCounters* c = options_.counters) {
    c->lease_renewals.Add(keeper.renewals());
    c->failed_documents.With({"no_source"}).Add(stream.without_source());
    c->failed_documents.With({"source_conversion"}).Add(stream.conversion_failures());
    c->failed_documents.With({"transform"}).Add(sent.transform_failures);
    if (transformer_) c->transform_dropped.Add(sent.transform_dropped);
    if (stream.rebuilt() > 0) {
      c->documents_rebuilt.With({run.item.index_name}).Add(stream.rebuilt());
      c->documents_rebuilt_inexact.With({run.item.index_name}).Add(stream.rebuilt_inexact());
    }
    if (sent.reindexed.ok()) c->failed_documents.With({"rejected"}).Add(rejected);
  }
  account.read += stream.docs_read() + stream.not_convertible();
  account.not_convertible += stream.not_convertible();
  account.transform_failed += sent.transform_failures;
  account.transform_dropped += sent.transform_dropped;
  account.rebuilt += stream.rebuilt();
  account.rebuilt_inexact += stream.rebuilt_inexact();
  coordination::ItemOutcomes outcomes;
  outcomes.rejected = rejected;
  outcomes.not_convertible = stream.not_convertible();
  outcomes.transform_failed = sent.transform_failures;
  outcomes.transform_dropped = sent.transform_dropped;
  outcomes.rebuilt = stream.rebuilt();
  outcomes.rebuilt_inexact = stream.rebuilt_inexact();
  outcomes.already_newer = sent.reindexed.ok() ? sent.reindexed->docs_already_newer : 0;
  keeper.SetOutcomes(outcomes);
}

absl::StatusOr<DocumentMigrationWorker::ItemResult> DocumentMigrationWorker::EndFailedItem(
    const ItemRun& run, internal::LeaseKeeper& keeper, internal::GracefulStop& stop,
    const internal::ShardDocumentStream& stream, const ItemSent& sent,
    const coordination::ItemProgress& acknowledged, WorkerSummary::IndexAccount& account) {
  // What the target acknowledged before the end counts, whatever ends the item (a handoff's
  // summary must agree with its checkpoint).
  if (acknowledged.docs >= run.recorded.docs) {
    summary_.docs_written += acknowledged.docs - run.recorded.docs;
    account.written += acknowledged.docs - run.recorded.docs;
    summary_.source_bytes += acknowledged.bytes - std::min(acknowledged.bytes, run.recorded.bytes);
  }
  const absl::Status& error = sent.reindexed.status();
  if (stream.read_failed()) return error;
  auto lease_lost = [&] {
    EmitItemEvent(run, WorkerEvent::Kind::kLeaseLost,
                  [&](WorkerEvent& e) { e.message = std::string(error.message()); });
    return ItemResult{ItemResult::Kind::kLeaseLost};
  };
  if (keeper.lost()) return lease_lost();
  // Sending stopped at a deadline: the lease's (no progress renewed it) or a shutdown's.
  if (absl::IsDeadlineExceeded(error) || absl::IsAborted(error)) {
    const bool past_lease = clock_.Now() >= keeper.deadline();
    if (!past_lease && stop.requested()) {
      return ReleaseOnStop(run, keeper, stream, acknowledged.next_cursor);
    }
    // A request stopped at the lease's deadline may see a heartbeat move it just after: the
    // lease ran short either way.
    if (past_lease || absl::IsDeadlineExceeded(error)) {
      // Unless another worker has taken the item over, the acknowledged prefix is kept: the
      // coordinator accepts a checkpoint from an expired lease that nobody replaced, and
      // refuses it (lease lost) otherwise.
      if (sent.acknowledged_any && acknowledged.next_cursor < run.end) {
        return HandOn(run, keeper, stream, acknowledged.next_cursor);
      }
      // Within the lease, with nothing to hand on, a timeout is the target's (a request that
      // timed out past --max-retries): the error ends the item, which MigrateItem gives back
      // rather than hold it until the lease runs out.
      if (past_lease) return lease_lost();
    }
  }
  if (coordination::IsLeaseLost(error)) return lease_lost();
  return core::WithContext(
      error, core::StrCat("migrating ", run.item.index_name, " shard ", run.item.shard));
}

absl::Status DocumentMigrationWorker::CheckTargetAfterItem(
    const ItemRun& run, std::optional<coordination::ItemProgress>& progress) {
  if (!run.target_guard) return absl::OkStatus();
  auto findings = run.target_guard->Recheck();
  if (!findings.ok()) {
    return core::WithContext(findings.status(),
                             core::StrCat("looking at the target's indices after ",
                                          run.item.index_name, " shard ", run.item.shard));
  }
  using Finding = internal::TargetIndexGuard::Finding;
  for (const Finding& finding : *findings) {
    if (finding.kind == Finding::Kind::kReplaced) {
      // What went into the old index is gone: the next holder sends the item from its start.
      progress = coordination::ItemProgress{run.item.starting_cursor, 0, 0};
      return absl::FailedPreconditionError(core::StrCat(
          finding.message, " (shard ", run.item.shard, " of ", run.item.index_name,
          "). The documents sent into the old index are gone with it (this item's, maybe other "
          "shards' too): the item is given back from its start. To be sure of the whole index, "
          "delete ",
          finding.name,
          " on the target and migrate it again with a coordination store of its own"));
    }
    if (finding.kind == Finding::Kind::kCreatedByTarget) {
      auto& created = summary_.indices_created_by_target;
      if (std::find(created.begin(), created.end(), finding.name) != created.end()) continue;
      created.insert(std::upper_bound(created.begin(), created.end(), finding.name), finding.name);
    }
    EmitItemEvent(run,
                  finding.kind == Finding::Kind::kRefused
                      ? WorkerEvent::Kind::kTargetRefused
                      : WorkerEvent::Kind::kIndexCreatedByTarget,
                  [&](WorkerEvent& e) { e.message = finding.message; });
  }
  return absl::OkStatus();
}

absl::StatusOr<DocumentMigrationWorker::ItemResult> DocumentMigrationWorker::EndItem(
    const ItemRun& run, internal::LeaseKeeper& keeper, internal::GracefulStop& stop,
    const internal::ShardDocumentStream& stream, const ItemSent& sent,
    WorkerSummary::IndexAccount& account) {
  const reindex::ReindexSummary& reindexed = *sent.reindexed;
  summary_.docs_written += reindexed.docs_written;
  summary_.docs_allowed_errors += reindexed.docs_allowed_errors;
  account.written += reindexed.docs_written + reindexed.docs_allowed_errors;
  account.already_newer += reindexed.docs_already_newer;
  summary_.docs_already_newer += reindexed.docs_already_newer;
  account.rejected += reindexed.docs_failed;
  summary_.docs_failed += reindexed.docs_failed;
  summary_.source_bytes += reindexed.source_bytes;
  summary_.retries += reindexed.retries;

  const uint64_t next_cursor = run.source->position();
  if (stream.stopped_early() && next_cursor < run.end) {
    // Everything read was acknowledged: the rest starts at the reader's position.
    if (stop.requested()) return ReleaseOnStop(run, keeper, stream, next_cursor);
    if (next_cursor <= run.start) {
      // Setup alone used up the checkpoint time: let this lease run out, so the next holder
      // gets a longer one, rather than hand the same item on.
      return ItemResult{ItemResult::Kind::kNoProgress};
    }
    return HandOn(run, keeper, stream, next_cursor);
  }
  if (coordination::IsLeaseLost(keeper.RecordFinalProgress())) {
    return ItemResult{ItemResult::Kind::kLeaseLost};
  }
  absl::Status completed = coordinator_.CompleteWorkItem(keeper.lease());
  if (coordination::IsLeaseLost(completed)) return ItemResult{ItemResult::Kind::kLeaseLost};
  RFS_RETURN_IF_ERROR(completed);
  EmitItemEvent(run, WorkerEvent::Kind::kCompleted, [&](WorkerEvent& e) {
    e.docs = reindexed.docs_written + reindexed.docs_allowed_errors;
    e.source_bytes = reindexed.source_bytes;
    e.failed_docs = reindexed.docs_failed + stream.not_convertible() + sent.transform_failures;
    e.cursor = reindexed.last_acknowledged_cursor.value_or(run.start);
  });
  return ItemResult{ItemResult::Kind::kCompleted};
}

absl::StatusOr<DocumentMigrationWorker::ItemResult> DocumentMigrationWorker::HandOn(
    const ItemRun& run, internal::LeaseKeeper& keeper, const internal::ShardDocumentStream& stream,
    uint64_t next_cursor) {
  const std::string successor = run.item.WithCursor(next_cursor).ToString();
  if (coordination::IsLeaseLost(keeper.RecordFinalProgress())) {
    return ItemResult{ItemResult::Kind::kLeaseLost};
  }
  const Lease current = keeper.lease();
  const int exponent =
      coordination::SuccessorLeaseExponent(current.exponent, run.setup_time, current.duration);
  absl::Status handed = coordinator_.CreateSuccessorsAndComplete(
      current, std::span<const std::string>(&successor, 1), exponent);
  if (coordination::IsLeaseLost(handed)) {
    EmitItemEvent(run, WorkerEvent::Kind::kLeaseLost,
                  [&](WorkerEvent& e) { e.message = std::string(handed.message()); });
    return ItemResult{ItemResult::Kind::kLeaseLost};
  }
  RFS_RETURN_IF_ERROR(handed);
  EmitItemEvent(run, WorkerEvent::Kind::kCheckpointed, [&](WorkerEvent& e) {
    e.cursor = next_cursor;
    e.docs = stream.docs_read();
    e.source_bytes = stream.bytes_read();
    e.message = core::StrCat("successor ", successor, " continues from cursor ", next_cursor);
  });
  return ItemResult{ItemResult::Kind::kCheckpointed};
}

absl::StatusOr<DocumentMigrationWorker::ItemResult> DocumentMigrationWorker::ReleaseOnStop(
    const ItemRun& run, internal::LeaseKeeper& keeper, const internal::ShardDocumentStream& stream,
    uint64_t next_cursor) {
  coordination::ItemProgress at = keeper.acknowledged();
  at.next_cursor = std::max(at.next_cursor, next_cursor);
  absl::Status released = coordinator_.ReleaseWorkItem(keeper.lease(), at);
  if (coordination::IsLeaseLost(released)) return ItemResult{ItemResult::Kind::kLeaseLost};
  RFS_RETURN_IF_ERROR(released);
  EmitItemEvent(run, WorkerEvent::Kind::kReleased, [&](WorkerEvent& e) {
    e.cursor = at.next_cursor;
    e.docs = stream.docs_read();
    e.source_bytes = stream.bytes_read();
    e.message =
        core::StrCat("stopped on request; the next worker resumes at cursor ", at.next_cursor);
  });
  return ItemResult{ItemResult::Kind::kStopped};
}

}  // namespace rfs::migration
