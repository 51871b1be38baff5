// Target tuning for the load (migration/target_tuning_internal.hpp): against the OpenSearch double
// and a SQLite record store, an index recorded as created empty gets 0 replicas and refresh -1
// before its first bulk, its originals kept in the store, and they come back exactly (a setting
// that was not set goes back to the default) with a refresh; an index not created empty is never
// touched; a restore is idempotent and RestoreAll finds what a killed worker left tuned. And the
// worker's part, with a recording tuning: an index is tuned before its first document and
// restored exactly when its last item is complete, by whichever run completes it, or by the next
// run when the one that completed it died before the restore. Real nodes: test/real "[tuning]".
#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/coordination/sqlite_work_coordinator.hpp"
#include "rfs/coordination/target_tuning_records.hpp"
#include "rfs/core/clock.hpp"
#include "rfs/migration/document_migration_worker.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/opensearch/client.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "migration/target_tuning_internal.hpp"
#include "support/double_connection.hpp"
#include "support/generated_repo.hpp"
#include "support/temp_dir.hpp"
#include "support/worker_fixture.hpp"

namespace {

namespace json = boost::json;
using rfs::migration::internal::TargetTuning;
using rfs::migration::internal::TunedOriginals;

std::unique_ptr<rfs::coordination::IWorkCoordinator> SqliteStore(
    const std::string& path, const std::string& table, const std::string& worker_id = "w1") {
  rfs::coordination::SqliteWorkCoordinatorOptions options;
  options.worker_id = worker_id;
  options.path = path;
  if (!table.empty()) options.table = table;
  auto opened = rfs::coordination::SqliteWorkCoordinator::Open(std::move(options));
  REQUIRE(opened.ok());
  REQUIRE((*opened)->Setup().ok());
  return std::move(opened).value();
}

struct Tuning {
  rfs::test::DoubleConnection target;
  rfs::test::TempDir dir{"rfs-target-tuning"};
  std::unique_ptr<rfs::coordination::IWorkCoordinator> records =
      SqliteStore(dir.File("records.sqlite"), "rfs_worker_records");
  rfs::core::SystemClock clock;
  std::vector<std::string> events;
  std::unique_ptr<TargetTuning> tuning = Open();

  // `adjust` changes the options last; `store` replaces `records` (another worker's).
  std::unique_ptr<TargetTuning> Open(
      bool empty_at_shard_setup = false,
      rfs::coordination::Duration lock_lease = rfs::migration::internal::kDefaultTuningLockLease,
      const std::function<void(rfs::migration::internal::TargetTuningOptions&)>& adjust = {},
      rfs::coordination::IWorkCoordinator* store = nullptr) {
    auto transport = rfs::net::BeastHttpTransport::Open({.endpoint = target.server->endpoint()});
    REQUIRE(transport.ok());
    rfs::migration::internal::TargetTuningOptions options;
    options.empty_at_shard_setup = empty_at_shard_setup;
    options.lock_lease = lock_lease;
    options.on_event = [this](const std::string& kind, const std::string& index,
                              const std::string& what) {
      events.push_back(kind + " " + index + ": " + what);
    };
    if (adjust) adjust(options);
    return std::make_unique<TargetTuning>(
        std::shared_ptr<rfs::net::IHttpTransport>(std::move(transport).value()),
        store != nullptr ? *store : *records, clock, options);
  }

  void Create(const std::string& index, const std::string& settings) {
    rfs::opensearch::OpenSearchClient client(*target.transport);
    auto created =
        client.CreateIndex(index, json::parse(R"({"settings":)" + settings + "}").as_object());
    REQUIRE(created.ok());
  }

  // number_of_replicas, refresh_interval and auto_expand_replicas as set ("unset" when not).
  std::vector<std::string> Settings(const std::string& index) {
    rfs::opensearch::OpenSearchClient client(*target.transport);
    auto answer = client.GetIndexSettings(index);
    REQUIRE(answer.ok());
    const json::object& settings = answer->at(index).at("settings").as_object();
    std::vector<std::string> out;
    for (const char* key :
         {"index.number_of_replicas", "index.refresh_interval", "index.auto_expand_replicas"}) {
      const json::value* v = settings.if_contains(key);
      out.push_back(v != nullptr && v->is_string() ? std::string(v->as_string()) : "unset");
    }
    return out;
  }

  bool Recorded(std::string_view prefix, const std::string& index) {
    auto state = records->GetWorkItem(rfs::coordination::TuningRecordId(prefix, index));
    REQUIRE(state.ok());
    return *state && (*state)->completed();
  }
};

}  // namespace

TEST_CASE("the original settings are kept as compact JSON and read back", "[migration][tuning]") {
  TunedOriginals originals;
  originals.number_of_replicas = "2";
  originals.refresh_interval = std::nullopt;
  const std::string text = rfs::migration::internal::TunedOriginalsJson(originals);
  CHECK(text == R"({"number_of_replicas":"2","refresh_interval":null})");
  auto back = rfs::migration::internal::ParseTunedOriginals(text);
  REQUIRE(back);
  CHECK(back->replicas_changed);
  CHECK(back->number_of_replicas == "2");
  CHECK_FALSE(back->refresh_interval);
  originals.replicas_changed = false;
  originals.refresh_interval = "5s";
  back = rfs::migration::internal::ParseTunedOriginals(
      rfs::migration::internal::TunedOriginalsJson(originals));
  REQUIRE(back);
  CHECK_FALSE(back->replicas_changed);
  CHECK(back->refresh_interval == "5s");
  CHECK_FALSE(rfs::migration::internal::ParseTunedOriginals("{}"));
  CHECK_FALSE(rfs::migration::internal::ParseTunedOriginals("not json"));
  CHECK_FALSE(rfs::migration::internal::ParseTunedOriginals(R"(["refresh_interval"])"));
}

TEST_CASE("an index created empty is tuned for its load and its settings come back exactly",
          "[migration][tuning]") {
  Tuning t;
  t.Create("created-defaults", R"({"number_of_replicas":1})");
  t.Create("created-5s", R"({"number_of_replicas":2,"refresh_interval":"5s"})");
  t.Create("existing", R"({"number_of_replicas":1,"refresh_interval":"7s"})");
  t.Create("auto-expand", R"({"auto_expand_replicas":"0-1","refresh_interval":"2s"})");
  for (const char* index : {"created-defaults", "created-5s", "auto-expand"}) {
    REQUIRE(t.tuning->MarkCreatedEmpty(index).ok());
  }
  for (const char* index : {"created-defaults", "created-5s", "existing", "auto-expand"}) {
    REQUIRE(t.tuning->BeforeBulk(index).ok());
    REQUIRE(t.tuning->BeforeBulk(index).ok());  // once is enough
  }
  CHECK(t.Settings("created-defaults") == std::vector<std::string>{"0", "-1", "unset"});
  CHECK(t.Settings("created-5s") == std::vector<std::string>{"0", "-1", "unset"});
  CHECK(t.Settings("existing") == std::vector<std::string>{"1", "7s", "unset"});
  // The node decides the replicas of an auto-expanding index: only the refresh is changed.
  CHECK(t.Settings("auto-expand") == std::vector<std::string>{"1", "-1", "0-1"});
  CHECK(t.Recorded(rfs::coordination::kTunedPrefix, "created-5s"));
  CHECK_FALSE(t.Recorded(rfs::coordination::kTunedPrefix, "existing"));
  CHECK(std::count_if(t.events.begin(), t.events.end(),
                      [](const std::string& e) { return e.starts_with("tuned "); }) == 3);
  CHECK(std::find(t.events.begin(), t.events.end(),
                  "tuned created-5s: number_of_replicas 0 (was 2), refresh_interval -1 (was 5s) "
                  "until its last item is done") != t.events.end());
  CHECK(*t.tuning->NeedsRestore("created-5s"));
  CHECK_FALSE(*t.tuning->NeedsRestore("existing"));

  // Another worker of the session (another object over the same store) sees what is kept.
  auto other = t.Open();
  CHECK(*other->NeedsRestore("created-defaults"));
  REQUIRE(other->Restore("created-defaults").ok());
  CHECK(t.Settings("created-defaults") == std::vector<std::string>{"1", "unset", "unset"});
  CHECK(t.Recorded(rfs::coordination::kRestoredPrefix, "created-defaults"));
  CHECK_FALSE(*t.tuning->NeedsRestore("created-defaults"));
  REQUIRE(t.tuning->Restore("created-defaults").ok());  // nothing left to do
  // Never tuned again once restored, even by a worker that never looked at it.
  auto late = t.Open();
  REQUIRE(late->BeforeBulk("created-defaults").ok());
  CHECK(t.Settings("created-defaults") == std::vector<std::string>{"1", "unset", "unset"});

  // What a killed worker left tuned is found by its settings and restored.
  auto restored = late->RestoreAll({});
  REQUIRE(restored.ok());
  CHECK(*restored == std::vector<std::string>{"auto-expand", "created-5s"});
  CHECK(t.Settings("created-5s") == std::vector<std::string>{"2", "5s", "unset"});
  CHECK(t.Settings("auto-expand") == std::vector<std::string>{"1", "2s", "0-1"});
  CHECK(t.Settings("existing") == std::vector<std::string>{"1", "7s", "unset"});
  restored = late->RestoreAll({"created-5s", "existing"});
  REQUIRE(restored.ok());
  CHECK(restored->empty());
}

TEST_CASE(
    "an index's tuning lock lasts its lease after holders died in it and is renewed while slow",
    "[migration][tuning]") {
  // Each grant of a record doubles the next one's lease unless given back: holders killed
  // while they held the lock used to double its lease for good, and every later wait with it.
  Tuning t;
  const std::string lock =
      rfs::coordination::TuningRecordId(rfs::coordination::kTuningLockPrefix, "slow");
  for (int death = 0; death < 3; ++death) {
    auto dead = SqliteStore(t.dir.File("records.sqlite"), "rfs_worker_records",
                            "dead" + std::to_string(death));
    // Taken again once the last grant has run out (on the store's clock, a little after).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    bool granted = false;
    while (!granted && std::chrono::steady_clock::now() < give_up) {
      auto grant = dead->AcquireWorkItem(lock, std::chrono::milliseconds(20));
      REQUIRE(grant.ok());
      granted = std::holds_alternative<rfs::coordination::Acquired>(*grant);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(granted);
  }
  // The third grant runs out too.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto before = t.records->GetWorkItem(lock);
  REQUIRE(before.ok());
  REQUIRE(before->has_value());
  REQUIRE((*before)->next_lease_exponent == 3);  // the next grant would be 8 times as long

  constexpr auto kLockLease = std::chrono::milliseconds(400);
  auto tuning = t.Open(/*empty_at_shard_setup=*/false, kLockLease);
  t.Create("slow", R"({"number_of_replicas":1})");
  REQUIRE(tuning->MarkCreatedEmpty("slow").ok());
  // Every settings request of the index takes 600 ms: the tuning outlasts three lock leases.
  rfs::testing::FaultOptions slow;
  slow.path_contains = "/slow/";
  slow.slow = 1.0;
  slow.slow_delay = std::chrono::milliseconds(600);
  t.target.server->SetFaults(slow);
  const auto started = std::chrono::steady_clock::now();
  absl::Status tuned;
  std::jthread tuner([&] { tuned = tuning->BeforeBulk("slow"); });  // joined on any way out
  auto longest_left = std::chrono::milliseconds::zero();
  auto held_for = std::chrono::milliseconds::zero();
  bool thief_refused_late = false;
  auto thief = SqliteStore(t.dir.File("records.sqlite"), "rfs_worker_records", "thief");
  const auto give_up = started + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto state = t.records->GetWorkItem(lock);
    REQUIRE(state.ok());
    if (!*state || (*state)->lease_holder != "w1") {
      if (held_for > std::chrono::milliseconds::zero()) break;  // given back
      continue;
    }
    const auto now = std::chrono::system_clock::now();
    longest_left = std::max(longest_left, std::chrono::duration_cast<std::chrono::milliseconds>(
                                              (*state)->lease_expires_at - now));
    held_for = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    if (held_for > kLockLease + std::chrono::milliseconds(100) && !thief_refused_late) {
      // Past the first grant's end the lock is still this worker's: renewed, not taken over.
      auto taken = thief->AcquireWorkItem(lock, kLockLease);
      REQUIRE(taken.ok());
      thief_refused_late = std::holds_alternative<rfs::coordination::AllLeasedElsewhere>(*taken);
      if (!thief_refused_late) break;
    }
  }
  tuner.join();
  INFO(tuned);
  REQUIRE(tuned.ok());
  CHECK(t.Settings("slow") == std::vector<std::string>{"0", "-1", "unset"});
  INFO("lock held for " << held_for.count() << " ms, at most " << longest_left.count()
                        << " ms left on it");
  CHECK(longest_left <= kLockLease + std::chrono::milliseconds(50));
  CHECK(held_for > kLockLease + std::chrono::milliseconds(100));
  CHECK(thief_refused_late);
}

TEST_CASE("a tuning that lost its lock to a restore puts the originals back after it",
          "[migration][tuning]") {
  // A tuning whose lock ran out (its renewals refused) while another worker took the lock over
  // and restored the index: the tuning's settings land after that restore, and the tuning,
  // finding its lock lost, puts the originals back once more.
  Tuning t;
  t.Create("crossed", R"({"number_of_replicas":1,"refresh_interval":"5s"})");
  const std::vector<std::string> originals{"1", "5s", "unset"};
  // Renewals through a store where another worker asks: each one refused.
  auto intruder = SqliteStore(t.dir.File("records.sqlite"), "rfs_worker_records", "intruder");
  auto other_records = SqliteStore(t.dir.File("records.sqlite"), "rfs_worker_records", "w2");
  constexpr auto kLockLease = std::chrono::milliseconds(200);
  auto restorer = t.Open(false, kLockLease, {}, other_records.get());
  bool restored_in_between = false;
  auto tuner = t.Open(false, kLockLease, [&](rfs::migration::internal::TargetTuningOptions& o) {
    o.lock_renewals = intruder.get();
    o.before_tuning = [&](const std::string& index) {
      // The other worker gets the lock once this one's has run out, and restores.
      REQUIRE(restorer->Restore(index).ok());
      restored_in_between = t.Settings(index) == originals;
    };
  });
  REQUIRE(tuner->MarkCreatedEmpty("crossed").ok());
  const absl::Status lost = tuner->BeforeBulk("crossed");
  INFO(lost);
  CHECK(absl::IsUnavailable(lost));
  CHECK(restored_in_between);
  CHECK(t.Recorded(rfs::coordination::kRestoredPrefix, "crossed"));
  CHECK(t.Settings("crossed") == originals);
  // Tried again, the index counts as settled: never tuned again.
  REQUIRE(tuner->BeforeBulk("crossed").ok());
  CHECK(t.Settings("crossed") == originals);
}

TEST_CASE("the restore refreshes: documents sent while refresh was off are counted",
          "[migration][tuning]") {
  Tuning t;
  t.Create("loaded", R"({"number_of_replicas":1})");
  REQUIRE(t.tuning->MarkCreatedEmpty("loaded").ok());
  REQUIRE(t.tuning->BeforeBulk("loaded").ok());
  rfs::opensearch::OpenSearchClient client(*t.target.transport);
  std::string body;
  for (int n = 0; n < 10; ++n) {
    body += R"({"index":{"_index":"loaded","_id":"d)" + std::to_string(n) +
            "\"}}\n{\"n\":" + std::to_string(n) + "}\n";
  }
  REQUIRE(client.Bulk(body, 10).ok());
  CHECK(*client.Count("loaded") == 0);  // refresh -1: not searchable yet
  REQUIRE(t.tuning->Restore("loaded").ok());
  CHECK(*client.Count("loaded") == 10);
}

TEST_CASE(
    "DocumentsFromSnapshotMigration's tuning counts an index with no document at the "
    "shard setup as created empty",
    "[migration][tuning]") {
  Tuning t;
  auto tuning = t.Open(/*empty_at_shard_setup=*/true);
  t.Create("empty", R"({"number_of_replicas":1})");
  t.Create("holding", R"({"number_of_replicas":1})");
  rfs::opensearch::OpenSearchClient client(*t.target.transport);
  REQUIRE(client.Bulk("{\"index\":{\"_index\":\"holding\",\"_id\":\"a\"}}\n{\"n\":1}\n", 1).ok());
  REQUIRE(client.Refresh("holding").ok());
  REQUIRE(tuning->AtShardSetup({"empty", "holding", "not-there"}).ok());
  CHECK(t.Recorded(rfs::coordination::kCreatedEmptyPrefix, "empty"));
  CHECK_FALSE(t.Recorded(rfs::coordination::kCreatedEmptyPrefix, "holding"));
  CHECK_FALSE(t.Recorded(rfs::coordination::kCreatedEmptyPrefix, "not-there"));
  // RfsWorker's tuning records created indices in phase 3 instead.
  REQUIRE(t.tuning->AtShardSetup({"holding"}).ok());
  CHECK_FALSE(t.Recorded(rfs::coordination::kCreatedEmptyPrefix, "holding"));
}

namespace {

// A tuning that records what the worker asks of it, beside a sink that records, for each
// document written, whether its index was tuned then.
class RecordingTuning final : public rfs::migration::ITargetTuning {
 public:
  absl::Status AtShardSetup(const std::vector<std::string>& indices) override {
    std::lock_guard lock(mu);
    setup_indices = indices;
    return absl::OkStatus();
  }
  absl::Status BeforeBulk(const std::string& index) override {
    std::lock_guard lock(mu);
    if (!restored.contains(index)) tuned.insert(index);
    return absl::OkStatus();
  }
  absl::StatusOr<bool> NeedsRestore(const std::string& index) override {
    std::lock_guard lock(mu);
    return tuned.contains(index) && !restored.contains(index);
  }
  absl::Status Restore(const std::string& index) override {
    std::lock_guard lock(mu);
    if (!tuned.contains(index) || restored.contains(index)) return absl::OkStatus();
    if (fail_restores) return absl::UnavailableError("killed before the restore");
    restored.insert(index);
    restore_order.push_back(index);
    return absl::OkStatus();
  }

  std::mutex mu;
  std::vector<std::string> setup_indices;
  std::set<std::string> tuned;
  std::set<std::string> restored;
  std::vector<std::string> restore_order;
  bool fail_restores = false;
};

class TuningCheckingSink final : public rfs::reindex::IDocumentSink {
 public:
  explicit TuningCheckingSink(RecordingTuning& tuning) : tuning_(tuning) {}
  absl::StatusOr<std::vector<rfs::reindex::ItemFailure>> Write(
      std::span<const rfs::reindex::SourceDocument* const> docs) override {
    std::lock_guard lock(tuning_.mu);
    for (const auto* doc : docs) {
      ++written;
      if (!tuning_.tuned.contains(doc->index) || tuning_.restored.contains(doc->index)) {
        ++untuned_writes;
      }
    }
    return std::vector<rfs::reindex::ItemFailure>();
  }
  std::string description() const override { return "tuning-checking sink"; }
  int written = 0;
  int untuned_writes = 0;

 private:
  RecordingTuning& tuning_;
};

struct TunedWorker : rfs::test::WorkerFixture {
  RecordingTuning tuning;
  std::shared_ptr<TuningCheckingSink> sink = std::make_shared<TuningCheckingSink>(tuning);

  explicit TunedWorker(const std::filesystem::path& repo)
      : WorkerFixture(repo, "rfs-tuned-worker") {}

  absl::StatusOr<rfs::migration::WorkerSummary> Run(bool single_item) {
    rfs::migration::DocumentMigrationOptions options;
    options.reindexer.max_docs_per_batch = 25;
    options.reindexer.max_concurrent_batches = 1;
    options.single_work_item = single_item;
    options.target_tuning = &tuning;
    auto items = Coordinator();
    std::shared_ptr<rfs::reindex::IDocumentSink> shared = sink;
    rfs::migration::DocumentMigrationWorker worker(
        *repository, *items,
        [shared](std::string_view, std::string_view)
            -> absl::StatusOr<std::shared_ptr<rfs::reindex::IDocumentSink>> { return shared; },
        nullptr, clock, std::move(options));
    return worker.Run();
  }

  // Items of `index` not complete yet.
  int Incomplete(const std::string& index) {
    auto items = Coordinator();
    int left = 0;
    for (uint32_t shard = 0; shard < 2; ++shard) {
      auto state = items->GetWorkItem(rfs::coordination::WorkItemId{index, shard, 0}.ToString());
      REQUIRE(state.ok());
      REQUIRE(*state);
      if (!(*state)->completed()) ++left;
    }
    return left;
  }
};

}  // namespace

TEST_CASE(
    "the worker tunes an index before its first document and restores it after its last "
    "item",
    "[migration][tuning][generated]") {
  auto generated = rfs::test::Generate("--indices 2 --shards 2 --docs 120 --seed 93");
  if (!generated) return;
  TunedWorker worker(generated->repo());

  SECTION("one item a run: restored by the run that completes the index's last item") {
    for (int run = 0; run < 4; ++run) {
      auto summary = worker.Run(/*single_item=*/true);
      REQUIRE(summary.ok());
      for (const std::string index : {"index-0", "index-1"}) {
        INFO("run " << run << ", " << index);
        const bool done = worker.Incomplete(index) == 0;
        CHECK(worker.tuning.restored.contains(index) == done);
      }
    }
    auto last = worker.Run(/*single_item=*/false);
    REQUIRE(last.ok());
    CHECK(last->outcome == rfs::migration::WorkerOutcome::kNoWorkLeft);
    CHECK(worker.tuning.setup_indices == std::vector<std::string>{"index-0", "index-1"});
    CHECK(worker.tuning.tuned == std::set<std::string>{"index-0", "index-1"});
    CHECK(worker.tuning.restore_order.size() == 2);
    CHECK(worker.sink->written > 0);
    CHECK(worker.sink->untuned_writes == 0);
  }
  SECTION("a run that dies before the restore: the next run of the session restores") {
    worker.tuning.fail_restores = true;
    auto failed = worker.Run(/*single_item=*/false);
    CHECK_FALSE(failed.ok());
    CHECK(worker.tuning.restored.empty());
    CHECK(worker.Incomplete("index-0") + worker.Incomplete("index-1") < 4);
    worker.tuning.fail_restores = false;
    auto next = worker.Run(/*single_item=*/false);
    REQUIRE(next.ok());
    CHECK(next->outcome == rfs::migration::WorkerOutcome::kNoWorkLeft);
    CHECK(worker.tuning.restored == std::set<std::string>{"index-0", "index-1"});
    CHECK(worker.sink->untuned_writes == 0);
  }
}
