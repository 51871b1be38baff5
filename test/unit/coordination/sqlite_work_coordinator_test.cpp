#include "rfs/coordination/sqlite_work_coordinator.hpp"

#include <fstream>

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include "rfs/core/errors.hpp"

#include "conformance/work_coordinator_conformance.hpp"
#include "support/temp_dir.hpp"

using namespace std::chrono_literals;
using rfs::coordination::Acquired;
using rfs::coordination::IWorkCoordinator;
using rfs::coordination::SqliteWorkCoordinator;
using rfs::coordination::SqliteWorkCoordinatorOptions;
using rfs::coordination::conformance::ConformanceEnv;
using rfs::coordination::conformance::WorkerSpec;
using rfs::test::TempDir;

namespace {

struct SqliteEnv {
  TempDir dir{"rfs-sqlite"};
  rfs::core::FakeClock clock;

  std::unique_ptr<IWorkCoordinator> Open(const WorkerSpec& spec) {
    SqliteWorkCoordinatorOptions options;
    rfs::coordination::conformance::ApplySpec(spec, &clock, options);
    options.path = dir.File("work.db");
    options.store_clock = &clock;
    return rfs::coordination::conformance::RequireOpened(
        SqliteWorkCoordinator::Open(std::move(options)));
  }

  ConformanceEnv conformance() {
    ConformanceEnv env;
    env.clock = &clock;
    env.make_worker = [this](const WorkerSpec& spec) { return Open(spec); };
    return env;
  }
};

}  // namespace

TEST_CASE("SqliteWorkCoordinator passes the IWorkCoordinator conformance suite",
          "[coordination][sqlite][tsan]") {
  SqliteEnv env;
  rfs::coordination::conformance::RunWorkCoordinatorConformance(env.conformance());
}

TEST_CASE("SqliteWorkCoordinator validates its options", "[coordination][sqlite]") {
  SqliteWorkCoordinatorOptions options;
  options.path = "/tmp/x.db";
  CHECK(absl::IsInvalidArgument(SqliteWorkCoordinator::Open(options).status()));
  options.worker_id = "w";
  options.path.clear();
  CHECK(absl::IsInvalidArgument(SqliteWorkCoordinator::Open(options).status()));
  options.path = "/nonexistent-dir/sub/work.db";
  CHECK(absl::IsUnavailable(SqliteWorkCoordinator::Open(options).status()));
}

TEST_CASE("SqliteWorkCoordinator reports a corrupt file as data loss", "[coordination][sqlite]") {
  TempDir dir;
  std::ofstream(dir.File("bad.db")) << std::string(4096, 'x');
  SqliteWorkCoordinatorOptions options;
  options.worker_id = "w";
  options.path = dir.File("bad.db");
  auto opened = SqliteWorkCoordinator::Open(options);
  absl::Status status = opened.ok() ? (*opened)->Setup() : opened.status();
  CHECK(absl::IsDataLoss(status));
}

TEST_CASE("SqliteWorkCoordinator keeps state in the file across instances and uses WAL",
          "[coordination][sqlite]") {
  SqliteEnv env;
  {
    auto first = env.Open({"w1", nullptr, nullptr});
    REQUIRE(first->Setup().ok());
    REQUIRE(first->CreateUnassignedWorkItem("item", 0).ok());
  }
  auto second = env.Open({"w2", nullptr, nullptr});
  REQUIRE(second->Setup().ok());
  auto count = second->CountIncompleteWorkItems();
  REQUIRE(count.ok());
  CHECK(*count == 1);
  auto outcome = second->AcquireNextWorkItem(1min);
  REQUIRE(outcome.ok());
  CHECK(std::holds_alternative<Acquired>(*outcome));
  CHECK(std::filesystem::exists(env.dir.File("work.db-wal")));
}

TEST_CASE("SqliteWorkCoordinator reports a lock held past the busy timeout as Unavailable",
          "[coordination][sqlite]") {
  SqliteEnv env;
  auto setup = env.Open({"setup", nullptr, nullptr});
  REQUIRE(setup->Setup().ok());
  REQUIRE(setup->CreateUnassignedWorkItem("item", 0).ok());
  // Another process's long write transaction, played by a raw connection.
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(env.dir.File("work.db").c_str(), &raw) == SQLITE_OK);
  REQUIRE(sqlite3_exec(raw, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
  SqliteWorkCoordinatorOptions options;
  options.worker_id = "impatient";
  options.clock = &env.clock;
  options.store_clock = &env.clock;
  options.path = env.dir.File("work.db");
  options.busy_timeout = 50ms;
  auto impatient = SqliteWorkCoordinator::Open(options);
  REQUIRE(impatient.ok());
  const auto blocked = (*impatient)->AcquireNextWorkItem(1min);
  CHECK(absl::IsUnavailable(blocked.status()));
  CHECK(rfs::core::IsRetryable(blocked.status()));
  // Reads are not blocked by a writer in WAL mode.
  auto count = (*impatient)->CountIncompleteWorkItems();
  REQUIRE(count.ok());
  CHECK(*count == 1);
  REQUIRE(sqlite3_exec(raw, "ROLLBACK", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(raw);
  auto after = (*impatient)->AcquireNextWorkItem(1min);
  REQUIRE(after.ok());
  CHECK(std::holds_alternative<Acquired>(*after));
}

TEST_CASE("SqliteWorkCoordinator adds the progress columns to a file from before heartbeats",
          "[coordination][sqlite]") {
  SqliteEnv env;
  {
    // The first schema, with one item a worker of that version created.
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(env.dir.File("work.db").c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db,
                         "CREATE TABLE work_items (id TEXT PRIMARY KEY NOT NULL, next_exponent "
                         "INTEGER NOT NULL DEFAULT 0, holder TEXT NOT NULL DEFAULT '', "
                         "expiration_ms INTEGER NOT NULL DEFAULT 0, generation INTEGER NOT NULL "
                         "DEFAULT 0, completed_at_ms INTEGER, successors TEXT NOT NULL DEFAULT '', "
                         "successor_exponent INTEGER NOT NULL DEFAULT 0, creator TEXT NOT NULL "
                         "DEFAULT ''); INSERT INTO work_items (id) VALUES ('aWR4__0__0');",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  auto worker = env.Open(WorkerSpec{"w1"});
  REQUIRE(worker->Setup().ok());
  REQUIRE(worker->Setup().ok());  // Idempotent once the columns exist.
  auto outcome = worker->AcquireNextWorkItem(10min);
  REQUIRE(outcome.ok());
  const auto* acquired = std::get_if<Acquired>(&*outcome);
  REQUIRE(acquired != nullptr);
  CHECK_FALSE(acquired->lease.recorded_progress.has_value());
  REQUIRE(worker->RenewLease(acquired->lease, {42, 40, 4000}).ok());
  auto state = worker->GetWorkItem("aWR4__0__0");
  REQUIRE(state.ok());
  REQUIRE(state->has_value());
  REQUIRE((*state)->progress.has_value());
  CHECK((*state)->progress->next_cursor == 42);
}

TEST_CASE("SqliteWorkCoordinator keeps sessions apart in tables of one file",
          "[coordination][sqlite]") {
  TempDir dir("rfs-sqlite");
  auto open = [&](const std::string& table) {
    SqliteWorkCoordinatorOptions options;
    options.worker_id = "w";
    options.path = dir.File("console.db");
    options.table = table;
    auto opened = SqliteWorkCoordinator::Open(std::move(options));
    REQUIRE(opened.ok());
    REQUIRE((*opened)->Setup().ok());
    return *std::move(opened);
  };
  auto a = open("work_items_a");
  auto b = open("work_items_b");
  REQUIRE(a->CreateUnassignedWorkItem("x", 0).value());
  CHECK(a->CountIncompleteWorkItems().value() == 1);
  CHECK(b->CountIncompleteWorkItems().value() == 0);
  CHECK(b->CreateUnassignedWorkItem("x", 0).value());  // a different item of another session
  SqliteWorkCoordinatorOptions bad;
  bad.worker_id = "w";
  bad.path = dir.File("console.db");
  bad.table = "x; DROP TABLE work_items_a";
  CHECK(absl::IsInvalidArgument(SqliteWorkCoordinator::Open(std::move(bad)).status()));
}

TEST_CASE("RecordProgress records a holder's progress and leaves its lease as it is",
          "[coordination][sqlite]") {
  SqliteEnv env;
  auto w1 = env.Open({"w1", nullptr, nullptr});
  auto w2 = env.Open({"w2", nullptr, nullptr});
  REQUIRE(w1->Setup().ok());
  REQUIRE(w1->CreateUnassignedWorkItem("item", 0).ok());
  auto outcome = w1->AcquireWorkItem("item", 60s);
  REQUIRE(outcome.ok());
  const rfs::coordination::Lease lease = std::get<Acquired>(*outcome).lease;
  auto before = w1->GetWorkItem("item");
  REQUIRE(before.ok());
  const auto expiry = (*before)->lease_expires_at;

  env.clock.Advance(5s);
  const auto reported_at = env.clock.Now();
  REQUIRE(w1->RecordProgress(lease, {100, 90, 9000}).ok());
  auto after = w1->GetWorkItem("item");
  REQUIRE(after.ok());
  REQUIRE((*after)->progress.has_value());
  CHECK(*(*after)->progress == rfs::coordination::ItemProgress{100, 90, 9000});
  CHECK((*after)->progress_at <= reported_at);
  CHECK((*after)->progress_at > reported_at - 1ms);
  // The lease is not renewed: the same expiry, the same grant.
  CHECK((*after)->lease_expires_at == expiry);
  CHECK((*after)->lease_generation == lease.generation);

  // A late report with an older cursor never takes the recorded one back.
  REQUIRE(w1->RecordProgress(lease, {50, 45, 4500}).ok());
  CHECK((*w1->GetWorkItem("item"))->progress->next_cursor == 100);

  // Once another worker holds the item, the old holder's reports are refused as a lost lease.
  env.clock.Advance(60s);
  auto taken = w2->AcquireWorkItem("item", 60s);
  REQUIRE(taken.ok());
  REQUIRE(std::holds_alternative<Acquired>(*taken));
  absl::Status lost = w1->RecordProgress(lease, {200, 190, 19000});
  CHECK(rfs::coordination::IsLeaseLost(lost));
  CHECK((*w1->GetWorkItem("item"))->progress->next_cursor == 100);
  // And a completed item takes no more progress.
  const auto second = std::get<Acquired>(*taken).lease;
  REQUIRE(w2->CompleteWorkItem(second).ok());
  CHECK(absl::IsFailedPrecondition(w2->RecordProgress(second, {300, 290, 29000})));
}
