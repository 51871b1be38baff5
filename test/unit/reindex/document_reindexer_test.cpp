#include "rfs/reindex/document_reindexer.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <thread>

#include <catch2/catch.hpp>

#include "rfs/coordination/work_coordinator.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/opensearch/client.hpp"

#include "reindex_test_util.hpp"
#include "support/opensearch_double.hpp"

namespace rfs::reindex {
using namespace rfs::net;         // NOLINT: the layers this test drives
using namespace rfs::opensearch;  // NOLINT
namespace {

using testutil::LayOut;
using testutil::MakeDocs;

// A sink that records what it receives and fails as a script says. Thread-safe.
class ScriptedSink final : public IDocumentSink {
 public:
  // Called for each Write with the call number (1-based) and the documents; returns the result.
  using Script = std::function<absl::StatusOr<std::vector<ItemFailure>>(
      int call, std::span<const SourceDocument* const> docs)>;

  explicit ScriptedSink(Script script = {}) : script_(std::move(script)) {}

  absl::StatusOr<std::vector<ItemFailure>> Write(
      std::span<const SourceDocument* const> docs) override {
    const int active = in_flight_.fetch_add(1) + 1;
    int observed = max_in_flight_.load();
    while (active > observed && !max_in_flight_.compare_exchange_weak(observed, active)) {
    }
    int call;
    {
      std::lock_guard lock(mu_);
      call = ++calls_;
      batch_sizes_.push_back(docs.size());
      if (!docs.empty()) batches_by_cursor_.emplace(docs.front()->cursor, docs.size());
    }
    // Give other workers a chance to overlap, so the in-flight bound is exercised.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    absl::StatusOr<std::vector<ItemFailure>> result =
        script_ ? script_(call, docs) : std::vector<ItemFailure>();
    if (result.ok()) {
      std::lock_guard lock(mu_);
      std::set<size_t> failed;
      for (const auto& f : *result) failed.insert(f.position);
      for (size_t i = 0; i < docs.size(); ++i) {
        if (!failed.count(i)) written_[docs[i]->id] += 1;
      }
    }
    in_flight_.fetch_sub(1);
    return result;
  }
  std::string description() const override { return "scripted sink"; }

  std::map<std::string, int> written() const {
    std::lock_guard lock(mu_);
    return written_;
  }
  std::vector<size_t> batch_sizes() const {
    std::lock_guard lock(mu_);
    return batch_sizes_;
  }
  // The sizes in the order of the batches' first cursors: with several batches in flight, the
  // order they reach the sink in is a race.
  std::vector<size_t> batch_sizes_by_cursor() const {
    std::lock_guard lock(mu_);
    std::vector<size_t> sizes;
    for (const auto& [cursor, size] : batches_by_cursor_) sizes.push_back(size);
    return sizes;
  }
  int calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  int max_in_flight() const { return max_in_flight_.load(); }

 private:
  Script script_;
  mutable std::mutex mu_;
  int calls_ = 0;
  std::vector<size_t> batch_sizes_;
  std::multimap<uint64_t, size_t> batches_by_cursor_;
  std::map<std::string, int> written_;
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
};

class RecordingFailedSink final : public IFailedDocumentSink {
 public:
  absl::Status Record(std::span<const FailedDocument> docs) override {
    std::lock_guard lock(mu_);
    records.insert(records.end(), docs.begin(), docs.end());
    return absl::OkStatus();
  }
  std::mutex mu_;
  std::vector<FailedDocument> records;
};

TEST_CASE("IsRetryableItemFailure separates busy from broken", "[reindex][reindexer]") {
  CHECK(IsRetryableItemFailure(429, "rejected_execution_exception"));
  CHECK(IsRetryableItemFailure(503, "unavailable_shards_exception"));
  CHECK(IsRetryableItemFailure(500, "whatever"));
  CHECK(IsRetryableItemFailure(400, "es_rejected_execution_exception"));
  CHECK_FALSE(IsRetryableItemFailure(400, "mapper_parsing_exception"));
  CHECK_FALSE(IsRetryableItemFailure(400, "strict_dynamic_mapping_exception"));
  CHECK_FALSE(IsRetryableItemFailure(400, "illegal_argument_exception"));
  CHECK_FALSE(IsRetryableItemFailure(409, "version_conflict_engine_exception"));
  // A block refuses writes until it is lifted: index.blocks.write (403), read_only_allow_delete
  // (429).
  CHECK(IsRetryableItemFailure(403, "cluster_block_exception"));
  CHECK(IsRetryableItemFailure(429, "cluster_block_exception"));
  CHECK_FALSE(IsRetryableItemFailure(403, "security_exception"));
}

TEST_CASE("items refused by a block wait for it to be lifted and keep the caller's lease alive",
          "[reindex][reindexer]") {
  core::FakeClock clock;
  const ItemFailure blocked{0, 403, "cluster_block_exception",
                            "index [logs] blocked by: [FORBIDDEN/8/index write (api)];"};
  std::atomic<int> blocked_calls{3};  // the block is lifted after three refused requests
  ScriptedSink sink(
      [&](int,
          std::span<const SourceDocument* const> docs) -> absl::StatusOr<std::vector<ItemFailure>> {
        if (blocked_calls.fetch_sub(1) <= 0) return std::vector<ItemFailure>{};
        std::vector<ItemFailure> all;
        for (size_t i = 0; i < docs.size(); ++i) {
          all.push_back(blocked);
          all.back().position = i;
        }
        return all;
      });
  RecordingFailedSink failed;
  std::atomic<int> keep_alives{0};
  std::mutex causes_mu;
  std::vector<std::string> causes;
  DocumentReindexerOptions options{.max_concurrent_batches = 1, .retry = {.max_attempts = 5}};
  options.keep_alive = [&] {
    keep_alives.fetch_add(1);
    return absl::OkStatus();
  };
  options.on_bulk_attempt = [&](const BulkAttempt& attempt) {
    std::lock_guard lock(causes_mu);
    causes.push_back(attempt.retry_cause);
  };
  SECTION("lifted within the retry budget: every document written, none failed") {
    DocumentReindexer reindexer(sink, &failed, clock, options);
    VectorDocumentStream docs(MakeDocs(4));
    auto summary = reindexer.Reindex(docs);
    REQUIRE(summary.ok());
    CHECK(summary->docs_written == 4);
    CHECK(summary->docs_failed == 0);
    CHECK(failed.records.empty());
    CHECK(summary->retries == 3);
    CHECK(keep_alives.load() == 3);  // once before each backoff
    CHECK(causes == std::vector<std::string>{"blocked", "blocked", "blocked", ""});
  }
  SECTION("still blocked when the budget is used up: the shard fails, no document is failed") {
    blocked_calls = 1000;
    DocumentReindexer reindexer(sink, &failed, clock, options);
    VectorDocumentStream docs(MakeDocs(4));
    auto summary = reindexer.Reindex(docs);
    CHECK(absl::IsUnavailable(summary.status()));
    CHECK(summary.status().message().find("cluster_block_exception") != std::string::npos);
    CHECK(sink.calls() == 5);
    CHECK(failed.records.empty());
  }
  SECTION("a lease lost while waiting stops the reindex with that error") {
    options.keep_alive = [] { return absl::AbortedError("lease lost"); };
    DocumentReindexer reindexer(sink, &failed, clock, options);
    VectorDocumentStream docs(MakeDocs(4));
    auto summary = reindexer.Reindex(docs);
    CHECK(absl::IsAborted(summary.status()));
    CHECK(sink.calls() == 1);
    CHECK(failed.records.empty());
  }
}

TEST_CASE("reindexer batches by document count and by bytes", "[reindex][reindexer]") {
  core::FakeClock clock;
  SECTION("by documents") {
    ScriptedSink sink;
    DocumentReindexer reindexer(sink, nullptr, clock,
                                {.max_docs_per_batch = 7, .max_concurrent_batches = 1});
    VectorDocumentStream docs(MakeDocs(30));
    auto summary = reindexer.Reindex(docs);
    REQUIRE(summary.ok());
    CHECK(sink.batch_sizes() == std::vector<size_t>{7, 7, 7, 7, 2});
    CHECK(summary->docs_written == 30);
    CHECK(summary->batches == 5);
    CHECK(summary->last_acknowledged_cursor == 30u);
  }
  SECTION("by bytes, with an oversized document alone") {
    ScriptedSink sink;
    auto list = MakeDocs(10, "target", 100);
    list[4].source = "{\"big\":\"" + std::string(5000, 'y') + "\"}";
    const size_t limit = 3 * EstimateBulkBytes(list[0]) + 10;
    DocumentReindexer reindexer(sink, nullptr, clock,
                                {.max_bytes_per_batch = limit, .max_concurrent_batches = 1});
    VectorDocumentStream docs(std::move(list));
    auto summary = reindexer.Reindex(docs);
    REQUIRE(summary.ok());
    CHECK(sink.batch_sizes() == std::vector<size_t>{3, 1, 1, 3, 2});
  }
}

TEST_CASE("reindexer keeps at most max_concurrent_batches in flight",
          "[reindex][reindexer][tsan]") {
  core::FakeClock clock;
  ScriptedSink sink;
  DocumentReindexer reindexer(sink, nullptr, clock,
                              {.max_docs_per_batch = 5, .max_concurrent_batches = 3});
  VectorDocumentStream docs(MakeDocs(300));
  auto summary = reindexer.Reindex(docs);
  REQUIRE(summary.ok());
  CHECK(summary->docs_written == 300);
  CHECK(sink.max_in_flight() <= 3);
  CHECK(sink.max_in_flight() >= 2);
  CHECK(sink.written().size() == 300);
}

TEST_CASE("reindexer retries only the pending items", "[reindex][reindexer]") {
  core::FakeClock clock;
  std::mutex mu;
  std::vector<std::vector<std::string>> sent;
  ScriptedSink sink(
      [&](int call,
          std::span<const SourceDocument* const> docs) -> absl::StatusOr<std::vector<ItemFailure>> {
        std::lock_guard lock(mu);
        sent.emplace_back();
        for (const auto* d : docs) sent.back().push_back(d->id);
        if (call == 1) return absl::UnavailableError("connection reset");
        if (call == 2) {
          return std::vector<ItemFailure>{{1, 429, "rejected_execution_exception", "busy"},
                                          {3, 503, "unavailable_shards_exception", "later"}};
        }
        return std::vector<ItemFailure>{};
      });
  DocumentReindexer reindexer(sink, nullptr, clock, {.max_concurrent_batches = 1});
  VectorDocumentStream docs(MakeDocs(5));
  auto summary = reindexer.Reindex(docs);
  REQUIRE(summary.ok());
  REQUIRE(sent.size() == 3);
  CHECK(sent[0].size() == 5);
  CHECK(sent[1].size() == 5);
  CHECK(sent[2] == std::vector<std::string>{"d1", "d3"});
  CHECK(summary->docs_written == 5);
  CHECK(summary->retries == 2);
  // Backoff grew between attempts: 200ms then 400ms base, each at least half that.
  CHECK(clock.total_slept() >= std::chrono::milliseconds(300));
  CHECK(clock.total_slept() <= std::chrono::milliseconds(600));
}

TEST_CASE("reindexer records permanent failures and counts allowed ones", "[reindex][reindexer]") {
  core::FakeClock clock;
  ScriptedSink sink(
      [](int,
         std::span<const SourceDocument* const> docs) -> absl::StatusOr<std::vector<ItemFailure>> {
        std::vector<ItemFailure> failures;
        for (size_t i = 0; i < docs.size(); ++i) {
          if (docs[i]->id == "d2") {
            failures.push_back({i, 400, "mapper_parsing_exception", "failed to parse field [n]"});
          }
          if (docs[i]->id == "d3") {
            failures.push_back({i, 409, "version_conflict_engine_exception", "exists"});
          }
        }
        return failures;
      });
  RecordingFailedSink failed;
  DocumentReindexer reindexer(sink, &failed, clock,
                              {.allowed_exception_types = {"version_conflict_engine_exception"}});
  auto list = MakeDocs(5);
  list[2].routing = "r7";
  VectorDocumentStream docs(std::move(list));
  auto summary = reindexer.Reindex(docs);
  REQUIRE(summary.ok());
  CHECK(summary->docs_written == 3);
  CHECK(summary->docs_allowed_errors == 1);
  CHECK(summary->docs_failed == 1);
  CHECK(summary->retries == 0);
  CHECK(summary->last_acknowledged_cursor == 5u);
  REQUIRE(failed.records.size() == 1);
  const FailedDocument& f = failed.records[0];
  CHECK(f.id == "d2");
  CHECK(f.index == "target");
  CHECK(f.cursor == 3);
  CHECK(f.status == 400);
  CHECK(f.error_type == "mapper_parsing_exception");
  CHECK(f.action == R"({"index":{"_index":"target","_id":"d2","routing":"r7"}})");
  CHECK(f.source.find('\n') == std::string::npos);
}

TEST_CASE("a request too large for the target is split and a lone oversized document fails alone",
          "[reindex][reindexer]") {
  core::FakeClock clock;
  // The target takes at most 3 documents per request and never document "d5".
  ScriptedSink sink([](int, auto docs) -> absl::StatusOr<std::vector<ItemFailure>> {
    const bool has_huge = std::any_of(docs.begin(), docs.end(),
                                      [](const SourceDocument* d) { return d->id == "d5"; });
    if (docs.size() > 3 || has_huge) {
      return absl::OutOfRangeError("POST /_bulk: HTTP 413 request entity too large");
    }
    return std::vector<ItemFailure>();
  });
  RecordingFailedSink failed;
  DocumentReindexer reindexer(sink, &failed, clock,
                              {.max_docs_per_batch = 10, .max_concurrent_batches = 1});
  VectorDocumentStream docs(MakeDocs(10));
  auto summary = reindexer.Reindex(docs);
  INFO(summary.status().ToString());
  REQUIRE(summary.ok());
  CHECK(summary->docs_written == 9);
  CHECK(summary->docs_failed == 1);
  REQUIRE(failed.records.size() == 1);
  CHECK(failed.records[0].id == "d5");
  CHECK(failed.records[0].status == 413);
  CHECK(failed.records[0].reason.find("too large") != std::string::npos);
  const auto written = sink.written();
  CHECK(written.size() == 9);
  for (const auto& [id, times] : written) CHECK(times == 1);
  for (size_t size : sink.batch_sizes()) CHECK(size <= 10);
}

TEST_CASE("a whole-request 409 fails the batch with a clear error, not a lost lease",
          "[reindex][reindexer]") {
  core::FakeClock clock;
  ScriptedSink sink([](int, auto) -> absl::StatusOr<std::vector<ItemFailure>> {
    net::HttpResponse response;
    response.status = 409;
    response.body = R"({"error":{"type":"some_conflict","reason":"no"},"status":409})";
    return StatusFromResponse(response, "POST /_bulk");
  });
  DocumentReindexer reindexer(sink, nullptr, clock, {.max_concurrent_batches = 1});
  VectorDocumentStream docs(MakeDocs(3));
  auto summary = reindexer.Reindex(docs);
  REQUIRE_FALSE(summary.ok());
  CHECK_FALSE(coordination::IsLeaseLost(summary.status()));
  CHECK(summary.status().message().find("HTTP 409 some_conflict") != std::string::npos);
  CHECK(sink.calls() == 1);
}

TEST_CASE("reindexer fails the shard when retries run out", "[reindex][reindexer]") {
  core::FakeClock clock;
  SECTION("whole batch keeps failing") {
    ScriptedSink sink([](int, auto) -> absl::StatusOr<std::vector<ItemFailure>> {
      return absl::ResourceExhaustedError("HTTP 429");
    });
    DocumentReindexer reindexer(sink, nullptr, clock,
                                {.max_concurrent_batches = 1, .retry = {.max_attempts = 4}});
    VectorDocumentStream docs(MakeDocs(3));
    auto summary = reindexer.Reindex(docs);
    CHECK(absl::IsResourceExhausted(summary.status()));
    CHECK(summary.status().message().find("after 4 attempt") != std::string::npos);
    CHECK(sink.calls() == 4);
  }
  SECTION("items keep failing") {
    ScriptedSink sink([](int, auto docs) -> absl::StatusOr<std::vector<ItemFailure>> {
      return std::vector<ItemFailure>{{0, 429, "rejected_execution_exception", "busy"}};
    });
    DocumentReindexer reindexer(sink, nullptr, clock,
                                {.max_concurrent_batches = 1, .retry = {.max_attempts = 3}});
    VectorDocumentStream docs(MakeDocs(3));
    auto summary = reindexer.Reindex(docs);
    CHECK(absl::IsUnavailable(summary.status()));
    CHECK(summary.status().message().find("rejected_execution_exception") != std::string::npos);
  }
  SECTION("a non-transient error is not retried") {
    ScriptedSink sink([](int, auto) -> absl::StatusOr<std::vector<ItemFailure>> {
      return absl::PermissionDeniedError("HTTP 403");
    });
    DocumentReindexer reindexer(sink, nullptr, clock, {.max_concurrent_batches = 2});
    VectorDocumentStream docs(MakeDocs(3));
    CHECK(absl::IsPermissionDenied(reindexer.Reindex(docs).status()));
    CHECK(sink.calls() == 1);
  }
}

TEST_CASE("reindexer reports a gap-free acknowledged cursor", "[reindex][reindexer]") {
  core::FakeClock clock;
  // Batch 2 (cursors 11-20) fails permanently after batches 1 and 3 succeed, so the cursor must
  // stop at 10 even though 21-30 were written.
  std::atomic<bool> first_done{false};
  ScriptedSink sink(
      [&](int,
          std::span<const SourceDocument* const> docs) -> absl::StatusOr<std::vector<ItemFailure>> {
        if (docs.front()->cursor == 11) {
          while (!first_done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          return absl::InvalidArgumentError("HTTP 400 broken batch");
        }
        if (docs.front()->cursor == 1) first_done = true;
        return std::vector<ItemFailure>{};
      });
  std::mutex mu;
  std::vector<uint64_t> progress;
  DocumentReindexer reindexer(sink, nullptr, clock,
                              {.max_docs_per_batch = 10, .max_concurrent_batches = 3});
  VectorDocumentStream docs(MakeDocs(30));
  auto summary = reindexer.Reindex(docs, [&](const rfs::reindex::AcknowledgedProgress& acked) {
    std::lock_guard lock(mu);
    CHECK(acked.docs == acked.cursor);  // Cursors 1..n, none failed or skipped.
    progress.push_back(acked.cursor);
    return absl::OkStatus();
  });
  CHECK(absl::IsInvalidArgument(summary.status()));
  REQUIRE_FALSE(progress.empty());
  CHECK(progress.back() == 10);
  CHECK(std::is_sorted(progress.begin(), progress.end()));
}

TEST_CASE("reindexer stops when the progress callback fails", "[reindex][reindexer]") {
  core::FakeClock clock;
  ScriptedSink sink;
  DocumentReindexer reindexer(sink, nullptr, clock,
                              {.max_docs_per_batch = 2, .max_concurrent_batches = 1});
  VectorDocumentStream docs(MakeDocs(100));
  auto summary = reindexer.Reindex(docs, [](const rfs::reindex::AcknowledgedProgress&) {
    return absl::AbortedError("lease lost");
  });
  CHECK(absl::IsAborted(summary.status()));
  CHECK(sink.calls() < 50);
}

TEST_CASE("reindexer rejects cursors that decrease", "[reindex][reindexer]") {
  core::FakeClock clock;
  ScriptedSink sink;
  DocumentReindexer reindexer(sink, nullptr, clock);
  auto list = MakeDocs(3);
  list[2].cursor = list[0].cursor;
  VectorDocumentStream docs(std::move(list));
  CHECK(absl::IsInvalidArgument(reindexer.Reindex(docs).status()));
}

TEST_CASE("reindexer keeps documents sharing a cursor in one batch", "[reindex][reindexer]") {
  // A transform split one source document in three: they share its cursor, and a batch boundary
  // between them would let the acknowledged cursor cover a half-written document.
  core::FakeClock clock;
  ScriptedSink sink;
  DocumentReindexer reindexer(sink, nullptr, clock,
                              {.max_docs_per_batch = 2, .max_concurrent_batches = 1});
  auto list = MakeDocs(5);
  for (size_t i = 1; i < 4; ++i) list[i].cursor = list[1].cursor;
  list[4].cursor = list[1].cursor + 1;
  VectorDocumentStream docs(std::move(list));
  std::vector<uint64_t> progress;
  auto summary = reindexer.Reindex(docs, [&](const rfs::reindex::AcknowledgedProgress& p) {
    progress.push_back(p.cursor);
    return absl::OkStatus();
  });
  REQUIRE(summary.ok());
  CHECK(summary->docs_written == 5);
  CHECK(sink.batch_sizes() == std::vector<size_t>{4, 1});
}

TEST_CASE("reindexer returns stream errors", "[reindex][reindexer]") {
  class FailingStream final : public IDocumentStream {
   public:
    absl::StatusOr<std::optional<SourceDocument>> Next() override {
      if (++n_ > 3) return absl::DataLossError("segment _0.fdt: bad checksum");
      SourceDocument doc;
      doc.index = "i";
      doc.id = std::to_string(n_);
      doc.cursor = n_;
      doc.source = "{}";
      return std::optional<SourceDocument>(std::move(doc));
    }

   private:
    int n_ = 0;
  };
  core::FakeClock clock;
  ScriptedSink sink;
  DocumentReindexer reindexer(sink, nullptr, clock);
  FailingStream stream;
  CHECK(absl::IsDataLoss(reindexer.Reindex(stream).status()));
}

TEST_CASE("with 20% injected faults every document arrives exactly once",
          "[reindex][reindexer][faults]") {
  testing::FaultOptions faults;
  faults.reject_429 = 0.05;
  faults.unavailable_503 = 0.04;
  faults.reset_before_apply = 0.04;
  faults.reset_after_apply = 0.04;
  faults.slow = 0.03;
  faults.slow_delay = std::chrono::milliseconds(20);
  faults.item_failure = 0.02;
  faults.seed = 20240601;
  // Each kind at least once, whatever the draws: early requests follow this schedule.
  faults.schedule = {{2, testing::Fault::kResetAfterApply},  {4, testing::Fault::kReject429},
                     {6, testing::Fault::kResetBeforeApply}, {8, testing::Fault::kUnavailable503},
                     {10, testing::Fault::kItemFailures},    {12, testing::Fault::kSlowResponse},
                     {14, testing::Fault::kResetAfterApply}};
  auto server = testing::OpenSearchDouble::Start({.faults = faults});
  REQUIRE(server.ok());
  auto transport = BeastHttpTransport::Open({.endpoint = (*server)->endpoint()});
  REQUIRE(transport.ok());
  OpenSearchClient client(**transport);
  OpenSearchBulkSink sink(client);
  core::FakeClock clock;  // backoff without real sleeping
  const size_t kDocs = 3000;
  auto expected = MakeDocs(kDocs, "faulty", 300);
  DocumentReindexer reindexer(
      sink, nullptr, clock,
      {.max_docs_per_batch = 50, .max_concurrent_batches = 4, .retry = {.max_attempts = 30}});
  VectorDocumentStream docs(expected);
  std::atomic<uint64_t> last_progress{0};
  auto summary = reindexer.Reindex(docs, [&](const rfs::reindex::AcknowledgedProgress& acked) {
    CHECK(acked.cursor >= last_progress.load());
    last_progress = acked.cursor;
    return absl::OkStatus();
  });
  REQUIRE(summary.ok());
  CHECK(summary->docs_written == kDocs);
  CHECK(summary->docs_failed == 0);
  CHECK(summary->retries > 0);
  CHECK(summary->last_acknowledged_cursor == kDocs);
  CHECK(last_progress.load() == kDocs);

  const testing::DoubleStats stats = (*server)->stats();
  CHECK(stats.faults_injected >= 0.1 * stats.bulk_requests);
  // All documents, one copy each (ids are explicit, so a resent document overwrote itself).
  REQUIRE((*server)->DocumentCount("faulty") == kDocs);
  std::string line;
  for (const auto& doc : expected) {
    auto stored = (*server)->GetDocument("faulty", doc.id);
    REQUIRE(stored.has_value());
    line.clear();
    AppendSourceLine(doc.source, line);
    line.pop_back();
    CHECK(stored->source == line);
  }
  // Some documents were written twice because a response was lost after the write applied.
  CHECK(stats.write_operations > kDocs);
}

// A double holding `index` with a strict mapping of MakeDocs' fields (n, text): a document with
// any other field is refused.
std::unique_ptr<testing::OpenSearchDouble> StartWithStrictIndex(const std::string& index) {
  auto server = testing::OpenSearchDouble::Start();
  REQUIRE(server.ok());
  REQUIRE((*server)
              ->CreateIndex(index, R"({"mappings":{"dynamic":"strict","properties":)"
                                   R"({"n":{"type":"long"},"text":{"type":"text"}}}})")
              .ok());
  return *std::move(server);
}

TEST_CASE("reindexer sends unfixable documents to the failed-document sink over HTTP",
          "[reindex][reindexer]") {
  auto server = StartWithStrictIndex("strict");
  auto transport = BeastHttpTransport::Open({.endpoint = server->endpoint()});
  REQUIRE(transport.ok());
  OpenSearchClient client(**transport);
  OpenSearchBulkSink sink(client);
  RecordingFailedSink failed;
  core::FakeClock clock;
  auto list = MakeDocs(20, "strict");
  list[3].source = R"({"n":3,"surprise":true})";
  list[7].source = R"({"n":"seven"})";
  DocumentReindexer reindexer(sink, &failed, clock, {.max_docs_per_batch = 8});
  VectorDocumentStream docs(std::move(list));
  auto summary = reindexer.Reindex(docs);
  REQUIRE(summary.ok());
  CHECK(summary->docs_written == 18);
  CHECK(summary->docs_failed == 2);
  CHECK(server->DocumentCount("strict") == 18);
  REQUIRE(failed.records.size() == 2);
  std::set<std::string> types;
  for (const auto& r : failed.records) types.insert(r.error_type);
  CHECK(types ==
        std::set<std::string>{"strict_dynamic_mapping_exception", "mapper_parsing_exception"});
}

TEST_CASE("a create the target answers 409 and a delete it answers 404 are not failures",
          "[reindex][reindexer]") {
  // A data stream's documents are sent as `create`: a redo after a crash meets the documents an
  // earlier attempt wrote (409). A delta's delete of a document the target never had is a 404.
  // Both leave the target as wanted; a 409 to a plain `index` would still be a failure.
  auto server = testing::OpenSearchDouble::Start();
  REQUIRE(server.ok());
  auto transport = BeastHttpTransport::Open({.endpoint = (*server)->endpoint()});
  REQUIRE(transport.ok());
  OpenSearchClient client(**transport);
  OpenSearchBulkSink sink(client);
  RecordingFailedSink failed;
  core::FakeClock clock;
  auto make = [](BulkOp op) {
    auto list = MakeDocs(10, "stream");
    for (auto& doc : list) doc.op = op;
    return list;
  };
  DocumentReindexer reindexer(sink, &failed, clock, {.max_docs_per_batch = 4});
  for (int round = 0; round < 2; ++round) {
    VectorDocumentStream docs(make(BulkOp::kCreate));
    auto summary = reindexer.Reindex(docs);
    REQUIRE(summary.ok());
    CHECK(summary->docs_written == 10);
    CHECK(summary->docs_failed == 0);
  }
  CHECK((*server)->DocumentCount("stream") == 10);
  auto deletes = make(BulkOp::kDelete);
  for (auto& doc : deletes) doc.id += "-never-there";
  VectorDocumentStream gone(std::move(deletes));
  auto deleted = reindexer.Reindex(gone);
  REQUIRE(deleted.ok());
  CHECK(deleted->docs_failed == 0);
  CHECK(failed.records.empty());
}

TEST_CASE("a versioned write the target holds in a newer version is counted as already newer",
          "[reindex][reindexer]") {
  // --preserve-version: documents go with their source _version as external versions. One the
  // target holds in an equal or higher version is answered 409 version_conflict_engine_exception:
  // it is where it should be, so neither a failure nor retried, and counted apart.
  auto server = testing::OpenSearchDouble::Start();
  REQUIRE(server.ok());
  auto transport = BeastHttpTransport::Open({.endpoint = (*server)->endpoint()});
  REQUIRE(transport.ok());
  OpenSearchClient client(**transport);
  OpenSearchBulkSink sink(client);
  // Written on the target first: d1 at version 9 (newer than the source's 3), d2 at
  // version 3 (the same as the source's: also a conflict for `external`).
  for (auto [id, version] : {std::pair<const char*, int>{"d1", 9}, {"d2", 3}}) {
    auto put =
        transport->get()->Send({.method = "PUT",
                                .target = core::StrCat("/versioned/_doc/", id, "?version=", version,
                                                       "&version_type=external"),
                                .headers = {{"Content-Type", "application/json"}},
                                .body = R"({"newer":true})"});
    REQUIRE(put.ok());
    REQUIRE(put->status == 201);
  }
  RecordingFailedSink failed;
  core::FakeClock clock;
  std::atomic<int> attempts{0};
  DocumentReindexerOptions options{.max_docs_per_batch = 4};
  options.on_bulk_attempt = [&](const BulkAttempt& attempt) {
    ++attempts;
    CHECK(attempt.items_retried == 0);
  };
  DocumentReindexer reindexer(sink, &failed, clock, options);
  auto list = MakeDocs(6, "versioned");
  for (auto& doc : list) doc.version = 3;
  VectorDocumentStream docs(std::move(list));
  auto summary = reindexer.Reindex(docs);
  REQUIRE(summary.ok());
  CHECK(summary->docs_written == 4);
  CHECK(summary->docs_already_newer == 2);
  CHECK(summary->docs_failed == 0);
  CHECK(summary->retries == 0);
  CHECK(attempts == 2);
  CHECK(failed.records.empty());
  auto kept = (*server)->GetDocument("versioned", "d1");
  REQUIRE(kept);
  CHECK(kept->version == 9);
  CHECK(kept->source == R"({"newer":true})");
  auto written = (*server)->GetDocument("versioned", "d0");
  REQUIRE(written);
  CHECK(written->version == 3);  // the source's version, not the target's own count

  // Sent again (a redone item), every document is already there in its version: all 409s.
  auto again = MakeDocs(6, "versioned");
  for (auto& doc : again) doc.version = 3;
  VectorDocumentStream redo(std::move(again));
  auto redone = reindexer.Reindex(redo);
  REQUIRE(redone.ok());
  CHECK(redone->docs_written == 0);
  CHECK(redone->docs_already_newer == 6);
  CHECK(failed.records.empty());

  // A higher source version replaces the target's copy.
  auto newer = MakeDocs(1, "versioned");
  newer[0].id = "d1";
  newer[0].version = 10;
  VectorDocumentStream newer_docs(std::move(newer));
  auto replaced = reindexer.Reindex(newer_docs);
  REQUIRE(replaced.ok());
  CHECK(replaced->docs_written == 1);
  CHECK((*server)->GetDocument("versioned", "d1")->version == 10);
}

TEST_CASE("without an attempt limit, transient failures are retried until the send deadline",
          "[reindex][reindexer]") {
  core::FakeClock clock;
  ScriptedSink sink(
      [](int, std::span<const SourceDocument* const>) -> absl::StatusOr<std::vector<ItemFailure>> {
        return absl::UnavailableError("HTTP 503");
      });
  const auto deadline = clock.Now() + std::chrono::minutes(5);
  DocumentReindexer reindexer(sink, nullptr, clock,
                              {.max_docs_per_batch = 10,
                               .max_concurrent_batches = 1,
                               .retry = {.max_attempts = 0},
                               .send_deadline = [&] { return deadline; }});
  VectorDocumentStream docs(MakeDocs(10));
  auto summary = reindexer.Reindex(docs);
  CHECK(absl::IsDeadlineExceeded(summary.status()));
  // Far more than the default 10 attempts, and no sleep past the deadline.
  CHECK(sink.calls() > 10);
  CHECK(clock.Now() == deadline);
}

TEST_CASE("a deadline moved forward lets retries go on", "[reindex][reindexer]") {
  core::FakeClock clock;
  std::atomic<int> failures_left{40};
  ScriptedSink sink(
      [&](int, std::span<const SourceDocument* const>) -> absl::StatusOr<std::vector<ItemFailure>> {
        if (failures_left.fetch_sub(1) > 0) return absl::UnavailableError("HTTP 503");
        return std::vector<ItemFailure>{};
      });
  // The deadline is always one minute ahead: a lease that heartbeats keep renewing.
  DocumentReindexer reindexer(
      sink, nullptr, clock,
      {.max_docs_per_batch = 10,
       .max_concurrent_batches = 1,
       .retry = {.max_attempts = 0},
       .send_deadline = [&] { return clock.Now() + std::chrono::minutes(1); }});
  VectorDocumentStream docs(MakeDocs(10));
  auto summary = reindexer.Reindex(docs);
  REQUIRE(summary.ok());
  CHECK(summary->docs_written == 10);
  CHECK(summary->retries == 40);
}

TEST_CASE("batches never run more than a window ahead of the acknowledged prefix",
          "[reindex][reindexer]") {
  core::FakeClock clock;
  std::atomic<int> written_while_first_pending{0};
  std::atomic<bool> first_done{false};
  ScriptedSink sink(
      [&](int,
          std::span<const SourceDocument* const> docs) -> absl::StatusOr<std::vector<ItemFailure>> {
        if (docs.front()->cursor == 1) {
          // The first batch is slow: the others may go ahead, but only a window's worth.
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          first_done = true;
        } else if (!first_done) {
          ++written_while_first_pending;
        }
        return std::vector<ItemFailure>{};
      });
  DocumentReindexer reindexer(sink, nullptr, clock,
                              {.max_docs_per_batch = 10, .max_concurrent_batches = 2});
  VectorDocumentStream docs(MakeDocs(200));
  auto summary = reindexer.Reindex(docs);
  REQUIRE(summary.ok());
  CHECK(summary->docs_written == 200);
  // Window = 2 x 2 batches: the slow one and at most three after it.
  CHECK(written_while_first_pending.load() <= 3);
  CHECK(written_while_first_pending.load() >= 1);  // The other connection did not idle.
}

}  // namespace
}  // namespace rfs::reindex

namespace rfs::reindex {
namespace {

// Documents from a vector with one cursor each (as a shard's are); before handing out the one
// after `wait_after`, waits (up to 5 s) for the sink to have received it.
class UniqueCursorStream final : public IDocumentStream {
 public:
  UniqueCursorStream(std::vector<SourceDocument> docs, size_t wait_after,
                     std::function<bool()> sink_has_it)
      : docs_(std::move(docs)), wait_after_(wait_after), sink_has_it_(std::move(sink_has_it)) {}
  absl::StatusOr<std::optional<SourceDocument>> Next() override {
    if (next_ == wait_after_ + 1) {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (!sink_has_it_() && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      sent_before_next_ = sink_has_it_();
    }
    if (next_ == docs_.size()) return std::optional<SourceDocument>();
    return std::optional<SourceDocument>(std::move(docs_[next_++]));
  }
  bool unique_cursors() const override { return true; }
  bool sent_before_next() const { return sent_before_next_; }

 private:
  std::vector<SourceDocument> docs_;
  size_t next_ = 0;
  const size_t wait_after_;
  const std::function<bool()> sink_has_it_;
  bool sent_before_next_ = false;
};

}  // namespace

TEST_CASE("a full batch goes at once when cursors are unique, charged to the memory budget",
          "[reindex][reindexer][tsan]") {
  core::FakeClock clock;
  ScriptedSink sink;
  auto list = MakeDocs(10, "target", 100);
  list[4].source = "{\"big\":\"" + std::string(50000, 'y') + "\"}";
  const size_t big = EstimateBulkBytes(list[4]);
  const size_t limit = 3 * EstimateBulkBytes(list[0]) + 10;
  core::MemoryBudget budget(1 << 20);
  DocumentReindexer reindexer(
      sink, nullptr, clock,
      {.max_bytes_per_batch = limit, .max_concurrent_batches = 2, .memory_budget = &budget});
  // The oversized document is the third batch: it must reach the sink before the stream is asked
  // for the document after it (a huge document is not held while the next one is read).
  UniqueCursorStream docs(std::move(list), 4, [&] { return sink.calls() >= 3; });
  auto summary = reindexer.Reindex(docs);
  REQUIRE(summary.ok());
  CHECK(docs.sent_before_next());
  CHECK(sink.batch_sizes_by_cursor() == std::vector<size_t>{3, 1, 1, 3, 2});
  CHECK(summary->docs_written == 10);
  CHECK(budget.used() == 0);
  CHECK(budget.peak() >= big);
}

TEST_CASE("the memory budget's limit bounds the bytes in flight, and failures give it back",
          "[reindex][reindexer][tsan]") {
  core::FakeClock clock;
  const size_t doc_bytes = EstimateBulkBytes(MakeDocs(1, "target", 1000)[0]);
  SECTION("bounded") {
    ScriptedSink sink;
    core::MemoryBudget budget(3 * doc_bytes);
    DocumentReindexer reindexer(sink, nullptr, clock,
                                {.max_docs_per_batch = 1,
                                 .max_concurrent_batches = 8,
                                 .max_in_flight_bytes = 0,
                                 .memory_budget = &budget});
    VectorDocumentStream docs(MakeDocs(60, "target", 1000));
    auto summary = reindexer.Reindex(docs);
    REQUIRE(summary.ok());
    CHECK(summary->docs_written == 60);
    CHECK(budget.peak() <= 3 * doc_bytes);
    CHECK(sink.max_in_flight() <= 3);
    CHECK(budget.used() == 0);
  }
  SECTION("a failed run releases what it charged") {
    ScriptedSink sink([](int call, auto) -> absl::StatusOr<std::vector<ItemFailure>> {
      if (call == 3) return absl::InvalidArgumentError("refused for good");
      return std::vector<ItemFailure>();
    });
    core::MemoryBudget budget(4 * doc_bytes);
    DocumentReindexer reindexer(
        sink, nullptr, clock,
        {.max_docs_per_batch = 1, .max_concurrent_batches = 4, .memory_budget = &budget});
    VectorDocumentStream docs(MakeDocs(40, "target", 1000));
    auto summary = reindexer.Reindex(docs);
    REQUIRE_FALSE(summary.ok());
    CHECK(budget.used() == 0);
  }
}

namespace {

// Hands documents on in place from ranges of `range_size`, as a shard's decoding threads do: it
// lets go of a range as soon as it moves past it, so only the holders the reindexer keeps hold
// it. Keeps a weak reference to each range, to see which are still alive.
class RangeStream final : public IDocumentStream {
 public:
  RangeStream(std::vector<SourceDocument> docs, size_t range_size) {
    for (size_t i = 0; i < docs.size(); i += range_size) {
      auto range = std::make_shared<std::vector<SourceDocument>>();
      for (size_t j = i; j < std::min(docs.size(), i + range_size); ++j) {
        range->push_back(std::move(docs[j]));
      }
      pending_.push_back(std::move(range));
    }
    for (const auto& range : pending_) {
      for (const SourceDocument& doc : *range) range_of_[&doc] = range;
    }
  }
  absl::StatusOr<std::optional<SourceDocument>> Next() override {
    return absl::InternalError("documents are handed on in place only");
  }
  absl::StatusOr<const SourceDocument*> NextInPlace(DocumentHolder& holder) override {
    if (current_ != nullptr && next_ == current_->size()) current_.reset();
    if (current_ == nullptr) {
      if (pending_.empty()) return nullptr;
      current_ = std::move(pending_.front());
      pending_.pop_front();
      next_ = 0;
    }
    if (holder != current_) holder = current_;
    return &(*current_)[next_++];
  }
  bool unique_cursors() const override { return true; }
  // Whether the range of `doc` is still alive (found by address: a freed one is not read).
  bool alive(const SourceDocument* doc) const { return !range_of_.at(doc).expired(); }
  size_t ranges_alive() const {
    size_t alive = 0;
    for (const auto& [doc, range] : range_of_) alive += range.expired() ? 0 : 1;
    return alive;
  }

 private:
  std::deque<std::shared_ptr<std::vector<SourceDocument>>> pending_;
  std::shared_ptr<std::vector<SourceDocument>> current_;
  size_t next_ = 0;
  std::map<const SourceDocument*, std::weak_ptr<std::vector<SourceDocument>>> range_of_;
};

}  // namespace

TEST_CASE("documents handed on in place stay alive until their batch is written, then go",
          "[reindex][reindexer][tsan]") {
  core::FakeClock clock;
  const auto expected = MakeDocs(100, "target", 200);
  RangeStream* stream = nullptr;
  std::atomic<int> dead_ranges{0};
  std::mutex mu;
  std::map<std::string, std::string> sources;  // by id, as the sink read them
  ScriptedSink sink(
      [&](int call,
          std::span<const SourceDocument* const> docs) -> absl::StatusOr<std::vector<ItemFailure>> {
        std::lock_guard lock(mu);
        for (const SourceDocument* doc : docs) {
          if (!stream->alive(doc)) {
            ++dead_ranges;
            continue;
          }
          sources[doc->id] = doc->source;
        }
        // Every third request has its second document retried: a batch outlives the ranges
        // read after it.
        if (call % 3 == 0 && docs.size() > 1) {
          return std::vector<ItemFailure>{{1, 429, "rejected_execution_exception", "busy"}};
        }
        return std::vector<ItemFailure>();
      });
  // Ranges of 7 documents, batches of 5: most batches take documents from two ranges, and most
  // ranges go out in two batches. Ranges of one document: each document has a holder of its own
  // (a huge one, or a plain stream's), which goes with its batch alone; batches cut by size
  // are cut after the document that fills them.
  const size_t range_size = GENERATE(size_t{7}, size_t{1});
  const bool by_size = GENERATE(false, true);
  CAPTURE(range_size, by_size);
  DocumentReindexerOptions options{.max_concurrent_batches = 3};
  if (by_size) {
    options.max_bytes_per_batch = 5 * EstimateBulkBytes(expected[0]);
  } else {
    options.max_docs_per_batch = 5;
  }
  DocumentReindexer reindexer(sink, nullptr, clock, options);
  RangeStream docs(expected, range_size);
  stream = &docs;
  auto summary = reindexer.Reindex(docs);
  REQUIRE(summary.ok());
  CHECK(summary->docs_written == 100);
  CHECK(summary->retries > 0);
  CHECK(dead_ranges == 0);
  CHECK(docs.ranges_alive() == 0);
  REQUIRE(sources.size() == expected.size());
  for (const SourceDocument& doc : expected) CHECK(sources[doc.id] == doc.source);
}

TEST_CASE("the reader lets go of a full batch's documents once it is handed over",
          "[reindex][reindexer][tsan]") {
  // Each document in a holder of its own, as a huge one is. Before handing out the fourth, the
  // stream waits (up to 5 s) for the third to be freed: its batch, full by size, written.
  class WatchingStream final : public IDocumentStream {
   public:
    explicit WatchingStream(std::vector<SourceDocument> docs) : docs_(std::move(docs)) {}
    absl::StatusOr<std::optional<SourceDocument>> Next() override {
      return absl::InternalError("documents are handed on in place only");
    }
    absl::StatusOr<const SourceDocument*> NextInPlace(DocumentHolder& holder) override {
      if (next_ == 3) {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (!last_.expired() && std::chrono::steady_clock::now() < give_up) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        freed_before_next_ = last_.expired();
      }
      if (next_ == docs_.size()) return nullptr;
      auto held = std::make_shared<const SourceDocument>(std::move(docs_[next_++]));
      last_ = held;
      const SourceDocument* doc = held.get();
      holder = std::move(held);
      return doc;
    }
    bool unique_cursors() const override { return true; }
    bool freed_before_next() const { return freed_before_next_; }

   private:
    std::vector<SourceDocument> docs_;
    size_t next_ = 0;
    std::weak_ptr<const void> last_;
    bool freed_before_next_ = false;
  };
  core::FakeClock clock;
  ScriptedSink sink;
  auto list = MakeDocs(6, "target", 100);
  const size_t limit =
      EstimateBulkBytes(list[0]) + EstimateBulkBytes(list[1]) + EstimateBulkBytes(list[2]);
  DocumentReindexer reindexer(sink, nullptr, clock,
                              {.max_bytes_per_batch = limit, .max_concurrent_batches = 1});
  WatchingStream docs(std::move(list));
  auto summary = reindexer.Reindex(docs);
  REQUIRE(summary.ok());
  CHECK(summary->docs_written == 6);
  CHECK(docs.freed_before_next());
}

TEST_CASE("what each document holds besides its lines is charged to the memory budget",
          "[reindex][reindexer][tsan]") {
  // Small documents whose structs outweigh their lines: a budget that counted the lines alone
  // would let all eight connections fill with them.
  class HeavyStream final : public IDocumentStream {
   public:
    explicit HeavyStream(std::vector<SourceDocument> docs) : docs_(std::move(docs)) {}
    absl::StatusOr<std::optional<SourceDocument>> Next() override { return docs_.Next(); }
    size_t bytes_held_per_document() const override { return 10000; }

   private:
    VectorDocumentStream docs_;
  };
  core::FakeClock clock;
  ScriptedSink sink;
  const auto list = MakeDocs(40, "target", 100);
  const size_t doc_bytes = EstimateBulkBytes(list[0]);
  core::MemoryBudget budget(2 * (10000 + doc_bytes));
  DocumentReindexer reindexer(
      sink, nullptr, clock,
      {.max_docs_per_batch = 1, .max_concurrent_batches = 8, .memory_budget = &budget});
  HeavyStream docs(list);
  auto summary = reindexer.Reindex(docs);
  REQUIRE(summary.ok());
  CHECK(summary->docs_written == 40);
  CHECK(budget.peak() >= 10000 + doc_bytes);
  CHECK(budget.peak() <= 2 * (10000 + doc_bytes));
  CHECK(sink.max_in_flight() <= 2);
  CHECK(budget.used() == 0);
}

TEST_CASE("the default in-place hand-off keeps each document of a plain stream",
          "[reindex][reindexer]") {
  VectorDocumentStream docs(MakeDocs(3));
  DocumentHolder first_holder;
  auto first = docs.NextInPlace(first_holder);
  REQUIRE(first.ok());
  REQUIRE(*first != nullptr);
  DocumentHolder second_holder = first_holder;
  auto second = docs.NextInPlace(second_holder);
  REQUIRE(second.ok());
  REQUIRE(*second != nullptr);
  CHECK(second_holder != first_holder);
  // The first document is unchanged by reading the second, and lives as long as its holder.
  CHECK((*first)->id == "d0");
  CHECK((*second)->id == "d1");
  std::weak_ptr<const void> watch = first_holder;
  first_holder.reset();
  CHECK(watch.expired());
  REQUIRE(docs.NextInPlace(second_holder).ok());
  auto end = docs.NextInPlace(second_holder);
  REQUIRE(end.ok());
  CHECK(*end == nullptr);
}

TEST_CASE("OpenSearch bulk sink sends laid-out lines as they are, gzipped or not",
          "[reindex][reindexer]") {
  // Runs of documents laid out as the reader lays them out go into the request as they are (or
  // straight into gzip). Their action lines here name a routing the documents themselves no
  // longer carry, so the target holds that routing only when the lines went as laid out. Between
  // the runs: documents as read, a run laid out with a type in its actions (which an OpenSearch
  // target does not take: laid out again from the documents, whose routing changed), and an _id
  // too long for OpenSearch inside a run, which fails alone. A strict mapping refuses one
  // document inside a run and one read as is: the failures name their own positions, so the
  // body kept the documents' order.
  for (const bool gzip : {true, false}) {
    INFO("gzip " << gzip);
    auto server = StartWithStrictIndex("lines");
    auto transport = BeastHttpTransport::Open({.endpoint = server->endpoint()});
    REQUIRE(transport.ok());
    OpenSearchClient client(**transport, {.compression = gzip});
    OpenSearchBulkSink sink(client);
    auto docs = MakeDocs(300, "lines", 200);
    docs[42].source = R"({"n":42,"surprise":true})";
    docs[260].source = R"({"n":260,"surprise":true})";
    std::vector<std::string> sources;
    std::vector<std::string> routings;
    for (SourceDocument& doc : docs) {
      doc.routing = "r" + std::to_string(doc.cursor % 3);
      routings.push_back(*doc.routing);
      std::string line;
      AppendSourceLine(doc.source, line);
      line.pop_back();
      sources.push_back(line);
    }
    docs[150].id = std::string(600, 'L');
    REQUIRE(LayOut(std::span(docs).first(200), 100));
    REQUIRE(LayOut(std::span(docs).subspan(220, 30), 10, {.include_type = true}));
    for (size_t i = 0; i < 200; ++i) docs[i].routing.reset();
    for (size_t i = 220; i < 250; ++i) {
      docs[i].routing = "changed";
      routings[i] = "changed";
    }
    std::vector<const SourceDocument*> pointers;
    for (const SourceDocument& doc : docs) pointers.push_back(&doc);
    auto failures = sink.Write(pointers);
    REQUIRE(failures.ok());
    REQUIRE(failures->size() == 3);
    CHECK((*failures)[0].position == 42);
    CHECK((*failures)[0].type == "strict_dynamic_mapping_exception");
    CHECK((*failures)[1].position == 150);
    CHECK((*failures)[1].status == 400);
    CHECK((*failures)[1].type == "action_request_validation_exception");
    CHECK((*failures)[2].position == 260);
    CHECK((*failures)[2].type == "strict_dynamic_mapping_exception");
    CHECK(server->DocumentCount("lines") == 297);
    for (size_t i = 0; i < docs.size(); ++i) {
      if (i == 42 || i == 150 || i == 260) continue;
      INFO("document " << i);
      auto stored = server->GetDocument("lines", docs[i].id);
      REQUIRE(stored.has_value());
      CHECK(stored->source == sources[i]);
      CHECK(stored->routing == routings[i]);
    }
    const testing::DoubleStats stats = server->stats();
    CHECK(stats.bulk_requests == 1);
    CHECK(stats.gzip_requests == (gzip ? 1u : 0u));
  }
}

TEST_CASE("a prepared bulk sends any part of itself and describes its documents from its body",
          "[reindex][reindexer]") {
  // Once prepared, the documents are gone (ASan would see a read of them): a part sent again and
  // a failed document's record come from the gzipped body (inflated a piece at a time, across
  // pieces for a long source) or, without gzip, from the lines the batch keeps (the reader's,
  // which only the batch holds now, and those the sink laid out).
  for (const bool gzip : {true, false}) {
    INFO("gzip " << gzip);
    auto server = StartWithStrictIndex("parts");
    auto transport = BeastHttpTransport::Open({.endpoint = server->endpoint()});
    REQUIRE(transport.ok());
    OpenSearchClient client(**transport, {.compression = gzip});
    OpenSearchBulkSink sink(client);
    auto docs = MakeDocs(400, "parts", 200);
    docs[42].source = R"({"n":42,"surprise":true})";
    docs[300].source = R"({"n":300,"text":")" + std::string(700'000, 'y') + R"("})";
    docs[7].id = "q\"uote\\d7\xc3\xa9";
    docs[9].routing = "r9";
    docs[11].version = 5;
    docs[150].id = std::string(600, 'L');
    docs[399].op = BulkOp::kDelete;  // the last lines: an action line alone
    REQUIRE(LayOut(std::span(docs).first(200), 64));
    REQUIRE(LayOut(std::span(docs).subspan(220, 30), 10, {.include_type = true}));
    // What the records must show, from the documents while they are there.
    std::vector<FailedDocument> expected(docs.size());
    std::vector<std::string> sources(docs.size());
    for (size_t i = 0; i < docs.size(); ++i) {
      expected[i].index = docs[i].index;
      expected[i].id = docs[i].id;
      expected[i].cursor = docs[i].cursor;
      AppendBulkAction(docs[i], {}, expected[i].action);
      expected[i].action.pop_back();
      AppendSourceLine(docs[i], expected[i].source);
      if (!expected[i].source.empty()) expected[i].source.pop_back();
      sources[i] = expected[i].source;
    }
    std::vector<const SourceDocument*> pointers;
    for (const SourceDocument& doc : docs) pointers.push_back(&doc);
    auto prepared = sink.Prepare(pointers);
    REQUIRE(prepared.ok());
    REQUIRE(*prepared != nullptr);
    IPreparedBatch& batch = **prepared;
    pointers.clear();
    docs.clear();
    docs.shrink_to_fit();
    REQUIRE(batch.size() == 400);
    CHECK(batch.cursor(399) == 400);
    CHECK(batch.has_version(11));
    CHECK_FALSE(batch.has_version(12));
    CHECK(batch.source_bytes(300) == sources[300].size());
    CHECK(batch.source_bytes(42) == sources[42].size());
    CHECK(batch.source_bytes(399) == 0);

    // Every third document (the long one among them), then the rest.
    std::vector<size_t> first_part;
    std::vector<size_t> rest;
    for (size_t i = 0; i < 400; ++i) (i % 3 == 0 ? first_part : rest).push_back(i);
    auto failures = batch.Write(first_part);
    REQUIRE(failures.ok());
    REQUIRE(failures->size() == 2);
    CHECK(first_part[(*failures)[0].position] == 42);
    CHECK((*failures)[0].type == "strict_dynamic_mapping_exception");
    CHECK(first_part[(*failures)[1].position] == 150);
    CHECK((*failures)[1].type == "action_request_validation_exception");
    CHECK(server->DocumentCount("parts") == first_part.size() - 3);  // a delete among them
    failures = batch.Write(rest);
    REQUIRE(failures.ok());
    CHECK(failures->empty());
    CHECK(server->DocumentCount("parts") == 397);
    for (size_t i : {size_t{0}, size_t{7}, size_t{9}, size_t{225}, size_t{300}, size_t{398}}) {
      INFO("document " << i);
      auto stored = server->GetDocument("parts", expected[i].id);
      REQUIRE(stored.has_value());
      CHECK(stored->source == sources[i]);
    }
    CHECK(server->GetDocument("parts", "d9")->routing == "r9");

    const std::vector<size_t> described = {7, 9, 11, 42, 150, 225, 299, 300, 301, 399};
    auto records = batch.Describe(described);
    REQUIRE(records.ok());
    REQUIRE(records->size() == described.size());
    for (size_t k = 0; k < described.size(); ++k) {
      const FailedDocument& want = expected[described[k]];
      const FailedDocument& got = (*records)[k];
      INFO("document " << described[k]);
      CHECK(got.index == want.index);
      CHECK(got.id == want.id);
      CHECK(got.cursor == want.cursor);
      CHECK(got.action == want.action);
      CHECK(got.source == want.source);
    }
    const testing::DoubleStats stats = server->stats();
    CHECK(stats.bulk_requests == 2);
    CHECK(stats.gzip_requests == (gzip ? 2u : 0u));

    // Names that are not UTF-8 (a source before Elasticsearch 5 may hold any bytes) and escapes
    // come back from the action line exactly, as they were laid out.
    SourceDocument odd;
    odd.index = "odd\xff";
    odd.id = "\xc3(\"\\/\n\x01\xf0\x9f\x98\x80";
    odd.routing = "r\"";
    odd.version = 7;
    odd.cursor = 1;
    odd.source = "{}";
    const SourceDocument* odd_pointer = &odd;
    auto odd_batch = sink.Prepare(std::span(&odd_pointer, 1));
    REQUIRE(odd_batch.ok());
    const std::vector<size_t> first = {0};
    auto odd_records = (*odd_batch)->Describe(first);
    REQUIRE(odd_records.ok());
    CHECK((*odd_records)[0].index == odd.index);
    CHECK((*odd_records)[0].id == odd.id);
  }
}

TEST_CASE("a sink that prepares its batches has their documents freed before they are sent",
          "[reindex][reindexer][tsan]") {
  // Each document has a holder of its own, charged 10,000 bytes: a budget of two of them lets
  // two batches of one document in flight while they are held. Prepared, a batch holds 100
  // bytes, so more go at once; when its request is sent, its document is gone. A part of a
  // batch is sent again (a retryable item), and a failed document is recorded from the batch.
  class HeldStream final : public IDocumentStream {
   public:
    explicit HeldStream(std::vector<SourceDocument> docs) : docs_(std::move(docs)) {}
    absl::StatusOr<std::optional<SourceDocument>> Next() override {
      return absl::UnimplementedError("in place only");
    }
    absl::StatusOr<const SourceDocument*> NextInPlace(DocumentHolder& holder) override {
      if (next_ == docs_.size()) return nullptr;
      auto held = std::make_shared<SourceDocument>(docs_[next_++]);
      {
        std::lock_guard lock(mu_);
        watched_[held->cursor] = held;
      }
      const SourceDocument* doc = held.get();
      holder = std::move(held);
      return doc;
    }
    size_t bytes_held_per_document() const override { return 10000; }
    bool unique_cursors() const override { return true; }
    bool alive(uint64_t cursor) const {
      std::lock_guard lock(mu_);
      return !watched_.at(cursor).expired();
    }

   private:
    std::vector<SourceDocument> docs_;
    size_t next_ = 0;
    mutable std::mutex mu_;
    std::map<uint64_t, std::weak_ptr<SourceDocument>> watched_;
  };
  class CopyingSink final : public IDocumentSink {
   public:
    explicit CopyingSink(const HeldStream& stream) : stream_(stream) {}
    class Batch final : public IPreparedBatch {
     public:
      Batch(CopyingSink& sink, std::vector<SourceDocument> copies)
          : sink_(sink), copies_(std::move(copies)) {}
      size_t size() const override { return copies_.size(); }
      size_t held_bytes() const override { return 100; }
      uint64_t cursor(size_t i) const override { return copies_[i].cursor; }
      size_t source_bytes(size_t i) const override { return copies_[i].source.size(); }
      bool has_version(size_t) const override { return false; }
      absl::StatusOr<std::vector<ItemFailure>> Write(std::span<const size_t> positions) override {
        return sink_.Send(copies_, positions);
      }
      absl::StatusOr<std::vector<FailedDocument>> Describe(
          std::span<const size_t> positions) const override {
        std::vector<FailedDocument> out;
        for (size_t i : positions) {
          FailedDocument& doc = out.emplace_back();
          doc.index = copies_[i].index;
          doc.id = copies_[i].id;
          doc.cursor = copies_[i].cursor;
          doc.action = "action of " + copies_[i].id;
        }
        return out;
      }

     private:
      CopyingSink& sink_;
      std::vector<SourceDocument> copies_;
    };
    absl::StatusOr<std::unique_ptr<IPreparedBatch>> Prepare(
        std::span<const SourceDocument* const> docs) override {
      std::vector<SourceDocument> copies;
      for (const SourceDocument* doc : docs) copies.push_back(*doc);
      return std::unique_ptr<IPreparedBatch>(new Batch(*this, std::move(copies)));
    }
    absl::StatusOr<std::vector<ItemFailure>> Write(
        std::span<const SourceDocument* const>) override {
      return absl::InternalError("written through Prepare only");
    }
    std::string description() const override { return "copying sink"; }
    bool copies_batches() const override { return true; }

    absl::StatusOr<std::vector<ItemFailure>> Send(const std::vector<SourceDocument>& copies,
                                                  std::span<const size_t> positions) {
      const int active = in_flight_.fetch_add(1) + 1;
      int observed = max_in_flight_.load();
      while (active > observed && !max_in_flight_.compare_exchange_weak(observed, active)) {
      }
      std::vector<ItemFailure> failures;
      for (size_t k = 0; k < positions.size(); ++k) {
        const SourceDocument& doc = copies[positions[k]];
        if (stream_.alive(doc.cursor)) still_held_.fetch_add(1);
        std::lock_guard lock(mu_);
        if (doc.id == "d5") {
          failures.push_back({k, 400, "mapper_parsing_exception", "no"});
        } else if (doc.id == "d8" && ++attempts_of_d8_ == 1) {
          failures.push_back({k, 429, "es_rejected_execution_exception", "busy"});
        } else {
          ++written_[doc.id];
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      in_flight_.fetch_sub(1);
      return failures;
    }
    const HeldStream& stream_;
    std::mutex mu_;
    std::map<std::string, int> written_;
    int attempts_of_d8_ = 0;
    std::atomic<int> still_held_{0};
    std::atomic<int> in_flight_{0};
    std::atomic<int> max_in_flight_{0};
  };
  core::FakeClock clock;
  const auto list = MakeDocs(40, "target", 100);
  const size_t doc_bytes = EstimateBulkBytes(list[0]);
  core::MemoryBudget budget(2 * (10000 + 2 * doc_bytes));
  HeldStream docs(list);
  CopyingSink sink(docs);
  RecordingFailedSink failed;
  DocumentReindexer reindexer(
      sink, &failed, clock,
      {.max_docs_per_batch = 1, .max_concurrent_batches = 8, .memory_budget = &budget});
  auto summary = reindexer.Reindex(docs);
  REQUIRE(summary.ok());
  CHECK(summary->docs_written == 39);
  CHECK(summary->docs_failed == 1);
  CHECK(summary->retries == 1);
  CHECK(sink.written_.size() == 39);
  CHECK(sink.written_.count("d8") == 1);
  CHECK(sink.still_held_.load() == 0);
  CHECK(sink.max_in_flight_.load() > 2);
  CHECK(budget.used() == 0);
  REQUIRE(failed.records.size() == 1);
  CHECK(failed.records[0].id == "d5");
  CHECK(failed.records[0].cursor == 6);
  CHECK(failed.records[0].action == "action of d5");
  CHECK(failed.records[0].error_type == "mapper_parsing_exception");
  CHECK(failed.records[0].status == 400);
}

TEST_CASE("a prepared batch is charged what it holds, also when that is more than its documents",
          "[reindex][reindexer]") {
  // A batch that keeps buffers it shares with other documents (the reader's lines, beside a huge
  // document of the next batch) holds more than its own lines: it is charged that while it is
  // in flight, not what its documents were.
  constexpr size_t kPinned = size_t{4} << 20;
  class PinningSink final : public IDocumentSink {
   public:
    explicit PinningSink(const core::MemoryBudget& budget) : budget_(budget) {}
    class Batch final : public IPreparedBatch {
     public:
      Batch(PinningSink& sink, std::vector<uint64_t> cursors)
          : sink_(sink), cursors_(std::move(cursors)) {}
      size_t size() const override { return cursors_.size(); }
      size_t held_bytes() const override { return kPinned; }
      uint64_t cursor(size_t i) const override { return cursors_[i]; }
      size_t source_bytes(size_t) const override { return 0; }
      bool has_version(size_t) const override { return false; }
      absl::StatusOr<std::vector<ItemFailure>> Write(std::span<const size_t>) override {
        sink_.Sent();
        return std::vector<ItemFailure>{};
      }
      absl::StatusOr<std::vector<FailedDocument>> Describe(std::span<const size_t>) const override {
        return std::vector<FailedDocument>{};
      }

     private:
      PinningSink& sink_;
      std::vector<uint64_t> cursors_;
    };
    absl::StatusOr<std::unique_ptr<IPreparedBatch>> Prepare(
        std::span<const SourceDocument* const> docs) override {
      std::vector<uint64_t> cursors;
      for (const SourceDocument* doc : docs) cursors.push_back(doc->cursor);
      return std::unique_ptr<IPreparedBatch>(new Batch(*this, std::move(cursors)));
    }
    absl::StatusOr<std::vector<ItemFailure>> Write(
        std::span<const SourceDocument* const>) override {
      return absl::InternalError("written through Prepare only");
    }
    std::string description() const override { return "pinning sink"; }
    bool copies_batches() const override { return true; }
    void Sent() {
      std::lock_guard lock(mu_);
      used_while_sent_.push_back(budget_.used());
    }
    std::vector<size_t> used_while_sent() {
      std::lock_guard lock(mu_);
      return used_while_sent_;
    }

   private:
    const core::MemoryBudget& budget_;
    std::mutex mu_;
    std::vector<size_t> used_while_sent_;
  };
  core::FakeClock clock;
  core::MemoryBudget budget(1 << 20);
  PinningSink sink(budget);
  VectorDocumentStream docs(MakeDocs(6, "target", 100));
  RecordingFailedSink failed;
  DocumentReindexer reindexer(
      sink, &failed, clock,
      {.max_docs_per_batch = 1, .max_concurrent_batches = 4, .memory_budget = &budget});
  auto summary = reindexer.Reindex(docs);
  REQUIRE(summary.ok());
  CHECK(summary->docs_written == 6);
  const std::vector<size_t> used = sink.used_while_sent();
  REQUIRE(used.size() == 6);
  for (size_t bytes : used) CHECK(bytes >= kPinned);
  CHECK(budget.peak() >= kPinned);
  CHECK(budget.used() == 0);
}

TEST_CASE("lines sent where the reader laid them out count once until their batch is prepared",
          "[reindex][reindexer]") {
  // A sink that copies batches (a gzipped body) has each document counted twice while its batch
  // waits; one that sends the reader's lines where they lie (no gzip) copies only the others,
  // and lines laid out with options other than its own (with `_type`).
  class ChargeSink final : public IDocumentSink {
   public:
    ChargeSink(const core::MemoryBudget& budget, bool copies_rendered)
        : budget_(budget), copies_rendered_(copies_rendered) {}
    absl::StatusOr<std::vector<ItemFailure>> Write(
        std::span<const SourceDocument* const> docs) override {
      for (const SourceDocument* doc : docs) used_[doc->id] = budget_.used();
      return std::vector<ItemFailure>{};
    }
    std::string description() const override { return "charge sink"; }
    bool copies_batches() const override { return true; }
    bool copies_rendered_lines() const override { return copies_rendered_; }
    std::map<std::string, size_t> used_;  // written one batch at a time

   private:
    const core::MemoryBudget& budget_;
    const bool copies_rendered_;
  };
  for (const bool copies_rendered : {false, true}) {
    INFO("copies rendered lines " << copies_rendered);
    auto list = MakeDocs(5, "target", 300);
    REQUIRE(LayOut(std::span(list).first(2), 2));
    REQUIRE(LayOut(std::span(list).subspan(2, 1), 1, {.include_type = true}));
    std::map<std::string, size_t> expected;
    VectorDocumentStream docs(list);
    for (const SourceDocument& doc : list) {
      const size_t bytes = EstimateBulkBytes(doc);
      const bool copied = copies_rendered || doc.rendered == nullptr || doc.id == "d2";
      expected[doc.id] = (copied ? 2 * bytes : bytes) + docs.bytes_held_per_document();
    }
    // A budget of one byte lets one batch at a time: what it charges is all that is charged.
    core::MemoryBudget budget(1);
    ChargeSink sink(budget, copies_rendered);
    core::FakeClock clock;
    DocumentReindexer reindexer(
        sink, nullptr, clock,
        {.max_docs_per_batch = 1, .max_concurrent_batches = 2, .memory_budget = &budget});
    auto summary = reindexer.Reindex(docs);
    REQUIRE(summary.ok());
    CHECK(summary->docs_written == 5);
    CHECK(sink.used_ == expected);
    CHECK(budget.used() == 0);
  }
}

}  // namespace rfs::reindex
