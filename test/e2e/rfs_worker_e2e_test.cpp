// RfsWorker end to end: several workers started at once from an empty store run every phase
// (snapshot on the source double, templates, indices, documents, verify) against the target
// double, for a generated snapshot and for the corpus; the same with workers SIGKILLed at random
// in every phase and restarted; the same behind clusters answering 429 and 503 to 40% of every
// request; a failing phase (snapshot FAILED, template rejected) ends every
// worker with the same clear outcome; the verify phase finds missing documents.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <random>
#include <set>
#include <thread>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/coordination/sqlite_work_coordinator.hpp"
#include "rfs/core/exit_codes.hpp"
#include "rfs/net/beast_http_transport.hpp"

#include "e2e_support.hpp"
#include "support/generated_repo.hpp"

using namespace rfs::e2e;
using namespace std::chrono_literals;

namespace {

using rfs::core::kExitPhaseFailed;

std::vector<std::string> RfsWorkerArgs(const std::string& repo, const std::string& target,
                                       const std::string& name, std::vector<std::string> extra) {
  std::vector<std::string> args{RFS_WORKER_TOOL, "--snapshot-local-dir", repo, "--target-host",
                                target,          "--worker-id",          name};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Starts `count` workers at once; returns their exit codes.
std::multiset<int> RunWorkers(MigrationRun& run, int count, const std::string& repo,
                              const std::string& target, std::vector<std::string> extra) {
  // Never the default ./failed-documents: tests run side by side in one folder.
  if (std::find(extra.begin(), extra.end(), "--failed-documents-dir") == extra.end()) {
    extra.insert(extra.end(), {"--failed-documents-dir", run.dir.File("failed")});
  }
  std::vector<std::unique_ptr<rfs::test::ChildProcess>> workers;
  for (int i = 0; i < count; ++i) {
    const std::string name = "w" + std::to_string(i);
    workers.push_back(std::make_unique<rfs::test::ChildProcess>(
        RfsWorkerArgs(repo, target, name, extra), run.Out(name), run.Err(name)));
  }
  std::multiset<int> codes;
  for (auto& worker : workers) codes.insert(worker->Wait());
  return codes;
}

std::string AllLogs(const MigrationRun& run, int count) {
  std::string logs;
  for (int i = 0; i < count; ++i) logs += run.Logs("w" + std::to_string(i));
  return logs;
}

// The target's indices, each with its flat settings (GET /_all/_settings).
boost::json::object TargetSettings(const rfs::testing::OpenSearchDouble& target) {
  rfs::net::HttpTransportOptions http;
  http.endpoint = target.endpoint();
  auto transport = rfs::net::BeastHttpTransport::Open(http);
  REQUIRE(transport.ok());
  rfs::net::HttpRequest request;
  request.target = "/_all/_settings?flat_settings=true";
  auto response = (*transport)->Send(request);
  REQUIRE(response.ok());
  REQUIRE(response->status == 200);
  return boost::json::parse(response->body).as_object();
}

// Indices the run tuned for its load (refresh_interval -1) and did not put back.
std::vector<std::string> IndicesLeftTuned(const rfs::testing::OpenSearchDouble& target) {
  std::vector<std::string> out;
  for (const auto& [index, entry] : TargetSettings(target)) {
    const auto* refresh =
        entry.as_object().at("settings").as_object().if_contains("index.refresh_interval");
    if (refresh != nullptr && refresh->is_string() && refresh->as_string() == "-1") {
      out.emplace_back(index);
    }
  }
  return out;
}

// A migration console on a free loopback port, its store and its logs ("console") in `run`'s
// folder, and the session `session` made on it (retried while the console starts): its process,
// its URL and the session's token.
struct ConsoleSession {
  std::unique_ptr<rfs::test::ChildProcess> process;
  std::string url;
  std::string token;
};

ConsoleSession StartConsoleSession(MigrationRun& run, const std::string& admin,
                                   const std::string& session) {
  ConsoleSession out;
  const int port = rfs::test::FreeLoopbackPort();
  out.url = "http://127.0.0.1:" + std::to_string(port);
  out.process = std::make_unique<rfs::test::ChildProcess>(
      std::vector<std::string>{RFS_CONSOLE_TOOL, "serve", "--port", std::to_string(port), "--bind",
                               "127.0.0.1", "--store", "sqlite:" + run.dir.File("console.db"),
                               "--admin-token", admin, "--check-responses"},
      run.Out("console"), run.Err("console"));
  for (int attempt = 0; attempt < 300 && out.token.empty(); ++attempt) {
    std::filesystem::remove(run.Out("create"));
    if (rfs::test::RunProcess({RFS_CONSOLE_TOOL, "create-session", "--url", out.url, "--name",
                               session, "--admin-token", admin},
                              run.Out("create"), run.Err("create")) == 0) {
      out.token = rfs::test::ReadTextFile(run.Out("create"));
      while (!out.token.empty() && out.token.back() == '\n') out.token.pop_back();
    } else {
      std::this_thread::sleep_for(100ms);
    }
  }
  INFO(run.Logs("console") << run.Logs("create"));
  REQUIRE_FALSE(out.token.empty());
  return out;
}

bool TemplateOnTarget(const rfs::testing::OpenSearchDouble& target, const std::string& path) {
  rfs::net::HttpTransportOptions http;
  http.endpoint = target.endpoint();
  auto transport = rfs::net::BeastHttpTransport::Open(http);
  REQUIRE(transport.ok());
  rfs::net::HttpRequest request;
  request.target = path;
  auto response = (*transport)->Send(request);
  REQUIRE(response.ok());
  return response->status == 200;
}

// A migration whose phase 1 never ends (the source's snapshot is polled until the worker stops)
// with its worker records in a SQLite file of `run`'s folder: a phase record held for as long as
// a test wants, and the store to look at it or take it over.
struct EndlessSnapshotPhase {
  EndlessSnapshotPhase(const std::string& snapshot, int seed, const MigrationRun& run)
      : snapshot(snapshot),
        records(run.dir.File("records.sqlite")),
        failed(run.dir.File("failed")) {
    generated = rfs::test::Generate("--indices 1 --shards 1 --docs 20 --seed " +
                                    std::to_string(seed) + " --snapshot-name " + snapshot);
    REQUIRE(generated);
    rfs::testing::OpenSearchDoubleOptions source_options;
    source_options.snapshot_polls_to_complete = 1'000'000;
    auto started_source = rfs::testing::OpenSearchDouble::Start(source_options);
    auto started_target = rfs::testing::OpenSearchDouble::Start();
    REQUIRE((started_source.ok() && started_target.ok()));
    source = *std::move(started_source);
    target = *std::move(started_target);
  }

  std::vector<std::string> WorkerArgs(const std::string& name,
                                      const std::string& phase_lease) const {
    return RfsWorkerArgs(
        generated->repo().string(), target->endpoint(), name,
        {"--source-host", source->endpoint(), "--snapshot-name", snapshot,
         "--snapshot-poll-interval", "PT0.05S", "--phase-lease-duration", phase_lease,
         "--max-attempts", "10", "--coordinator-db", records, "--failed-documents-dir", failed});
  }

  // The worker records' store, as worker `worker_id` (fails while no worker has made it yet).
  absl::StatusOr<std::unique_ptr<rfs::coordination::IWorkCoordinator>> OpenRecords(
      const std::string& worker_id) const {
    rfs::coordination::SqliteWorkCoordinatorOptions store;
    store.worker_id = worker_id;
    store.path = records;
    store.table = "rfs_worker_records";
    if (!std::filesystem::exists(records)) return absl::NotFoundError(records);
    return rfs::coordination::SqliteWorkCoordinator::Open(store);
  }

  std::string snapshot;
  std::string records;
  std::string failed;
  std::optional<rfs::test::GeneratedRepo> generated;
  std::unique_ptr<rfs::testing::OpenSearchDouble> source;
  std::unique_ptr<rfs::testing::OpenSearchDouble> target;
};

}  // namespace

TEST_CASE("four RfsWorkers started together run every phase of a migration", "[e2e][worker]") {
  auto generated = rfs::test::Generate(
      "--indices 3 --shards 2 --docs 600 --updates 30 --deletes 20 --seed 81 --snapshot-name "
      "snap-w");
  rfs::testing::OpenSearchDoubleOptions source_options;
  source_options.snapshot_polls_to_complete = 4;
  auto source = rfs::testing::OpenSearchDouble::Start(source_options);
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE((source.ok() && target.ok()));
  MigrationRun run;
  const auto codes = RunWorkers(
      run, 4, generated->repo().string(), (*target)->endpoint(),
      {"--source-host", (*source)->endpoint(), "--snapshot-name", "snap-w",
       "--snapshot-poll-interval", "PT0.05S", "--failed-documents-dir", run.dir.File("failed")});
  INFO(AllLogs(run, 4));
  CHECK(codes == std::multiset<int>{0, 0, 0, 0});
  CheckTarget(**target, ReadExpectedDocs(generated->dir / "expected-docs.ndjson"));
  CHECK(TemplateOnTarget(**target, "/_index_template/index_index_template"));
  CHECK(TemplateOnTarget(**target, "/_component_template/index_component_template"));
  // Every index phase 3 created was tuned for its load, and is back as it was created.
  const std::string logs = AllLogs(run, 4);
  for (const char* index : {"index-0", "index-1", "index-2"}) {
    CHECK(logs.find(std::string(R"("event":"tuned","item":"index )") + index) != std::string::npos);
    CHECK(logs.find(std::string(R"("event":"restored","item":"index )") + index) !=
          std::string::npos);
  }
  CHECK(IndicesLeftTuned(**target).empty());
  // Exactly one worker verified, and every index was accounted for.
  int verified = 0;
  for (int i = 0; i < 4; ++i) {
    const std::string out = rfs::test::ReadTextFile(run.Out("w" + std::to_string(i)));
    if (out.find("Verification: every document is accounted for") != std::string::npos) ++verified;
    CHECK(out.find("every phase COMPLETED") != std::string::npos);
  }
  CHECK(verified == 1);

  // A worker that comes later finds every phase COMPLETED and exits 0 at once; --verify-only
  // reports the same.
  MigrationRun late;
  CHECK(RunWorkers(late, 1, generated->repo().string(), (*target)->endpoint(),
                   {"--snapshot-name", "snap-w", "--failed-documents-dir",
                    run.dir.File("failed")}) == std::multiset<int>{0});
  MigrationRun verify;
  CHECK(RunWorkers(verify, 1, generated->repo().string(), (*target)->endpoint(),
                   {"--snapshot-name", "snap-w", "--verify-only", "--failed-documents-dir",
                    run.dir.File("failed")}) == std::multiset<int>{0});
  CHECK(rfs::test::ReadTextFile(verify.Out("w0")).find("expected 580, migrated 580") !=
        std::string::npos);
}

TEST_CASE("RfsWorkers migrate every corpus repository completely", "[e2e][worker][corpus]") {
  auto cases = CorpusCases();
  REQUIRE_FALSE(cases.empty());
  for (const auto& c : cases) {
    SECTION(c.label) {
      auto target = rfs::testing::OpenSearchDouble::Start();
      REQUIRE(target.ok());
      MigrationRun run;
      std::vector<std::string> extra{"--failed-documents-dir", run.dir.File("failed")};
      if (!c.snapshot.empty()) extra.insert(extra.end(), {"--snapshot-name", c.snapshot});
      const auto codes = RunWorkers(run, 3, c.repo.string(), (*target)->endpoint(), extra);
      INFO(AllLogs(run, 3));
      CHECK(codes == std::multiset<int>{0, 0, 0});
      CheckTarget(**target, c.expected);
    }
  }
}

TEST_CASE("RfsWorkers SIGKILLed at random in every phase and restarted finish the migration",
          "[e2e][worker][chaos]") {
  auto generated = rfs::test::Generate(
      "--indices 4 --shards 2 --docs 4000 --updates 30 --deletes 20 --seed 82 --snapshot-name "
      "snap-k");
  rfs::testing::OpenSearchDoubleOptions source_options;
  source_options.snapshot_polls_to_complete = 30;  // about 1.5 s of snapshot phase
  auto source = rfs::testing::OpenSearchDouble::Start(source_options);
  // Slow template and index requests widen the metadata phases, so kills land there too.
  rfs::testing::OpenSearchDoubleOptions target_options;
  auto target = rfs::testing::OpenSearchDouble::Start(target_options);
  REQUIRE((source.ok() && target.ok()));
  rfs::testing::FaultOptions slow;
  slow.path_contains = "index";  // templates, the indices and their records
  slow.slow = 1.0;
  slow.slow_delay = 150ms;
  (*target)->SetFaults(slow);
  // And the snapshot's polls on the source.
  rfs::testing::FaultOptions slow_source;
  slow_source.path_contains = "_snapshot";
  slow_source.slow = 1.0;
  slow_source.slow_delay = 30ms;
  (*source)->SetFaults(slow_source);
  MigrationRun run;
  const std::vector<std::string> extra{"--source-host",
                                       (*source)->endpoint(),
                                       "--snapshot-name",
                                       "snap-k",
                                       "--snapshot-poll-interval",
                                       "PT0.05S",
                                       "--phase-lease-duration",
                                       "PT0.6S",
                                       "--initial-lease-duration",
                                       "PT2S",
                                       "--lease-renewal-interval",
                                       "PT0.2S",
                                       "--max-attempts",
                                       "200",
                                       "--documents-size-per-bulk-request",
                                       "10000",
                                       "--verify-sample",
                                       "3",
                                       "--failed-documents-dir",
                                       run.dir.File("failed")};
  std::mt19937_64 rng(Catch::rngSeed() + 5);
  constexpr int kWorkers = 4;
  std::vector<std::unique_ptr<rfs::test::ChildProcess>> workers(kWorkers);
  std::vector<std::string> names(kWorkers);
  int started = 0;
  auto start = [&](int slot) {
    const std::string name = "k" + std::to_string(started++);
    names[slot] = name;
    workers[slot] = std::make_unique<rfs::test::ChildProcess>(
        RfsWorkerArgs(generated->repo().string(), (*target)->endpoint(), name, extra),
        run.Out(name), run.Err(name));
  };
  for (int i = 0; i < kWorkers; ++i) start(i);
  int kills = 0;
  std::set<std::string> phases_killed;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  int finished = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(50, 200)(rng)));
    bool all_done = true;
    for (int i = 0; i < kWorkers; ++i) {
      if (!workers[i]) continue;
      if (workers[i]->Exited()) {
        const int code = workers[i]->Wait();
        INFO("a worker exited " << code);
        REQUIRE((code == 0 || code == 2));
        if (code == 0) {
          ++finished;
          workers[i].reset();
          continue;
        }
        start(i);  // lost its lease: restarted like a killed one
      }
      all_done = false;
    }
    if (all_done) break;
    // Kill a worker in a phase nobody died in yet when there is one (so that deaths land in
    // every phase the run goes through), else now and then one at random.
    auto phase_of = [&](int slot) {
      const std::string log = rfs::test::ReadTextFile(run.Err(names[slot]));
      const size_t at = log.rfind("\"phase\":\"");
      if (at == std::string::npos) return std::string();
      const size_t begin = at + 9;
      return log.substr(begin, log.find('"', begin) - begin);
    };
    int victim = -1;
    for (int slot = 0; slot < kWorkers && victim < 0; ++slot) {
      if (!workers[slot] || workers[slot]->Exited()) continue;
      const std::string phase = phase_of(slot);
      if (!phase.empty() && !phases_killed.contains(phase)) victim = slot;
    }
    if (victim < 0 && std::uniform_int_distribution<int>(0, 7)(rng) == 0) {
      victim = std::uniform_int_distribution<int>(0, kWorkers - 1)(rng);
    }
    if (kills < 60 && victim >= 0 && workers[victim] && !workers[victim]->Exited()) {
      const std::string phase = phase_of(victim);
      workers[victim]->Kill();
      workers[victim]->Wait();
      ++kills;
      if (!phase.empty()) phases_killed.insert(phase);
      start(victim);
    }
  }
  INFO(kills << " kills, " << started << " workers started, " << finished << " finished");
  REQUIRE(finished >= 1);
  for (auto& worker : workers) CHECK_FALSE(worker);
  CheckTarget(**target, ReadExpectedDocs(generated->dir / "expected-docs.ndjson"));
  // Tuning for the load never outlives it, whoever died between a tuning and its restore.
  CHECK(IndicesLeftTuned(**target).empty());
  CHECK(kills >= 5);
  // Deaths in every phase but maybe verify (one worker reads the snapshot for a moment).
  for (const char* phase : {"snapshot", "metadata", "indices", "documents"}) {
    CHECK(phases_killed.contains(phase));
  }
  std::string phases;
  for (const auto& p : phases_killed) phases += p + " ";
  WARN("worker chaos: " << kills << " SIGKILLs over " << started
                        << " worker processes; killed in phases: " << phases);
}

TEST_CASE("RfsWorkers behind clusters answering 30% 429 and 10% 503 on every path finish",
          "[e2e][worker][faults]") {
  // Every request of every phase meets the faults: the snapshot's on the source, and on the
  // target the records' and the items' store, templates, indices, bulks and verify. One of them
  // unretried ends a worker (it was the conditional write of a phase record).
  auto generated = rfs::test::Generate(
      "--indices 2 --shards 2 --docs 300 --updates 10 --deletes 10 --seed 85 --snapshot-name "
      "snap-t");
  rfs::testing::OpenSearchDoubleOptions source_options;
  source_options.snapshot_polls_to_complete = 3;
  auto source = rfs::testing::OpenSearchDouble::Start(source_options);
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE((source.ok() && target.ok()));
  rfs::testing::FaultOptions faults;
  faults.path_contains = "";
  faults.reject_429 = 0.3;
  faults.unavailable_503 = 0.1;
  faults.seed = Catch::rngSeed() + 85;
  (*target)->SetFaults(faults);
  faults.seed += 1;
  (*source)->SetFaults(faults);
  MigrationRun run;
  const auto codes =
      RunWorkers(run, 3, generated->repo().string(), (*target)->endpoint(),
                 {"--source-host", (*source)->endpoint(), "--snapshot-name", "snap-t",
                  "--snapshot-poll-interval", "PT0.05S", "--verify-sample", "5"});
  INFO(AllLogs(run, 3));
  CHECK(codes == std::multiset<int>{0, 0, 0});
  CHECK((*target)->stats().faults_injected > 100);
  CheckTarget(**target, ReadExpectedDocs(generated->dir / "expected-docs.ndjson"));
  for (int i = 0; i < 3; ++i) {
    CHECK(rfs::test::ReadTextFile(run.Out("w" + std::to_string(i))).find("every phase COMPLETED") !=
          std::string::npos);
  }
}

TEST_CASE("a failing phase ends every RfsWorker with the same clear outcome", "[e2e][worker]") {
  auto generated =
      rfs::test::Generate("--indices 2 --shards 1 --docs 200 --seed 83 --snapshot-name snap-f");
  SECTION("the snapshot FAILED on the source") {
    rfs::testing::OpenSearchDoubleOptions source_options;
    source_options.snapshot_final_state = "FAILED";
    auto source = rfs::testing::OpenSearchDouble::Start(source_options);
    auto target = rfs::testing::OpenSearchDouble::Start();
    REQUIRE((source.ok() && target.ok()));
    MigrationRun run;
    const auto codes = RunWorkers(run, 3, generated->repo().string(), (*target)->endpoint(),
                                  {"--source-host", (*source)->endpoint(), "--snapshot-name",
                                   "snap-f", "--snapshot-poll-interval", "PT0.05S"});
    INFO(AllLogs(run, 3));
    CHECK(codes == std::multiset<int>{kExitPhaseFailed, kExitPhaseFailed, kExitPhaseFailed});
    for (int i = 0; i < 3; ++i) {
      const std::string out = rfs::test::ReadTextFile(run.Out("w" + std::to_string(i)));
      CHECK(out.find("phase snapshot (snapshot): snapshot snap-f failed") != std::string::npos);
    }
    CHECK((*target)->IndexNames().size() <= 1);  // at most the records' index
  }
  SECTION("a template rejected by the target") {
    auto target = rfs::testing::OpenSearchDouble::Start();
    REQUIRE(target.ok());
    MigrationRun run;
    // Without its component template the composable index template is refused.
    const auto codes =
        RunWorkers(run, 3, generated->repo().string(), (*target)->endpoint(),
                   {"--snapshot-name", "snap-f", "--component-template-allowlist", "none-such"});
    INFO(AllLogs(run, 3));
    CHECK(codes == std::multiset<int>{kExitPhaseFailed, kExitPhaseFailed, kExitPhaseFailed});
    for (int i = 0; i < 3; ++i) {
      const std::string out = rfs::test::ReadTextFile(run.Out("w" + std::to_string(i)));
      CHECK(out.find("phase metadata (templates)") != std::string::npos);
      CHECK(out.find("index_index_template") != std::string::npos);
    }
  }
  SECTION("the snapshot is not in the repository") {
    auto target = rfs::testing::OpenSearchDouble::Start();
    REQUIRE(target.ok());
    MigrationRun run;
    const auto codes = RunWorkers(run, 2, generated->repo().string(), (*target)->endpoint(),
                                  {"--snapshot-name", "no-such-snapshot"});
    INFO(AllLogs(run, 2));
    // A usage error, found before the store is touched: nothing is recorded as FAILED.
    CHECK(codes == std::multiset<int>{64, 64});
    CHECK(rfs::test::ReadTextFile(run.Err("w0")).find("no-such-snapshot") != std::string::npos);
  }
}

TEST_CASE("the verify phase reports missing documents with a non-zero outcome", "[e2e][worker]") {
  auto generated =
      rfs::test::Generate("--indices 2 --shards 1 --docs 300 --seed 84 --snapshot-name snap-v");
  rfs::test::TempDir dir("rfs-verify");
  const std::string out = dir.File("out");
  MigrationRun run;
  REQUIRE(RunWorkers(run, 1, generated->repo().string(), "", {}) == std::multiset<int>{64});
  // Migrate index-0 only (index-1 excluded), into the embedded target.
  std::vector<std::string> args{RFS_WORKER_TOOL,
                                "--snapshot-local-dir",
                                generated->repo().string(),
                                "--output-dir",
                                out,
                                "--index-allowlist",
                                "index-0"};
  CHECK(rfs::test::RunProcess(args, run.Out("first"), run.Err("first")) == 0);
  INFO(run.Logs("first"));
  const std::string report = rfs::test::ReadTextFile(run.Out("first"));
  CHECK(report.find("index-1: excluded by the allowlist") != std::string::npos);
  CHECK(report.find("index-0: expected 300, migrated 300, failed 0, missing 0") !=
        std::string::npos);
  // Lose a bulk file: --verify-only names the index and what is missing, and exits 7.
  std::filesystem::path victim;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(out + "/index-0")) {
    if (entry.path().extension() == ".ndjson") victim = entry.path();
  }
  REQUIRE_FALSE(victim.empty());
  std::filesystem::remove(victim);
  args.push_back("--verify-only");
  CHECK(rfs::test::RunProcess(args, run.Out("verify"), run.Err("verify")) == kExitPhaseFailed);
  INFO(run.Logs("verify"));
  const std::string missing = rfs::test::ReadTextFile(run.Out("verify"));
  CHECK(missing.find("Verification: documents are MISSING or differ") != std::string::npos);
  CHECK(missing.find("index-0: expected 300, migrated ") != std::string::npos);
  CHECK(missing.find("missing 0,") == std::string::npos);
}

TEST_CASE("RfsWorkers coordinate through the migration console, which shows their phases",
          "[e2e][worker][console]") {
  auto generated =
      rfs::test::Generate("--indices 2 --shards 2 --docs 300 --seed 85 --snapshot-name snap-c");
  MigrationRun run;
  const ConsoleSession console = StartConsoleSession(run, "rfs-worker-console-admin-token", "w");
  const std::string& url = console.url;
  const std::string& token = console.token;
  std::vector<std::unique_ptr<rfs::test::ChildProcess>> workers;
  for (int i = 0; i < 3; ++i) {
    const std::string name = "w" + std::to_string(i);
    workers.push_back(std::make_unique<rfs::test::ChildProcess>(
        std::vector<std::string>{RFS_WORKER_TOOL, "--snapshot-local-dir",
                                 generated->repo().string(), "--output-dir", run.dir.File("out"),
                                 "--worker-id", name, "--console-url", url, "--session-name", "w",
                                 "--console-token", token},
        run.Out(name), run.Err(name)));
  }
  std::multiset<int> codes;
  for (auto& worker : workers) codes.insert(worker->Wait());
  INFO(AllLogs(run, 3));
  CHECK(codes == std::multiset<int>{0, 0, 0});
  CHECK_FALSE(std::filesystem::exists(run.dir.File("out") + "/.rfs/coordination.sqlite"));
  std::filesystem::remove(run.Out("status"));
  REQUIRE(rfs::test::RunProcess({RFS_CONSOLE_TOOL, "status", "--url", url, "--session", "w",
                                 "--token", token, "--json"},
                                run.Out("status"), run.Err("status")) == 0);
  const boost::json::object status =
      boost::json::parse(rfs::test::ReadTextFile(run.Out("status"))).as_object();
  CHECK(status.at("percent_complete").to_number<double>() == 100);
  std::set<std::string> completed;
  for (const auto& row : status.at("workflow").as_array()) {
    CHECK(row.at("status") == "COMPLETED");
    completed.insert(std::string(row.at("record").as_string()));
  }
  for (const char* record : {"phase_1_snapshot", "phase_2_metadata", "phase_3_indices",
                             "phase_4_documents", "phase_5_verify"}) {
    CHECK(completed.contains(record));
  }
  std::filesystem::remove(run.Out("status"));
  REQUIRE(rfs::test::RunProcess(
              {RFS_CONSOLE_TOOL, "status", "--url", url, "--session", "w", "--token", token},
              run.Out("status"), run.Err("status")) == 0);
  CHECK(rfs::test::ReadTextFile(run.Out("status"))
            .find("Phases: phase_1_snapshot=COMPLETED phase_2_metadata=COMPLETED") !=
        std::string::npos);
  // Every answer the workers and the status command had held to the OpenAPI document.
  CHECK(rfs::test::ReadTextFile(run.Err("console")).find("departs from /openapi.json") ==
        std::string::npos);
}

TEST_CASE("the console shows an index a killed RfsWorker left tuned until it is restored",
          "[e2e][worker][console][tuning]") {
  auto generated =
      rfs::test::Generate("--indices 1 --shards 2 --docs 300 --seed 86 --snapshot-name snap-t");
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  MigrationRun run;
  const ConsoleSession console = StartConsoleSession(run, "rfs-worker-tuning-admin-token", "t");
  const std::string& url = console.url;
  const std::string& token = console.token;
  auto worker = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args =
        RfsWorkerArgs(generated->repo().string(), (*target)->endpoint(), name,
                      {"--console-url", url, "--session-name", "t", "--console-token", token,
                       "--failed-documents-dir", run.dir.File("failed")});
    args.insert(args.end(), extra.begin(), extra.end());
    return rfs::test::RunProcess(args, run.Out(name), run.Err(name));
  };
  auto status = [&](bool json) {
    std::filesystem::remove(run.Out("status"));
    std::vector<std::string> args = {RFS_CONSOLE_TOOL, "status", "--url",   url,
                                     "--session",      "t",      "--token", token};
    if (json) args.push_back("--json");
    rfs::test::RunProcess(args, run.Out("status"), run.Err("status"));
    return rfs::test::ReadTextFile(run.Out("status"));
  };

  // Killed after the index's last item, before its settings were put back.
  ::setenv("RFS_TEST_KILL_BEFORE_SETTINGS_RESTORE", "1", 1);
  const int killed = worker("killed", {});
  ::unsetenv("RFS_TEST_KILL_BEFORE_SETTINGS_RESTORE");
  INFO(run.Logs("killed"));
  REQUIRE(killed == 128 + SIGKILL);
  CHECK(IndicesLeftTuned(**target) == std::vector<std::string>{"index-0"});
  const boost::json::object tuned = boost::json::parse(status(true)).as_object();
  REQUIRE(tuned.contains("tuned_indices"));
  CHECK(boost::json::serialize(tuned.at("tuned_indices")) ==
        R"([{"index":"index-0","state":"tuned, not yet restored"}])");
  // The tuning's own records are not listed as workflow records.
  for (const auto& row : tuned.at("workflow").as_array()) {
    const std::string_view record = row.at("record").as_string();
    INFO(record);
    for (const char* prefix :
         {"created_empty__", "tuned__", "tuned_original__", "restored__", "tuning_lock__"}) {
      CHECK_FALSE(record.starts_with(prefix));
    }
  }
  CHECK(status(false).find("Index index-0: tuned, not yet restored (number_of_replicas 0, "
                           "refresh_interval -1)") != std::string::npos);

  CHECK(worker("restore", {"--restore-target-settings"}) == 0);
  INFO(run.Logs("restore"));
  CHECK(IndicesLeftTuned(**target).empty());
  const boost::json::object restored = boost::json::parse(status(true)).as_object();
  CHECK_FALSE(restored.contains("tuned_indices"));
  CHECK(status(false).find("tuned, not yet restored") == std::string::npos);
  // The rest of the migration: nothing is tuned again, every phase completes.
  CHECK(worker("rest", {}) == 0);
  INFO(run.Logs("rest"));
  CHECK(IndicesLeftTuned(**target).empty());
  CheckTarget(**target, ReadExpectedDocs(generated->dir / "expected-docs.ndjson"));
  CHECK(rfs::test::ReadTextFile(run.Err("console")).find("departs from /openapi.json") ==
        std::string::npos);
}

TEST_CASE("a phase record whose holders are killed at work keeps its lease length",
          "[e2e][worker]") {
  // Holders killed while they work (their lease renewed) say nothing about the lease being too
  // short: the next holder waits one lease length, not twice the last one's. Before, every
  // death doubled the record's lease, and a few deaths in a row made the next wait minutes.
  // A holder that never renewed still doubles it.
  MigrationRun run;
  const EndlessSnapshotPhase setup("snap-held", 84, run);
  std::unique_ptr<rfs::coordination::IWorkCoordinator> observer;
  auto record = [&]() -> std::optional<rfs::coordination::WorkItemState> {
    if (!observer) {
      auto opened = setup.OpenRecords("observer");
      if (!opened.ok()) return std::nullopt;  // no worker has made the store yet
      observer = *std::move(opened);
    }
    auto state = observer->GetWorkItem("phase_1_snapshot");
    return state.ok() ? *state : std::nullopt;
  };
  // Starts a worker and waits until it holds the record: its lease as granted.
  auto start_holder = [&](const std::string& name) {
    auto holder = std::make_unique<rfs::test::ChildProcess>(setup.WorkerArgs(name, "PT1S"),
                                                            run.Out(name), run.Err(name));
    const auto give_up = std::chrono::steady_clock::now() + 60s;
    std::optional<rfs::coordination::WorkItemState> state;
    while (!holder->Exited() && std::chrono::steady_clock::now() < give_up) {
      state = record();
      if (state && state->lease_holder == name) break;
      std::this_thread::sleep_for(10ms);
    }
    INFO(run.Logs(name));
    REQUIRE((state && state->lease_holder == name));
    return std::pair(std::move(holder), state->lease_expires_at);
  };
  auto wait_out = [&](rfs::coordination::TimePoint expiry) {
    while (std::chrono::system_clock::now() <= expiry) std::this_thread::sleep_for(20ms);
  };
  // The first death proves little (a record with no progress recorded yet takes its doubling
  // back at its first renewal either way); the next ones are what doubled before.
  constexpr int kDeaths = 4;
  for (int death = 0; death < kDeaths; ++death) {
    const std::string name = "holder" + std::to_string(death);
    auto [holder, granted_until] = start_holder(name);
    // Killed once it has renewed its lease (the expiry moved).
    const auto give_up = std::chrono::steady_clock::now() + 60s;
    bool renewed = false;
    while (!renewed && !holder->Exited() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(20ms);
      const auto state = record();
      renewed = state && state->lease_holder == name && state->lease_expires_at != granted_until;
    }
    INFO(run.Logs(name));
    REQUIRE(renewed);
    holder->Kill();
    holder->Wait();
    const auto state = record();
    REQUIRE(state.has_value());
    INFO("after death " << death << ": next lease exponent " << state->next_lease_exponent);
    CHECK(state->next_lease_exponent == 0);
    wait_out(state->lease_expires_at);  // the next worker takes the record over
  }
  // A holder that never renews (frozen before its first renewal, a quarter of its lease in)
  // still doubles the next lease: that lease may have been too short for it.
  bool frozen_before_renewal = false;
  for (int attempt = 0; attempt < 3 && !frozen_before_renewal; ++attempt) {
    const std::string name = "frozen" + std::to_string(attempt);
    auto [holder, granted_until] = start_holder(name);
    kill(holder->pid(), SIGSTOP);
    // A renewal already inside a system call lands before the stop: looked at after it.
    std::this_thread::sleep_for(50ms);
    const auto state = record();
    REQUIRE(state.has_value());
    // Renewed before the stop landed (a busy machine): not this case, try again.
    frozen_before_renewal = state->lease_expires_at == granted_until;
    wait_out(state->lease_expires_at);
    holder->Kill();
    holder->Wait();
    if (frozen_before_renewal) {
      const auto after = record();
      REQUIRE(after.has_value());
      CHECK(after->next_lease_exponent == 1);
    }
  }
  CHECK(frozen_before_renewal);
}

TEST_CASE("an RfsWorker frozen past its phase lease stops that phase's work itself and exits 2",
          "[e2e][worker]") {
  MigrationRun run;
  const EndlessSnapshotPhase setup("snap-frozen", 83, run);
  rfs::test::ChildProcess frozen(setup.WorkerArgs("frozen", "PT2S"), run.Out("frozen"),
                                 run.Err("frozen"));
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (rfs::test::ReadTextFile(run.Err("frozen")).find("STARTED") == std::string::npos &&
         !frozen.Exited() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE_FALSE(frozen.Exited());
  // Frozen past its 2 s lease; meanwhile another worker takes the phase's record over.
  kill(frozen.pid(), SIGSTOP);
  std::this_thread::sleep_for(2500ms);
  auto thief = setup.OpenRecords("thief");
  REQUIRE(thief.ok());
  auto taken = (*thief)->AcquireWorkItem("phase_1_snapshot", std::chrono::minutes(10));
  REQUIRE(taken.ok());
  REQUIRE(std::holds_alternative<rfs::coordination::Acquired>(*taken));
  const size_t log_before_thaw = rfs::test::ReadTextFile(run.Err("frozen")).size();
  kill(frozen.pid(), SIGCONT);
  // The thawed worker notices at its next renewal (a quarter of the lease), stops the phase on
  // its own (its requests are refused from then on) and ends with exit 2: nothing kills it.
  const int code = frozen.Wait();
  const std::string log = rfs::test::ReadTextFile(run.Err("frozen"));
  INFO(log);
  CHECK(code == 2);
  CHECK(log.find("the lease on record phase_1_snapshot is lost") != std::string::npos);
  // It left the record to its new holder: neither completed nor given back.
  auto state = (*thief)->GetWorkItem("phase_1_snapshot");
  REQUIRE(state.ok());
  REQUIRE(state->has_value());
  CHECK((*state)->lease_holder == "thief");
  CHECK_FALSE((*state)->completed());
  CHECK(log.size() > log_before_thaw);
  // The run ended in the library, not by a process exit from the health thread: its summary
  // is printed with the exit code it returned.
  CHECK(rfs::test::ReadTextFile(run.Out("frozen")).find("\"exit_code\":2") != std::string::npos);
}
