// PostgresWorkCoordinator against a real PostgreSQL server started for the test
// (support/postgres_server.hpp): the IWorkCoordinator conformance suite (with the store's clock
// injected, as for SQLite), the server's own clock, many workers racing for items, and errors;
// the suite and the race again through PgBouncer in transaction pooling mode
// (support/pgbouncer.hpp), where each transaction may run on another server connection.
#include "rfs/coordination/postgres_work_coordinator.hpp"

#include <atomic>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "conformance/work_coordinator_conformance.hpp"
#include "support/pgbouncer.hpp"
#include "support/postgres_server.hpp"

using namespace std::chrono_literals;
using rfs::coordination::Acquired;
using rfs::coordination::IWorkCoordinator;
using rfs::coordination::NoAvailableWork;
using rfs::coordination::PostgresWorkCoordinator;
using rfs::coordination::PostgresWorkCoordinatorOptions;

namespace {

PostgresWorkCoordinatorOptions Options(const std::string& uri, const std::string& worker,
                                       const std::string& table) {
  PostgresWorkCoordinatorOptions options;
  options.worker_id = worker;
  options.connection = uri;
  options.table = table;
  return options;
}

// One server for the whole executable: Catch2 runs a test case's body once per section.
rfs::test::PostgresServer& Server() {
  static rfs::test::PostgresServer server;
  return server;
}

// PgBouncer in transaction mode in front of Server(), with two server connections for all its
// clients (destroyed before the server, having been made after it).
rfs::test::PgBouncer& Pooler() {
  static rfs::test::PgBouncer pooler(Server(), 2);
  return pooler;
}

void RunConformance(const std::string& uri, const std::string& table_prefix) {
  rfs::core::FakeClock clock;
  // A table per run of the body (one per section) keeps the sections apart.
  static int run = 0;
  const std::string table = table_prefix + std::to_string(run++);
  rfs::coordination::conformance::ConformanceEnv env;
  env.clock = &clock;
  env.make_worker = [&](const rfs::coordination::conformance::WorkerSpec& spec) {
    PostgresWorkCoordinatorOptions options = Options(uri, "", table);
    rfs::coordination::conformance::ApplySpec(spec, &clock, options);
    options.store_clock = &clock;
    return rfs::coordination::conformance::RequireOpened(
        PostgresWorkCoordinator::Open(std::move(options)));
  };
  rfs::coordination::conformance::RunWorkCoordinatorConformance(env);
}

// 16 workers, each with its own connection to `uri`, complete 200 items between them, each once.
void RunRace(const std::string& uri, const std::string& table) {
  auto first = PostgresWorkCoordinator::Open(Options(uri, "setup", table));
  REQUIRE(first.ok());
  REQUIRE((*first)->Setup().ok());
  for (int i = 0; i < 200; ++i) {
    REQUIRE((*first)->CreateUnassignedWorkItem("item-" + std::to_string(i), 0).ok());
  }
  CHECK((*first)->CountIncompleteWorkItems().value() == 200);
  auto now = (*first)->StoreNow();
  REQUIRE(now.ok());
  CHECK(std::chrono::abs(*now - std::chrono::system_clock::now()) < 5s);

  std::mutex mu;
  std::multiset<std::string> completed;
  std::vector<std::thread> workers;
  std::atomic<int> failures{0};
  for (int w = 0; w < 16; ++w) {
    workers.emplace_back([&, w] {
      auto coordinator =
          PostgresWorkCoordinator::Open(Options(uri, "worker-" + std::to_string(w), table));
      if (!coordinator.ok()) {
        ++failures;
        return;
      }
      while (true) {
        auto outcome = (*coordinator)->AcquireNextWorkItem(60s);
        if (!outcome.ok()) {
          ++failures;
          return;
        }
        auto* acquired = std::get_if<Acquired>(&*outcome);
        if (acquired == nullptr) return;  // nothing left (or all leased: finishing)
        if (!(*coordinator)->CompleteWorkItem(acquired->lease).ok()) ++failures;
        std::lock_guard lock(mu);
        completed.insert(acquired->lease.work_item_id);
      }
    });
  }
  for (auto& t : workers) t.join();
  CHECK(failures == 0);
  CHECK(completed.size() == 200);
  CHECK(std::set<std::string>(completed.begin(), completed.end()).size() == 200);  // once each
  CHECK((*first)->CountIncompleteWorkItems().value() == 0);
  CHECK(std::holds_alternative<NoAvailableWork>((*first)->AcquireNextWorkItem(60s).value()));
}

std::string Show(rfs::coordination::PostgresConnection& connection, const std::string& setting) {
  auto shown = connection.Exec("SHOW " + setting);
  REQUIRE(shown.ok());
  return std::string(shown->Text(0, 0));
}

}  // namespace

TEST_CASE("PostgresWorkCoordinator passes the IWorkCoordinator conformance suite",
          "[coordination][postgres]") {
  RunConformance(Server().uri(), "conformance_");
}

TEST_CASE(
    "PostgresWorkCoordinator passes the IWorkCoordinator conformance suite through PgBouncer "
    "in transaction mode",
    "[coordination][postgres][pgbouncer]") {
  RunConformance(Pooler().uri(), "pooled_conformance_");
}

TEST_CASE("PostgresWorkCoordinator leases on the server's clock and 16 workers share 200 items",
          "[coordination][postgres][tsan]") {
  RunRace(Server().uri(), "race");
}

TEST_CASE(
    "16 workers share 200 items through PgBouncer in transaction mode on two server "
    "connections",
    "[coordination][postgres][pgbouncer][tsan]") {
  RunRace(Pooler().uri(), "pooled_race");
}

TEST_CASE(
    "behind PgBouncer in transaction mode, the store's planner settings stay in its own "
    "transactions",
    "[coordination][postgres][pgbouncer]") {
  // One server connection for every client: whatever a transaction leaves set on it, the next
  // client's transaction finds.
  rfs::test::PgBouncer pooler(Server(), 1);
  auto other = rfs::coordination::PostgresConnection::Open(pooler.uri());
  REQUIRE(other.ok());
  auto another = rfs::coordination::PostgresConnection::Open(pooler.uri());
  REQUIRE(another.ok());
  // The two clients are served by one backend, in turn.
  auto pid = (*other)->Exec("SELECT pg_backend_pid()");
  auto same_pid = (*another)->Exec("SELECT pg_backend_pid()");
  REQUIRE(pid.ok());
  REQUIRE(same_pid.ok());
  CHECK(pid->Int(0, 0).value() == same_pid->Int(0, 0).value());

  auto coordinator = PostgresWorkCoordinator::Open(Options(pooler.uri(), "w", "pooled_settings"));
  REQUIRE(coordinator.ok());
  REQUIRE((*coordinator)->Setup().ok());
  REQUIRE((*coordinator)->CreateUnassignedWorkItem("item-0", 0).ok());
  REQUIRE((*coordinator)->CreateUnassignedWorkItem("item-1", 0).ok());
  auto outcome = (*coordinator)->AcquireNextWorkItem(60s);
  REQUIRE(outcome.ok());
  REQUIRE(std::holds_alternative<Acquired>(*outcome));
  // The acquisition turned the planner's scans off for its transaction only.
  for (const char* setting : {"enable_seqscan", "enable_sort", "enable_bitmapscan"}) {
    INFO(setting);
    CHECK(Show(**other, setting) == "on");
  }
  // And it holds its lease through the pool: the other item is next, then none.
  auto second = (*coordinator)->AcquireNextWorkItem(60s);
  REQUIRE(second.ok());
  REQUIRE(std::holds_alternative<Acquired>(*second));
  CHECK(std::get<Acquired>(*second).lease.work_item_id !=
        std::get<Acquired>(*outcome).lease.work_item_id);
  auto none = (*coordinator)->AcquireNextWorkItem(60s);
  REQUIRE(none.ok());
  CHECK_FALSE(std::holds_alternative<Acquired>(*none));
}

TEST_CASE("PostgresWorkCoordinator validates its options and reports an unreachable server",
          "[coordination][postgres]") {
  PostgresWorkCoordinatorOptions options;
  options.connection = "postgresql://postgres@127.0.0.1:1/postgres";
  CHECK(absl::IsInvalidArgument(PostgresWorkCoordinator::Open(options).status()));  // no worker
  options.worker_id = "w";
  options.table = "bad-name; DROP TABLE x";
  CHECK(absl::IsInvalidArgument(PostgresWorkCoordinator::Open(options).status()));
  options.table = "work_items";
  options.connection.clear();
  CHECK(absl::IsInvalidArgument(PostgresWorkCoordinator::Open(options).status()));
  options.connection = "postgresql://postgres@127.0.0.1:1/postgres";
  CHECK(absl::IsUnavailable(PostgresWorkCoordinator::Open(options).status()));
}

TEST_CASE("PostgresWorkCoordinator reports a lost connection as Unavailable and then reconnects",
          "[coordination][postgres]") {
  rfs::test::PostgresServer& server = Server();
  auto coordinator = PostgresWorkCoordinator::Open(Options(server.uri(), "w", "reconnect"));
  REQUIRE(coordinator.ok());
  REQUIRE((*coordinator)->Setup().ok());
  REQUIRE((*coordinator)->CreateUnassignedWorkItem("item-0", 0).ok());

  // Every other session of the server goes: the coordinator's among them.
  auto admin = rfs::coordination::PostgresConnection::Open(server.uri());
  REQUIRE(admin.ok());
  auto terminated = (*admin)->Exec(
      "SELECT COUNT(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) FROM pg_stat_activity "
      "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'");
  REQUIRE(terminated.ok());
  REQUIRE(terminated->Int(0, 0).value() >= 1);

  const absl::StatusOr<int64_t> lost = (*coordinator)->CountIncompleteWorkItems();
  CHECK(absl::IsUnavailable(lost.status()));
  CHECK(lost.status().message().find("postgres work coordinator: count") != std::string::npos);
  // The next call connects again, and the item is still there to be acquired.
  CHECK((*coordinator)->CountIncompleteWorkItems().value() == 1);
  auto outcome = (*coordinator)->AcquireNextWorkItem(60s);
  REQUIRE(outcome.ok());
  REQUIRE(std::holds_alternative<Acquired>(*outcome));
  CHECK(std::get<Acquired>(*outcome).lease.work_item_id == "item-0");
}
