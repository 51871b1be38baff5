// Backpressure: the AIMD controller's rules, and DocumentReindexer against a target that answers
// 429 to whatever exceeds its capacity: with backpressure the worker settles near the capacity
// and meets few 429s; without it, it keeps hitting them. Every document arrives either way.
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "rfs/core/clock.hpp"
#include "rfs/reindex/document_reindexer.hpp"

#include "reindex/adaptive_concurrency_internal.hpp"

namespace {

using namespace std::chrono_literals;
using rfs::reindex::AdaptiveConcurrency;
using rfs::reindex::AdaptiveConcurrencyOptions;

// Accepts at most `capacity` concurrent bulks; the others get HTTP 429 for every item.
class CapacitySink final : public rfs::reindex::IDocumentSink {
 public:
  explicit CapacitySink(int capacity) : capacity_(capacity) {}

  absl::StatusOr<std::vector<rfs::reindex::ItemFailure>> Write(
      std::span<const rfs::reindex::SourceDocument* const> docs) override {
    const int now = ++active_;
    int seen = peak_.load();
    while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(2ms);
    std::vector<rfs::reindex::ItemFailure> failures;
    if (now > capacity_) {
      ++rejected_requests_;
      for (size_t i = 0; i < docs.size(); ++i) {
        failures.push_back({i, 429, "es_rejected_execution_exception", "queue full"});
      }
    } else {
      std::lock_guard lock(mu_);
      for (const auto* doc : docs) written_.insert(doc->id);
    }
    --active_;
    return failures;
  }
  std::string description() const override { return "capacity sink"; }

  int rejected_requests() const { return rejected_requests_.load(); }
  size_t written() const {
    std::lock_guard lock(mu_);
    return written_.size();
  }

 private:
  const int capacity_;
  std::atomic<int> active_{0};
  std::atomic<int> peak_{0};
  std::atomic<int> rejected_requests_{0};
  mutable std::mutex mu_;
  std::set<std::string> written_;
};

class VectorStream final : public rfs::reindex::IDocumentStream {
 public:
  explicit VectorStream(size_t count) : count_(count) {}
  absl::StatusOr<std::optional<rfs::reindex::SourceDocument>> Next() override {
    if (next_ >= count_) return std::optional<rfs::reindex::SourceDocument>();
    rfs::reindex::SourceDocument doc;
    doc.index = "i";
    doc.id = std::to_string(next_);
    doc.source = R"({"n":)" + std::to_string(next_) + "}";
    doc.cursor = next_++;
    return std::optional<rfs::reindex::SourceDocument>(std::move(doc));
  }

 private:
  size_t count_;
  size_t next_ = 0;
};

struct RunShape {
  size_t batch_docs = 0;
  size_t concurrency = 0;
  std::chrono::milliseconds max_backoff{0};
  bool backpressure = true;
};

// Reindexes `count` VectorStream documents into `sink`, retrying without an attempt limit.
absl::StatusOr<rfs::reindex::ReindexSummary> ReindexAll(rfs::reindex::IDocumentSink& sink,
                                                        size_t count, RunShape shape) {
  rfs::core::SystemClock clock;
  rfs::reindex::DocumentReindexerOptions options;
  options.max_docs_per_batch = shape.batch_docs;
  options.max_concurrent_batches = shape.concurrency;
  options.retry.max_attempts = 0;
  options.retry.initial_backoff = 1ms;
  options.retry.max_backoff = shape.max_backoff;
  options.backpressure = shape.backpressure;
  rfs::reindex::DocumentReindexer reindexer(sink, nullptr, clock, options);
  VectorStream docs(count);
  return reindexer.Reindex(docs);
}

}  // namespace

TEST_CASE("AIMD: a pushback halves the limit once per window, successes grow it back",
          "[reindex][backpressure]") {
  AdaptiveConcurrencyOptions options;
  options.max_in_flight = 16;
  options.max_batch_bytes = 8 << 20;
  options.min_batch_bytes = 1 << 20;
  AdaptiveConcurrency control(options);
  CHECK(control.limit() == 16);
  CHECK(control.batch_bytes() == (8u << 20));
  // Four requests sent in the same window all meet 429s: one cut, not four.
  std::vector<uint64_t> epochs;
  for (int i = 0; i < 4; ++i) epochs.push_back(control.Acquire());
  for (uint64_t epoch : epochs) control.Release(epoch, true, 10ms);
  CHECK(control.limit() == 8);
  CHECK(control.decreases() == 1);
  CHECK(control.batch_bytes() == (8u << 20));  // fewer requests first, not smaller ones
  // Pushed back again in later windows: down to one request, then smaller requests.
  for (int i = 0; i < 3; ++i) control.Release(control.Acquire(), true, 10ms);
  CHECK(control.limit() == 1);
  CHECK(control.batch_bytes() == (8u << 20));
  control.Release(control.Acquire(), true, 10ms);
  CHECK(control.batch_bytes() == (4u << 20));
  for (int i = 0; i < 10; ++i) control.Release(control.Acquire(), true, 10ms);
  CHECK(control.lowest_limit() == 1);
  CHECK(control.batch_bytes() == (1u << 20));  // the floor
  // Recovery: full-size requests first, then about one more request per window of successes.
  for (int i = 0; i < 20; ++i) control.Release(control.Acquire(), false, 10ms);
  CHECK(control.batch_bytes() == (8u << 20));
  CHECK(control.limit() < 16);
  for (int i = 0; i < 200; ++i) control.Release(control.Acquire(), false, 10ms);
  CHECK(control.limit() == 16);
  // A latency far above the best seen counts as pushback.
  control.Release(control.Acquire(), false, 2s);
  CHECK(control.limit() == 8);
}

TEST_CASE("AIMD: Acquire holds requests beyond the limit until one returns",
          "[reindex][backpressure][tsan]") {
  AdaptiveConcurrencyOptions options;
  options.max_in_flight = 2;
  AdaptiveConcurrency control(options);
  const uint64_t a = control.Acquire();
  const uint64_t b = control.Acquire();
  std::atomic<bool> third{false};
  std::thread waiter([&] {
    control.Release(control.Acquire(), false, 1ms);
    third = true;
  });
  // Held: the third Acquire is waiting, not merely not started yet.
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (control.waiting() == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  CHECK(control.waiting() == 1);
  CHECK_FALSE(third.load());
  control.Release(a, false, 1ms);
  waiter.join();
  CHECK(third.load());
  control.Release(b, false, 1ms);
}

TEST_CASE("backpressure keeps a worker near the target's capacity, with every document written",
          "[reindex][backpressure][tsan]") {
  auto run = [](bool backpressure) {
    CapacitySink sink(2);
    auto summary = ReindexAll(
        sink, 4000,
        {.batch_docs = 20, .concurrency = 10, .max_backoff = 20ms, .backpressure = backpressure});
    REQUIRE(summary.ok());
    CHECK(sink.written() == 4000);
    CHECK(summary->docs_written == 4000);
    return std::make_pair(sink.rejected_requests(), *summary);
  };
  const auto [rejected_with, with] = run(true);
  const auto [rejected_without, without] = run(false);
  INFO("429 responses: " << rejected_with << " with backpressure, " << rejected_without
                         << " without");
  CHECK(with.concurrency_decreases > 0);
  CHECK(with.lowest_concurrency <= 2);
  CHECK(without.concurrency_decreases == 0);
  CHECK(rejected_with * 2 < rejected_without);
}

TEST_CASE("a sink that reports no target load keeps the configured bulks and concurrency",
          "[reindex][backpressure]") {
  // Refuses every fifth bulk with 429s, the signal backpressure follows.
  class RefusingSink final : public rfs::reindex::IDocumentSink {
   public:
    explicit RefusingSink(bool reports_load) : reports_load_(reports_load) {}
    absl::StatusOr<std::vector<rfs::reindex::ItemFailure>> Write(
        std::span<const rfs::reindex::SourceDocument* const> docs) override {
      std::this_thread::sleep_for(1ms);
      std::vector<rfs::reindex::ItemFailure> failures;
      if (++calls_ % 5 == 0) {
        for (size_t i = 0; i < docs.size(); ++i) {
          failures.push_back({i, 429, "es_rejected_execution_exception", "queue full"});
        }
        return failures;
      }
      std::lock_guard lock(mu_);
      for (const auto* doc : docs) written_.insert(doc->id);
      return failures;
    }
    std::string description() const override { return "refusing sink"; }
    bool reports_target_load() const override { return reports_load_; }

    const bool reports_load_;
    std::atomic<int> calls_{0};
    std::mutex mu_;
    std::set<std::string> written_;
  };
  auto run = [](RefusingSink& sink) {
    auto summary = ReindexAll(
        sink, 1000, {.batch_docs = 10, .concurrency = 4, .max_backoff = 2ms, .backpressure = true});
    REQUIRE(summary.ok());
    CHECK(sink.written_.size() == 1000);
    return *summary;
  };
  RefusingSink reporting(true);
  const auto followed = run(reporting);
  RefusingSink local(false);
  const auto kept = run(local);
  // The same refusals cut the concurrency of a sink that reports its target's load...
  CHECK(followed.concurrency_decreases > 0);
  CHECK(followed.lowest_concurrency < 4);
  // ...and leave one that does not (bulk files) at the configured numbers.
  CHECK(kept.concurrency_decreases == 0);
  CHECK(kept.lowest_concurrency == 4);
  CHECK(kept.retries > 0);
}

TEST_CASE("bulk bytes in flight stay under max_in_flight_bytes whatever the connections",
          "[reindex][memory][tsan]") {
  // Counts the bulks written at once (each about the same size).
  class SlowSink final : public rfs::reindex::IDocumentSink {
   public:
    absl::StatusOr<std::vector<rfs::reindex::ItemFailure>> Write(
        std::span<const rfs::reindex::SourceDocument* const>) override {
      const int now = ++active_;
      int seen = peak.load();
      while (now > seen && !peak.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(3ms);
      --active_;
      return std::vector<rfs::reindex::ItemFailure>{};
    }
    std::string description() const override { return "slow sink"; }
    std::atomic<int> peak{0};

   private:
    std::atomic<int> active_{0};
  };
  auto peak_with = [](size_t budget) {
    SlowSink sink;
    rfs::core::SystemClock clock;
    rfs::reindex::DocumentReindexerOptions options;
    options.max_docs_per_batch = 50;  // about 50 x ~60 bytes per bulk
    options.max_concurrent_batches = 10;
    options.max_in_flight_bytes = budget;
    options.backpressure = false;
    rfs::reindex::DocumentReindexer reindexer(sink, nullptr, clock, options);
    VectorStream docs(5000);
    auto summary = reindexer.Reindex(docs);
    REQUIRE(summary.ok());
    CHECK(summary->docs_written == 5000);
    return sink.peak.load();
  };
  const int unbounded = peak_with(0);
  CHECK(unbounded >= 5);  // the connections fill up
  // A few bulks' worth (each is about 50 x 50 bytes of bulk body): a few at once.
  const int bounded = peak_with(6000);
  CHECK(bounded <= 3);
  CHECK(bounded < unbounded);
  CHECK(peak_with(1) == 1);  // below one bulk: still one at a time, never stuck
}
