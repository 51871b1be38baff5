#include "rfs/migration/documents_migration.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <variant>

#include "rfs/core/base64.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/json_string.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/parallel_reader.hpp"
#include "rfs/lucene/segment_infos.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/lucene/source_json.hpp"
#include "rfs/migration/worker_metrics.hpp"

#include "absl/strings/cord.h"
#include "migration/data_stream_internal.hpp"

namespace rfs::migration {

using reindex::DocumentReindexer;
using reindex::FailedDocument;
using reindex::IDocumentSink;
using reindex::IDocumentStream;
using reindex::IFailedDocumentSink;
using reindex::ProgressCallback;
using reindex::SourceDocument;

namespace {

using coordination::Lease;
using coordination::WorkItemId;

constexpr char kSnapshotReadPayload[] = "type.rfs.dev/snapshot-read-failure";

absl::Status TagSnapshotRead(absl::Status status) {
  if (!status.ok()) status.SetPayload(kSnapshotReadPayload, absl::Cord("1"));
  return status;
}

using coordination::kSetupForWorkItemId;
using coordination::kSetupIndicesPrefix;

using coordination::RecordCompletedItem;
using coordination::SettingsHash;

// The lease on the item being migrated. The heartbeat (called from the reindexer's progress
// callback, in cursor order) renews it and records the acknowledged cursor; the reader and the
// senders read its deadlines through atomics, once per document or request.
class LeaseKeeper {
 public:
  LeaseKeeper(coordination::IWorkCoordinator& coordinator, core::IClock& clock, const Lease& lease,
              std::chrono::milliseconds renewal_interval, coordination::ItemProgress recorded)
      : coordinator_(coordinator),
        clock_(clock),
        lease_(lease),
        interval_(std::min<coordination::Duration>(renewal_interval, lease.duration / 4)),
        last_renewal_(),
        recorded_(recorded),
        acknowledged_(recorded) {
    Publish();
  }

  core::IClock::TimePoint deadline() const { return FromNanos(deadline_.load()); }
  core::IClock::TimePoint checkpoint_at() const { return FromNanos(checkpoint_at_.load()); }
  Lease lease() const {
    std::lock_guard lock(mu_);
    return lease_;
  }
  /// Base (recorded before this grant) plus what this worker has had acknowledged.
  coordination::ItemProgress acknowledged() const {
    std::lock_guard lock(mu_);
    return acknowledged_;
  }
  uint64_t renewals() const { return renewals_.load(); }

  /// The acknowledged prefix grew to `acked` (counted from this grant's start). Renews when the
  /// interval has passed. Aborted when the lease is lost or over.
  absl::Status OnAcknowledged(const reindex::AcknowledgedProgress& acked) {
    std::lock_guard lock(mu_);
    acknowledged_.next_cursor = acked.cursor + 1;
    acknowledged_.docs = recorded_.docs + acked.docs;
    acknowledged_.bytes = recorded_.bytes + acked.bytes;
    const auto now = clock_.Now();
    // The first acknowledgment renews at once: it marks the item as moving (its exponent is taken
    // back) before a death can double the next lease; then one renewal per interval.
    if (interval_ <= coordination::Duration::zero() ||
        (last_renewal_ && now - *last_renewal_ < interval_)) {
      if (now >= lease_.local_deadline()) return Expired();
      return absl::OkStatus();
    }
    absl::Status renewed = RenewLocked();
    if (renewed.ok()) {
      last_renewal_ = now;
      return absl::OkStatus();
    }
    if (coordination::IsLeaseLost(renewed)) {
      return absl::AbortedError(
          core::StrCat("lease on ", lease_.work_item_id, " lost: ", renewed.message()));
    }
    // A transient store failure: keep going on the current lease and try again next time.
    if (now >= lease_.local_deadline()) return Expired();
    return absl::OkStatus();
  }
  bool lost() const {
    std::lock_guard lock(mu_);
    return lost_;
  }
  /// What became of this grant's documents besides acceptance: recorded with the final progress
  /// (earlier holders' outcomes come with the lease).
  void SetOutcomes(const coordination::ItemOutcomes& outcomes) {
    std::lock_guard lock(mu_);
    acknowledged_.outcomes = recorded_.outcomes;
    acknowledged_.outcomes += outcomes;
  }

  /// Records the acknowledged progress if the store does not hold it yet, so that a completed
  /// item shows every document it moved (progress reports sum what items record). Best effort:
  /// only a lost lease is an error (the completion would fail on it too).
  absl::Status RecordFinalProgress() {
    std::lock_guard lock(mu_);
    if (acknowledged_ == recorded_now_ || clock_.Now() >= lease_.local_deadline()) {
      return absl::OkStatus();
    }
    absl::Status renewed = RenewLocked();
    return coordination::IsLeaseLost(renewed) ? renewed : absl::OkStatus();
  }

 private:
  // Records the acknowledged progress and restarts the lease; a lost lease marks it lost.
  absl::Status RenewLocked() {
    auto renewed = coordinator_.RenewLease(lease_, acknowledged_);
    if (!renewed.ok()) {
      if (coordination::IsLeaseLost(renewed.status())) lost_ = true;
      return renewed.status();
    }
    lease_ = *std::move(renewed);
    recorded_now_ = acknowledged_;
    renewals_.fetch_add(1);
    Publish();
    return absl::OkStatus();
  }

  absl::Status Expired() const {
    return absl::AbortedError(
        core::StrCat("the lease on ", lease_.work_item_id, " expired before the item finished"));
  }
  static int64_t ToNanos(core::IClock::TimePoint t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }
  static core::IClock::TimePoint FromNanos(int64_t n) {
    return core::IClock::TimePoint(
        std::chrono::duration_cast<core::IClock::TimePoint::duration>(std::chrono::nanoseconds(n)));
  }
  void Publish() {
    deadline_.store(ToNanos(lease_.local_deadline()));
    checkpoint_at_.store(ToNanos(lease_.early_checkpoint_at()));
  }

  coordination::IWorkCoordinator& coordinator_;
  core::IClock& clock_;
  mutable std::mutex mu_;
  Lease lease_;
  const coordination::Duration interval_;
  std::optional<core::IClock::TimePoint> last_renewal_;
  const coordination::ItemProgress recorded_;
  coordination::ItemProgress acknowledged_;
  coordination::ItemProgress recorded_now_ = recorded_;  // what the store holds
  bool lost_ = false;
  std::atomic<int64_t> deadline_{0};
  std::atomic<int64_t> checkpoint_at_{0};
  std::atomic<uint64_t> renewals_{0};
};

// A graceful stop: noticed once, then in-flight work has `timeout` to finish.
class StopWatch {
 public:
  StopWatch(const std::atomic<bool>* requested, core::IClock& clock,
            std::chrono::milliseconds timeout)
      : requested_(requested), clock_(clock), timeout_(timeout) {}

  bool requested() const { return requested_ != nullptr && requested_->load(); }
  /// When sending must end: never before a stop is requested, `timeout` after it is noticed.
  std::optional<core::IClock::TimePoint> deadline() {
    if (!requested()) return std::nullopt;
    std::lock_guard lock(mu_);
    if (!noticed_) noticed_ = clock_.Now();
    return *noticed_ + timeout_;
  }

 private:
  const std::atomic<bool>* requested_;
  core::IClock& clock_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::optional<core::IClock::TimePoint> noticed_;
};

// What the worker knows about a source index to place its documents.
struct IndexPlacement {
  size_t type_count = 0;
  std::optional<std::string> mapping_type;
  /// Set for a data stream's backing index: its documents are written to the stream, as
  /// `create`, and must hold the stream's timestamp field.
  std::optional<std::string> data_stream;
  std::string timestamp_field;
  /// A trial run's prefix of every target index name.
  std::string target_prefix;
};

// One shard document as the worker sends it, or why it cannot be sent. Made without side
// effects, so the parallel reader makes them on its decoding threads.
struct ConvertedDocument {
  enum class Kind : uint8_t { kDocument, kWithoutSource, kUnconvertible };
  Kind kind = Kind::kDocument;
  SourceDocument doc;      // index, id and cursor in every kind; the source for kDocument
  std::string reason;      // kUnconvertible
  std::string error_type;  // kUnconvertible: the failed-document record's error_type
  // kUnconvertible: the source as the failed-document record keeps it, for an operator: base64
  // of the stored bytes when they could not be decoded, else the JSON.
  std::string recorded_source;
  bool rebuilt = false;          // the source was rebuilt from doc values and stored fields
  bool rebuilt_inexact = false;  // with a value that may differ from the one indexed
};

// Where a shard's documents go, for ConvertDocument.
struct ConversionTarget {
  const std::string& index;
  const IndexPlacement& placement;
  transform::MultiTypePolicy policy;
};

// Appends the source of `in` to `out` as one-line JSON.
absl::Status AppendOneLineJsonSource(const lucene::Document& in, const ConversionTarget& target,
                                     std::string& out) {
  if (in.source_format == lucene::SourceFormat::kJson) {
    core::AppendJsonOneLine(
        std::string_view(reinterpret_cast<const char*>(in.source.data()), in.source.size()), out);
    return absl::OkStatus();
  }
  const size_t start = out.size();
  RFS_RETURN_IF_ERROR(lucene::AppendSourceAsJson(
      in.source, in.source_format, out, core::StrCat("_source of ", target.index, "/", in.id)));
  if (core::FindLineBreak(std::string_view(out).substr(start)) != out.size() - start) {
    const std::string converted = out.substr(start);
    out.resize(start);
    core::AppendJsonOneLine(converted, out);
  }
  return absl::OkStatus();
}

// Converts `in`. With `lines`, its bulk lines are laid out there at once (for a sink that writes
// them as they are), while its decoded bytes are still in this thread's cache.
void ConvertDocument(lucene::Document& in, const ConversionTarget& target,
                     const std::shared_ptr<reindex::RenderedLines>* lines, ConvertedDocument& out) {
  SourceDocument& doc = out.doc;
  doc.id = in.id;
  doc.routing = in.routing;
  doc.cursor = in.cursor;
  doc.type = in.type ? in.type : target.placement.mapping_type;
  const std::optional<std::string>& data_stream = target.placement.data_stream;
  doc.index = data_stream
                  ? *data_stream
                  : transform::TargetIndexForType(target.index, doc.type.value_or(""),
                                                  target.placement.type_count, target.policy);
  if (!target.placement.target_prefix.empty()) doc.index.insert(0, target.placement.target_prefix);
  doc.source.clear();
  doc.one_line = false;
  doc.rendered.reset();
  doc.op = in.deleted    ? reindex::BulkOp::kDelete
           : data_stream ? reindex::BulkOp::kCreate
                         : reindex::BulkOp::kIndex;
  out.rebuilt = in.rebuilt;
  out.rebuilt_inexact = in.rebuilt_inexact;
  if (in.deleted && data_stream) {
    // A data stream takes only `create`: a delete (or the delete half of an update) made
    // through a backing index cannot be sent to it.
    out.kind = ConvertedDocument::Kind::kUnconvertible;
    out.error_type = "data_stream_delete_not_applied";
    out.reason = core::StrCat("deleted from backing index ", target.index,
                              " since the previous "
                              "snapshot; data stream ",
                              *data_stream, " accepts only create");
    out.recorded_source.clear();
    return;
  }
  if (in.deleted) {
    out.kind = ConvertedDocument::Kind::kDocument;
    return;
  }
  if (!in.has_source) {
    out.kind = ConvertedDocument::Kind::kWithoutSource;
    return;
  }
  out.kind = ConvertedDocument::Kind::kDocument;
  // Sources are made one line here, where they are copied anyway (bulk lines need it; the
  // document does not change), so the sinks can send them as they are.
  absl::Status converted;
  if (lines != nullptr) {
    converted = reindex::AppendRenderedLines(doc, *lines, [&](std::string& to) {
      // Room for the '\n' too: an append that only just fits grows the lines, and a huge
      // document would be copied into twice its size for that byte.
      to.reserve(to.size() + in.source.size() + 1);
      return AppendOneLineJsonSource(in, target, to);
    });
  } else {
    converted = AppendOneLineJsonSource(in, target, doc.source);
    doc.one_line = converted.ok();
  }
  if (!converted.ok()) {
    // One undecodable source must not stop the shard; it is kept (base64) for an operator.
    out.kind = ConvertedDocument::Kind::kUnconvertible;
    out.error_type = "source_conversion_exception";
    out.reason = std::string(converted.message());
    out.recorded_source = core::Base64Encode(in.source);
    doc.source.clear();
    return;
  }
  if (data_stream &&
      !internal::HasTimestampField(SourceBytes(doc), target.placement.timestamp_field)) {
    out.kind = ConvertedDocument::Kind::kUnconvertible;
    out.error_type = "data_stream_timestamp_missing";
    out.reason = core::StrCat("no single value in ", target.placement.timestamp_field,
                              ", which data stream ", *data_stream, " requires of a document");
    out.recorded_source = std::string(SourceBytes(doc));
    doc.source.clear();
  }
}

// A shard's documents from a cursor position, converted; position() is where a successor
// resumes after the documents returned so far.
class IConvertedSource {
 public:
  virtual ~IConvertedSource() = default;
  virtual absl::StatusOr<bool> Next(ConvertedDocument& out) = 0;
  virtual uint64_t position() const = 0;
};

// Decodes and converts on the calling thread.
class SerialConvertedSource final : public IConvertedSource {
 public:
  SerialConvertedSource(std::unique_ptr<lucene::IDocumentReader> cursor, ConversionTarget target)
      : cursor_(std::move(cursor)), target_(target) {}
  absl::StatusOr<bool> Next(ConvertedDocument& out) override {
    auto more = cursor_->Next(doc_);
    if (!more.ok() || !*more) return more;
    ConvertDocument(doc_, target_, nullptr, out);
    return true;
  }
  uint64_t position() const override { return cursor_->position(); }

 private:
  std::unique_ptr<lucene::IDocumentReader> cursor_;
  const ConversionTarget target_;
  lucene::Document doc_;
};

// Decodes and converts on the reader threads (lucene::ParallelShardScan), in cursor order.
class ParallelConvertedSource final : public IConvertedSource {
 public:
  /// With `render`, each range's documents have their bulk lines laid out with those options
  /// (reindex::RenderedLines) as they are converted.
  static absl::StatusOr<std::unique_ptr<ParallelConvertedSource>> Open(
      const lucene::ShardReader& reader, uint64_t start, uint64_t end, int threads,
      ConversionTarget target, std::optional<reindex::BulkActionOptions> render) {
    auto source = std::unique_ptr<ParallelConvertedSource>(new ParallelConvertedSource(target));
    source->position_ = std::min(start, end);
    lucene::ParallelReadOptions options;
    options.threads = threads;
    options.end_cursor = end;
    // The reindexer holds up to its own in-flight bytes too: keep the read-ahead small.
    options.max_buffered_bytes = size_t{8} << 20;
    ParallelConvertedSource* self = source.get();
    source->render_ = render;
    auto new_range = [self] {
      auto range = std::make_unique<Range>();
      if (self->render_) self->StartLines(*range);
      return range;
    };
    auto scan = lucene::ParallelShardScan::Open(
        reader, start, options, std::move(new_range),
        [self](lucene::Document& doc, lucene::ScannedRange& scanned) {
          auto& range = static_cast<Range&>(scanned);
          // Lines past the limit (a huge document) are not grown further: growing copies them
          // into a buffer twice their size.
          if (range.lines && range.lines->bytes.size() >= kLinesLimit) self->StartLines(range);
          ConvertedDocument& converted = range.docs.emplace_back();
          ConvertDocument(doc, self->target_, range.lines ? &range.lines : nullptr, converted);
          range.bytes += converted.doc.rendered_end - converted.doc.rendered_begin +
                         converted.doc.source.size() + converted.recorded_source.size() + 128;
          return absl::OkStatus();
        },
        [self](lucene::ScannedRange& scanned) {
          auto& range = static_cast<Range&>(scanned);
          if (range.lines) {
            const size_t used = range.lines->bytes.size();
            self->lines_hint_.store(std::min(used + used / 8, kLinesLimit),
                                    std::memory_order_relaxed);
          }
          return false;
        });
    if (!scan.ok()) return scan.status();
    source->scan_ = *std::move(scan);
    return source;
  }

  absl::StatusOr<bool> Next(ConvertedDocument& out) override {
    while (!current_ || next_ >= current_->docs.size()) {
      if (current_) position_ = std::max(position_, current_->end);
      current_.reset();
      auto next = scan_->Next();
      if (!next.ok()) return next.status();
      if (*next == nullptr) return false;
      current_.reset(static_cast<Range*>(next->release()));
      next_ = 0;
    }
    out = std::move(current_->docs[next_++]);
    position_ = out.doc.cursor + 1;
    return true;
  }
  uint64_t position() const override { return position_; }

 private:
  struct Range final : lucene::ScannedRange {
    std::vector<ConvertedDocument> docs;
    std::shared_ptr<reindex::RenderedLines> lines;  // with `render`
  };
  explicit ParallelConvertedSource(ConversionTarget target) : target_(target) {}

  // Gives the range's next documents new lines, sized like the last range's, so they are
  // rarely regrown (and copied) as they fill.
  void StartLines(Range& range) const {
    range.lines = std::make_shared<reindex::RenderedLines>();
    range.lines->options = *render_;
    range.lines->bytes.reserve(lines_hint_.load(std::memory_order_relaxed));
  }

  // The most one RenderedLines holds before the next document starts another (and the most a
  // new one reserves): a range with a huge document does not double that document's copy.
  static constexpr size_t kLinesLimit = size_t{16} << 20;

  const ConversionTarget target_;
  std::optional<reindex::BulkActionOptions> render_;
  std::atomic<size_t> lines_hint_{0};
  std::unique_ptr<lucene::ParallelShardScan> scan_;
  std::unique_ptr<Range> current_;
  size_t next_ = 0;
  uint64_t position_ = 0;
};

// Hands one shard's converted documents to the reindexer until the shard ends or `end` (a part
// of a split shard ends before the shard does) is reached; records the ones that cannot be sent.
class ShardDocumentStream final : public IDocumentStream {
 public:
  ShardDocumentStream(IConvertedSource& source, uint64_t end, std::function<bool()> stop_reading,
                      IFailedDocumentSink* failed_sink,
                      const std::function<void(const SourceDocument&)>& report)
      : source_(source),
        end_(end),
        stop_reading_(std::move(stop_reading)),
        failed_sink_(failed_sink),
        report_without_source_(report) {}

  absl::StatusOr<std::optional<SourceDocument>> Next() override {
    while (true) {
      // Checked once per document (a coarse clock read and two atomics): cheap next to decoding
      // one.
      if (stop_reading_()) {
        stopped_early_ = true;
        return std::optional<SourceDocument>();
      }
      auto more = source_.Next(converted_);
      if (!more.ok()) {
        read_failed_ = true;
        return TagSnapshotRead(more.status());
      }
      if (!*more) return std::optional<SourceDocument>();
      SourceDocument& out = converted_.doc;
      if (out.cursor >= end_) return std::optional<SourceDocument>();
      if (docs_read_ >= max_docs_) return std::optional<SourceDocument>();  // a trial's limit
      if (converted_.kind == ConvertedDocument::Kind::kWithoutSource) {
        RFS_RETURN_IF_ERROR(RecordUnmigratable(out, "document_without_source",
                                               "the document has no stored _source", ""));
        ++without_source_;
        report_without_source_(out);
        continue;
      }
      if (converted_.kind == ConvertedDocument::Kind::kUnconvertible) {
        RFS_RETURN_IF_ERROR(RecordUnmigratable(out, converted_.error_type, converted_.reason,
                                               std::move(converted_.recorded_source)));
        ++conversion_failures_;
        continue;
      }
      const size_t source_bytes = reindex::SourceSize(out);
      ++docs_read_;
      if (converted_.rebuilt) ++rebuilt_;
      if (converted_.rebuilt_inexact) ++rebuilt_inexact_;
      if (out.op == reindex::BulkOp::kDelete) ++deletes_;
      bytes_read_ += source_bytes;
      if (counters_ != nullptr) {
        counters_->documents_read.Add();
        counters_->source_bytes_read.Add(source_bytes);
      }
      return std::optional<SourceDocument>(std::move(out));
    }
  }
  void set_counters(WorkerCounters* counters) { counters_ = counters; }
  void set_max_docs(uint64_t max_docs) { max_docs_ = max_docs; }
  bool stopped_early() const { return stopped_early_; }
  bool read_failed() const { return read_failed_; }
  uint64_t docs_read() const { return docs_read_; }
  uint64_t bytes_read() const { return bytes_read_; }
  uint64_t without_source() const { return without_source_; }
  uint64_t rebuilt() const { return rebuilt_; }
  uint64_t rebuilt_inexact() const { return rebuilt_inexact_; }
  uint64_t deletes() const { return deletes_; }
  uint64_t conversion_failures() const { return conversion_failures_; }

 private:
  absl::Status RecordUnmigratable(const SourceDocument& doc, std::string_view type,
                                  std::string_view reason, std::string source) {
    if (failed_sink_ == nullptr) return absl::OkStatus();
    FailedDocument failed;
    failed.index = doc.index;
    failed.id = doc.id;
    failed.cursor = doc.cursor;
    failed.error_type = std::string(type);
    failed.reason = std::string(reason);
    failed.source = std::move(source);
    return failed_sink_->Record(std::span<const FailedDocument>(&failed, 1));
  }

  IConvertedSource& source_;
  const uint64_t end_;
  const std::function<bool()> stop_reading_;
  IFailedDocumentSink* const failed_sink_;
  const std::function<void(const SourceDocument&)>& report_without_source_;
  ConvertedDocument converted_;
  WorkerCounters* counters_ = nullptr;
  bool stopped_early_ = false;
  bool read_failed_ = false;
  uint64_t docs_read_ = 0;
  uint64_t bytes_read_ = 0;
  uint64_t without_source_ = 0;
  uint64_t rebuilt_ = 0;
  uint64_t rebuilt_inexact_ = 0;
  uint64_t max_docs_ = UINT64_MAX;
  uint64_t deletes_ = 0;
  uint64_t conversion_failures_ = 0;
};

}  // namespace

int ExitCode(const WorkerSummary& summary) {
  if (summary.docs_failed + summary.docs_without_source > 0) return core::kExitDocumentsFailed;
  return ExitCode(summary.outcome);
}

int ExitCode(WorkerOutcome outcome) {
  switch (outcome) {
    case WorkerOutcome::kItemDone:
      return core::kExitOk;
    case WorkerOutcome::kLeaseHandoff:
    case WorkerOutcome::kStopped:
      return core::kExitHandoffOrStopped;
    case WorkerOutcome::kNoWorkLeft:
      return core::kExitNoWorkLeft;
    case WorkerOutcome::kAllLeasedElsewhere:
      return core::kExitAllLeasedElsewhere;
  }
  return core::kExitFailure;
}

std::string_view ToString(WorkerOutcome outcome) {
  switch (outcome) {
    case WorkerOutcome::kItemDone:
      return "item_done";
    case WorkerOutcome::kLeaseHandoff:
      return "lease_handoff";
    case WorkerOutcome::kNoWorkLeft:
      return "no_work_left";
    case WorkerOutcome::kAllLeasedElsewhere:
      return "all_leased_elsewhere";
    case WorkerOutcome::kStopped:
      return "stopped";
  }
  return "unknown";
}

std::string_view ToString(WorkerEvent::Kind kind) {
  switch (kind) {
    case WorkerEvent::Kind::kShardSetup:
      return "shard_setup";
    case WorkerEvent::Kind::kMetricsEndpoint:
      return "metrics_endpoint";
    case WorkerEvent::Kind::kAcquired:
      return "acquired";
    case WorkerEvent::Kind::kProgress:
      return "progress";
    case WorkerEvent::Kind::kCompleted:
      return "completed";
    case WorkerEvent::Kind::kCheckpointed:
      return "checkpointed";
    case WorkerEvent::Kind::kLeaseLost:
      return "lease_lost";
    case WorkerEvent::Kind::kDocumentWithoutSource:
      return "document_without_source";
    case WorkerEvent::Kind::kShardTooLarge:
      return "shard_too_large";
    case WorkerEvent::Kind::kReleased:
      return "released";
  }
  return "unknown";
}

bool IsItemOverAttempts(const absl::Status& status) {
  return !status.ok() && status.GetPayload(kItemAttemptsPayload).has_value();
}

absl::Status MarkSnapshotReadFailure(absl::Status status) { return TagSnapshotRead(status); }

bool IsSnapshotReadFailure(const absl::Status& status) {
  return !status.ok() && status.GetPayload(kSnapshotReadPayload).has_value();
}

bool IsStoreMismatch(const absl::Status& status) {
  return !status.ok() && status.GetPayload(kStoreMismatchPayload).has_value();
}

bool IsSourcelessIndex(const absl::Status& status) {
  return !status.ok() && status.GetPayload(kSourcelessPayload).has_value();
}

absl::Status DocumentMigrationWorker::CheckSourceStorage() const {
  for (const std::string& index : SelectedIndices()) {
    auto metadata = repository_.ReadIndexMetadata(*snapshot_, index);
    if (!metadata.ok()) return TagSnapshotRead(metadata.status());
    const lucene::IndexSource source = lucene::DescribeIndexSource(*metadata);
    if (!source.storage.incomplete()) continue;
    if (options_.enable_sourceless_migrations) continue;
    const bool partial = source.storage.mode == lucene::SourceStorage::Mode::kStored;
    absl::Status error = absl::FailedPreconditionError(core::StrCat(
        "index ", index,
        partial ? " keeps only part of each _source (" : " has no stored _source (",
        source.storage.Describe(),
        partial ? "); the fields left out can only be rebuilt from doc values and stored fields"
                : "); its documents can only be rebuilt from doc values and stored fields",
        ": run with --enable-sourceless-migrations (MetadataMigration evaluate lists what can "
        "be rebuilt)"));
    error.SetPayload(kSourcelessPayload, absl::Cord(index));
    return error;
  }
  return absl::OkStatus();
}

struct DocumentMigrationWorker::ItemResult {
  enum class Kind { kCompleted, kCheckpointed, kNoProgress, kLeaseLost, kStopped };
  Kind kind = Kind::kCompleted;
};

DocumentMigrationWorker::DocumentMigrationWorker(const snapshot::SnapshotRepository& repository,
                                                 coordination::IWorkCoordinator& coordinator,
                                                 SinkFactory sinks,
                                                 IFailedDocumentSink* failed_sink,
                                                 core::IClock& clock,
                                                 DocumentMigrationOptions options)
    : repository_(repository),
      raw_coordinator_(coordinator),
      retrying_(coordinator, clock, {.max_attempts = std::max(1, options.coordinator_attempts)}),
      coordinator_(retrying_),
      sinks_(std::move(sinks)),
      failed_sink_(failed_sink),
      clock_(clock),
      options_(std::move(options)) {}

void DocumentMigrationWorker::Emit(WorkerEvent event) const {
  if (WorkerCounters* c = options_.counters) {
    switch (event.kind) {
      case WorkerEvent::Kind::kAcquired:
        c->work_items.With({"acquired"}).Add();
        break;
      case WorkerEvent::Kind::kCompleted:
        c->work_items.With({"completed"}).Add();
        break;
      case WorkerEvent::Kind::kCheckpointed:
        c->work_items.With({"handed_on"}).Add();
        break;
      case WorkerEvent::Kind::kReleased:
        c->work_items.With({"released"}).Add();
        break;
      case WorkerEvent::Kind::kLeaseLost:
        c->work_items.With({"lost"}).Add();
        break;
      case WorkerEvent::Kind::kProgress:
        c->concurrency.Set(static_cast<int64_t>(event.concurrency));
        break;
      default:
        break;
    }
  }
  if (options_.on_event) options_.on_event(event);
}

absl::StatusOr<std::vector<WorkItemId>> DocumentMigrationWorker::ShardItems(
    const std::string& index, int shard) const {
  const WorkItemId whole{index, static_cast<uint32_t>(shard), 0, std::nullopt};
  // A delta's deletes come after the shard's cursors: its shards are never split.
  // A trial's limit is per shard: its shards are not split either.
  if (options_.split_shard_bytes == 0 || previous_snapshot_ != nullptr ||
      options_.max_docs_per_shard > 0) {
    return std::vector<WorkItemId>{whole};
  }
  auto files = repository_.ReadShardSnapshot(*snapshot_, index, shard);
  // A shard without data (NotFound) is one item that finds nothing; other errors stop setup.
  if (absl::IsNotFound(files.status())) return std::vector<WorkItemId>{whole};
  if (!files.ok()) return TagSnapshotRead(files.status());
  const uint64_t bytes = files->total_file_bytes();
  if (bytes <= options_.split_shard_bytes) return std::vector<WorkItemId>{whole};
  auto directory = repository_.OpenShardFiles(*snapshot_, index, shard);
  if (!directory.ok()) return TagSnapshotRead(directory.status());
  auto infos = lucene::ReadSegmentInfos(**directory);
  if (!infos.ok()) return TagSnapshotRead(infos.status());
  const uint64_t max_cursor = infos->total_max_doc();
  // Disjoint ranges of the cursor space, about split_shard_bytes of files each.
  const uint64_t parts = std::min<uint64_t>(
      {(bytes + options_.split_shard_bytes - 1) / options_.split_shard_bytes, max_cursor, 4096});
  if (parts <= 1) return std::vector<WorkItemId>{whole};
  std::vector<WorkItemId> items;
  for (uint64_t part = 0; part < parts; ++part) {
    const uint64_t begin = max_cursor * part / parts;
    const uint64_t end = max_cursor * (part + 1) / parts;
    items.push_back(WorkItemId{index, static_cast<uint32_t>(shard), begin, end});
  }
  return items;
}

std::vector<std::string> DocumentMigrationWorker::SelectedIndices() const {
  std::vector<std::string> out;
  for (std::string& index : repository_.IndicesIn(*snapshot_)) {
    const snapshot::DataStream* stream = snapshot::DataStreamOf(data_streams_, index);
    if (transform::SelectIndex(options_.index_allowlist, index, stream ? stream->name : "")) {
      out.push_back(std::move(index));
    }
  }
  return out;
}

std::string DocumentMigrationWorker::SetupIdentity() const {
  // What decides the shard items and where their documents go: the snapshot (its uuid tells a
  // snapshot from a later one of the same name, in any copy of the repository), the split size
  // and the multi-type policy.
  std::string identity = core::StrCat(
      "snapshot '", snapshot_->name, "' (uuid ", snapshot_->uuid, "), --split-shard-bytes ",
      options_.split_shard_bytes, ", --multi-type-behavior ",
      options_.multi_type_policy == transform::MultiTypePolicy::kSplit ? "split" : "union");
  if (options_.trial()) {
    // A trial's items are its own: a full run never resumes them, nor they a full run.
    identity += core::StrCat(", trial: ", options_.max_docs_per_shard,
                             " documents per shard at most, index prefix '",
                             options_.target_index_prefix, "'");
  }
  if (previous_snapshot_ != nullptr) {
    // A delta's items are its own: never those of the full run or of another delta.
    identity +=
        core::StrCat(", delta from snapshot '", previous_snapshot_->name, "' (uuid ",
                     previous_snapshot_->uuid, ") ", lucene::DeltaModeName(options_.delta_mode));
  }
  return identity;
}

std::string DocumentMigrationWorker::SetupIndicesMarker() const {
  std::string names;
  for (const auto& index : SelectedIndices()) names += core::StrCat(index, "\n");
  return core::StrCat(kSetupIndicesPrefix, SettingsHash(names));
}

absl::Status DocumentMigrationWorker::CheckStoreIsForThisRun() {
  const uint64_t mine = SettingsHash(SetupIdentity());
  RFS_ASSIGN_OR_RETURN(auto record, coordinator_.GetWorkItem(kSetupForWorkItemId));
  if (!record || !record->completed() || !record->progress) {
    // A store set up by an rfs that kept no such record: it is adopted for this run's settings
    // (the first worker to record them decides).
    RFS_RETURN_IF_ERROR(RecordCompletedItem(coordinator_, clock_, kSetupForWorkItemId,
                                            options_.initial_lease, mine));
    RFS_ASSIGN_OR_RETURN(record, coordinator_.GetWorkItem(kSetupForWorkItemId));
  }
  if (!record || !record->progress || record->progress->next_cursor != mine) {
    // Its completed items would read as "no work left" for work never done.
    absl::Status status = absl::FailedPreconditionError(core::StrCat(
        "this work-coordination store was set up for another snapshot or other settings than "
        "this run's ",
        SetupIdentity(),
        ": its completed items say nothing of this run. Use a store of its own (--session-name "
        "NAME, another --output-dir or --coordinator-db), or the settings it was set up with"));
    status.SetPayload(kStoreMismatchPayload, absl::Cord("1"));
    return status;
  }
  RFS_ASSIGN_OR_RETURN(auto indices, coordinator_.GetWorkItem(SetupIndicesMarker()));
  if (!indices) {
    // Another selection of indices over the same snapshot: adding the items it lacks is safe
    // (creation leaves existing items alone); the items of other indices stay in the store.
    RFS_RETURN_IF_ERROR(CreateShardItems());
  }
  return absl::OkStatus();
}

absl::Status DocumentMigrationWorker::SetupShards() {
  RFS_RETURN_IF_ERROR(CreateShardItems());
  if (options_.trial()) {
    // Says "trial" to whoever reads the store (the console), beside the setup identity.
    RFS_RETURN_IF_ERROR(RecordCompletedItem(
        coordinator_, clock_,
        core::StrCat(coordination::kSetupTrialPrefix, options_.max_docs_per_shard),
        options_.initial_lease, options_.max_docs_per_shard));
  }
  return RecordCompletedItem(coordinator_, clock_, kSetupForWorkItemId, options_.initial_lease,
                             SettingsHash(SetupIdentity()));
}

absl::Status DocumentMigrationWorker::CreateShardItems() {
  uint64_t created = 0;
  uint64_t indices = 0;
  for (const std::string& index : SelectedIndices()) {
    auto metadata = repository_.ReadIndexMetadata(*snapshot_, index);
    if (!metadata.ok()) return TagSnapshotRead(metadata.status());
    ++indices;
    for (int shard = 0; shard < metadata->number_of_shards; ++shard) {
      RFS_ASSIGN_OR_RETURN(std::vector<WorkItemId> items, ShardItems(index, shard));
      for (const WorkItemId& item : items) {
        auto fresh = coordinator_.CreateUnassignedWorkItem(item.ToString(), 0);
        if (!fresh.ok()) return fresh.status();
        created += *fresh ? 1 : 0;
      }
    }
  }
  WorkerEvent event;
  event.kind = WorkerEvent::Kind::kShardSetup;
  event.docs = created;
  event.message = core::StrCat(created, " shard work items for ", indices, " indices of snapshot ",
                               snapshot_->name);
  Emit(std::move(event));
  return RecordCompletedItem(coordinator_, clock_, SetupIndicesMarker(), options_.initial_lease);
}

absl::StatusOr<DocumentMigrationWorker::ItemResult> DocumentMigrationWorker::MigrateItem(
    const Lease& lease) {
  std::optional<coordination::ItemProgress> progress;
  auto result = MigrateLeasedItem(lease, progress);
  if (result.ok()) return result;
  // The run ends in an error: give the item back now, with its cursor, so that the next worker
  // resumes there at once instead of waiting out the lease (and getting a doubled one). Best
  // effort: a lost lease or an unreachable store leaves it to expire.
  if (coordinator_.ReleaseWorkItem(lease, progress).ok()) {
    WorkerEvent event;
    event.kind = WorkerEvent::Kind::kReleased;
    event.work_item = lease.work_item_id;
    if (auto item = WorkItemId::Parse(lease.work_item_id); item.ok()) {
      event.index = item->index_name;
      event.shard = static_cast<int>(item->shard);
      event.starting_cursor = item->starting_cursor;
    }
    if (progress) event.cursor = progress->next_cursor;
    event.message = core::StrCat("released after an error: ", result.status().message());
    Emit(std::move(event));
  }
  return result;
}

absl::StatusOr<DocumentMigrationWorker::ItemResult> DocumentMigrationWorker::MigrateLeasedItem(
    const Lease& lease, std::optional<coordination::ItemProgress>& progress_out) {
  const auto acquired_at = clock_.Now();
  RFS_ASSIGN_OR_RETURN(WorkItemId item, WorkItemId::Parse(lease.work_item_id));
  WorkerEvent base;
  base.work_item = lease.work_item_id;
  base.index = item.index_name;
  base.shard = static_cast<int>(item.shard);
  base.starting_cursor = item.starting_cursor;
  base.cursor = item.starting_cursor;
  auto emit = [&](WorkerEvent::Kind kind, auto&&... fill) {
    WorkerEvent event = base;
    event.kind = kind;
    event.elapsed = clock_.Now() - acquired_at;
    (fill(event), ...);
    Emit(std::move(event));
  };
  // Index placement: how many mapping types the index has (multi-type policy).
  auto metadata = repository_.ReadIndexMetadata(*snapshot_, item.index_name);
  if (!metadata.ok()) return TagSnapshotRead(metadata.status());
  IndexPlacement placement;
  placement.type_count = transform::CountMappingTypes(metadata->mappings);
  placement.mapping_type = lucene::IndexMappingType(*metadata);
  placement.target_prefix = options_.target_index_prefix;
  if (const snapshot::DataStream* stream = snapshot::DataStreamOf(data_streams_, item.index_name)) {
    placement.data_stream = stream->name;
    placement.timestamp_field = stream->timestamp_field;
  }

  auto shard_snapshot =
      repository_.ReadShardSnapshot(*snapshot_, item.index_name, static_cast<int>(item.shard));
  if (!shard_snapshot.ok()) return TagSnapshotRead(shard_snapshot.status());
  const uint64_t shard_bytes = shard_snapshot->total_file_bytes();
  // A part of a split shard reads only its range: the limit is for whole shards.
  if (!item.ending_cursor && shard_bytes > options_.max_shard_size_bytes) {
    const std::string message =
        core::StrCat("shard ", item.shard, " of index ", item.index_name, " is ", shard_bytes,
                     " bytes, over --max-shard-size-bytes ", options_.max_shard_size_bytes,
                     "; it was released for a worker with a higher limit");
    emit(WorkerEvent::Kind::kShardTooLarge, [&](WorkerEvent& e) { e.message = message; });
    // MigrateItem gives the item back at once, so that it is not held for a whole lease.
    return absl::FailedPreconditionError(message);
  }

  // Where to start: after what earlier holders had acknowledged (their heartbeats), if anything.
  coordination::ItemProgress recorded{item.starting_cursor, 0, 0};
  if (lease.recorded_progress) {
    recorded = *lease.recorded_progress;
    recorded.next_cursor = std::max(recorded.next_cursor, item.starting_cursor);
  }
  progress_out = recorded;

  lucene::ShardReaderOptions reader_options;
  // SMILE, CBOR and YAML sources are converted to JSON here, per document.
  reader_options.pass_through_non_json_source = true;
  if (options_.enable_sourceless_migrations) {
    auto plan = lucene::RebuildPlanForIndex(*metadata);
    if (!plan.ok()) return TagSnapshotRead(plan.status());
    reader_options.rebuild_plan = *std::move(plan);
  }
  auto reader = lucene::OpenSnapshotShard(repository_, *snapshot_, item.index_name,
                                          static_cast<int>(item.shard), reader_options);
  if (!reader.ok()) return TagSnapshotRead(reader.status());
  // The item's end: its part's ending cursor, or the shard's end (a delta's deletes follow it).
  const uint64_t item_end =
      previous_snapshot_ != nullptr
          ? UINT64_MAX
          : std::min<uint64_t>(item.ending_cursor.value_or(UINT64_MAX), (*reader)->max_cursor());
  const uint64_t start = std::min<uint64_t>(recorded.next_cursor, item_end);
  const ConversionTarget conversion{item.index_name, placement, options_.multi_type_policy};
  RFS_ASSIGN_OR_RETURN(
      std::shared_ptr<IDocumentSink> sink,
      sinks_(item.index_name, placement.data_stream ? core::StrCat(item.shard, "-", item.index_name)
                                                    : std::to_string(item.shard)));
  // A sink that writes laid-out bulk lines as they are gets them from the decoding threads,
  // unless a transform is to change the documents first.
  std::optional<reindex::BulkActionOptions> render;
  // Not for a data stream's documents either: their sources are checked once converted.
  if (sink->writes_rendered_lines() && !transformer_ && !placement.data_stream) {
    render = sink->action_options();
  }
  absl::StatusOr<std::unique_ptr<IConvertedSource>> cursor;
  if (previous_snapshot_ != nullptr) {
    // The same shard in the previous snapshot, when the index was there with this shard.
    std::unique_ptr<lucene::ShardReader> previous;
    const auto before = repository_.IndicesIn(*previous_snapshot_);
    if (std::find(before.begin(), before.end(), item.index_name) != before.end()) {
      auto opened = lucene::OpenSnapshotShard(repository_, *previous_snapshot_, item.index_name,
                                              static_cast<int>(item.shard), reader_options);
      if (opened.ok()) {
        previous = *std::move(opened);
      } else if (!absl::IsNotFound(opened.status())) {
        return TagSnapshotRead(opened.status());
      }
    }
    auto delta = lucene::ShardDeltaReader::Open(std::move(previous), *std::move(reader),
                                                options_.delta_mode, start);
    if (delta.ok()) {
      cursor = std::unique_ptr<IConvertedSource>(
          std::make_unique<SerialConvertedSource>(*std::move(delta), conversion));
    } else {
      cursor = delta.status();
    }
  } else if (options_.reader_threads > 0) {
    auto opened = ParallelConvertedSource::Open(**reader, start, item_end, options_.reader_threads,
                                                conversion, render);
    if (opened.ok()) {
      cursor = std::unique_ptr<IConvertedSource>(*std::move(opened));
    } else {
      cursor = opened.status();
    }
  } else {
    auto opened = (*reader)->OpenAt(start);
    if (opened.ok()) {
      cursor = std::unique_ptr<IConvertedSource>(
          std::make_unique<SerialConvertedSource>(*std::move(opened), conversion));
    } else {
      cursor = opened.status();
    }
  }
  if (!cursor.ok()) return TagSnapshotRead(cursor.status());
  base.max_cursor = item_end;
  base.cursor = start;
  emit(WorkerEvent::Kind::kAcquired, [&](WorkerEvent& e) {
    if (start > item.starting_cursor) {
      e.message = core::StrCat("resuming at cursor ", start, " recorded by an earlier holder");
    }
  });
  const auto setup_time = clock_.Now() - acquired_at;

  const std::function<void(const SourceDocument&)> report_without_source =
      [&](const SourceDocument& doc) {
        emit(WorkerEvent::Kind::kDocumentWithoutSource, [&](WorkerEvent& e) {
          e.cursor = doc.cursor;
          e.message = core::StrCat("document ", doc.id, " of ", item.index_name, " (target ",
                                   doc.index, ") has no _source and cannot be migrated");
        });
      };
  LeaseKeeper keeper(raw_coordinator_, clock_, lease, options_.lease_renewal_interval, recorded);
  StopWatch stop(options_.stop_requested, clock_, options_.shutdown_timeout);
  // A trial item is never handed to a successor (its limit counts the documents of one item);
  // a trial is small by design.
  const bool checkpoints = options_.max_docs_per_shard == 0;
  ShardDocumentStream stream(
      **cursor, item_end,
      [&] {
        return stop.requested() || (checkpoints && clock_.CoarseNow() >= keeper.checkpoint_at());
      },
      failed_sink_, report_without_source);
  stream.set_counters(options_.counters);
  if (options_.max_docs_per_shard > 0) {
    // What earlier holders of the item had sent counts against the limit.
    stream.set_max_docs(options_.max_docs_per_shard > recorded.docs
                            ? options_.max_docs_per_shard - recorded.docs
                            : 0);
  }

  // Progress: the reindexer reports the acknowledged prefix; the heartbeat renews the lease;
  // events are throttled.
  std::mutex progress_mu;
  auto last_event = acquired_at;
  bool acknowledged_any = false;
  const ProgressCallback on_progress =
      [&](const reindex::AcknowledgedProgress& acked) -> absl::Status {
    {
      std::lock_guard lock(progress_mu);
      acknowledged_any = true;
    }
    RFS_RETURN_IF_ERROR(keeper.OnAcknowledged(acked));
    const auto now = clock_.Now();
    std::lock_guard lock(progress_mu);
    if (now - last_event >= options_.progress_interval) {
      last_event = now;
      emit(WorkerEvent::Kind::kProgress, [&](WorkerEvent& e) {
        e.cursor = acked.cursor;
        e.docs = stream.docs_read();
        e.source_bytes = stream.bytes_read();
        e.concurrency = acked.concurrency;
      });
    }
    return absl::OkStatus();
  };

  // Hands the rest of the shard, from `next_cursor`, to a successor item and completes this one.
  auto checkpoint = [&](uint64_t next_cursor) -> absl::StatusOr<ItemResult> {
    const std::string successor = item.WithCursor(next_cursor).ToString();
    if (coordination::IsLeaseLost(keeper.RecordFinalProgress())) {
      return ItemResult{ItemResult::Kind::kLeaseLost};
    }
    const Lease current = keeper.lease();
    const int exponent =
        coordination::SuccessorLeaseExponent(current.exponent, setup_time, current.duration);
    absl::Status handed = coordinator_.CreateSuccessorsAndComplete(
        current, std::span<const std::string>(&successor, 1), exponent);
    if (coordination::IsLeaseLost(handed)) {
      emit(WorkerEvent::Kind::kLeaseLost,
           [&](WorkerEvent& e) { e.message = std::string(handed.message()); });
      return ItemResult{ItemResult::Kind::kLeaseLost};
    }
    RFS_RETURN_IF_ERROR(handed);
    emit(WorkerEvent::Kind::kCheckpointed, [&](WorkerEvent& e) {
      e.cursor = next_cursor;
      e.docs = stream.docs_read();
      e.source_bytes = stream.bytes_read();
      e.message = core::StrCat("successor ", successor, " continues from cursor ", next_cursor);
    });
    return ItemResult{ItemResult::Kind::kCheckpointed};
  };

  // A graceful stop: the item goes back with the acknowledged cursor; the next worker resumes.
  auto stopped = [&](uint64_t next_cursor) -> absl::StatusOr<ItemResult> {
    coordination::ItemProgress at = keeper.acknowledged();
    at.next_cursor = std::max(at.next_cursor, next_cursor);
    absl::Status released = coordinator_.ReleaseWorkItem(keeper.lease(), at);
    if (coordination::IsLeaseLost(released)) return ItemResult{ItemResult::Kind::kLeaseLost};
    RFS_RETURN_IF_ERROR(released);
    emit(WorkerEvent::Kind::kReleased, [&](WorkerEvent& e) {
      e.cursor = at.next_cursor;
      e.docs = stream.docs_read();
      e.source_bytes = stream.bytes_read();
      e.message =
          core::StrCat("stopped on request; the next worker resumes at cursor ", at.next_cursor);
    });
    return ItemResult{ItemResult::Kind::kStopped};
  };

  // No request goes out past the lease (as renewals move it) or a shutdown's grace period.
  reindex::DocumentReindexerOptions reindexer_options = options_.reindexer;
  reindexer_options.send_deadline = [&] {
    auto deadline = keeper.deadline();
    if (auto shutdown = stop.deadline()) deadline = std::min(deadline, *shutdown);
    return deadline;
  };
  if (WorkerCounters* c = options_.counters) {
    reindexer_options.on_bulk_attempt = [c](const reindex::BulkAttempt& attempt) {
      c->documents_sent.Add(attempt.docs);
      c->source_bytes_sent.Add(attempt.source_bytes);
      c->bulk_latency.Observe(std::chrono::duration<double>(attempt.latency).count());
      c->rejections.Add(attempt.items_rejected +
                        (attempt.error == absl::StatusCode::kResourceExhausted ? 1 : 0));
      if (!attempt.retry_cause.empty()) c->retries.With({attempt.retry_cause}).Add();
    };
  }
  DocumentReindexer reindexer(*sink, failed_sink_, clock_, reindexer_options);
  std::optional<reindex::TransformingDocumentStream> transformed;
  if (transformer_) {
    transformed.emplace(stream, *transformer_, failed_sink_, options_.transform_batch);
  }
  auto reindexed = transformed ? reindexer.Reindex(*transformed, on_progress)
                               : reindexer.Reindex(stream, on_progress);
  const uint64_t transform_failures = transformed ? transformed->docs_failed() : 0;
  summary_.docs_without_source += stream.without_source();
  summary_.docs_rebuilt += stream.rebuilt();
  summary_.docs_deleted += stream.deletes();
  summary_.docs_failed += stream.conversion_failures() + transform_failures;
  if (transformed) summary_.docs_dropped_by_transform += transformed->docs_dropped();
  summary_.lease_renewals += keeper.renewals();
  if (WorkerCounters* c = options_.counters) {
    c->lease_renewals.Add(keeper.renewals());
    c->failed_documents.With({"no_source"}).Add(stream.without_source());
    c->failed_documents.With({"source_conversion"}).Add(stream.conversion_failures());
    c->failed_documents.With({"transform"}).Add(transform_failures);
    if (transformed) c->transform_dropped.Add(transformed->docs_dropped());
    if (stream.rebuilt() > 0) {
      c->documents_rebuilt.With({item.index_name}).Add(stream.rebuilt());
      c->documents_rebuilt_inexact.With({item.index_name}).Add(stream.rebuilt_inexact());
    }
    if (reindexed.ok()) c->failed_documents.With({"rejected"}).Add(reindexed->docs_failed);
  }
  progress_out = keeper.acknowledged();
  WorkerSummary::IndexAccount& account = summary_.by_index[item.index_name];
  // Whatever ends the item, what its documents became goes to the per-index metric too.
  struct AccountToMetrics {
    WorkerCounters* counters;
    const std::string& index;
    const WorkerSummary::IndexAccount& account;
    const WorkerSummary::IndexAccount before;
    ~AccountToMetrics() {
      if (counters == nullptr) return;
      auto add = [&](const char* outcome, uint64_t now, uint64_t then) {
        if (now > then) counters->index_documents.With({index, outcome}).Add(now - then);
      };
      add("read", account.read, before.read);
      add("written", account.written, before.written);
      add("rejected", account.rejected, before.rejected);
      add("not_convertible", account.not_convertible, before.not_convertible);
      add("transform_failed", account.transform_failed, before.transform_failed);
      add("transform_dropped", account.transform_dropped, before.transform_dropped);
    }
  } account_to_metrics{options_.counters, item.index_name, account, account};
  account.read += stream.docs_read() + stream.conversion_failures() + stream.without_source();
  account.not_convertible += stream.conversion_failures() + stream.without_source();
  account.transform_failed += transform_failures;
  if (transformed) account.transform_dropped += transformed->docs_dropped();
  account.rebuilt += stream.rebuilt();
  account.rebuilt_inexact += stream.rebuilt_inexact();
  {
    coordination::ItemOutcomes outcomes;
    outcomes.rejected = reindexed.ok() ? reindexed->docs_failed : 0;
    outcomes.not_convertible = stream.conversion_failures() + stream.without_source();
    outcomes.transform_failed = transform_failures;
    outcomes.transform_dropped = transformed ? transformed->docs_dropped() : 0;
    outcomes.rebuilt = stream.rebuilt();
    outcomes.rebuilt_inexact = stream.rebuilt_inexact();
    keeper.SetOutcomes(outcomes);
    progress_out = keeper.acknowledged();
  }
  if (!reindexed.ok()) {
    // What the target acknowledged before the end counts, whatever ends the item (a handoff's
    // summary must agree with its checkpoint).
    if (progress_out->docs >= recorded.docs) {
      summary_.docs_written += progress_out->docs - recorded.docs;
      account.written += progress_out->docs - recorded.docs;
      summary_.source_bytes += progress_out->bytes - std::min(progress_out->bytes, recorded.bytes);
    }
    if (stream.read_failed()) return reindexed.status();
    const absl::Status& error = reindexed.status();
    auto lease_lost = [&] {
      emit(WorkerEvent::Kind::kLeaseLost,
           [&](WorkerEvent& e) { e.message = std::string(error.message()); });
      return ItemResult{ItemResult::Kind::kLeaseLost};
    };
    if (keeper.lost()) return lease_lost();
    // Sending stopped at a deadline: the lease's (no progress renewed it) or a shutdown's.
    if (absl::IsDeadlineExceeded(error) || absl::IsAborted(error)) {
      const bool past_lease = clock_.Now() >= keeper.deadline();
      if (!past_lease && stop.requested()) return stopped(progress_out->next_cursor);
      // A request stopped at the lease's deadline may see a heartbeat move it just after: the
      // lease ran short either way.
      if (past_lease || absl::IsDeadlineExceeded(error)) {
        // Unless another worker has taken the item over, the acknowledged prefix is kept: the
        // coordinator accepts a checkpoint from an expired lease that nobody replaced, and
        // refuses it (lease lost) otherwise.
        bool any;
        {
          std::lock_guard lock(progress_mu);
          any = acknowledged_any;
        }
        if (any && progress_out->next_cursor < base.max_cursor) {
          return checkpoint(progress_out->next_cursor);
        }
        return lease_lost();
      }
    }
    if (coordination::IsLeaseLost(error)) return lease_lost();
    return core::WithContext(reindexed.status(),
                             core::StrCat("migrating ", item.index_name, " shard ", item.shard));
  }
  summary_.docs_written += reindexed->docs_written;
  summary_.docs_allowed_errors += reindexed->docs_allowed_errors;
  account.written += reindexed->docs_written + reindexed->docs_allowed_errors;
  account.rejected += reindexed->docs_failed;
  summary_.docs_failed += reindexed->docs_failed;
  summary_.source_bytes += reindexed->source_bytes;
  summary_.retries += reindexed->retries;
  auto fill_counts = [&](WorkerEvent& e) {
    e.docs = reindexed->docs_written + reindexed->docs_allowed_errors;
    e.source_bytes = reindexed->source_bytes;
    e.failed_docs = reindexed->docs_failed + stream.conversion_failures() +
                    stream.without_source() + transform_failures;
    e.cursor = reindexed->last_acknowledged_cursor.value_or(start);
  };

  const uint64_t next_cursor = (*cursor)->position();
  if (stream.stopped_early() && next_cursor < base.max_cursor) {
    // Everything read was acknowledged: the rest starts at the reader's position.
    if (stop.requested()) return stopped(next_cursor);
    if (next_cursor <= start) {
      // Setup alone used up the checkpoint time: let this lease run out, so the next holder
      // gets a longer one, rather than hand the same item on.
      return ItemResult{ItemResult::Kind::kNoProgress};
    }
    return checkpoint(next_cursor);
  }
  if (coordination::IsLeaseLost(keeper.RecordFinalProgress())) {
    return ItemResult{ItemResult::Kind::kLeaseLost};
  }
  absl::Status completed = coordinator_.CompleteWorkItem(keeper.lease());
  if (coordination::IsLeaseLost(completed)) return ItemResult{ItemResult::Kind::kLeaseLost};
  RFS_RETURN_IF_ERROR(completed);
  emit(WorkerEvent::Kind::kCompleted, fill_counts);
  return ItemResult{ItemResult::Kind::kCompleted};
}

absl::StatusOr<WorkerSummary> DocumentMigrationWorker::Run() {
  const auto started = clock_.Now();
  summary_ = {};
  absl::Status status = RunLoop();
  // The counts stand whether the run ended well or not: the caller reports them either way.
  summary_.elapsed = clock_.Now() - started;
  if (!status.ok()) return status;
  return summary_;
}

absl::Status DocumentMigrationWorker::RunLoop() {
  if (options_.doc_transformer_config) {
    transform::TransformerContext context;
    context.limits = options_.transform_limits;
    context.limits.stop_requested = options_.stop_requested;
    context.limits.shutdown_grace = options_.shutdown_timeout;
    auto loaded = transform::LoadTransformers(*options_.doc_transformer_config, context);
    if (!loaded.ok()) {
      return absl::InvalidArgumentError(
          core::StrCat("--doc-transformer-config: ", loaded.status().message()));
    }
    transformer_ = *std::move(loaded);
  }
  if (options_.snapshot_name.empty()) {
    auto latest = repository_.LatestSnapshot();
    if (!latest.ok()) return TagSnapshotRead(latest.status());
    snapshot_ = *latest;
  } else {
    auto found = repository_.FindSnapshot(options_.snapshot_name);
    if (!found.ok()) return TagSnapshotRead(found.status());
    snapshot_ = *found;
  }
  if (!options_.previous_snapshot_name.empty()) {
    auto found = repository_.FindSnapshot(options_.previous_snapshot_name);
    if (!found.ok()) {
      return TagSnapshotRead(core::WithContext(found.status(), "--previous-snapshot-name"));
    }
    previous_snapshot_ = *found;
    if (previous_snapshot_->uuid == snapshot_->uuid) {
      return absl::InvalidArgumentError(
          "--previous-snapshot-name names the snapshot being migrated: a delta needs an older "
          "one");
    }
    const std::vector<std::string> now = repository_.IndicesIn(*snapshot_);
    for (const std::string& index : repository_.IndicesIn(*previous_snapshot_)) {
      if (!std::binary_search(now.begin(), now.end(), index) &&
          transform::SelectIndex(options_.index_allowlist, index, "")) {
        summary_.indices_only_in_previous.push_back(index);
      }
    }
  }
  if (options_.trial()) {
    summary_.trial = core::StrCat(
        options_.max_docs_per_shard > 0
            ? core::StrCat("at most ", options_.max_docs_per_shard, " documents of each shard")
            : std::string("every document"),
        " into indices prefixed '", options_.target_index_prefix, "'");
  }
  {
    auto streams = repository_.ReadDataStreams(*snapshot_);
    if (!streams.ok()) return TagSnapshotRead(streams.status());
    data_streams_ = *std::move(streams);
  }
  RFS_RETURN_IF_ERROR(CheckSourceStorage());
  RFS_RETURN_IF_ERROR(coordinator_.Setup());
  coordination::OneTimeSetupOptions setup_options;
  setup_options.initial_lease = options_.initial_lease;
  // Setup takes milliseconds to seconds (one metadata read per index): poll for it briskly so
  // that workers started together all get work.
  setup_options.initial_backoff = std::chrono::milliseconds(20);
  setup_options.max_backoff = std::chrono::seconds(5);
  RFS_RETURN_IF_ERROR(coordination::RunOneTimeSetup(
      coordinator_, clock_, coordination::kShardSetupWorkItemId,
      [&](const Lease&) { return SetupShards(); }, setup_options));
  RFS_RETURN_IF_ERROR(CheckStoreIsForThisRun());

  while (true) {
    if (options_.stop_requested != nullptr && options_.stop_requested->load()) {
      summary_.outcome = WorkerOutcome::kStopped;
      break;
    }
    auto outcome = coordinator_.AcquireNextWorkItem(options_.initial_lease);
    if (!outcome.ok()) return outcome.status();
    if (std::holds_alternative<coordination::NoAvailableWork>(*outcome)) {
      summary_.outcome = WorkerOutcome::kNoWorkLeft;
      break;
    }
    if (std::holds_alternative<coordination::AllLeasedElsewhere>(*outcome)) {
      summary_.outcome = WorkerOutcome::kAllLeasedElsewhere;
      break;
    }
    const auto* acquired = std::get_if<coordination::Acquired>(&*outcome);
    if (acquired == nullptr) continue;
    if (coordination::IsBookkeepingItem(acquired->lease.work_item_id) &&
        acquired->lease.work_item_id != coordination::kShardSetupWorkItemId) {
      // Caught between its creation and its completion by the worker that records it: given
      // back for that worker (a lost lease means it has it already).
      absl::Status released = coordinator_.ReleaseWorkItem(acquired->lease);
      if (!released.ok() && !coordination::IsLeaseLost(released)) return released;
      continue;
    }
    if (options_.max_item_attempts > 0 && acquired->lease.generation > options_.max_item_attempts) {
      // Its holders keep dying or failing on it: give it back and end the run, naming it.
      coordinator_.ReleaseWorkItem(acquired->lease).IgnoreError();
      absl::Status over = absl::FailedPreconditionError(core::StrCat(
          "work item ", acquired->lease.work_item_id, " was acquired ", acquired->lease.generation,
          " times without finishing (limit ", options_.max_item_attempts, ")"));
      over.SetPayload(kItemAttemptsPayload, absl::Cord("1"));
      return over;
    }
    RFS_ASSIGN_OR_RETURN(ItemResult result, MigrateItem(acquired->lease));
    if (result.kind == ItemResult::Kind::kLeaseLost) {
      ++summary_.items_lost;
      continue;
    }
    if (result.kind == ItemResult::Kind::kCompleted) {
      ++summary_.items_completed;
      if (options_.single_work_item) {
        summary_.outcome = WorkerOutcome::kItemDone;
        break;
      }
      continue;
    }
    if (result.kind == ItemResult::Kind::kStopped) {
      summary_.outcome = WorkerOutcome::kStopped;
      break;
    }
    if (result.kind == ItemResult::Kind::kCheckpointed) ++summary_.items_checkpointed;
    summary_.outcome = WorkerOutcome::kLeaseHandoff;
    break;
  }
  return absl::OkStatus();
}

}  // namespace rfs::migration
