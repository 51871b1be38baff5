// The migration console: its API over real HTTP on both stores (SQLite, and a real PostgreSQL
// server started for the test), the IWorkCoordinator conformance suite through
// ConsoleWorkCoordinator, the seed's models, statuses and errors, sessions and their tokens, and
// the status report (counts per shard chain, throughput, ETA).
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <sqlite3.h>

#include "rfs/console/console_server.hpp"
#include "rfs/console/console_status.hpp"
#include "rfs/console/console_store.hpp"
#include "rfs/coordination/console_work_coordinator.hpp"
#include "rfs/coordination/verify_records.hpp"
#include "rfs/net/beast_http_transport.hpp"

#include "conformance/work_coordinator_conformance.hpp"
#include "support/pgbouncer.hpp"
#include "support/postgres_server.hpp"
#include "support/temp_dir.hpp"

using namespace std::chrono_literals;
namespace json = boost::json;
using rfs::console::ConsoleServer;
using rfs::console::ConsoleServerOptions;
using rfs::coordination::ConsoleWorkCoordinator;
using rfs::coordination::ConsoleWorkCoordinatorOptions;
using rfs::coordination::WorkItemId;

namespace {

constexpr const char* kAdminToken = "admin-token-for-tests-0123456789";

rfs::test::PostgresServer& Postgres() {
  static rfs::test::PostgresServer server;
  return server;
}

// A console on a loopback port over a fresh store, with an HTTP client and helpers.
class Console {
 public:
  /// `before_lease_growth`: the console answers as one from before `lease_growth` did.
  Console(const std::string& store_uri, rfs::core::FakeClock* clock,
          bool before_lease_growth = false) {
    ConsoleServerOptions options;
    options.service.ignore_lease_growth = before_lease_growth;
    options.store.uri = store_uri;
    options.store.clock = clock;
    options.store.store_clock = clock;
    options.service.admin_token = kAdminToken;
    options.sample_interval = 200ms;
    // Every answer the tests see holds to the OpenAPI document.
    options.service.on_departure_from_openapi = [this](const std::string& departure) {
      std::lock_guard lock(departures_mu_);
      departures_.push_back(departure);
    };
    auto started = ConsoleServer::Start(std::move(options));
    INFO(started.status().ToString());
    REQUIRE(started.ok());
    server_ = *std::move(started);
    rfs::net::HttpTransportOptions http;
    http.endpoint = server_->url();
    auto transport = rfs::net::BeastHttpTransport::Open(http);
    REQUIRE(transport.ok());
    transport_ = *std::move(transport);
  }

  ~Console() {
    server_->Stop();
    std::lock_guard lock(departures_mu_);
    for (const auto& departure : departures_) UNSCOPED_INFO(departure);
    CHECK(departures_.empty());
  }

  ConsoleServer& server() { return *server_; }

  rfs::net::HttpResponse Send(const std::string& method, const std::string& target,
                              const std::string& body = "",
                              const std::string& token = kAdminToken) {
    rfs::net::HttpRequest request;
    request.method = method;
    request.target = target;
    if (!token.empty()) request.headers.emplace_back("Authorization", "Bearer " + token);
    if (!body.empty()) request.headers.emplace_back("Content-Type", "application/json");
    request.body = body;
    auto response = transport_->Send(request);
    INFO(response.status().ToString());
    REQUIRE(response.ok());
    return *std::move(response);
  }

  json::value Json(const rfs::net::HttpResponse& response) {
    INFO(response.body);
    boost::system::error_code ec;
    json::value value = json::parse(response.body, ec);
    REQUIRE(!ec);
    return value;
  }

  /// What a worker of session `session` (opened by `token`) on this console needs, on `clock`.
  ConsoleWorkCoordinatorOptions WorkerOptions(const std::string& session, const std::string& token,
                                              const std::string& worker, rfs::core::IClock* clock) {
    ConsoleWorkCoordinatorOptions options;
    options.url = server_->url();
    options.session = session;
    options.token = token;
    options.worker_id = worker;
    options.clock = clock;
    return options;
  }

  /// Creates a session; returns its token.
  std::string CreateSession(const std::string& name) {
    auto response = Send("POST", "/sessions", json::serialize(json::object{{"name", name}}));
    INFO(response.body);
    REQUIRE(response.status == 201);
    return std::string(Json(response).at("token").as_string());
  }

 private:
  std::mutex departures_mu_;
  std::vector<std::string> departures_;
  std::unique_ptr<ConsoleServer> server_;
  std::unique_ptr<rfs::net::IHttpTransport> transport_;
};

void RunConformance(const std::string& store_uri) {
  rfs::core::FakeClock clock;
  Console console(store_uri, &clock);
  static int run = 0;
  const std::string session = "conformance-" + std::to_string(run++);
  const std::string token = console.CreateSession(session);
  rfs::coordination::conformance::ConformanceEnv env;
  env.clock = &clock;
  env.make_worker = [&](const rfs::coordination::conformance::WorkerSpec& spec) {
    ConsoleWorkCoordinatorOptions options;
    rfs::coordination::conformance::ApplySpec(spec, &clock, options);
    options.url = console.server().url();
    options.session = session;
    options.token = token;
    return rfs::coordination::conformance::RequireOpened(
        ConsoleWorkCoordinator::Open(std::move(options)));
  };
  rfs::coordination::conformance::RunWorkCoordinatorConformance(env);
}

}  // namespace

TEST_CASE(
    "ConsoleWorkCoordinator on a SQLite console passes the IWorkCoordinator conformance suite",
    "[console][conformance][tsan]") {
  rfs::test::TempDir dir("rfs-console");
  RunConformance("sqlite:" + dir.File("console.db"));
}

TEST_CASE(
    "ConsoleWorkCoordinator on a PostgreSQL console passes the IWorkCoordinator conformance "
    "suite",
    "[console][conformance][postgres]") {
  RunConformance(Postgres().uri());
}

TEST_CASE(
    "ConsoleWorkCoordinator on a PostgreSQL console behind PgBouncer in transaction mode passes "
    "the IWorkCoordinator conformance suite",
    "[console][conformance][postgres][pgbouncer]") {
  // Two server connections for the console's store: its transactions take turns on them.
  static rfs::test::PgBouncer pooler(Postgres(), 2);
  RunConformance(pooler.uri());
}

TEST_CASE("a fixed lease lasts what was asked on a console from before lease_growth too",
          "[console]") {
  // The old console doubles the lease after each grant that runs out and does not say it
  // granted a fixed lease. The worker gives a doubled grant back and asks for the lease divided
  // by 2 to the exponent the next grant will have: holders killed in a lock cost the next one no
  // more than the lease asked for.
  rfs::test::TempDir dir("rfs-console");
  rfs::core::FakeClock clock;
  Console console("sqlite:" + dir.File("console.db"), &clock, /*before_lease_growth=*/true);
  const std::string token = console.CreateSession("old");
  auto open = [&](const std::string& worker) {
    return rfs::coordination::conformance::RequireOpened(
        ConsoleWorkCoordinator::Open(console.WorkerOptions("old", token, worker, &clock)));
  };
  constexpr auto kLease = std::chrono::seconds(32);
  const std::string lock =
      rfs::coordination::TuningRecordId(rfs::coordination::kTuningLockPrefix, "idx");
  for (int death = 0; death < 4; ++death) {
    INFO("grant " << death);
    auto worker = open("w" + std::to_string(death));
    auto outcome = worker->AcquireFixedLease(lock, kLease);
    REQUIRE(outcome.ok());
    const auto* acquired = std::get_if<rfs::coordination::Acquired>(&*outcome);
    REQUIRE(acquired != nullptr);
    CHECK(acquired->lease.duration == kLease);
    CHECK(acquired->lease.exponent == death);  // the old console's count of grants
    CHECK(acquired->lease.local_deadline() <= clock.Now() + kLease);
    // The holder asking again keeps its lease.
    clock.Advance(std::chrono::seconds(5));
    auto again = worker->AcquireFixedLease(lock, kLease);
    REQUIRE(again.ok());
    const auto* held = std::get_if<rfs::coordination::Acquired>(&*again);
    REQUIRE(held != nullptr);
    CHECK(held->lease.generation == acquired->lease.generation);
    CHECK(held->lease.expires_at == acquired->lease.expires_at);
    CHECK(held->lease.duration == kLease);
    CHECK(held->lease.local_deadline() <= held->lease.expires_at);
    // The holder dies; its lease runs out.
    clock.Advance(kLease);
  }
}

namespace {

// The seed's API, as its own clients use it (no IWorkCoordinator extras), on one store.
void SeedApi(const std::string& store_uri) {
  rfs::core::FakeClock clock;
  Console console(store_uri, &clock);
  const std::string token = console.CreateSession("seed");
  const std::string base = "/sessions/seed/backfill/work-items";
  auto create = [&](const std::string& id, int shard, int docs, int bytes) {
    return console.Send("POST", base,
                        json::serialize(json::object{{"work_item_id", id},
                                                     {"index_name", "logs"},
                                                     {"shard_number", shard},
                                                     {"document_count", docs},
                                                     {"total_size_bytes", bytes}}),
                        token);
  };

  // Create: 201 with the BackfillWorkItem, 409 for a duplicate, 422 for bad data.
  auto created = create("logs-0", 0, 1000, 50000);
  REQUIRE(created.status == 201);
  json::object item = console.Json(created).as_object();
  CHECK(item.at("status") == "pending");
  CHECK(item.at("session_name") == "seed");
  CHECK(item.at("index_name") == "logs");
  CHECK(item.at("shard_number") == 0);
  CHECK(item.at("document_count") == 1000);
  CHECK(item.at("total_size_bytes") == 50000);
  CHECK(item.at("worker_id").is_null());
  CHECK(item.at("documents_processed") == 0);
  CHECK(create("logs-0", 0, 1000, 50000).status == 409);
  REQUIRE(create("logs-1", 1, 3000, 150000).status == 201);
  CHECK(console.Send("POST", base, R"({"work_item_id": "x", "shard_number": -1})", token).status ==
        422);
  CHECK(console.Send("POST", base, R"({"index_name": "logs"})", token).status == 422);
  CHECK(console.Send("POST", base, "not json", token).status == 422);
  CHECK(console.Send("POST", base, R"({"work_item_id": "a,b"})", token).status == 422);

  // Acquire: each worker gets its own item; then 404 "No available work items".
  auto first = console.Send("GET", base + "/acquire?worker_id=w1", "", token);
  REQUIRE(first.status == 200);
  json::object acquired = console.Json(first).as_object();
  CHECK(acquired.at("lease_duration_seconds").to_number<double>() == 300);
  json::object w1_item = acquired.at("work_item").as_object();
  CHECK(w1_item.at("status") == "assigned");
  CHECK(w1_item.at("worker_id") == "w1");
  const std::string w1_id(w1_item.at("work_item_id").as_string());
  auto second = console.Send("GET", base + "/acquire?worker_id=w2", "", token);
  REQUIRE(second.status == 200);
  const std::string w2_id(console.Json(second).at("work_item").at("work_item_id").as_string());
  CHECK(w1_id != w2_id);
  auto none = console.Send("GET", base + "/acquire?worker_id=w3", "", token);
  CHECK(none.status == 404);
  CHECK(console.Json(none).at("detail") == "No available work items");
  CHECK(console.Send("GET", base + "/acquire", "", token).status == 422);  // no worker_id
  // lease_growth is doubling or fixed, and fixed only for one named item.
  CHECK(console.Send("GET", base + "/acquire?worker_id=w3&lease_growth=fixed", "", token).status ==
        422);
  CHECK(console
            .Send("POST", base + "/" + w1_id + "/acquire?worker_id=w3&lease_growth=sometimes", "",
                  token)
            .status == 422);

  // Lease renewal with progress: the holder may, another worker gets 409.
  auto renew = console.Send(
      "PUT", base + "/" + w1_id + "/lease",
      R"({"worker_id": "w1", "progress": {"documents_processed": 400, "bytes_processed": 20000}})",
      token);
  REQUIRE(renew.status == 200);
  CHECK(console.Json(renew).at("work_item").at("documents_processed") == 400);
  CHECK(
      console.Send("PUT", base + "/" + w1_id + "/lease", R"({"worker_id": "w2"})", token).status ==
      409);
  CHECK(console.Send("PUT", base + "/nope/lease", R"({"worker_id": "w1"})", token).status == 404);

  // Complete: the seed's body is the bare worker id.
  auto completed = console.Send("PUT", base + "/" + w1_id + "/complete", R"("w1")", token);
  REQUIRE(completed.status == 200);
  CHECK(console.Json(completed).at("status") == "completed");
  CHECK(console.Send("PUT", base + "/" + w2_id + "/complete", R"("w1")", token).status == 409);

  // Lease expiry: w2's item goes back to pending; once w3 takes it, w2 is refused (409), and w3's
  // own stale grant number is refused as expired (410).
  clock.Advance(301s);
  auto status = console.Json(console.Send("GET", base + "/status", "", token)).as_object();
  CHECK(status.at("pending_work_items") == 1);
  CHECK(status.at("completed_work_items") == 1);
  auto taken = console.Send("GET", base + "/acquire?worker_id=w3", "", token);
  REQUIRE(taken.status == 200);
  CHECK(console.Json(taken).at("work_item").at("work_item_id") == json::value(w2_id));
  CHECK(
      console.Send("PUT", base + "/" + w2_id + "/lease", R"({"worker_id": "w2"})", token).status ==
      409);
  const int64_t generation = console.Json(taken).at("lease").at("generation").to_number<int64_t>();
  CHECK(console
            .Send("PUT", base + "/" + w2_id + "/lease",
                  json::serialize(
                      json::object{{"worker_id", "w3"}, {"lease_generation", generation - 1}}),
                  token)
            .status == 410);

  // Successors: the chain counts once per shard.
  auto successors = console.Send(
      "POST", base + "/" + w2_id + "/successors",
      R"({"worker_id": "w3", "successor_ids": ["logs-1-from-2000"], "successor_lease_exponent": 0})",
      token);
  REQUIRE(successors.status == 200);
  CHECK(console.Json(successors).at("work_item").at("status") == "completed");
  status = console.Json(console.Send("GET", base + "/status", "", token)).as_object();
  CHECK(status.at("total_work_items") == 3);  // successors have no declared shard: own chain
  CHECK(status.at("total_documents_processed") == 400);

  // The list and a single item.
  auto list = console.Json(console.Send("GET", base, "", token)).as_array();
  CHECK(list.size() == 3);
  CHECK(console.Send("GET", base + "/" + w1_id, "", token).status == 200);
  CHECK(console.Send("GET", base + "/missing", "", token).status == 404);
}

}  // namespace

TEST_CASE(
    "the console serves the seed's work-item API with its models, statuses and errors (SQLite)",
    "[console]") {
  rfs::test::TempDir dir("rfs-console");
  SeedApi("sqlite:" + dir.File("console.db"));
}

TEST_CASE(
    "the console serves the seed's work-item API with its models, statuses and errors "
    "(PostgreSQL)",
    "[console][postgres]") {
  static int run = 0;
  (void)run;
  // A database per run keeps the suite's other sessions out of this one.
  auto admin = rfs::coordination::PostgresConnection::Open(Postgres().uri());
  REQUIRE(admin.ok());
  REQUIRE((*admin)->Exec("DROP DATABASE IF EXISTS seed_api").ok());
  REQUIRE((*admin)->Exec("CREATE DATABASE seed_api").ok());
  std::string uri = Postgres().uri();
  uri = uri.substr(0, uri.rfind('/')) + "/seed_api";
  SeedApi(uri);
}

TEST_CASE("sessions need the admin token to be created and a session's token opens only it",
          "[console]") {
  rfs::test::TempDir dir("rfs-console");
  rfs::core::FakeClock clock;
  Console console("sqlite:" + dir.File("console.db"), &clock);
  const std::string a = console.CreateSession("alpha");
  const std::string b = console.CreateSession("beta");
  CHECK(a != b);
  CHECK(a.size() == 64);
  auto body = R"({"name": "gamma"})";
  CHECK(console.Send("POST", "/sessions", body, "").status == 401);
  CHECK(console.Send("POST", "/sessions", body, a).status == 403);
  CHECK(console.Send("POST", "/sessions", R"({"name": "alpha"})").status == 409);
  CHECK(console.Send("POST", "/sessions", R"({"name": "../etc"})").status == 422);
  CHECK(console.Send("POST", "/sessions", R"({"name": ""})").status == 422);
  CHECK(console.Send("POST", "/sessions", R"({"nom": "x"})").status == 422);

  CHECK(console.Send("GET", "/sessions/alpha", "", a).status == 200);
  CHECK(console.Send("GET", "/sessions/beta", "", a).status == 403);
  CHECK(console.Send("GET", "/sessions/beta/backfill/work-items/status", "", a).status == 403);
  CHECK(console.Send("GET", "/sessions/alpha/backfill/work-items/status", "", "").status == 401);
  CHECK(console.Send("GET", "/sessions/alpha/backfill/work-items/status", "", "wrong").status ==
        403);
  CHECK(console.Send("GET", "/sessions/nope", "").status == 404);
  // A session's token lists only its session; the admin token lists all.
  auto mine = console.Json(console.Send("GET", "/sessions", "", b)).as_array();
  REQUIRE(mine.size() == 1);
  CHECK(mine[0].at("name") == "beta");
  CHECK(console.Json(console.Send("GET", "/sessions")).as_array().size() == 2);

  // Deleting needs the admin token and removes the session's items.
  REQUIRE(
      console.Send("POST", "/sessions/alpha/backfill/work-items", R"({"work_item_id": "one"})", a)
          .status == 201);
  REQUIRE(console.Send("GET", "/sessions/alpha/workflow/work-items", "", a).status == 200);
  CHECK(console.Send("DELETE", "/sessions/alpha", "", a).status == 403);
  CHECK(console.Send("DELETE", "/sessions/alpha").status == 200);
  CHECK(console.Send("GET", "/sessions/alpha").status == 404);
  CHECK(console.Send("DELETE", "/sessions/alpha").status == 404);
  const std::string again = console.CreateSession("alpha");
  auto items = console.Json(console.Send("GET", "/sessions/alpha/backfill/work-items", "", again));
  CHECK(items.as_array().empty());
  // Both spaces of the session made again work (the workflow space's coordinator was kept
  // after the deletion dropped its table: 500 "no such table", found by schemathesis).
  auto workflow = console.Send("GET", "/sessions/alpha/workflow/work-items", "", again);
  INFO(workflow.body);
  CHECK(workflow.status == 200);
  CHECK(
      console.Send("POST", "/sessions/alpha/workflow/work-items", R"({"work_item_id": "w"})", again)
          .status == 201);
  CHECK(console.Send("GET", "/sessions/alpha", "", a).status == 403);  // the old token is dead
}

namespace {

// What rfs workers report of their documents' outcomes reaches the status per index, carries
// over to the next holder of a released item, and makes a finished session one with findings.
void OutcomesThroughConsole(const std::string& store_uri) {
  rfs::core::FakeClock clock;
  Console console(store_uri, &clock);
  const std::string token = console.CreateSession("acct");
  auto open = [&](const std::string& worker) {
    return rfs::coordination::conformance::RequireOpened(
        ConsoleWorkCoordinator::Open(console.WorkerOptions("acct", token, worker, &clock)));
  };
  auto w1 = open("w1");
  auto w2 = open("w2");
  const std::string logs = WorkItemId{"logs", 0, 0, std::nullopt}.ToString();
  const std::string metrics = WorkItemId{"metrics", 0, 0, std::nullopt}.ToString();
  REQUIRE(*w1->CreateUnassignedWorkItem(logs, 0));
  REQUIRE(*w1->CreateUnassignedWorkItem(metrics, 0));
  auto acquire = [&](rfs::coordination::IWorkCoordinator& w, const std::string& id) {
    auto outcome = w.AcquireWorkItem(id, 60s);
    REQUIRE(outcome.ok());
    auto* acquired = std::get_if<rfs::coordination::Acquired>(&*outcome);
    REQUIRE(acquired != nullptr);
    return acquired->lease;
  };
  // w1 moves 100 documents of logs: 3 refused, 2 dropped by a transform; then it stops.
  auto lease = acquire(*w1, logs);
  rfs::coordination::ItemOutcomes first;
  first.rejected = 3;
  first.transform_dropped = 2;
  REQUIRE(w1->ReleaseWorkItem(lease, rfs::coordination::ItemProgress(100, 100, 5000, first)).ok());
  // w2 resumes with what w1 recorded, adds 1 failed transform and 4 rebuilt, and finishes.
  lease = acquire(*w2, logs);
  REQUIRE(lease.recorded_progress.has_value());
  CHECK(lease.recorded_progress->next_cursor == 100);
  CHECK(lease.recorded_progress->outcomes == first);
  rfs::coordination::ItemOutcomes all = first;
  all.transform_failed = 1;
  all.rebuilt = 4;
  all.already_newer = 5;
  auto renewed = w2->RenewLease(lease, rfs::coordination::ItemProgress(200, 200, 9000, all));
  REQUIRE(renewed.ok());
  auto state = w2->GetWorkItem(logs);
  REQUIRE(state.ok());
  REQUIRE(state->has_value());
  CHECK((*state)->progress->outcomes == all);
  REQUIRE(w2->CompleteWorkItem(*renewed).ok());

  const std::string base = "/sessions/acct/backfill/work-items";
  json::object status = console.Json(console.Send("GET", base + "/status", "", token)).as_object();
  CHECK(status.at("outcome") == "IN_PROGRESS");
  const json::object* logs_row = nullptr;
  for (const auto& row : status.at("indices").as_array()) {
    if (row.at("index_name") == "logs") logs_row = &row.as_object();
  }
  REQUIRE(logs_row != nullptr);
  const json::object& outcomes = logs_row->at("outcomes").as_object();
  CHECK(outcomes.at("rejected") == 3);
  CHECK(outcomes.at("transform_dropped") == 2);
  CHECK(outcomes.at("transform_failed") == 1);
  CHECK(outcomes.at("rebuilt") == 4);
  CHECK(outcomes.at("not_convertible") == 0);
  CHECK(outcomes.at("already_newer") == 5);
  // The failed count is the outcomes' (rejected, not convertible, failed by a transform).
  CHECK(logs_row->at("documents").at("failed") == 4);
  CHECK(status.at("outcomes").at("rejected") == 3);
  CHECK(status.at("outcomes").at("already_newer") == 5);

  // metrics finishes clean: the session is complete, with findings for logs only.
  lease = acquire(*w1, metrics);
  // Out-of-range counts are refused.
  CHECK(console
            .Send("PUT", base + "/" + metrics + "/lease",
                  R"({"worker_id": "w1", "progress": {"outcomes": {"rejected": -1}}})", token)
            .status == 422);
  REQUIRE(w1->CompleteWorkItem(lease).ok());
  status = console.Json(console.Send("GET", base + "/status", "", token)).as_object();
  CHECK(status.at("outcome") == "COMPLETED_WITH_FINDINGS");
  std::set<std::string> findings;
  for (const auto& f : status.at("findings").as_array()) {
    findings.insert(std::string(f.at("index_name").as_string()) + ":" +
                    std::string(f.at("outcome").as_string()) + ":" +
                    std::to_string(f.at("documents").to_number<int64_t>()));
  }
  // Already newer documents are no finding: left as the target holds them.
  CHECK(findings == std::set<std::string>{"logs:rejected:3", "logs:transform_failed:1"});
  const std::string text = rfs::console::FormatStatusText(status);
  CHECK(text.find("Outcome: COMPLETED_WITH_FINDINGS") != std::string::npos);
  CHECK(text.find("finding: logs: 3 rejected") != std::string::npos);
  // The text's index table: Rebuilt 4, Newer 5 at the end of logs' row.
  const size_t row = text.find("\nlogs ");
  REQUIRE(row != std::string::npos);
  CHECK(text.substr(row + 1, text.find('\n', row + 1) - row - 1).ends_with(" 4        5"));
  // The item as the API shows it.
  json::object item = console.Json(console.Send("GET", base + "/" + logs, "", token)).as_object();
  CHECK(item.at("outcomes").at("rebuilt") == 4);
  CHECK(item.at("outcomes").at("already_newer") == 5);
  CHECK(item.at("progress").at("outcomes").at("transform_failed") == 1);
}

}  // namespace

TEST_CASE("document outcomes reach the console per index and make findings (SQLite)", "[console]") {
  rfs::test::TempDir dir("rfs-console");
  OutcomesThroughConsole("sqlite:" + dir.File("console.db"));
}

TEST_CASE("document outcomes reach the console per index and make findings (PostgreSQL)",
          "[console][postgres]") {
  OutcomesThroughConsole(Postgres().uri());
}

namespace {

// The tables as the previous version of the console created them, with one item's outcomes.
constexpr const char* kPreviousSchema[] = {
    "CREATE TABLE console_sessions (name TEXT PRIMARY KEY, token_sha256 TEXT NOT NULL, work_table "
    "TEXT NOT NULL, created_at_ms BIGINT NOT NULL)",
    "CREATE TABLE console_work_item_info (session TEXT NOT NULL, id TEXT NOT NULL, index_name "
    "TEXT, shard_number BIGINT, document_count BIGINT, total_size_bytes BIGINT, documents_failed "
    "BIGINT NOT NULL DEFAULT 0, created_at_ms BIGINT NOT NULL, PRIMARY KEY (session, id))",
    "CREATE TABLE console_item_outcomes (session TEXT NOT NULL, id TEXT NOT NULL, rejected BIGINT "
    "NOT NULL, not_convertible BIGINT NOT NULL, transform_failed BIGINT NOT NULL, "
    "transform_dropped BIGINT NOT NULL, rebuilt BIGINT NOT NULL, rebuilt_inexact BIGINT NOT "
    "NULL, PRIMARY KEY (session, id))",
    "INSERT INTO console_work_item_info (session, id, index_name, documents_failed, "
    "created_at_ms) VALUES ('old', 'item', 'logs', 2, 0)",
    "INSERT INTO console_item_outcomes VALUES ('old', 'item', 2, 0, 0, 1, 0, 0)",
};

// A store the previous version created opens (twice: the second finds the added column there),
// its outcomes read as they were with none already newer, and an already newer count is kept.
void OpensTheStoreOfThePreviousVersion(const std::string& uri) {
  const rfs::console::SessionRecord session{"old", "", "", {}};
  for (int open = 0; open < 2; ++open) {
    auto store = rfs::console::ConsoleStore::Open({.uri = uri});
    INFO(store.status().ToString());
    REQUIRE(store.ok());
    auto info = (*store)->GetWorkItemInfo(session, "item");
    REQUIRE(info.ok());
    REQUIRE(info->has_value());
    REQUIRE((*info)->outcomes.has_value());
    CHECK((*info)->outcomes->rejected == 2);
    CHECK((*info)->outcomes->transform_dropped == 1);
    CHECK((*info)->outcomes->already_newer == (open == 0 ? 0 : 7));
    rfs::coordination::ItemOutcomes outcomes = *(*info)->outcomes;
    outcomes.already_newer = 7;
    REQUIRE((*store)->SetItemOutcomes(session, "item", outcomes).ok());
    info = (*store)->GetWorkItemInfo(session, "item");
    REQUIRE(info.ok());
    REQUIRE(info->has_value());
    CHECK((*info)->outcomes == outcomes);
    CHECK((*info)->documents_failed == 2);
  }
}

}  // namespace

TEST_CASE("a console store of the previous version gains the already_newer column (SQLite)",
          "[console]") {
  rfs::test::TempDir dir("rfs-console");
  const std::string path = dir.File("console.db");
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  for (const char* statement : kPreviousSchema) {
    INFO(statement);
    CHECK(sqlite3_exec(db, statement, nullptr, nullptr, nullptr) == SQLITE_OK);
  }
  sqlite3_close(db);
  OpensTheStoreOfThePreviousVersion("sqlite:" + path);
}

TEST_CASE("a console store of the previous version gains the already_newer column (PostgreSQL)",
          "[console][postgres]") {
  auto admin = rfs::coordination::PostgresConnection::Open(Postgres().uri());
  REQUIRE(admin.ok());
  REQUIRE((*admin)->Exec("DROP DATABASE IF EXISTS previous_store").ok());
  REQUIRE((*admin)->Exec("CREATE DATABASE previous_store").ok());
  std::string uri = Postgres().uri();
  uri = uri.substr(0, uri.rfind('/')) + "/previous_store";
  {
    auto connection = rfs::coordination::PostgresConnection::Open(uri);
    REQUIRE(connection.ok());
    REQUIRE((*connection)
                ->InTransaction([&]() -> absl::Status {
                  for (const char* statement : kPreviousSchema) {
                    if (auto done = (*connection)->Exec(statement); !done.ok()) {
                      return done.status();
                    }
                  }
                  return absl::OkStatus();
                })
                .ok());
  }
  OpensTheStoreOfThePreviousVersion(uri);
}

TEST_CASE("the console page is served at / without the token in it", "[console]") {
  rfs::test::TempDir dir("rfs-console");
  rfs::core::FakeClock clock;
  Console console("sqlite:" + dir.File("console.db"), &clock);
  auto page = console.Send("GET", "/", "", "");
  CHECK(page.status == 200);
  CHECK(page.Header("Content-Type").value_or("").starts_with("text/html"));
  CHECK(page.body.find("<title>rfs migration console</title>") != std::string::npos);
  CHECK(page.body.find(kAdminToken) == std::string::npos);
  CHECK(console.Send("GET", "/no/such/route", "", "").status == 404);
}

TEST_CASE("bytes that are not UTF-8 in a path or a worker id get JSON answers", "[console]") {
  // All found by the console_request fuzz target: a 404 that quoted the path raw, a worker id
  // stored raw, then quoted as a lease's holder, and an index name decoded from an item's id.
  rfs::test::TempDir dir("rfs-console");
  rfs::core::FakeClock clock;
  Console console("sqlite:" + dir.File("console.db"), &clock);
  const std::string token = console.CreateSession("alpha");
  auto missing = console.Send("GET", "/sessions/\xff\xfe/backfill/work-items/status");
  CHECK(missing.status == 404);
  CHECK(console.Json(missing).at("detail").as_string().find("\\xff\\xfe") != json::string::npos);
  REQUIRE(
      console
          .Send("POST", "/sessions/alpha/backfill/work-items", R"({"work_item_id": "one"})", token)
          .status == 201);
  auto refused =
      console.Send("GET", "/sessions/alpha/backfill/work-items/acquire?worker_id=w\xc3", "", token);
  CHECK(refused.status == 422);
  CHECK(console.Json(refused).at("detail") == "worker_id must be UTF-8");
  auto acquired = console.Send(
      "GET", "/sessions/alpha/backfill/work-items/acquire?worker_id=w\xc3\xa9", "", token);
  CHECK(acquired.status == 200);
  CHECK(console.Json(acquired).at("outcome") == "acquired");
  // An id in rfs's form whose index name decodes to bytes that are not UTF-8 ("logs" does): the
  // item has no index name rather than an answer that is not JSON.
  auto odd = console.Send("POST", "/sessions/alpha/backfill/work-items",
                          R"({"work_item_id": "logs__5__0"})", token);
  REQUIRE(odd.status == 201);
  CHECK(console.Json(odd).at("index_name").is_null());
  auto status = console.Send("GET", "/sessions/alpha/backfill/work-items/status", "", token);
  CHECK(status.status == 200);
  console.Json(status);
}

TEST_CASE("the status counts each shard's chain once, with throughput and ETA", "[console]") {
  using rfs::coordination::ItemProgress;
  using rfs::coordination::WorkItemState;
  const auto t0 = rfs::console::TimePoint(std::chrono::seconds(1'800'000'000));
  rfs::console::SessionRecord session{"s", "", "t", t0};
  auto id = [](const char* index, uint32_t shard, uint64_t cursor) {
    return WorkItemId{index, shard, cursor}.ToString();
  };
  std::vector<WorkItemState> items(5);
  // logs/0: a chain of three (two completed, the last assigned), 600 docs so far.
  items[0].id = id("logs", 0, 0);
  items[0].completed_at = t0 + 10s;
  items[0].progress = ItemProgress{200, 200, 2000};
  items[1].id = id("logs", 0, 200);
  items[1].completed_at = t0 + 20s;
  items[1].progress = ItemProgress{500, 300, 3000};
  items[2].id = id("logs", 0, 500);
  items[2].lease_holder = "w1";
  items[2].lease_expires_at = t0 + 400s;
  items[2].progress = ItemProgress{600, 100, 1000};
  // logs/1: completed. metrics/0: pending, its lease expired.
  items[3].id = id("logs", 1, 0);
  items[3].completed_at = t0 + 30s;
  items[3].progress = ItemProgress{400, 400, 4000};
  items[4].id = id("metrics", 0, 0);
  items[4].lease_holder = "w2";
  items[4].lease_expires_at = t0 + 5s;
  std::vector<rfs::console::WorkItemInfo> infos(3);
  infos[0] = {items[0].id, "logs", 0, 1000, 10000, 3, t0};
  infos[1] = {items[3].id, "logs", 1, 400, 4000, 0, t0};
  infos[2] = {items[4].id, "metrics", 0, 600, 6000, 0, t0};
  const auto now = t0 + 100s;
  // 60 s ago, 400 documents had been processed; now 1000: 10 docs/s, 1000 to go -> 100 s.
  std::vector<rfs::console::ProgressSample> history{{t0 + 10s, 0, 0}, {t0 + 40s, 400, 4000}};
  json::object status = rfs::console::ComputeStatus(session, items, infos, history, now);
  CHECK(status.at("total_work_items") == 3);
  CHECK(status.at("pending_work_items") == 1);
  CHECK(status.at("assigned_work_items") == 1);
  CHECK(status.at("completed_work_items") == 1);
  CHECK(status.at("work_items") == json::object{{"pending", 1}, {"assigned", 1}, {"completed", 1}});
  CHECK(status.at("incomplete_items") == 2);
  CHECK(status.at("total_documents") == 2000);
  CHECK(status.at("total_documents_processed") == 1000);
  CHECK(status.at("total_bytes_processed") == 10000);
  CHECK(status.at("documents").at("failed") == 3);
  CHECK(status.at("percent_complete").to_number<double>() == 50);
  CHECK(status.at("throughput").at("documents_per_second").to_number<double>() == 10);
  CHECK(status.at("eta_seconds").to_number<double>() == 100);
  // Throughput over time for the page's chart: the rate between successive samples, ending now.
  const auto& series = status.at("throughput_history").as_array();
  REQUIRE(series.size() == 2);
  CHECK(series[0].at("documents_per_second").to_number<double>() == Approx(13.3));
  CHECK(series[1].at("documents_per_second").to_number<double>() == 10);
  CHECK(series[1].at("bytes_per_second").to_number<double>() == 100);  // 6,000 _source bytes
  CHECK(series[1].at("at") == rfs::console::FormatTime(now).c_str());
  const auto& workers = status.at("active_workers").as_array();
  REQUIRE(workers.size() == 1);
  CHECK(workers[0].at("worker_id") == "w1");
  const auto& indices = status.at("indices").as_array();
  REQUIRE(indices.size() == 2);
  CHECK(indices[0].at("index_name") == "logs");
  CHECK(indices[0].at("shards") == 2);
  CHECK(indices[0].at("documents").at("processed") == 1000);
  CHECK(indices[0].at("documents").at("total") == 1400);
  const auto& shards = status.at("shards").as_array();
  REQUIRE(shards.size() == 3);
  CHECK(shards[0].at("status") == "assigned");
  CHECK(shards[0].at("work_items") == 3);
  CHECK(shards[0].at("percent_complete").to_number<double>() == 60);
  CHECK(shards[1].at("status") == "completed");
  CHECK(shards[1].at("percent_complete").to_number<double>() == 100);
  CHECK(shards[2].at("status") == "pending");
  // Bytes in one unit, the shard files': the share of the shard done (600 of 1,000 documents of
  // 10,000 bytes), all of a completed one; the `_source` sent is reported beside them.
  CHECK(shards[0].at("bytes").at("processed") == 6000);
  CHECK(shards[0].at("bytes").at("total") == 10000);
  CHECK(shards[0].at("bytes").at("source_bytes_sent") == 6000);
  CHECK(shards[1].at("bytes").at("processed") == 4000);
  CHECK(shards[1].at("bytes").at("percent").to_number<double>() == 100);
  CHECK(status.at("source_bytes_sent") == 10000);
  for (const auto& row : shards) {
    const auto& bytes = row.at("bytes");
    if (!bytes.at("total").is_null()) {
      CHECK(bytes.at("processed").to_number<uint64_t>() <= bytes.at("total").to_number<uint64_t>());
    }
  }
  const std::string text = rfs::console::FormatStatusText(status);
  CHECK(text.find("Shard files: ") != std::string::npos);
  CHECK(text.find("Session s: 50% complete (shards: 1 pending, 1 assigned, 1 completed)") !=
        std::string::npos);
  CHECK(text.find("Documents: 1,000 of 2,000") != std::string::npos);
  CHECK(text.find("ETA: 1 min 40 s") != std::string::npos);

  // Everything completed: 100% and an ETA of zero.
  for (auto& item : items) item.completed_at = t0 + 50s;
  status = rfs::console::ComputeStatus(session, items, infos, {}, now);
  CHECK(status.at("percent_complete").to_number<double>() == 100);
  CHECK(status.at("eta_seconds").to_number<double>() == 0);
}

TEST_CASE("progress reports between renewals and each worker's back-pressure reach the status",
          "[console]") {
  rfs::test::TempDir dir("rfs-console");
  rfs::core::FakeClock clock;
  Console console("sqlite:" + dir.File("console.db"), &clock);
  const std::string token = console.CreateSession("bp");
  rfs::coordination::WorkerBackPressure w1_counts{12, 30};
  auto open = [&](const std::string& worker, bool counts) {
    ConsoleWorkCoordinatorOptions options = console.WorkerOptions("bp", token, worker, &clock);
    if (counts) options.back_pressure = [&] { return w1_counts; };
    return rfs::coordination::conformance::RequireOpened(
        ConsoleWorkCoordinator::Open(std::move(options)));
  };
  auto w1 = open("w1", true);
  auto w2 = open("w2", false);
  const std::string logs = WorkItemId{"logs", 0, 0, std::nullopt}.ToString();
  REQUIRE(*w1->CreateUnassignedWorkItem(logs, 0));
  auto outcome = w1->AcquireWorkItem(logs, 60s);
  REQUIRE(outcome.ok());
  const rfs::coordination::Lease lease = std::get<rfs::coordination::Acquired>(*outcome).lease;
  const std::string base = "/sessions/bp/backfill/work-items";

  // A progress report between renewals: recorded, the lease's expiry untouched.
  clock.Advance(5s);
  REQUIRE(w1->RecordProgress(lease, {500, 500, 25000}).ok());
  auto state = w1->GetWorkItem(logs);
  REQUIRE(state.ok());
  REQUIRE((*state)->progress.has_value());
  CHECK((*state)->progress->docs == 500);
  CHECK((*state)->lease_expires_at == lease.expires_at);

  json::object status = console.Json(console.Send("GET", base + "/status", "", token)).as_object();
  CHECK(status.at("total_documents_processed") == 500);
  const json::array& pressure = status.at("workers_back_pressure").as_array();
  REQUIRE(pressure.size() == 1);
  CHECK(pressure[0].at("worker_id") == "w1");
  CHECK(pressure[0].at("rejected_429") == 12);
  CHECK(pressure[0].at("retries") == 30);
  const json::array& active = status.at("active_workers").as_array();
  REQUIRE(active.size() == 1);
  CHECK(active[0].at("back_pressure").at("rejected_429") == 12);
  const std::string text = rfs::console::FormatStatusText(status);
  INFO(text);
  CHECK(text.find("Back-pressure per worker (429s, retries):\n  w1: 12 429s, 30 retries") !=
        std::string::npos);

  // Later counts replace earlier ones (with the next renewal); they stay once the run is over.
  w1_counts = {40, 77};
  auto renewed = w1->RenewLease(lease, {900, 900, 45000});
  REQUIRE(renewed.ok());
  REQUIRE(w1->CompleteWorkItem(*renewed).ok());
  status = console.Json(console.Send("GET", base + "/status", "", token)).as_object();
  CHECK(status.at("active_workers").as_array().empty());
  CHECK(status.at("workers_back_pressure").at(0).at("rejected_429") == 40);
  CHECK(status.at("workers_back_pressure").at(0).at("retries") == 77);

  // Another worker's report on an item it does not hold is refused as a lost lease.
  CHECK(absl::IsFailedPrecondition(
      w2->RecordProgress(rfs::coordination::Lease{logs, "w2", 0, 60s}, {1000, 1000, 1})));
  // Progress is required, and counts must be counts.
  CHECK(console
            .Send("PUT", base + "/" + logs + "/progress",
                  R"({"worker_id": "w1", "lease_generation": 1})", token)
            .status == 422);
  CHECK(console
            .Send("PUT", base + "/" + logs + "/progress",
                  R"({"worker_id": "w1", "lease_generation": 1, "back_pressure": {"retries": -1}})",
                  token)
            .status == 422);
}

TEST_CASE("a verification round (RfsWorker --verify-all) shows per index in the status",
          "[console]") {
  rfs::test::TempDir dir("rfs-console-verify");
  rfs::core::FakeClock clock;
  Console console("sqlite:" + dir.File("console.db"), &clock);
  const std::string token = console.CreateSession("v");
  auto open = [&](const std::string& space, const std::string& worker) {
    ConsoleWorkCoordinatorOptions options = console.WorkerOptions("v", token, worker, &clock);
    options.space = space;
    auto opened = ConsoleWorkCoordinator::Open(std::move(options));
    INFO(opened.status().ToString());
    REQUIRE(opened.ok());
    return *std::move(opened);
  };
  auto status = [&] {
    return console.Json(console.Send("GET", "/sessions/v/backfill/work-items/status", "", token))
        .as_object();
  };
  CHECK_FALSE(status().contains("verification"));
  // Round 1 begun; its items (two shards of "logs", one of "metrics") in the space verify-1,
  // one of them done.
  auto records = open("workflow", "w1");
  REQUIRE(records->CreateUnassignedWorkItem("verify_round__1", 0).ok());
  auto items = open("verify-1", "w1");
  for (const WorkItemId& id :
       {WorkItemId{"logs", 0, 0}, WorkItemId{"logs", 1, 0}, WorkItemId{"metrics", 0, 0}}) {
    REQUIRE(items->CreateUnassignedWorkItem(id.ToString(), 0).value());
  }
  auto acquired = items->AcquireWorkItem(WorkItemId{"logs", 1, 0}.ToString(), 60s);
  REQUIRE(acquired.ok());
  REQUIRE(std::holds_alternative<rfs::coordination::Acquired>(*acquired));
  REQUIRE(items->CompleteWorkItem(std::get<rfs::coordination::Acquired>(*acquired).lease).ok());
  auto running = status();
  REQUIRE(running.contains("verification"));
  CHECK(json::serialize(running.at("verification")) ==
        R"({"round":1,"state":"running","indices":[)"
        R"({"index":"logs","state":"verifying","items_completed":1,"items":2},)"
        R"({"index":"metrics","state":"verifying","items_completed":0,"items":1}]})");
  // Other spaces than verify-N of a round stay refused.
  CHECK(console.Send("GET", "/sessions/v/verify-0/work-items", "", token).status == 404);
  CHECK(console.Send("GET", "/sessions/v/verify-x/work-items", "", token).status == 404);
  // Reported: each index's row, carried by its record's creator, as the workers write it.
  rfs::coordination::VerifyIndexRow logs;
  logs.round = 1;
  logs.index = "logs";
  logs.expected = 10;
  logs.equal = 8;
  logs.missing = 1;
  logs.different = 1;
  logs.target_count = 9;
  rfs::coordination::VerifyIndexRow metrics;
  metrics.round = 1;
  metrics.index = "metrics";
  metrics.expected = metrics.equal = metrics.target_count = 4;
  metrics.note = "compared by search";
  for (const auto& row : {logs, metrics}) {
    // The text survives the round trip through a record id and creator.
    auto back = rfs::coordination::VerifyIndexRow::FromRecord(row.RecordId(), row.ToText());
    REQUIRE(back.has_value());
    CHECK(back->ToText() == row.ToText());
    CHECK(back->index == row.index);
    REQUIRE(open("workflow", row.ToText())->CreateUnassignedWorkItem(row.RecordId(), 0).value());
  }
  REQUIRE(records->CreateUnassignedWorkItem("verify_round_done__1", 0).ok());
  auto done = records->AcquireWorkItem("verify_round_done__1", 60s);
  REQUIRE(std::holds_alternative<rfs::coordination::Acquired>(*done));
  REQUIRE(records->CompleteWorkItem(std::get<rfs::coordination::Acquired>(*done).lease).ok());
  auto reported = status();
  CHECK(json::serialize(reported.at("verification")) ==
        R"({"round":1,"state":"reported","indices":[)"
        R"({"index":"logs","state":"differs","expected":10,"equal":8,"missing":1,"different":1,)"
        R"("not_comparable":0,"already_newer":0,"extra":0,"target_count":9},)"
        R"({"index":"metrics","state":"verified","expected":4,"equal":4,"missing":0,)"
        R"("different":0,"not_comparable":0,"already_newer":0,"extra":0,"target_count":4,)"
        R"("note":"compared by search"}]})");
  // The records are not workflow rows, and the text status shows the round.
  for (const auto& row : reported.at("workflow").as_array()) {
    CHECK_FALSE(row.at("record").as_string().starts_with("verify_index__"));
  }
  const std::string text = rfs::console::FormatStatusText(reported);
  CHECK(text.find("Verification round 1 (reported):\n  logs: differs, 10 expected, 8 equal, 1 "
                  "missing, 1 different, 0 not comparable, 0 already newer, 0 extra\n") !=
        std::string::npos);
  CHECK(text.find("  metrics: verified, 4 expected, 4 equal") != std::string::npos);
  // Deleting the session drops the round's table too: made again, its space is empty.
  CHECK(console.Send("DELETE", "/sessions/v").status == 200);
  const std::string again = console.CreateSession("v");
  auto listed = console.Json(console.Send("GET", "/sessions/v/verify-1/work-items", "", again));
  CHECK(listed.as_array().empty());
}
