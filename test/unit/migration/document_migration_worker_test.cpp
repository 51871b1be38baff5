// DocumentMigrationWorker on real generated snapshots, with the SQLite coordinator and a fake
// clock: the loop's outcomes, checkpoint successors that resume exactly at the first unread
// document, allowlists, the shard size limit and snapshot read failures.
#include "rfs/migration/document_migration_worker.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/coordination/sqlite_work_coordinator.hpp"
#include "rfs/core/clock.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/migration/worker_metrics.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "support/generated_repo.hpp"
#include "support/temp_dir.hpp"
#include "support/worker_fixture.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using rfs::migration::WorkerOutcome;

// Keeps every written document; each batch costs `batch_time` on the fake clock.
class RecordingSink final : public rfs::reindex::IDocumentSink {
 public:
  RecordingSink(rfs::core::FakeClock& clock, std::chrono::seconds batch_time)
      : clock_(clock), batch_time_(batch_time) {}
  absl::StatusOr<std::vector<rfs::reindex::ItemFailure>> Write(
      std::span<const rfs::reindex::SourceDocument* const> docs) override {
    std::lock_guard lock(mu_);
    ++calls_;
    if (before_write) RFS_RETURN_IF_ERROR(before_write(calls_));
    if (refuse_items) {
      if (std::optional<rfs::reindex::ItemFailure> refusal = refuse_items(calls_)) {
        std::vector<rfs::reindex::ItemFailure> all(docs.size(), *refusal);
        for (size_t i = 0; i < docs.size(); ++i) all[i].position = i;
        clock_.Advance(batch_time_);
        return all;
      }
    }
    for (const auto* doc : docs) {
      ++writes_[{doc->index, doc->id}];
      sources_[{doc->index, doc->id}] = std::string(rfs::reindex::SourceBytes(*doc));
      versions_[{doc->index, doc->id}] = doc->version;
      if (doc->rendered) {
        ++laid_out_;
        actions_.emplace_back(
            std::string_view(doc->rendered->bytes)
                .substr(doc->rendered_begin, doc->rendered_source - doc->rendered_begin));
      }
    }
    clock_.Advance(batch_time_);
    return std::vector<rfs::reindex::ItemFailure>();
  }
  std::string description() const override { return "recording sink"; }
  bool writes_rendered_lines() const override { return wants_laid_out_lines; }

  /// Asks the worker for documents with their bulk lines laid out.
  bool wants_laid_out_lines = false;

  /// Called with the 1-based call number before a batch is kept; an error is returned instead.
  std::function<absl::Status(int call)> before_write;
  /// Called with the 1-based call number: a failure it returns is every document's (none kept).
  std::function<std::optional<rfs::reindex::ItemFailure>(int call)> refuse_items;

  std::map<std::pair<std::string, std::string>, int> writes() const {
    std::lock_guard lock(mu_);
    return writes_;
  }
  std::map<std::pair<std::string, std::string>, std::string> sources() const {
    std::lock_guard lock(mu_);
    return sources_;
  }
  std::map<std::pair<std::string, std::string>, std::optional<int64_t>> versions() const {
    std::lock_guard lock(mu_);
    return versions_;
  }
  /// The action lines laid out by the reader.
  std::vector<std::string> actions() const {
    std::lock_guard lock(mu_);
    return actions_;
  }
  /// Documents that came with their bulk lines laid out.
  size_t laid_out() const {
    std::lock_guard lock(mu_);
    return laid_out_;
  }

 private:
  rfs::core::FakeClock& clock_;
  const std::chrono::seconds batch_time_;
  mutable std::mutex mu_;
  int calls_ = 0;
  std::map<std::pair<std::string, std::string>, int> writes_;
  std::map<std::pair<std::string, std::string>, std::string> sources_;
  std::map<std::pair<std::string, std::string>, std::optional<int64_t>> versions_;
  std::vector<std::string> actions_;
  size_t laid_out_ = 0;
};

std::set<std::pair<std::string, std::string>> ExpectedKeys(const fs::path& expected_docs,
                                                           const std::string& only_index = "") {
  std::set<std::pair<std::string, std::string>> keys;
  std::ifstream in(expected_docs);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto doc = json::parse(line).as_object();
    std::string index(doc.at("_index").as_string());
    if (!only_index.empty() && index != only_index) continue;
    keys.emplace(std::move(index), std::string(doc.at("_id").as_string()));
  }
  return keys;
}

struct Fixture : rfs::test::WorkerFixture {
  explicit Fixture(const fs::path& repo) : WorkerFixture(repo, "rfs-worker") {}

  /// The record of shard `shard` of `index` from cursor 0, as the store holds it now.
  rfs::coordination::WorkItemState Item(const std::string& index, uint32_t shard = 0) {
    auto item = Coordinator("reader")->GetWorkItem(
        rfs::coordination::WorkItemId{index, shard, 0}.ToString());
    REQUIRE(item.ok());
    REQUIRE(item->has_value());
    return **item;
  }

  /// A worker reading 25-document batches, one at a time.
  static rfs::migration::DocumentMigrationOptions SmallBatches() {
    rfs::migration::DocumentMigrationOptions options;
    options.reindexer.max_docs_per_batch = 25;
    options.reindexer.max_concurrent_batches = 1;
    return options;
  }

  absl::StatusOr<rfs::migration::WorkerSummary> RunWorker(
      const std::string& worker, std::shared_ptr<RecordingSink> sink,
      rfs::migration::DocumentMigrationOptions options,
      std::vector<rfs::migration::WorkerEvent>* events = nullptr) {
    auto coordinator = Coordinator(worker);
    if (events != nullptr) {
      options.on_event = [events](const rfs::migration::WorkerEvent& e) { events->push_back(e); };
    }
    rfs::migration::DocumentMigrationWorker migration(
        *repository, *coordinator,
        [sink](std::string_view, std::string_view)
            -> absl::StatusOr<std::shared_ptr<rfs::reindex::IDocumentSink>> { return sink; },
        nullptr, clock, std::move(options));
    return migration.Run();
  }
};

}  // namespace

TEST_CASE("a worker migrates every shard once and then finds no work left",
          "[reindex][worker][generated]") {
  auto generated = rfs::test::Generate(
      "--indices 2 --shards 2 --docs 400 --updates 30 --deletes 25 --segments 2 --seed 71");
  if (!generated) return;
  Fixture fixture(generated->repo());
  auto sink = std::make_shared<RecordingSink>(fixture.clock, std::chrono::seconds(0));
  std::vector<rfs::migration::WorkerEvent> events;
  auto summary = fixture.RunWorker("w1", sink, {}, &events);
  REQUIRE(summary.ok());
  CHECK(summary->outcome == WorkerOutcome::kNoWorkLeft);
  CHECK(rfs::migration::ExitCode(summary->outcome) == 3);
  CHECK(summary->items_completed == 4);
  const auto expected = ExpectedKeys(generated->dir / "expected-docs.ndjson");
  const auto writes = sink->writes();
  CHECK(writes.size() == expected.size());
  CHECK(summary->docs_written == expected.size());
  for (const auto& [key, count] : writes) {
    CHECK(expected.count(key) == 1);
    CHECK(count == 1);
  }
  CHECK(events.front().kind == rfs::migration::WorkerEvent::Kind::kShardSetup);
  // A second worker on the same store has nothing left.
  auto again = fixture.RunWorker("w2", sink, {});
  REQUIRE(again.ok());
  CHECK(again->outcome == WorkerOutcome::kNoWorkLeft);
  CHECK(again->docs_written == 0);
}

TEST_CASE("decoding threads lay out bulk lines for a sink that writes them, unless transforms run",
          "[reindex][worker][generated][tsan]") {
  auto generated = rfs::test::Generate(
      "--indices 1 --shards 1 --docs 300 --updates 10 --deletes 20 --segments 2 --seed 17");
  if (!generated) return;
  std::map<std::pair<std::string, std::string>, json::value> expected;
  std::ifstream in(generated->dir / "expected-docs.ndjson");
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto doc = json::parse(line).as_object();
    expected[{std::string(doc.at("_index").as_string()), std::string(doc.at("_id").as_string())}] =
        doc.at("_source");
  }
  REQUIRE(expected.size() == 280);
  for (const bool transform : {false, true}) {
    INFO("transform " << transform);
    Fixture fixture(generated->repo());
    auto sink = std::make_shared<RecordingSink>(fixture.clock, std::chrono::seconds(0));
    sink->wants_laid_out_lines = true;
    auto options = Fixture::SmallBatches();
    options.reader_threads = 2;
    if (transform) options.doc_transformer_config = R"([{"JqTransformerProvider":{"script":"."}}])";
    auto summary = fixture.RunWorker("w1", sink, std::move(options));
    REQUIRE(summary.ok());
    CHECK(summary->docs_written == expected.size());
    CHECK(sink->laid_out() == (transform ? 0 : expected.size()));
    const auto sources = sink->sources();
    REQUIRE(sources.size() == expected.size());
    for (const auto& [key, source] : sources) {
      INFO(key.first << "/" << key.second);
      REQUIRE(expected.count(key) == 1);
      // jq re-serialises numbers (9.49E2 becomes 949): only the untransformed run is exact.
      if (!transform) CHECK(json::parse(source) == expected.at(key));
      if (transform)
        CHECK(json::parse(source).as_object().size() == expected.at(key).as_object().size());
    }
  }
}

TEST_CASE("with preserve_version each document carries its source _version, in its action line too",
          "[reindex][worker][generated]") {
  // The generator writes `_version` doc values as the engine does: 1 for a document indexed
  // once, one more for each update.
  auto generated = rfs::test::Generate(
      "--indices 1 --shards 2 --docs 300 --updates 40 --deletes 20 --segments 2 --seed 23");
  if (!generated) return;
  const auto expected = ExpectedKeys(generated->dir / "expected-docs.ndjson");
  for (const int threads : {0, 2}) {
    INFO("reader threads " << threads);
    for (const bool preserve : {false, true}) {
      INFO("preserve_version " << preserve);
      Fixture fixture(generated->repo());
      auto sink = std::make_shared<RecordingSink>(fixture.clock, std::chrono::seconds(0));
      sink->wants_laid_out_lines = true;
      auto options = Fixture::SmallBatches();
      options.reader_threads = threads;
      options.preserve_version = preserve;
      auto summary = fixture.RunWorker("w1", sink, std::move(options));
      REQUIRE(summary.ok());
      CHECK(summary->docs_written == expected.size());
      CHECK(summary->docs_already_newer == 0);
      const auto versions = sink->versions();
      REQUIRE(versions.size() == expected.size());
      size_t updated = 0;
      for (const auto& [key, version] : versions) {
        INFO(key.first << "/" << key.second);
        CHECK(version.has_value() == preserve);
        if (version) {
          CHECK(*version >= 1);
          if (*version > 1) ++updated;
        }
      }
      if (preserve) CHECK(updated > 0);
      // Lines laid out by the decoding threads carry the version too.
      for (const std::string& action : sink->actions()) {
        CHECK((action.find(R"("version_type":"external")") != std::string::npos) == preserve);
      }
      if (threads > 0) CHECK(sink->actions().size() == expected.size());
    }
  }
}

TEST_CASE("heartbeats keep a moving shard on one lease, however long it takes",
          "[reindex][worker][generated]") {
  auto generated = rfs::test::Generate("--shards 1 --docs 1000 --segments 3 --seed 72");
  if (!generated) return;
  Fixture fixture(generated->repo());
  // 40 batches of 30 s: two hours of work on a 10-minute lease.
  auto sink = std::make_shared<RecordingSink>(fixture.clock, std::chrono::seconds(30));
  rfs::migration::DocumentMigrationOptions options = Fixture::SmallBatches();
  options.lease_renewal_interval = std::chrono::seconds(30);
  auto summary = fixture.RunWorker("w1", sink, options);
  REQUIRE(summary.ok());
  CHECK(summary->outcome == WorkerOutcome::kNoWorkLeft);
  CHECK(summary->items_completed == 1);
  CHECK(summary->items_checkpointed == 0);
  CHECK(summary->lease_renewals >= 35);
  const auto expected = ExpectedKeys(generated->dir / "expected-docs.ndjson");
  CHECK(sink->writes().size() == expected.size());
  for (const auto& [key, count] : sink->writes()) CHECK(count == 1);
  // The store recorded the progress of the last heartbeat.
  const rfs::coordination::WorkItemState item = fixture.Item("index-0");
  CHECK(item.completed());
  REQUIRE(item.progress.has_value());
  CHECK(item.progress->next_cursor > 900);
  CHECK(item.next_lease_exponent == 0);
}

TEST_CASE("progress is recorded on its own short interval, the lease renewed no more often",
          "[reindex][worker][generated]") {
  auto generated = rfs::test::Generate("--shards 1 --docs 1000 --segments 3 --seed 72");
  if (!generated) return;
  // 40 batches of 25 documents, 2 s each: 80 s of work, a heartbeat every 30 s.
  const int report_seconds = GENERATE(5, 0);
  Fixture fixture(generated->repo());
  auto sink = std::make_shared<RecordingSink>(fixture.clock, std::chrono::seconds(2));
  // What the store holds as each batch goes out (the batches before it are acknowledged).
  std::set<rfs::coordination::TimePoint> reports, expiries;
  uint64_t largest_lag = 0;
  sink->before_write = [&](int call) {
    if (call == 1) return absl::OkStatus();
    const rfs::coordination::WorkItemState item = fixture.Item("index-0");
    if (item.progress) reports.insert(item.progress_at);
    expiries.insert(item.lease_expires_at);
    const uint64_t acknowledged = static_cast<uint64_t>(call - 1) * 25;
    const uint64_t recorded = item.progress ? item.progress->docs : 0;
    largest_lag = std::max(largest_lag, acknowledged - recorded);
    return absl::OkStatus();
  };
  rfs::migration::DocumentMigrationOptions options = Fixture::SmallBatches();
  options.lease_renewal_interval = std::chrono::seconds(30);
  options.progress_report_interval = std::chrono::seconds(report_seconds);
  auto summary = fixture.RunWorker("w1", sink, options);
  REQUIRE(summary.ok());
  CHECK(summary->outcome == WorkerOutcome::kNoWorkLeft);
  CHECK(sink->writes().size() == 1000);
  // Heartbeats as before: the first acknowledgment, then one per 30 s.
  CHECK(summary->lease_renewals <= 4);
  CHECK(expiries.size() <= 4);
  if (report_seconds == 5) {
    // A report every 5-6 s (acknowledgments come every 2 s) of the 80: 13, and the store is at
    // most 6 s (3 batches) behind.
    CHECK(reports.size() >= 12);
    CHECK(largest_lag <= 4 * 25);
  } else {
    // Off: progress moves only with the heartbeats, up to 30 s (15 batches) behind.
    CHECK(reports.size() <= 4);
    CHECK(largest_lag >= 14 * 25);
  }
}

TEST_CASE("a worker counts the 429s and retries it meets, metrics or not",
          "[reindex][worker][generated]") {
  auto generated = rfs::test::Generate("--shards 1 --docs 100 --segments 1 --seed 73");
  if (!generated) return;
  Fixture fixture(generated->repo());
  auto sink = std::make_shared<RecordingSink>(fixture.clock, std::chrono::seconds(1));
  // The first two requests are answered 429 whole, then the target takes everything.
  sink->before_write = [](int call) {
    return call <= 2 ? absl::ResourceExhaustedError("HTTP 429") : absl::OkStatus();
  };
  rfs::migration::BackPressureTally tally;
  rfs::migration::DocumentMigrationOptions options = Fixture::SmallBatches();
  options.back_pressure = &tally;
  auto summary = fixture.RunWorker("w1", sink, options);
  REQUIRE(summary.ok());
  CHECK(sink->writes().size() == 100);
  CHECK(tally.rejected_429.load() == 2);
  CHECK(tally.retries.load() == 2);
}

TEST_CASE("a worker that sends bulks again says so: at once, then at most once per interval",
          "[reindex][worker][generated]") {
  auto generated = rfs::test::Generate("--shards 1 --docs 100 --segments 1 --seed 74");
  REQUIRE(generated);
  // Three requests fail whole (503), one goes through, then two are refused item by item (429).
  auto failing_sink = [](rfs::core::FakeClock& clock) {
    auto sink = std::make_shared<RecordingSink>(clock, std::chrono::seconds(1));
    sink->before_write = [](int call) {
      return call <= 3 ? absl::UnavailableError("HTTP 503: no master") : absl::OkStatus();
    };
    sink->refuse_items = [](int call) -> std::optional<rfs::reindex::ItemFailure> {
      if (call != 5 && call != 6) return std::nullopt;
      return rfs::reindex::ItemFailure{0, 429, "es_rejected_execution_exception",
                                       "rejected execution of bulk"};
    };
    return sink;
  };
  auto retrying = [](const std::vector<rfs::migration::WorkerEvent>& events) {
    std::vector<std::string> messages;
    for (const auto& e : events) {
      if (e.kind == rfs::migration::WorkerEvent::Kind::kRetrying) messages.push_back(e.message);
    }
    return messages;
  };

  SECTION("every retry, with no interval: the count starts again after a request goes through") {
    Fixture fixture(generated->repo());
    auto sink = failing_sink(fixture.clock);
    rfs::migration::DocumentMigrationOptions options = Fixture::SmallBatches();
    options.retry_report_interval = std::chrono::milliseconds(0);
    std::vector<rfs::migration::WorkerEvent> events;
    auto summary = fixture.RunWorker("w1", sink, options, &events);
    REQUIRE(summary.ok());
    CHECK(sink->writes().size() == 100);
    const std::vector<std::string> messages = retrying(events);
    std::string all;
    for (const std::string& message : messages) all += message + "\n";
    INFO(all);
    REQUIRE(messages.size() == 5);
    const std::vector<std::string> expected = {
        "(unavailable): HTTP 503: no master; 1 retry in",
        "(unavailable): HTTP 503: no master; 2 retries in",
        "(unavailable): HTTP 503: no master; 3 retries in",
        "(too_many_requests): HTTP 429 es_rejected_execution_exception: rejected execution of "
        "bulk; 1 retry in",
        "(too_many_requests): HTTP 429 es_rejected_execution_exception: rejected execution of "
        "bulk; 2 retries in"};
    for (size_t i = 0; i < expected.size(); ++i) {
      CHECK(messages[i].starts_with("recording sink: bulk requests sent again "));
      CHECK(messages[i].find(expected[i]) != std::string::npos);
      CHECK(messages[i].ends_with("up to 10 attempts per request"));
    }
  }
  SECTION("the default interval: once, at the first retry") {
    Fixture fixture(generated->repo());
    auto sink = failing_sink(fixture.clock);
    std::vector<rfs::migration::WorkerEvent> events;
    auto summary = fixture.RunWorker("w1", sink, Fixture::SmallBatches(), &events);
    REQUIRE(summary.ok());
    const std::vector<std::string> messages = retrying(events);
    REQUIRE(messages.size() == 1);
    CHECK(messages[0].find("HTTP 503: no master; 1 retry in 0.0 s so far") != std::string::npos);
  }
}

TEST_CASE("a lease running short hands a successor on from the first unread document",
          "[reindex][worker][generated]") {
  auto generated = rfs::test::Generate("--shards 1 --docs 1000 --segments 3 --seed 72");
  if (!generated) return;
  Fixture fixture(generated->repo());
  // Without heartbeats, every 25-document batch takes 30 s of the 10-minute lease: the early
  // checkpoint (7.5 minutes in) comes after about 15 batches, and the batches still in flight
  // then end before the lease.
  auto sink = std::make_shared<RecordingSink>(fixture.clock, std::chrono::seconds(30));
  rfs::migration::DocumentMigrationOptions options = Fixture::SmallBatches();
  options.lease_renewal_interval = std::chrono::milliseconds(0);
  int handoffs = 0;
  for (int run = 0; run < 40; ++run) {
    std::vector<rfs::migration::WorkerEvent> events;
    auto summary = fixture.RunWorker("w" + std::to_string(run), sink, options, &events);
    REQUIRE(summary.ok());
    if (summary->outcome == WorkerOutcome::kNoWorkLeft) break;
    REQUIRE(summary->outcome == WorkerOutcome::kLeaseHandoff);
    CHECK(rfs::migration::ExitCode(summary->outcome) == 2);
    CHECK(summary->items_checkpointed == 1);
    CHECK(events.back().kind == rfs::migration::WorkerEvent::Kind::kCheckpointed);
    ++handoffs;
  }
  CHECK(handoffs >= 2);
  // Successors start exactly at the first unread document: every document written once.
  const auto expected = ExpectedKeys(generated->dir / "expected-docs.ndjson");
  const auto writes = sink->writes();
  CHECK(writes.size() == expected.size());
  for (const auto& [key, count] : writes) CHECK(count == 1);
}

TEST_CASE("single-work-item mode, allowlists and the shard size limit",
          "[reindex][worker][generated]") {
  auto generated = rfs::test::Generate("--indices 2 --shards 2 --docs 200 --seed 73");
  if (!generated) return;
  Fixture fixture(generated->repo());
  auto sink = std::make_shared<RecordingSink>(fixture.clock, std::chrono::seconds(0));

  SECTION("one item, exit code 0") {
    rfs::migration::DocumentMigrationOptions options;
    options.single_work_item = true;
    auto summary = fixture.RunWorker("w1", sink, options);
    REQUIRE(summary.ok());
    CHECK(summary->outcome == WorkerOutcome::kItemDone);
    CHECK(rfs::migration::ExitCode(summary->outcome) == 0);
    CHECK(summary->items_completed == 1);
  }
  SECTION("an allowlist selects the indices") {
    rfs::migration::DocumentMigrationOptions options;
    options.index_allowlist = *rfs::transform::Allowlist::Parse({"regex:index-1"});
    auto summary = fixture.RunWorker("w1", sink, options);
    REQUIRE(summary.ok());
    const auto expected = ExpectedKeys(generated->dir / "expected-docs.ndjson", "index-1");
    CHECK(sink->writes().size() == expected.size());
    for (const auto& [key, count] : sink->writes()) CHECK(key.first == "index-1");
  }
  SECTION("a shard over the size limit is reported and released, not skipped") {
    rfs::migration::DocumentMigrationOptions options;
    options.max_shard_size_bytes = 1000;
    std::vector<rfs::migration::WorkerEvent> events;
    auto summary = fixture.RunWorker("w1", sink, options, &events);
    REQUIRE_FALSE(summary.ok());
    // Too large for this worker: OutOfRange, never the lease-lost FailedPrecondition.
    CHECK(absl::IsOutOfRange(summary.status()));
    CHECK_FALSE(rfs::coordination::IsLeaseLost(summary.status()));
    CHECK(summary.status().message().find("--max-shard-size-bytes") != std::string::npos);
    REQUIRE(events.size() >= 2);
    CHECK(events[events.size() - 2].kind == rfs::migration::WorkerEvent::Kind::kShardTooLarge);
    CHECK(events.back().kind == rfs::migration::WorkerEvent::Kind::kReleased);
    CHECK(sink->writes().empty());
    // Released: a worker with a higher limit takes it at once and finishes everything.
    auto summary2 = fixture.RunWorker("w2", sink, {});
    REQUIRE(summary2.ok());
    CHECK(summary2->outcome == WorkerOutcome::kNoWorkLeft);
    CHECK(summary2->items_completed == 4);
  }
}

TEST_CASE("a missing shard blob is a snapshot read failure (exit code 5)",
          "[reindex][worker][generated]") {
  auto generated = rfs::test::Generate("--docs 50 --seed 74");
  if (!generated) return;
  rfs::test::TempDir copy("rfs-broken-repo");
  fs::copy(generated->repo(), copy.path() / "repo", fs::copy_options::recursive);
  // Remove the largest data blob of the shard (a Lucene file the shard needs).
  fs::path largest;
  uintmax_t largest_size = 0;
  for (const auto& entry : fs::recursive_directory_iterator(copy.path() / "repo" / "indices")) {
    if (entry.is_regular_file() && entry.path().filename().string().starts_with("__") &&
        entry.file_size() > largest_size) {
      largest = entry.path();
      largest_size = entry.file_size();
    }
  }
  REQUIRE(!largest.empty());
  fs::remove(largest);
  Fixture fixture(copy.path() / "repo");
  auto sink = std::make_shared<RecordingSink>(fixture.clock, std::chrono::seconds(0));
  auto summary = fixture.RunWorker("w1", sink, {});
  REQUIRE_FALSE(summary.ok());
  CHECK(rfs::migration::IsSnapshotReadFailure(summary.status()));
  CHECK(summary.status().message().find(largest.filename().string()) != std::string::npos);
}

TEST_CASE("a run that ends in an error releases its item with the cursor recorded",
          "[reindex][worker][generated]") {
  auto generated = rfs::test::Generate("--shards 1 --docs 1000 --segments 2 --seed 74");
  if (!generated) return;
  Fixture fixture(generated->repo());
  auto sink = std::make_shared<RecordingSink>(fixture.clock, std::chrono::seconds(10));
  // The 21st batch is refused for good: the first worker stops with that error.
  sink->before_write = [](int call) {
    return call == 21 ? absl::InvalidArgumentError("HTTP 400 refused") : absl::OkStatus();
  };
  rfs::migration::DocumentMigrationOptions options = Fixture::SmallBatches();
  options.lease_renewal_interval = std::chrono::seconds(30);
  std::vector<rfs::migration::WorkerEvent> events;
  auto failed = fixture.RunWorker("w1", sink, options, &events);
  REQUIRE_FALSE(failed.ok());
  CHECK(absl::IsInvalidArgument(failed.status()));
  CHECK(events.back().kind == rfs::migration::WorkerEvent::Kind::kReleased);

  const rfs::coordination::WorkItemState item = fixture.Item("index-0");
  CHECK(item.lease_holder.empty());  // Available at once, not after the lease.
  REQUIRE(item.progress.has_value());
  CHECK(item.progress->next_cursor == 500);  // 20 batches of 25 (cursors 0-499) acknowledged.
  CHECK(item.next_lease_exponent == 0);

  // The next worker resumes there: nothing before it is sent again.
  sink->before_write = nullptr;
  auto summary = fixture.RunWorker("w2", sink, options);
  REQUIRE(summary.ok());
  CHECK(summary->outcome == WorkerOutcome::kNoWorkLeft);
  CHECK(summary->docs_written == 500);
  const auto expected = ExpectedKeys(generated->dir / "expected-docs.ndjson");
  CHECK(sink->writes().size() == expected.size());
  for (const auto& [key, count] : sink->writes()) CHECK(count == 1);
}

TEST_CASE("a stop request finishes in-flight batches, releases the item and exits 2",
          "[reindex][worker][generated]") {
  auto generated = rfs::test::Generate("--shards 1 --docs 1000 --segments 2 --seed 75");
  if (!generated) return;
  Fixture fixture(generated->repo());
  auto sink = std::make_shared<RecordingSink>(fixture.clock, std::chrono::seconds(1));
  std::atomic<bool> stop{false};
  sink->before_write = [&](int call) {
    if (call == 8) stop = true;  // SIGTERM arrives while batch 8 is in flight.
    return absl::OkStatus();
  };
  rfs::migration::DocumentMigrationOptions options;
  options.reindexer.max_docs_per_batch = 25;
  options.reindexer.max_concurrent_batches = 2;
  options.stop_requested = &stop;
  auto stopped = fixture.RunWorker("w1", sink, options);
  REQUIRE(stopped.ok());
  CHECK(stopped->outcome == WorkerOutcome::kStopped);
  CHECK(rfs::migration::ExitCode(stopped->outcome) == 2);
  const uint64_t first_run = stopped->docs_written;
  CHECK(first_run >= 8 * 25);
  CHECK(first_run < 1000);

  const rfs::coordination::WorkItemState item = fixture.Item("index-0");
  CHECK(item.lease_holder.empty());
  REQUIRE(item.progress.has_value());
  CHECK(item.progress->docs == first_run);

  // Every batch sent was finished and recorded: the next worker sends only the rest.
  sink->before_write = nullptr;
  options.stop_requested = nullptr;
  auto rest = fixture.RunWorker("w2", sink, options);
  REQUIRE(rest.ok());
  CHECK(rest->outcome == WorkerOutcome::kNoWorkLeft);
  CHECK(first_run + rest->docs_written == 1000);
  for (const auto& [key, count] : sink->writes()) CHECK(count == 1);
}

TEST_CASE("an item acquired more than max_item_attempts times ends the run naming it",
          "[reindex][worker][generated]") {
  using namespace std::chrono_literals;
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 100 --seed 72");
  if (!generated) return;
  Fixture fixture(generated->repo());
  // Shard setup, then a holder that dies: its lease on the only shard runs out twice.
  auto setup = fixture.Coordinator("setup");
  REQUIRE(setup->Setup().ok());
  REQUIRE(setup->CreateUnassignedWorkItem(rfs::coordination::kShardSetupWorkItemId, 0).ok());
  auto setup_lease = setup->AcquireWorkItem(rfs::coordination::kShardSetupWorkItemId, 10min);
  REQUIRE(setup_lease.ok());
  REQUIRE(setup->CompleteWorkItem(std::get<rfs::coordination::Acquired>(*setup_lease).lease).ok());
  const std::string id = rfs::coordination::WorkItemId{"index-0", 0, 0}.ToString();
  REQUIRE(*setup->CreateUnassignedWorkItem(id, 0));
  for (int death = 0; death < 2; ++death) {
    auto held = fixture.Coordinator("doomed")->AcquireWorkItem(id, 1min);
    REQUIRE(held.ok());
    REQUIRE(std::holds_alternative<rfs::coordination::Acquired>(*held));
    fixture.clock.Advance(1h);
  }
  auto sink = std::make_shared<RecordingSink>(fixture.clock, std::chrono::seconds(0));
  rfs::migration::DocumentMigrationOptions options;
  options.max_item_attempts = 2;
  auto run = fixture.RunWorker("w", sink, options);
  REQUIRE_FALSE(run.ok());
  CHECK(rfs::migration::IsItemOverAttempts(run.status()));
  // Its own code: not a lost lease, and no retry of the run helps.
  CHECK(absl::IsResourceExhausted(run.status()));
  CHECK_FALSE(rfs::coordination::IsLeaseLost(run.status()));
  CHECK_FALSE(rfs::core::IsRetryable(run.status()));
  CHECK(run.status().message().find(id) != std::string_view::npos);
  CHECK(sink->writes().empty());
  // It was given back at once, not left leased.
  CHECK(fixture.Item("index-0").lease_holder.empty());
  // Without the limit the same item migrates.
  auto unlimited = fixture.RunWorker("w2", sink, {});
  REQUIRE(unlimited.ok());
  CHECK(unlimited->items_completed == 1);
}

TEST_CASE(
    "a blocked index is waited out under a renewed lease and a block never lifted is given back",
    "[reindex][worker][generated]") {
  using namespace std::chrono_literals;
  auto generated = rfs::test::Generate("--shards 1 --docs 100 --segments 1 --seed 73");
  if (!generated) return;
  Fixture fixture(generated->repo());
  auto sink = std::make_shared<RecordingSink>(fixture.clock, std::chrono::seconds(1));
  // index.blocks.write as OpenSearch answers each document of the index while it is set.
  const rfs::reindex::ItemFailure blocked{
      0, 403, "cluster_block_exception",
      "index [index-0] blocked by: [FORBIDDEN/8/index write (api)];"};
  rfs::migration::DocumentMigrationOptions options = Fixture::SmallBatches();
  options.initial_lease = 30s;
  options.lease_renewal_interval = 5s;
  options.reindexer.retry.max_attempts = 20;
  options.reindexer.retry.max_backoff = 4s;

  SECTION("lifted within the retry budget: the item completes on its lease, nothing failed") {
    // Fifteen refused requests, a second each, and over 23 s of backoff: past the 30 s lease.
    sink->refuse_items = [&](int call) -> std::optional<rfs::reindex::ItemFailure> {
      if (call <= 15) return blocked;
      return std::nullopt;
    };
    const auto started = fixture.clock.Now();
    auto summary = fixture.RunWorker("w1", sink, options);
    REQUIRE(summary.ok());
    CHECK(summary->outcome == WorkerOutcome::kNoWorkLeft);
    CHECK(summary->items_completed == 1);
    CHECK(summary->items_lost == 0);
    CHECK(summary->items_checkpointed == 0);
    CHECK(summary->docs_failed == 0);
    CHECK(summary->docs_written == 100);
    CHECK(summary->lease_renewals >= 4);
    CHECK(fixture.clock.Now() - started > 30s);  // longer than the lease: renewed while blocked
    CHECK(sink->writes().size() == 100);
    for (const auto& [key, count] : sink->writes()) CHECK(count == 1);
    CHECK(fixture.Item("index-0").completed());
  }
  SECTION("never lifted: the run fails once the budget is used up and gives the item back") {
    options.reindexer.retry.max_attempts = 4;
    sink->refuse_items = [&](int) -> std::optional<rfs::reindex::ItemFailure> { return blocked; };
    std::vector<rfs::migration::WorkerEvent> events;
    auto failed = fixture.RunWorker("w1", sink, options, &events);
    REQUIRE_FALSE(failed.ok());
    CHECK(absl::IsUnavailable(failed.status()));
    CHECK(failed.status().message().find("cluster_block_exception") != std::string_view::npos);
    REQUIRE_FALSE(events.empty());
    CHECK(events.back().kind == rfs::migration::WorkerEvent::Kind::kReleased);
    const rfs::coordination::WorkItemState item = fixture.Item("index-0");
    CHECK(item.lease_holder.empty());  // Available at once, not after the lease.
    CHECK_FALSE(item.completed());
    CHECK(sink->writes().empty());
    // Once the block is lifted the next worker takes the item at once and finishes it.
    sink->refuse_items = nullptr;
    const auto before = fixture.clock.Now();
    auto summary = fixture.RunWorker("w2", sink, options);
    REQUIRE(summary.ok());
    CHECK(summary->outcome == WorkerOutcome::kNoWorkLeft);
    CHECK(summary->docs_written == 100);
    CHECK(summary->docs_failed == 0);
    CHECK(fixture.clock.Now() - before < 30s);
  }
}
