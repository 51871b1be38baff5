// DocumentReindexer (see document_reindexer.hpp).
//
// The calling thread reads the stream and cuts batches; `max_concurrent_batches` worker threads
// each take one batch at a time and drive it through the sink, retrying what is transient. The
// hand-over queue holds a single batch so that memory stays bounded at (workers + 2) batches
// while the reader still works ahead, and no batch is handed over more than 2 x workers batches
// past the acknowledged prefix (what a worker that dies costs beyond it). Batch completion is
// tracked by sequence number so the acknowledged cursor only ever covers a gap-free prefix of the
// stream.
#include "rfs/reindex/document_reindexer.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "rfs/core/backoff.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/reindex/bulk_format.hpp"

#include "reindex/adaptive_concurrency_internal.hpp"

namespace rfs::reindex {
namespace {

using core::StrCat;

// The documents stay where the stream read them (IDocumentStream::NextInPlace): a batch holds
// what keeps them, once per range of a shard.
struct Batch {
  uint64_t sequence = 0;
  std::vector<const SourceDocument*> docs;
  std::vector<DocumentHolder> holders;
  size_t bytes = 0;
  // Of `bytes`, what the sink lays out again before it is sent (IDocumentSink::copies_batches).
  size_t copied_bytes = 0;
};

struct BatchCounts {
  uint64_t written = 0;
  uint64_t allowed = 0;
  uint64_t already_newer = 0;
  uint64_t failed = 0;
  uint64_t retries = 0;
};

// A write refused by a block on the index or the cluster (ClusterBlockException).
constexpr std::string_view kClusterBlock = "cluster_block_exception";

// An item the target refused because it is overloaded (429, thread-pool rejection): the signal
// backpressure slows down on and the metrics count as a rejection. A block answered 429
// (read_only_allow_delete) is no overload.
bool IsRejectedItem(const ItemFailure& f) {
  if (f.type == kClusterBlock) return false;
  return f.status == 429 || f.type == "es_rejected_execution_exception" ||
         f.type == "rejected_execution_exception";
}

// A document sent with its source version that the target holds in an equal or higher one.
bool IsAlreadyNewer(const IPreparedBatch& batch, size_t position, const ItemFailure& f) {
  return batch.has_version(position) && f.status == 409 &&
         f.type == "version_conflict_engine_exception";
}

// A batch whose sink writes from the documents themselves: they are held (with what keeps
// them) until it is done.
class HeldBatch final : public IPreparedBatch {
 public:
  HeldBatch(IDocumentSink& sink, std::vector<const SourceDocument*> docs,
            std::vector<DocumentHolder> holders)
      : sink_(sink), docs_(std::move(docs)), holders_(std::move(holders)) {}

  size_t size() const override { return docs_.size(); }
  size_t held_bytes() const override { return 0; }  // charged as the batch it was
  uint64_t cursor(size_t position) const override { return docs_[position]->cursor; }
  size_t source_bytes(size_t position) const override { return SourceSize(*docs_[position]); }
  bool has_version(size_t position) const override { return docs_[position]->version.has_value(); }
  absl::StatusOr<std::vector<ItemFailure>> Write(std::span<const size_t> positions) override {
    if (positions.size() == docs_.size()) return sink_.Write(docs_);
    std::vector<const SourceDocument*> part;
    part.reserve(positions.size());
    for (size_t position : positions) part.push_back(docs_[position]);
    return sink_.Write(part);
  }
  absl::StatusOr<std::vector<FailedDocument>> Describe(
      std::span<const size_t> positions) const override {
    std::vector<FailedDocument> out;
    out.reserve(positions.size());
    for (size_t position : positions) {
      const SourceDocument& doc = *docs_[position];
      FailedDocument& record = out.emplace_back();
      record.index = doc.index;
      record.id = doc.id;
      record.cursor = doc.cursor;
      AppendBulkAction(doc, sink_.action_options(), record.action);
      if (!record.action.empty() && record.action.back() == '\n') record.action.pop_back();
      AppendSourceLine(doc, record.source);
      if (!record.source.empty()) record.source.pop_back();
    }
    return out;
  }

 private:
  IDocumentSink& sink_;
  const std::vector<const SourceDocument*> docs_;
  const std::vector<DocumentHolder> holders_;
};

}  // namespace

bool IsRetryableItemFailure(int status, std::string_view error_type) {
  if (status == 429 || status == 408 || status >= 500) return true;
  // A block is set, and lifted, by an operator or the disk watermarks: the write goes through
  // once it is. OpenSearch answers each item of a blocked index with the block's status
  // (ClusterBlockException.status(); IndexMetadata's INDEX_WRITE_BLOCK, index.blocks.write, and
  // INDEX_READ_ONLY_BLOCK: 403; INDEX_READ_ONLY_ALLOW_DELETE_BLOCK: 429).
  if (error_type == kClusterBlock) return true;
  // Types that mean "busy, try later" even when a version or plugin reports another status.
  static constexpr std::string_view kBusyTypes[] = {"es_rejected_execution_exception",
                                                    "rejected_execution_exception",
                                                    "circuit_breaking_exception",
                                                    "unavailable_shards_exception",
                                                    "process_cluster_event_timeout_exception",
                                                    "no_shard_available_action_exception",
                                                    "node_not_connected_exception",
                                                    "node_closed_exception"};
  return std::find(std::begin(kBusyTypes), std::end(kBusyTypes), error_type) !=
         std::end(kBusyTypes);
}

DocumentReindexer::DocumentReindexer(IDocumentSink& sink, IFailedDocumentSink* failed_sink,
                                     core::IClock& clock, DocumentReindexerOptions options)
    : sink_(sink), failed_sink_(failed_sink), clock_(clock), options_(std::move(options)) {
  options_.max_concurrent_batches = std::max<size_t>(1, options_.max_concurrent_batches);
  options_.retry.max_attempts = std::max(0, options_.retry.max_attempts);
}

namespace {

// State shared by the reader and the workers of one Reindex call.
class ReindexRun {
 public:
  ReindexRun(IDocumentSink& sink, IFailedDocumentSink* failed_sink, core::IClock& clock,
             const DocumentReindexerOptions& options, const ProgressCallback& on_progress)
      : sink_(sink),
        failed_sink_(failed_sink),
        clock_(clock),
        options_(options),
        on_progress_(on_progress) {}

  absl::StatusOr<ReindexSummary> Run(IDocumentStream& docs) {
    if (options_.backpressure && sink_.reports_target_load()) {
      AdaptiveConcurrencyOptions adaptive;
      adaptive.max_in_flight = options_.max_concurrent_batches;
      adaptive.max_batch_bytes = options_.max_bytes_per_batch;
      adaptive.min_batch_bytes =
          std::min<size_t>(adaptive.min_batch_bytes, options_.max_bytes_per_batch);
      concurrency_.emplace(adaptive);
    }
    bytes_held_per_document_ = docs.bytes_held_per_document();
    const uint64_t seed = options_.random_seed != 0 ? options_.random_seed : std::random_device{}();
    std::vector<std::thread> workers;
    for (size_t i = 0; i < options_.max_concurrent_batches; ++i) {
      workers.emplace_back([this, seed, i] { WorkerLoop(seed + i * 0x9E3779B97F4A7C15ULL); });
    }
    absl::Status read_status = ReadAndSubmit(docs);
    {
      std::lock_guard lock(mu_);
      closed_ = true;
      if (!read_status.ok()) FailLocked(read_status);
    }
    work_cv_.notify_all();
    for (auto& worker : workers) worker.join();
    std::lock_guard lock(mu_);
    if (!first_error_.ok()) return first_error_;
    summary_.last_acknowledged_cursor = acknowledged_cursor_;
    if (concurrency_) {
      summary_.concurrency_decreases = concurrency_->decreases();
      summary_.lowest_concurrency = concurrency_->lowest_limit();
    } else {
      summary_.lowest_concurrency = options_.max_concurrent_batches;
    }
    return summary_;
  }

 private:
  absl::Status ReadAndSubmit(IDocumentStream& docs) {
    Batch batch;
    uint64_t sequence = 0;
    std::optional<uint64_t> previous_cursor;
    // Whether a document's lines count twice while its batch waits to be prepared.
    const bool copies = sink_.copies_batches();
    const bool copies_rendered = copies && sink_.copies_rendered_lines();
    // Lines laid out with options other than the sink's are laid out again.
    const BulkActionOptions sink_options =
        copies && !copies_rendered ? sink_.action_options() : BulkActionOptions{};
    DocumentHolder holder;  // what keeps the last document read
    auto submit_batch = [&] {
      batch.sequence = sequence++;
      const size_t previous_docs = batch.docs.size();
      Submit(std::move(batch));
      batch = Batch();
      // Batches are alike: sized like the last one, the vector is not regrown a dozen times.
      batch.docs.reserve(previous_docs + previous_docs / 8);
    };
    while (true) {
      if (stopped()) return absl::OkStatus();
      auto next = docs.NextInPlace(holder);
      if (!next.ok()) return next.status();
      if (*next == nullptr) {
        holder.reset();  // not kept while the last batch waits for room
        break;
      }
      const SourceDocument& doc = **next;
      if (previous_cursor && doc.cursor < *previous_cursor) {
        return absl::InvalidArgumentError(StrCat("document cursors must not decrease: ", doc.cursor,
                                                 " follows ", *previous_cursor));
      }
      // Documents sharing a cursor (one source document a transform split in several) stay in
      // one batch, so the acknowledged cursor never covers half of them.
      const bool same_cursor = previous_cursor && doc.cursor == *previous_cursor;
      previous_cursor = doc.cursor;
      const size_t bytes = EstimateBulkBytes(doc);
      const bool full_by_docs =
          options_.max_docs_per_batch != 0 && batch.docs.size() >= options_.max_docs_per_batch;
      const size_t batch_limit =
          concurrency_ ? concurrency_->batch_bytes() : options_.max_bytes_per_batch;
      if (!batch.docs.empty() && !same_cursor &&
          (full_by_docs || (batch_limit != 0 && batch.bytes + bytes > batch_limit))) {
        submit_batch();
      }
      batch.bytes += bytes;
      if (copies && (copies_rendered || !HasRenderedLines(doc, sink_options))) {
        batch.copied_bytes += bytes;
      }
      batch.docs.push_back(&doc);
      if (batch.holders.empty() || batch.holders.back() != holder) batch.holders.push_back(holder);
      if (docs.unique_cursors() && batch_limit != 0 && batch.bytes >= batch_limit) {
        submit_batch();
        // The batch holds its documents now. Kept here too, a huge document's holder would keep
        // it after its batch is written and its bytes are back in the budget, while the next
        // one is decoded.
        holder.reset();
      }
    }
    if (!batch.docs.empty()) {
      batch.sequence = sequence++;
      Submit(std::move(batch));
    }
    return absl::OkStatus();
  }

  void Submit(Batch batch) {
    std::unique_lock lock(mu_);
    // A sliding window: at most `window` batches past the acknowledged prefix. Without it, one
    // batch stuck in retries lets the others run far ahead, and everything past the prefix is
    // sent again by whoever resumes from the recorded cursor.
    const uint64_t window = 2 * static_cast<uint64_t>(options_.max_concurrent_batches);
    const size_t budget = options_.max_in_flight_bytes;
    space_cv_.wait(lock, [&] {
      // With a shared budget, what it holds counts (a finished batch until its documents are
      // freed, and whatever else charges it); otherwise this run's own bytes in flight.
      const bool bytes_fit =
          options_.memory_budget != nullptr
              ? options_.memory_budget->HasRoomFor(BudgetBytes(batch))
              : budget == 0 || in_flight_bytes_ == 0 || in_flight_bytes_ + batch.bytes <= budget;
      return (queue_.empty() && batch.sequence < next_to_acknowledge_ + window && bytes_fit) ||
             !first_error_.ok();
    });
    if (!first_error_.ok()) return;
    in_flight_bytes_ += batch.bytes;
    if (options_.memory_budget != nullptr) options_.memory_budget->Charge(BudgetBytes(batch));
    queue_.push_back(std::move(batch));
    lock.unlock();
    work_cv_.notify_one();
  }

  // What a batch holds until it is prepared: its documents' lines, the sink's copy of those it
  // lays out again, and the documents themselves (for small documents, as much as their lines).
  size_t BudgetBytes(const Batch& batch) const {
    return batch.bytes + batch.copied_bytes + batch.docs.size() * bytes_held_per_document_;
  }

  // Checked once per document, so it reads an atomic rather than taking mu_.
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }

  void FailLocked(const absl::Status& status) {
    if (first_error_.ok()) first_error_ = status;
    stopped_.store(true, std::memory_order_relaxed);
    if (options_.memory_budget != nullptr) {
      for (const Batch& dropped : queue_) options_.memory_budget->Release(BudgetBytes(dropped));
    }
    queue_.clear();
    space_cv_.notify_all();
    work_cv_.notify_all();
  }

  void WorkerLoop(uint64_t seed) {
    std::mt19937_64 rng(seed);
    while (true) {
      Batch batch;
      {
        std::unique_lock lock(mu_);
        work_cv_.wait(lock, [&] { return !queue_.empty() || closed_ || !first_error_.ok(); });
        if (queue_.empty()) return;
        batch = std::move(queue_.front());
        queue_.pop_front();
      }
      space_cv_.notify_one();
      size_t charged = BudgetBytes(batch);
      const size_t batch_bytes = batch.bytes;
      std::unique_ptr<IPreparedBatch> prepared = Prepare(batch, charged);
      BatchCounts counts;
      absl::Status status = WriteBatch(*prepared, rng, counts);
      if (status.ok()) {
        Complete(batch.sequence, batch_bytes, *prepared, counts);
      } else {
        std::lock_guard lock(mu_);
        FailLocked(status);
      }
      prepared.reset();  // the documents are freed before the budget has their bytes back
      if (options_.memory_budget != nullptr) {
        options_.memory_budget->Release(charged);
        { std::lock_guard lock(mu_); }  // a Submit waiting on the budget is waiting on mu_
        space_cv_.notify_all();
      }
    }
  }

  // The batch as the sink's request (IDocumentSink::Prepare), its documents freed and the
  // budget charged what it holds instead of them (`charged` follows); otherwise the documents
  // themselves, held until the batch is done.
  std::unique_ptr<IPreparedBatch> Prepare(Batch& batch, size_t& charged) {
    auto prepared = sink_.Prepare(batch.docs);
    if (!prepared.ok() || *prepared == nullptr) {
      // Written from the documents: a sink that could not lay them out now says why (and
      // whether it is worth a retry) when the batch is written.
      return std::make_unique<HeldBatch>(sink_, std::move(batch.docs), std::move(batch.holders));
    }
    batch.docs = {};
    batch.holders = {};
    const size_t held = (*prepared)->held_bytes();
    if (options_.memory_budget != nullptr && held > charged) {
      // It may hold more than its documents' lines: buffers of the reader's it shares with a
      // huge document of the next batch, which stay after that batch is done.
      options_.memory_budget->Charge(held - charged);
      charged = held;
    } else if (options_.memory_budget != nullptr && held < charged) {
      options_.memory_budget->Release(charged - held);
      charged = held;
      { std::lock_guard lock(mu_); }  // a Submit waiting on the budget is waiting on mu_
      space_cv_.notify_all();
    }
    return *std::move(prepared);
  }

  // Drives one batch to completion: every document written, allowed or recorded as failed. A
  // request the target refuses as too large (413, OutOfRange from the sink) is split in halves
  // until it fits; a single document that still does not fit is a failed document.
  absl::Status WriteBatch(IPreparedBatch& batch, std::mt19937_64& rng, BatchCounts& counts) {
    std::vector<size_t> all(batch.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    std::vector<std::vector<size_t>> groups(1, std::move(all));
    std::vector<std::pair<size_t, ItemFailure>> permanent;  // position, failure
    while (!groups.empty()) {
      std::vector<size_t> pending = std::move(groups.back());
      groups.pop_back();
      absl::Status status = WriteGroup(batch, pending, rng, counts, permanent);
      if (!absl::IsOutOfRange(status)) {
        RFS_RETURN_IF_ERROR(status);
        continue;
      }
      if (pending.size() == 1) {
        permanent.emplace_back(pending.front(), ItemFailure{0, 413, "request_entity_too_large",
                                                            std::string(status.message())});
        continue;
      }
      const auto middle = pending.begin() + static_cast<std::ptrdiff_t>(pending.size() / 2);
      groups.emplace_back(middle, pending.end());
      groups.emplace_back(pending.begin(), middle);
    }
    if (!permanent.empty()) {
      counts.failed += permanent.size();
      if (failed_sink_ != nullptr) {
        std::sort(permanent.begin(), permanent.end(),
                  [](const auto& a, const auto& b) { return a.first < b.first; });
        std::vector<size_t> positions;
        positions.reserve(permanent.size());
        for (const auto& [position, failure] : permanent) positions.push_back(position);
        auto records = batch.Describe(positions);
        if (!records.ok()) {
          return core::WithContext(records.status(), "describing failed documents");
        }
        for (size_t k = 0; k < records->size(); ++k) {
          FailedDocument& record = (*records)[k];
          ItemFailure& failure = permanent[k].second;
          record.status = failure.status;
          record.error_type = std::move(failure.type);
          record.reason = std::move(failure.reason);
        }
        absl::Status recorded = failed_sink_->Record(*records);
        if (!recorded.ok()) return core::WithContext(recorded, "recording failed documents");
      }
    }
    return absl::OkStatus();
  }

  // Writes the documents of `batch` at `pending` with retries. On OutOfRange (the request is too
  // large) `pending` holds the documents not yet written.
  absl::Status WriteGroup(IPreparedBatch& batch, std::vector<size_t>& pending, std::mt19937_64& rng,
                          BatchCounts& counts,
                          std::vector<std::pair<size_t, ItemFailure>>& permanent) {
    for (int attempt = 1; !pending.empty(); ++attempt) {
      if (attempt > 1) {
        if (stopped()) return absl::AbortedError("reindex stopped");
        ++counts.retries;
      }
      if (PastDeadline()) {
        return absl::DeadlineExceededError(
            StrCat("stopped sending: ", pending.size(), " documents (cursors ",
                   batch.cursor(pending.front()), "-", batch.cursor(pending.back()),
                   ") still pending when the send deadline (lease or shutdown) came"));
      }
      const uint64_t epoch = concurrency_ ? concurrency_->Acquire() : 0;
      const auto sent = std::chrono::steady_clock::now();
      auto failures = batch.Write(pending);
      if (concurrency_) {
        bool pushed_back = !failures.ok() && (absl::IsResourceExhausted(failures.status()) ||
                                              absl::IsUnavailable(failures.status()));
        if (failures.ok()) {
          pushed_back = std::any_of(failures->begin(), failures->end(), IsRejectedItem);
        }
        concurrency_->Release(epoch, pushed_back, std::chrono::steady_clock::now() - sent);
      }
      if (options_.on_bulk_attempt) ReportAttempt(batch, pending, failures, sent);
      if (!failures.ok()) {
        const absl::Status& s = failures.status();
        if (absl::IsOutOfRange(s)) return s;
        if (!core::IsRetryable(s) || OutOfAttempts(attempt)) {
          return core::WithContext(
              s, StrCat("batch of ", pending.size(), " documents (cursors ",
                        batch.cursor(pending.front()), "-", batch.cursor(pending.back()), ") to ",
                        sink_.description(), " failed after ", attempt, " attempt(s)"));
        }
        RFS_RETURN_IF_ERROR(Backoff(attempt, rng));
        continue;
      }
      std::vector<size_t> retry;
      const ItemFailure* last_retryable = nullptr;
      for (ItemFailure& f : *failures) {
        if (f.position >= pending.size()) {
          return absl::InternalError(StrCat(sink_.description(), " reported a failure at position ",
                                            f.position, " of ", pending.size()));
        }
        const size_t position = pending[f.position];
        if (IsAlreadyNewer(batch, position, f)) {
          ++counts.already_newer;
        } else if (std::find(options_.allowed_exception_types.begin(),
                             options_.allowed_exception_types.end(),
                             f.type) != options_.allowed_exception_types.end()) {
          ++counts.allowed;
        } else if (IsRetryableItemFailure(f.status, f.type)) {
          retry.push_back(position);
          last_retryable = &f;
        } else {
          permanent.emplace_back(position, std::move(f));
        }
      }
      counts.written += pending.size() - failures->size();
      if (!retry.empty()) {
        if (OutOfAttempts(attempt)) {
          auto first = batch.Describe(std::span<const size_t>(retry).first(1));
          return absl::UnavailableError(StrCat(
              retry.size(), " documents (first id ", first.ok() ? first->front().id : "?",
              ") still fail on ", sink_.description(), " after ", attempt, " attempts: HTTP ",
              last_retryable->status, " ", last_retryable->type, ": ", last_retryable->reason));
        }
        RFS_RETURN_IF_ERROR(Backoff(attempt, rng));
      }
      pending = std::move(retry);
    }
    return absl::OkStatus();
  }

  void ReportAttempt(const IPreparedBatch& batch, const std::vector<size_t>& pending,
                     const absl::StatusOr<std::vector<ItemFailure>>& failures,
                     std::chrono::steady_clock::time_point sent) {
    BulkAttempt attempt;
    attempt.docs = pending.size();
    for (size_t position : pending) attempt.source_bytes += batch.source_bytes(position);
    attempt.latency = std::chrono::steady_clock::now() - sent;
    if (!failures.ok()) {
      const absl::Status& s = failures.status();
      attempt.error = s.code();
      if (absl::IsResourceExhausted(s)) {
        attempt.retry_cause = "too_many_requests";
      } else if (absl::IsOutOfRange(s)) {
        attempt.retry_cause = "too_large";
      } else if (absl::IsDeadlineExceeded(s)) {
        attempt.retry_cause = "timeout";
      } else if (core::IsRetryable(s)) {
        attempt.retry_cause = "unavailable";
      }
      if (!attempt.retry_cause.empty()) attempt.retry_reason = std::string(s.message());
    } else {
      const ItemFailure* first_blocked = nullptr;
      const ItemFailure* first_rejected = nullptr;
      const ItemFailure* first_other = nullptr;
      for (const ItemFailure& f : *failures) {
        if (f.position < pending.size() && IsAlreadyNewer(batch, pending[f.position], f)) continue;
        if (IsRejectedItem(f)) ++attempt.items_rejected;
        if (IsRetryableItemFailure(f.status, f.type) &&
            std::find(options_.allowed_exception_types.begin(),
                      options_.allowed_exception_types.end(),
                      f.type) == options_.allowed_exception_types.end()) {
          ++attempt.items_retried;
          // The first item of each kind, so that the reason matches the cause chosen below.
          const ItemFailure*& first = f.type == kClusterBlock ? first_blocked
                                      : IsRejectedItem(f)     ? first_rejected
                                                              : first_other;
          if (first == nullptr) first = &f;
        }
      }
      if (attempt.items_retried > 0) {
        // Of the items sent again (an allowed exception type is not).
        attempt.retry_cause = first_blocked != nullptr    ? "blocked"
                              : first_rejected != nullptr ? "too_many_requests"
                                                          : "server_error";
        const ItemFailure* f = first_blocked != nullptr    ? first_blocked
                               : first_rejected != nullptr ? first_rejected
                                                           : first_other;
        if (f != nullptr) {
          attempt.retry_reason = StrCat("HTTP ", f->status, " ", f->type, ": ", f->reason);
        }
      }
    }
    constexpr size_t kMaxReason = 300;
    if (attempt.retry_reason.size() > kMaxReason) {
      size_t cut = kMaxReason;  // not inside a UTF-8 sequence
      while (cut > 0 && (static_cast<unsigned char>(attempt.retry_reason[cut]) & 0xC0) == 0x80) {
        --cut;
      }
      attempt.retry_reason.resize(cut);
      attempt.retry_reason += "...";
    }
    options_.on_bulk_attempt(attempt);
  }

  bool OutOfAttempts(int attempt) const {
    return options_.retry.max_attempts != 0 && attempt >= options_.retry.max_attempts;
  }

  bool PastDeadline() const {
    return options_.send_deadline && clock_.Now() >= options_.send_deadline();
  }

  // core::BackoffWait on this sender's random source, after the caller's keep_alive (which may
  // move the deadline). Never sleeps past the deadline.
  absl::Status Backoff(int attempt, std::mt19937_64& rng) {
    if (options_.keep_alive) RFS_RETURN_IF_ERROR(options_.keep_alive());
    core::IClock::Duration sleep =
        core::BackoffWait(options_.retry.initial_backoff, options_.retry.max_backoff, attempt, rng);
    if (options_.send_deadline) {
      const auto left = options_.send_deadline() - clock_.Now();
      sleep = std::clamp<core::IClock::Duration>(left, core::IClock::Duration::zero(), sleep);
    }
    clock_.SleepFor(sleep);
    return absl::OkStatus();
  }

  void Complete(uint64_t sequence, size_t bytes, const IPreparedBatch& batch,
                const BatchCounts& counts) {
    std::optional<AcknowledgedProgress> advanced;
    {
      std::lock_guard lock(mu_);
      summary_.docs_written += counts.written;
      summary_.docs_allowed_errors += counts.allowed;
      summary_.docs_already_newer += counts.already_newer;
      summary_.docs_failed += counts.failed;
      summary_.retries += counts.retries;
      summary_.batches += 1;
      in_flight_bytes_ -= std::min(in_flight_bytes_, bytes);
      uint64_t batch_bytes = 0;
      for (size_t i = 0; i < batch.size(); ++i) batch_bytes += batch.source_bytes(i);
      summary_.source_bytes += batch_bytes;
      completed_[sequence] =
          AcknowledgedProgress{batch.cursor(batch.size() - 1), batch.size(), batch_bytes, 0};
      while (!completed_.empty() && completed_.begin()->first == next_to_acknowledge_) {
        const AcknowledgedProgress& done = completed_.begin()->second;
        acknowledged_.cursor = done.cursor;
        acknowledged_.docs += done.docs;
        acknowledged_.bytes += done.bytes;
        acknowledged_cursor_ = done.cursor;
        acknowledged_.concurrency =
            concurrency_ ? concurrency_->limit() : options_.max_concurrent_batches;
        completed_.erase(completed_.begin());
        ++next_to_acknowledge_;
        advanced = acknowledged_;
      }
    }
    space_cv_.notify_all();  // The window moved, or bytes in flight were freed.
    if (!advanced || !on_progress_) return;
    // Report outside mu_ (the callback may do I/O), in cursor order.
    std::lock_guard progress_lock(progress_mu_);
    if (reported_ && *reported_ >= advanced->cursor) return;
    reported_ = advanced->cursor;
    absl::Status status = on_progress_(*advanced);
    if (!status.ok()) {
      std::lock_guard lock(mu_);
      FailLocked(status);
    }
  }

  IDocumentSink& sink_;
  IFailedDocumentSink* failed_sink_;
  core::IClock& clock_;
  const DocumentReindexerOptions& options_;
  const ProgressCallback& on_progress_;

  std::mutex mu_;
  std::condition_variable work_cv_;   // a batch is queued, or the run is closing
  std::condition_variable space_cv_;  // the queue has room
  std::deque<Batch> queue_;
  bool closed_ = false;
  absl::Status first_error_;
  std::atomic<bool> stopped_{false};  // set with first_error_
  ReindexSummary summary_;
  // sequence -> that batch's last cursor and counts, for batches beyond the prefix
  std::map<uint64_t, AcknowledgedProgress> completed_;
  uint64_t next_to_acknowledge_ = 0;
  size_t in_flight_bytes_ = 0;  // bulk bytes submitted and not completed
  std::optional<uint64_t> acknowledged_cursor_;
  AcknowledgedProgress acknowledged_;

  std::mutex progress_mu_;
  std::optional<uint64_t> reported_;                // guarded by progress_mu_
  std::optional<AdaptiveConcurrency> concurrency_;  // set before the workers start
  size_t bytes_held_per_document_ = 0;              // the stream's, set before the workers start
};

}  // namespace

absl::StatusOr<ReindexSummary> DocumentReindexer::Reindex(IDocumentStream& docs,
                                                          const ProgressCallback& on_progress) {
  ReindexRun run(sink_, failed_sink_, clock_, options_, on_progress);
  return run.Run(docs);
}

}  // namespace rfs::reindex
