// The tools end to end, as separate processes, against the OpenSearch double: MetadataMigration
// then DocumentsFromSnapshotMigration workers for every repository of ../shared/corpus, with the
// target's content compared with what the corpus's EXPECTED/PROVENANCE files state; the same under
// 20% injected target faults; and with workers SIGKILLed mid-shard, whose successors must resume
// without losing a document.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <sqlite3.h>

#include "rfs/coordination/work_coordinator.hpp"
#include "rfs/core/exit_codes.hpp"

#include "e2e_support.hpp"
#include "support/corpus.hpp"
#include "support/generated_repo.hpp"
#include "support/opensearch_double.hpp"
#include "support/pgbouncer.hpp"
#include "support/postgres_server.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace rfs::e2e;

// The exit codes a worker may end a healthy run with.
using rfs::core::kExitAllLeasedElsewhere;
using rfs::core::kExitHandoffOrStopped;
using rfs::core::kExitNoWorkLeft;

std::vector<std::string> WorkerArgs(const std::string& repo, const std::string& snapshot,
                                    const std::string& endpoint, const std::string& coordinator_db,
                                    const std::string& worker_id,
                                    const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {
      RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo,     "--target-host",
      endpoint,           "--worker-id",          worker_id};
  // Without a coordinator database the workers coordinate in the target (the default mode).
  if (!coordinator_db.empty()) {
    args.insert(args.end(), {"--coordinator-db", coordinator_db, "--failed-documents-dir",
                             coordinator_db + ".failed"});
  }
  if (!snapshot.empty()) {
    args.push_back("--snapshot-name");
    args.push_back(snapshot);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Runs workers one after another until one reports that no work is left.
void RunWorkersToCompletion(MigrationRun& run, const std::string& repo, const std::string& snapshot,
                            const std::string& endpoint, std::vector<std::string> extra = {},
                            bool default_mode = false) {
  const std::string db = default_mode ? "" : run.dir.File("coordination.sqlite");
  if (default_mode) extra.insert(extra.end(), {"--failed-documents-dir", run.dir.File("failed")});
  for (int attempt = 0; attempt < 50; ++attempt) {
    const std::string name = "worker-" + std::to_string(attempt);
    const int code = rfs::test::RunProcess(WorkerArgs(repo, snapshot, endpoint, db, name, extra),
                                           run.Out(name), run.Err(name));
    INFO(run.Logs(name));
    REQUIRE((code == kExitNoWorkLeft || code == kExitHandoffOrStopped ||
             code == kExitAllLeasedElsewhere));
    if (code == kExitNoWorkLeft) return;
  }
  FAIL("workers did not finish in 50 runs");
}

void MigrateMetadata(MigrationRun& run, const std::string& repo, const std::string& snapshot,
                     const std::string& endpoint) {
#ifndef RFS_METADATA_TOOL
  FAIL("the MetadataMigration tool is not part of this build");
#define RFS_METADATA_TOOL ""
#endif
  std::vector<std::string> args = {
      RFS_METADATA_TOOL, "migrate", "--snapshot-local-dir", repo, "--target-host", endpoint,
      "--output",        "json"};
  if (!snapshot.empty()) {
    args.push_back("--snapshot-name");
    args.push_back(snapshot);
  }
  const int code = rfs::test::RunProcess(args, run.Out("metadata"), run.Err("metadata"));
  INFO(run.Logs("metadata"));
  REQUIRE(code == 0);
}

}  // namespace

TEST_CASE("every corpus repository migrates into the target: metadata, then documents",
          "[e2e][corpus]") {
  auto cases = CorpusCases();
  REQUIRE_FALSE(cases.empty());
  for (const auto& c : cases) {
    SECTION(c.label) {
      // The OS 2.11 soft-deletes index holds the one document the matrix test checks; the
      // corpus's OpenSearch 2.11 and the matrix's OS 2.x are read by the same double.
      auto target = rfs::testing::OpenSearchDouble::Start();
      REQUIRE(target.ok());
      MigrationRun run;
      MigrateMetadata(run, c.repo.string(), c.snapshot, (*target)->endpoint());
      for (const auto& [index, docs] : c.expected) {
        INFO(run.Logs("metadata"));
        CHECK(rfs::test::ReadTextFile(run.Out("metadata")).find(index) != std::string::npos);
      }
      RunWorkersToCompletion(run, c.repo.string(), c.snapshot, (*target)->endpoint());
      CheckTarget(**target, c.expected);
    }
  }
}

TEST_CASE("corpus repositories migrate completely in the default mode with 20% of requests failing",
          "[e2e][corpus][faults]") {
  auto cases = CorpusCases();
  REQUIRE_FALSE(cases.empty());
  // Every request may fail, the coordination ones in the target's .migrations_working_state too.
  rfs::testing::FaultOptions faults;
  faults.path_contains = "";
  faults.reject_429 = 0.05;
  faults.unavailable_503 = 0.05;
  faults.reset_before_apply = 0.05;
  faults.reset_after_apply = 0.05;
  for (const auto& c : cases) {
    SECTION(c.label) {
      auto target = rfs::testing::OpenSearchDouble::Start();
      REQUIRE(target.ok());
      MigrationRun run;
      MigrateMetadata(run, c.repo.string(), c.snapshot, (*target)->endpoint());
      (*target)->SetFaults(faults);
      // One document per bulk request, so that even these small repositories meet faults;
      // no --coordinator-db: work items live on the target.
      RunWorkersToCompletion(run, c.repo.string(), c.snapshot, (*target)->endpoint(),
                             {"--documents-per-bulk-request", "1"}, /*default_mode=*/true);
      CheckTarget(**target, c.expected);
    }
  }
}

TEST_CASE("a generated repository migrates completely under faults, many bulks per shard",
          "[e2e][generated][faults]") {
  auto generated = rfs::test::Generate(
      "--indices 2 --shards 2 --docs 3000 --updates 100 --deletes 80 --segments 3 "
      "--routing-fraction 0.1 --seed 61");
  if (!generated) return;
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  rfs::testing::FaultOptions faults;
  faults.reject_429 = 0.05;
  faults.unavailable_503 = 0.05;
  faults.reset_before_apply = 0.05;
  faults.reset_after_apply = 0.05;
  faults.item_failure = 0.02;
  (*target)->SetFaults(faults);
  MigrationRun run;
  RunWorkersToCompletion(run, generated->repo().string(), "", (*target)->endpoint(),
                         {"--documents-per-bulk-request", "100"});
  CheckTarget(**target, ReadExpectedDocs(generated->dir / "expected-docs.ndjson"));
  CHECK((*target)->stats().faults_injected > 0);
}

TEST_CASE("a worker that retries bulks says what fails while it waits",
          "[e2e][generated][faults]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 200 --seed 62");
  REQUIRE(generated);
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  rfs::testing::FaultOptions faults;
  faults.schedule = {{1, rfs::testing::Fault::kUnavailable503},
                     {2, rfs::testing::Fault::kUnavailable503},
                     {3, rfs::testing::Fault::kReject429}};
  (*target)->SetFaults(faults);
  MigrationRun run;
  const int code = rfs::test::RunProcess(
      {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(), "--target-host",
       (*target)->endpoint(), "--coordinator-db", run.dir.File("c.db"), "--max-connections", "1"},
      run.Out("worker"), run.Err("worker"));
  INFO(run.Logs("worker"));
  REQUIRE(code == kExitNoWorkLeft);
  CheckTarget(**target, ReadExpectedDocs(generated->dir / "expected-docs.ndjson"));
  // One event (the next ones come within the 30 s interval), on the worker's JSON lines.
  std::vector<json::object> retrying;
  std::istringstream lines(rfs::test::ReadTextFile(run.Err("worker")));
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("{")) continue;
    json::object event = json::parse(line).as_object();
    if (event.at("event") == "retrying") retrying.push_back(std::move(event));
  }
  REQUIRE(retrying.size() == 1);
  const std::string message(retrying[0].at("message").as_string());
  CHECK(message.starts_with("OpenSearch bulk to " + (*target)->endpoint() +
                            ": bulk requests sent again (unavailable): "));
  CHECK(message.find("503") != std::string::npos);
  CHECK(message.find("1 retry in") != std::string::npos);
  CHECK(retrying[0].at("index").as_string().size() > 0);
}

TEST_CASE("the default mode: workers coordinate in the target's .migrations_working_state index",
          "[e2e][generated][coordination]") {
  // Only --target-host, as users of the Java tool run it: work items live on the target, and the
  // store's clock comes from a cluster that sends no Date header (GET /_cat/health).
  auto generated = rfs::test::Generate(
      "--indices 2 --shards 2 --docs 600 --updates 30 --deletes 20 --routing-fraction 0.1 "
      "--seed 67");
  if (!generated) return;
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  MigrationRun run;
  bool done = false;
  for (int attempt = 0; attempt < 20 && !done; ++attempt) {
    const std::string name = "worker-" + std::to_string(attempt);
    const int code = rfs::test::RunProcess(
        {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(), "--target-host",
         (*target)->endpoint(), "--worker-id", name, "--failed-documents-dir",
         run.dir.File("failed")},
        run.Out(name), run.Err(name));
    INFO(run.Logs(name));
    REQUIRE((code == kExitNoWorkLeft || code == kExitHandoffOrStopped ||
             code == kExitAllLeasedElsewhere));
    done = code == kExitNoWorkLeft;
  }
  REQUIRE(done);
  CheckTarget(**target, ReadExpectedDocs(generated->dir / "expected-docs.ndjson"));
  // The work items are on the target, none in a local file: one per shard (2 indices x 2
  // shards), the one-time shard-setup item, the two records of what the store was set up for
  // (the snapshot and settings, the selection of indices) and the two that say it in words.
  CHECK((*target)->DocumentCount(".migrations_working_state") == 9);
  CHECK((*target)->GetDocument(".migrations_working_state", "shard_setup").has_value());
  CHECK((*target)->GetDocument(".migrations_working_state", "setup_for").has_value());
  CHECK_FALSE(fs::exists(run.dir.File("coordination.sqlite")));
}

// Milliseconds since the epoch of a progress line's "ts" ("2026-01-31T12:34:56.789Z").
int64_t EpochMillis(const std::string& ts) {
  std::tm tm{};
  int millis = 0;
  if (std::sscanf(ts.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &millis) != 7) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + millis;
}

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct WorkerLogEvent {
  int64_t at = 0;
  std::string event;
  std::string shard;  // "index/shard"
};

// The JSON progress lines of one worker's stderr.
std::vector<WorkerLogEvent> ReadWorkerEvents(const std::string& path) {
  std::vector<WorkerLogEvent> out;
  std::istringstream in(rfs::test::ReadTextFile(path));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '{') continue;
    boost::system::error_code ec;
    const json::value v = json::parse(line, ec);
    if (ec || !v.is_object() || !v.as_object().contains("event")) continue;
    const auto& o = v.as_object();
    WorkerLogEvent e;
    e.at = EpochMillis(std::string(o.at("ts").as_string()));
    e.event = std::string(o.at("event").as_string());
    // Work-item events name their shard (index_account names an index only).
    if (o.contains("work_item")) {
      e.shard = std::string(o.at("index").as_string()) + "/" +
                std::to_string(o.at("shard").to_number<int>());
    }
    out.push_back(std::move(e));
  }
  return out;
}

TEST_CASE("a fleet in the default mode finishes with a worker killed every 2 s under 20% faults",
          "[e2e][generated][kill][coordination]") {
  auto generated = rfs::test::Generate(
      "--indices 2 --shards 2 --docs 12000 --doc-size 300 --deletes 50 --segments 3 --seed 81");
  if (!generated) return;
  const auto expected = ReadExpectedDocs(generated->dir / "expected-docs.ndjson");
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  // 20% of every request fails, coordination included: 429s, 503s and connections reset before
  // or after the request was applied; the rest are a little slow, so workers spend time mid-shard.
  rfs::testing::FaultOptions faults;
  faults.path_contains = "";
  faults.reject_429 = 0.08;
  faults.unavailable_503 = 0.06;
  faults.reset_before_apply = 0.03;
  faults.reset_after_apply = 0.03;
  faults.slow = 1.0;
  faults.slow_delay = std::chrono::milliseconds(25);
  (*target)->SetFaults(faults);

  MigrationRun run;
  const char* renewal = std::getenv("RFS_E2E_LEASE_RENEWAL");  // e.g. PT0S for a baseline
  auto start_worker = [&](const std::string& name) {
    return std::make_unique<rfs::test::ChildProcess>(
        std::vector<std::string>{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir",
                                 generated->repo().string(), "--target-host", (*target)->endpoint(),
                                 "--worker-id", name, "--failed-documents-dir",
                                 run.dir.File("failed"), "--initial-lease-duration", "PT4S",
                                 "--lease-renewal-interval", renewal != nullptr ? renewal : "PT1S",
                                 "--documents-per-bulk-request", "50", "--max-connections", "2"},
        run.Out(name), run.Err(name));
  };
  struct Slot {
    std::string name;
    std::unique_ptr<rfs::test::ChildProcess> process;
    int64_t continue_at = 0;  // SIGSTOPped until then
    int64_t restart_at = 0;   // exited; started again then (as a pod restarts after a pause)
  };
  std::vector<Slot> slots(3);
  std::vector<std::string> names;
  int started = 0;
  auto restart = [&](Slot& slot) {
    slot.name = "w" + std::to_string(started++);
    names.push_back(slot.name);
    slot.process = start_worker(slot.name);
    REQUIRE(slot.process->pid() > 0);
  };
  for (auto& slot : slots) restart(slot);

  struct Kill {
    int64_t at;
    std::string worker;
  };
  std::vector<Kill> kills;
  int stops = 0;
  int terms = 0;
  std::mt19937 random(81);
  const int64_t began = NowMillis();
  int64_t next_signal = began + 2000;
  bool done = false;
  int signals = 0;
  const int max_signals = std::getenv("RFS_E2E_NO_SIGNALS") != nullptr ? 0 : 12;
  while (!done && NowMillis() - began < 240'000) {
    for (auto& slot : slots) {
      if (slot.continue_at != 0 && NowMillis() >= slot.continue_at) {
        kill(slot.process->pid(), SIGCONT);
        slot.continue_at = 0;
      }
      if (slot.restart_at != 0) {
        if (NowMillis() >= slot.restart_at) {
          slot.restart_at = 0;
          restart(slot);
        }
        continue;
      }
      if (!slot.process->Exited()) continue;
      const int code = slot.process->Wait();
      INFO(run.Logs(slot.name));
      // A SIGTERM that lands before the worker installed its handler ends it as SIGTERM does
      // any process (it held nothing yet).
      REQUIRE((code == kExitNoWorkLeft || code == kExitHandoffOrStopped ||
               code == kExitAllLeasedElsewhere || code == 128 + SIGKILL || code == 128 + SIGTERM));
      if (code == kExitNoWorkLeft) done = true;
      if (!done) slot.restart_at = NowMillis() + (code == 128 + SIGKILL ? 200 : 500);
    }
    if (!done && signals < max_signals && NowMillis() >= next_signal) {
      std::vector<Slot*> running;
      for (auto& slot : slots) {
        if (slot.restart_at == 0 && !slot.process->Exited() && slot.continue_at == 0) {
          running.push_back(&slot);
        }
      }
      if (!running.empty()) {
        Slot& victim = *running[random() % running.size()];
        ++signals;
        // One of each kind first (a fast machine may finish after a few), then mostly kills.
        const int kind = (signals - 1) % 5;
        if (kind == 1) {
          // Frozen past its lease (4 s), then thawed: it must notice and not write on.
          kill(victim.process->pid(), SIGSTOP);
          victim.continue_at = NowMillis() + 6000;
          ++stops;
        } else if (kind == 2) {
          kill(victim.process->pid(), SIGTERM);
          ++terms;
        } else {
          kills.push_back({NowMillis(), victim.name});
          victim.process->Kill();
        }
        next_signal = NowMillis() + 2000;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(done);
  for (auto& slot : slots) {
    if (slot.restart_at != 0) continue;  // Exited already.
    if (slot.continue_at != 0) kill(slot.process->pid(), SIGCONT);
    const int code = slot.process->Wait();
    INFO(run.Logs(slot.name));
    CHECK((code == kExitNoWorkLeft || code == kExitHandoffOrStopped ||
           code == kExitAllLeasedElsewhere || code == 128 + SIGKILL || code == 128 + SIGTERM));
  }
  const double elapsed_s = static_cast<double>(NowMillis() - began) / 1000;
  // At least one of each: how many fit depends on the machine's speed.
  CHECK(kills.size() >= 1);
  CHECK(stops >= 1);
  CHECK(terms >= 1);
  CheckTarget(**target, expected);

  // Documents sent more than once: what the kills cost.
  uint64_t total = 0;
  uint64_t resent = 0;
  for (const auto& [index, docs] : expected) {
    for (const auto& [id, doc] : docs) {
      auto stored = (*target)->GetDocument(index, id);
      ++total;
      if (stored) resent += stored->writes - 1;
    }
  }
  // How long each killed worker's shard sat without a holder: from the kill to the next
  // acquisition of that shard by anyone.
  std::map<std::string, std::vector<WorkerLogEvent>> logs;
  for (const auto& name : names) logs[name] = ReadWorkerEvents(run.Err(name));
  std::vector<double> idle;
  for (const auto& k : kills) {
    std::string shard;
    for (const auto& e : logs[k.worker]) {
      if (e.at > k.at) break;
      if (e.event == "acquired") shard = e.shard;
      if (e.event == "completed" || e.event == "checkpointed" || e.event == "released") shard = "";
    }
    if (shard.empty()) continue;
    int64_t next = 0;
    for (const auto& [name, events] : logs) {
      for (const auto& e : events) {
        if (e.at > k.at && e.event == "acquired" && e.shard == shard &&
            (next == 0 || e.at < next)) {
          next = e.at;
        }
      }
    }
    if (next != 0) idle.push_back(static_cast<double>(next - k.at) / 1000);
  }
  double idle_max = 0;
  double idle_sum = 0;
  for (double s : idle) {
    idle_max = std::max(idle_max, s);
    idle_sum += s;
  }
  std::cout << "fleet: " << total << " docs in " << elapsed_s << " s, " << names.size()
            << " worker runs, " << kills.size() << " SIGKILL, " << stops
            << " SIGSTOP past the lease, " << terms << " SIGTERM; re-sent " << resent << " docs ("
            << (total > 0 ? 100.0 * static_cast<double>(resent) / static_cast<double>(total) : 0)
            << "%); killed shards idle " << idle.size() << " times, mean "
            << (idle.empty() ? 0 : idle_sum / static_cast<double>(idle.size())) << " s, max "
            << idle_max << " s" << std::endl;
  // A killed holder costs the documents acknowledged since its last heartbeat that reached the
  // store (under 20% faults about half of them do), not the whole shard so far; its shard waits
  // about a lease (4 s, more once leases without progress doubled) plus the time until a worker
  // looks again. The figures are printed above; the bounds only catch a runaway.
  // A holder killed before its first heartbeat doubles the next lease (4 s, 8 s, 16 s...): the
  // bound catches leases that keep growing while the shard moves, as before heartbeats.
  CHECK(resent < total);
  CHECK(idle_max < 60);
}

TEST_CASE("SIGTERM stops a worker gracefully and releases its shard, a second signal exits at once",
          "[e2e][generated][coordination]") {
  auto generated = rfs::test::Generate(
      "--indices 2 --shards 2 --docs 12000 --doc-size 300 --deletes 50 --segments 3 --seed 81");
  if (!generated) return;
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  rfs::testing::FaultOptions faults;
  faults.slow = 1.0;
  faults.slow_delay = std::chrono::milliseconds(50);
  (*target)->SetFaults(faults);
  MigrationRun run;
  auto worker_args = [&](const std::string& name) {
    return std::vector<std::string>{
        RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(), "--target-host",
        (*target)->endpoint(), "--worker-id", name, "--failed-documents-dir",
        run.dir.File("failed"), "--documents-per-bulk-request", "100", "--max-connections", "1",
        // Short, so that the abruptly stopped worker's lease ends soon.
        "--initial-lease-duration", "PT3S"};
  };
  auto wait_for_progress = [&](const std::string& name, rfs::test::ChildProcess& worker) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (rfs::test::ReadTextFile(run.Err(name)).find("\"event\":\"progress\"") ==
               std::string::npos &&
           !worker.Exited() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  };
  {
    rfs::test::ChildProcess worker(worker_args("term"), run.Out("term"), run.Err("term"));
    wait_for_progress("term", worker);
    REQUIRE_FALSE(worker.Exited());
    kill(worker.pid(), SIGTERM);
    const int code = worker.Wait();
    INFO(run.Logs("term"));
    CHECK(code == kExitHandoffOrStopped);
    CHECK(rfs::test::ReadTextFile(run.Err("term")).find("\"event\":\"released\"") !=
          std::string::npos);
    CHECK(rfs::test::ReadTextFile(run.Out("term")).find(": stopped;") != std::string::npos);
  }
  // What the gracefully stopped worker wrote: its released cursor covers all of it.
  const auto expected = ReadExpectedDocs(generated->dir / "expected-docs.ndjson");
  std::vector<std::pair<std::string, std::string>> written_before_stop;
  for (const auto& [index, docs] : expected) {
    for (const auto& [id, doc] : docs) {
      if ((*target)->GetDocument(index, id)) written_before_stop.emplace_back(index, id);
    }
  }
  REQUIRE(!written_before_stop.empty());
  {
    // A second signal does not wait for in-flight requests.
    rfs::test::ChildProcess worker(worker_args("twice"), run.Out("twice"), run.Err("twice"));
    wait_for_progress("twice", worker);
    REQUIRE_FALSE(worker.Exited());
    kill(worker.pid(), SIGTERM);
    // Apart, so that the kernel does not merge the two pending signals into one.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(worker.pid(), SIGTERM);
    CHECK(worker.Wait() == 128 + SIGTERM);
  }
  // The rest is done by the next workers; every document arrives, and the graceful stop re-sent
  // nothing: what the first worker wrote is written once (the second, abrupt stop may cost a
  // resend of what it wrote after its last checkpoint).
  bool done = false;
  for (int attempt = 0; attempt < 20 && !done; ++attempt) {
    const std::string name = "rest-" + std::to_string(attempt);
    const int code = rfs::test::RunProcess(worker_args(name), run.Out(name), run.Err(name));
    INFO(run.Logs(name));
    REQUIRE((code == kExitNoWorkLeft || code == kExitHandoffOrStopped ||
             code == kExitAllLeasedElsewhere));
    done = code == kExitNoWorkLeft;
    if (!done) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  REQUIRE(done);
  CheckTarget(**target, expected);
  size_t resent = 0;
  for (const auto& [index, id] : written_before_stop) {
    auto stored = (*target)->GetDocument(index, id);
    REQUIRE(stored);
    if (stored->writes != 1) ++resent;
  }
  INFO(written_before_stop.size() << " documents written before the graceful stop");
  CHECK(resent == 0);
}

TEST_CASE("workers SIGKILLed mid-shard lose nothing: successors resume from leases and cursors",
          "[e2e][generated][kill]") {
  auto generated = rfs::test::Generate(
      "--indices 2 --shards 2 --docs 6000 --doc-size 400 --deletes 100 --segments 4 --seed 62");
  if (!generated) return;
  const auto expected = ReadExpectedDocs(generated->dir / "expected-docs.ndjson");
  // Every bulk response is slowed down, so that each worker spends a while mid-shard, where it is
  // killed.
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  rfs::testing::FaultOptions faults;
  faults.slow = 1.0;
  faults.slow_delay = std::chrono::milliseconds(25);
  (*target)->SetFaults(faults);

  MigrationRun run;
  const std::string db = run.dir.File("coordination.sqlite");
  // Short leases so that a killed worker's items come free quickly; small bulks so that the
  // acknowledged cursor moves often.
  const std::vector<std::string> extra = {
      "--initial-lease-duration", "PT2S", "--documents-per-bulk-request", "200",
      "--max-connections",        "2"};
  std::mt19937 random(7);
  int kills = 0;
  int finished_runs = 0;
  bool done = false;
  for (int round = 0; round < 60 && !done; ++round) {
    // Two concurrent workers; in the first rounds one of them is killed at a random moment.
    std::vector<std::unique_ptr<rfs::test::ChildProcess>> workers;
    std::vector<std::string> names;
    for (int w = 0; w < 2; ++w) {
      names.push_back("r" + std::to_string(round) + "w" + std::to_string(w));
      workers.push_back(std::make_unique<rfs::test::ChildProcess>(
          WorkerArgs(generated->repo().string(), "", (*target)->endpoint(), db, names.back(),
                     extra),
          run.Out(names.back()), run.Err(names.back())));
      REQUIRE(workers.back()->pid() > 0);
    }
    if (round < 4) {
      // Kill worker 0 a little after it has leased a shard and started writing it.
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (rfs::test::ReadTextFile(run.Err(names[0])).find("\"event\":\"acquired\"") ==
                 std::string::npos &&
             !workers[0]->Exited() && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100 + random() % 200));
      if (!workers[0]->Exited()) {
        workers[0]->Kill();
        ++kills;
      }
    }
    for (size_t w = 0; w < workers.size(); ++w) {
      const int code = workers[w]->Wait();
      if (code == 128 + SIGKILL) continue;
      INFO(run.Logs(names[w]));
      REQUIRE((code == kExitNoWorkLeft || code == kExitHandoffOrStopped ||
               code == kExitAllLeasedElsewhere));
      ++finished_runs;
      if (code == kExitNoWorkLeft) done = true;
    }
    // Everything left may be leased by a killed worker: wait for its lease to run out.
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  REQUIRE(done);
  CHECK(kills > 0);
  CheckTarget(**target, expected);
  // Killed work was redone: some documents were written more than once, none lost.
  uint64_t rewritten = 0;
  for (const auto& [index, docs] : expected) {
    for (const auto& [id, doc] : docs) {
      auto stored = (*target)->GetDocument(index, id);
      if (stored && stored->writes > 1) ++rewritten;
    }
  }
  INFO("documents written more than once: " << rewritten << ", kills: " << kills);
  CHECK(rewritten > 0);
}

TEST_CASE("the embedded default target: two concurrent workers share one output folder",
          "[e2e][generated][embedded]") {
  auto generated =
      rfs::test::Generate("--indices 2 --shards 3 --docs 2000 --updates 50 --deletes 40 --seed 63");
  if (!generated) return;
  MigrationRun run;
  const std::string out = run.dir.File("out");
  std::vector<std::unique_ptr<rfs::test::ChildProcess>> workers;
  for (const char* name : {"a", "b"}) {
    workers.push_back(std::make_unique<rfs::test::ChildProcess>(
        std::vector<std::string>{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir",
                                 generated->repo().string(), "--output-dir", out, "--worker-id",
                                 name},
        run.Out(name), run.Err(name)));
  }
  std::set<int> codes;
  for (size_t w = 0; w < workers.size(); ++w) codes.insert(workers[w]->Wait());
  INFO(run.Logs("a") << run.Logs("b"));
  // One of them saw the last item complete; the other may have stopped while it was leased.
  CHECK(codes.count(kExitNoWorkLeft) == 1);
  CHECK(fs::exists(out + "/.rfs/coordination.sqlite"));
  CheckBulkFiles(run, generated->dir, out);
  // A worker started after everything is done has nothing to do.
  const int late = rfs::test::RunProcess(
      {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(), "--output-dir", out},
      run.Out("late"), run.Err("late"));
  CHECK(late == kExitNoWorkLeft);
}

namespace {

// Three workers migrate a generated snapshot to bulk files, coordinating through the PostgreSQL
// database at `uri` (the server itself or a pooler in front of it, `server_uri`).
void ThreeWorkersThroughPostgres(const std::string& uri, const std::string& server_uri) {
  auto generated =
      rfs::test::Generate("--indices 2 --shards 3 --docs 2000 --updates 50 --deletes 40 --seed 63");
  MigrationRun run;
  const std::string out = run.dir.File("out");
  std::vector<std::unique_ptr<rfs::test::ChildProcess>> workers;
  for (const char* name : {"a", "b", "c"}) {
    workers.push_back(std::make_unique<rfs::test::ChildProcess>(
        std::vector<std::string>{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir",
                                 generated->repo().string(), "--output-dir", out, "--worker-id",
                                 name, "--coordinator-db", uri, "--session-name", "pg"},
        run.Out(name), run.Err(name)));
  }
  std::set<int> codes;
  for (auto& worker : workers) codes.insert(worker->Wait());
  INFO(run.Logs("a") << run.Logs("b") << run.Logs("c"));
  CHECK(codes.count(kExitNoWorkLeft) == 1);
  CHECK_FALSE(fs::exists(out + "/.rfs/coordination.sqlite"));  // the database held the items
  CheckBulkFiles(run, generated->dir, out);
  auto connection = rfs::coordination::PostgresConnection::Open(server_uri);
  REQUIRE(connection.ok());
  auto counts = (*connection)
                    ->Exec(
                        "SELECT COUNT(*), COUNT(*) FILTER (WHERE completed_at_ms IS NULL) "
                        "FROM work_items_pg");
  REQUIRE(counts.ok());
  CHECK(counts->Int(0, 0).value() >= 7);  // shard setup and six shards, at least
  CHECK(counts->Int(0, 1).value() == 0);
}

}  // namespace

TEST_CASE("three workers coordinate through a PostgreSQL database", "[e2e][generated][postgres]") {
  rfs::test::PostgresServer postgres;
  ThreeWorkersThroughPostgres(postgres.uri(), postgres.uri());
}

TEST_CASE("three workers coordinate through PgBouncer in transaction mode",
          "[e2e][generated][postgres][pgbouncer]") {
  rfs::test::PostgresServer postgres;
  // Fewer server connections than workers: their transactions take turns on them.
  rfs::test::PgBouncer pooler(postgres, 2);
  ThreeWorkersThroughPostgres(pooler.uri(), postgres.uri());

  // A connection string the pooler refuses (PgBouncer takes no `options` startup parameter) is
  // an error that says so, not a worker that waits or retries for ever.
  MigrationRun run;
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 10 --seed 64");
  const int code =
      rfs::test::RunProcess({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(),
                             "--output-dir", run.dir.File("out"), "--coordinator-db",
                             pooler.uri() + "?options=-c%20statement_timeout%3D5000"},
                            run.Out("refused"), run.Err("refused"));
  INFO(run.Logs("refused"));
  CHECK(code != 0);
  CHECK(code != kExitNoWorkLeft);
  const std::string said = rfs::test::ReadTextFile(run.Err("refused"));
  CHECK(said.find("unsupported startup parameter") != std::string::npos);
  CHECK(said.find("ALTER ROLE") != std::string::npos);
}

TEST_CASE("DocumentsFromSnapshotMigration reports bad input with its exit codes", "[e2e][cli]") {
  MigrationRun run;
  auto code = [&](std::vector<std::string> args) {
    args.insert(args.begin(), RFS_DOCUMENTS_TOOL);
    return rfs::test::RunProcess(args, run.Out("cli"), run.Err("cli"));
  };
  CHECK(code({"--help"}) == 0);
  CHECK(rfs::test::ReadTextFile(run.Out("cli")).find("--initial-lease-duration") !=
        std::string::npos);
  const std::string out = run.dir.File("out");
  CHECK(code({"--output-dir", out}) == 64);          // no repository
  CHECK(code({"--snapshot-local-dir", out}) == 64);  // no target
  CHECK(code({"--snapshot-local-dir", out, "--output-dir", out, "--initial-lease-duration",
              "10 minutes"}) == 64);
  CHECK(code({"--snapshot-local-dir", out, "--output-dir", out, "--index-allowlist", "regex:("}) ==
        64);
  CHECK(code({"--repo-uri", "s3://bucket/path", "--output-dir", out}) == 64);  // no region
  CHECK(code({"--repo-uri", "ftp://host/path", "--output-dir", out}) == 64);
  CHECK(code({"--snapshot-local-dir", run.dir.File("missing"), "--output-dir", out}) == 5);
  CHECK(code({"--no-such-option"}) == 64);
  const std::string errors = rfs::test::ReadTextFile(run.Err("cli"));
  CHECK(errors.find("'10 minutes' is not an ISO-8601 duration") != std::string::npos);
  CHECK(errors.find("s3://bucket/path needs --s3-region") != std::string::npos);
  CHECK(errors.find("'ftp://host/path' is not supported") != std::string::npos);
}

TEST_CASE(
    "preserve-version: Elasticsearch 6+ and OpenSearch sources go with their _version, "
    "an Elasticsearch 5 index is refused",
    "[e2e][corpus][cli]") {
  auto root = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3");
  if (!root) return;
  for (const char* folder : {"es5_nocomp", "es6_nocomp", "es7_nocomp", "os2_nocomp"}) {
    SECTION(folder) {
      MigrationRun run;
      const std::string out = run.dir.File("out");
      auto documents = [&](bool preserve) {
        std::vector<std::string> args = {RFS_DOCUMENTS_TOOL,
                                         "--snapshot-local-dir",
                                         (*root / folder).string(),
                                         "--snapshot-name",
                                         "snapshot_v2",
                                         "--output-dir",
                                         out};
        if (preserve) args.push_back("--preserve-version");
        return rfs::test::RunProcess(args, run.Out("docs"), run.Err("docs"));
      };
      const int code = documents(true);
      INFO(run.Logs("docs"));
      if (std::string(folder) == "es5_nocomp") {
        // Refused before any work: nothing written, the index and the way out named.
        CHECK(code == 64);
        CHECK(run.Logs("docs").find("--preserve-version: index simple_index was created by "
                                    "Elasticsearch 5.6.16") != std::string::npos);
        CHECK_FALSE(fs::exists(fs::path(out) / "simple_index"));
        // Without the option it migrates as before.
        CHECK(documents(false) == kExitNoWorkLeft);
        continue;
      }
      REQUIRE(code == kExitNoWorkLeft);
      // The bulk files carry each document's version (1: each was indexed once) as an external
      // version, for a replay into any target.
      size_t versioned = 0;
      for (const auto& entry : fs::recursive_directory_iterator(fs::path(out) / "simple_index")) {
        if (!entry.is_regular_file() || entry.path().extension() != ".ndjson") continue;
        std::istringstream lines(rfs::test::ReadTextFile(entry.path().string()));
        for (std::string action, source;
             std::getline(lines, action) && std::getline(lines, source);) {
          const auto parsed = json::parse(action).at("index").as_object();
          CHECK(parsed.at("version").to_number<int64_t>() == 1);
          CHECK(parsed.at("version_type").as_string() == "external");
          ++versioned;
        }
      }
      CHECK(versioned == 2);
    }
  }
}

TEST_CASE("a shard split into parts is migrated by several workers at once, exactly",
          "[e2e][generated][split]") {
  auto generated = rfs::test::Generate(
      "--indices 1 --shards 2 --docs 6000 --updates 100 --deletes 80 --segments 3 --seed 64");
  MigrationRun run;
  const std::string out = run.dir.File("out");
  std::vector<std::unique_ptr<rfs::test::ChildProcess>> workers;
  for (const char* name : {"a", "b", "c", "d"}) {
    workers.push_back(std::make_unique<rfs::test::ChildProcess>(
        std::vector<std::string>{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir",
                                 generated->repo().string(), "--output-dir", out, "--worker-id",
                                 name, "--split-shard-bytes", "100000"},
        run.Out(name), run.Err(name)));
  }
  std::multiset<int> codes;
  for (auto& worker : workers) codes.insert(worker->Wait());
  INFO(run.Logs("a") << run.Logs("b") << run.Logs("c") << run.Logs("d"));
  CHECK(codes.count(kExitNoWorkLeft) >= 1);
  CheckBulkFiles(run, generated->dir, out);
  // The parts: disjoint ranges covering each shard, every one complete, more than one worker
  // took parts.
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open((out + "/.rfs/coordination.sqlite").c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT id, completed_at_ms IS NOT NULL FROM work_items", -1,
                             &stmt, nullptr) == SQLITE_OK);
  std::map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> parts;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    const std::string id = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    CHECK(sqlite3_column_int(stmt, 1) == 1);
    auto parsed = rfs::coordination::WorkItemId::Parse(id);
    if (!parsed.ok()) continue;  // the shard-setup item
    if (parsed->ending_cursor) {
      parts[parsed->shard].emplace_back(parsed->starting_cursor, *parsed->ending_cursor);
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  REQUIRE(parts.size() == 2);
  for (auto& [shard, ranges] : parts) {
    std::sort(ranges.begin(), ranges.end());
    CHECK(ranges.size() >= 2);
    CHECK(ranges.front().first == 0);
    for (size_t i = 1; i < ranges.size(); ++i) {
      // Successors of a part start inside it; the parts themselves tile the shard.
      CHECK(ranges[i].first <= ranges[i - 1].second);
    }
  }
  int workers_with_items = 0;
  for (const char* name : {"a", "b", "c", "d"}) {
    workers_with_items +=
        rfs::test::ReadTextFile(run.Err(name)).find("\"event\":\"completed\"") != std::string::npos
            ? 1
            : 0;
  }
  CHECK(workers_with_items >= 2);
}

// The generator's expected documents and SnapshotInspector's NDJSON, keyed by index and _id.
std::map<std::string, json::value> DocsByKey(const std::string& ndjson_path) {
  std::map<std::string, json::value> docs;
  std::ifstream in(ndjson_path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json::value doc = json::parse(line);
    const std::string key =
        std::string(doc.at("_index").as_string()) + "/" + std::string(doc.at("_id").as_string());
    docs.emplace(key, std::move(doc));
  }
  return docs;
}

TEST_CASE("zstd sources: SnapshotInspector and a worker read ES 8.14+ and OpenSearch zstd exactly",
          "[e2e][generated][zstd]") {
#ifndef RFS_INSPECTOR_TOOL
  FAIL("the SnapshotInspector tool is not part of this build");
#define RFS_INSPECTOR_TOOL ""
#endif
  for (const char* codec :
       {"zstd814_best_speed", "zstd814_best_compression", "zstd", "zstd_no_dict"}) {
    SECTION(codec) {
      auto generated = rfs::test::Generate(
          std::string("--indices 2 --shards 2 --docs 600 --updates 30 --deletes 20 --nested 3 "
                      "--segments 2 --large-docs 2 --compress-metadata true "
                      "--metadata-compressor zstd --seed 71 --codec ") +
          codec);
      if (!generated) return;
      MigrationRun run;
      const std::string repo = generated->repo().string();
      const int inspect = rfs::test::RunProcess(
          {RFS_INSPECTOR_TOOL, "docs", "--snapshot-local-dir", repo, "--snapshot-name", "snap-1"},
          run.Out("inspect"), run.Err("inspect"));
      INFO(rfs::test::ReadTextFile(run.Err("inspect")));
      REQUIRE(inspect == 0);
      const auto expected = DocsByKey((generated->dir / "expected-docs.ndjson").string());
      const auto read = DocsByKey(run.Out("inspect"));
      REQUIRE(expected.size() > 500);
      CHECK(read.size() == expected.size());
      for (const auto& [key, doc] : expected) {
        INFO("document " << key);
        auto it = read.find(key);
        REQUIRE(it != read.end());
        CHECK(it->second == doc);
      }

      const std::string out = run.dir.File("out");
      const int code = rfs::test::RunProcess(
          {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo, "--output-dir", out},
          run.Out("worker"), run.Err("worker"));
      INFO(run.Logs("worker"));
      CHECK(code == kExitNoWorkLeft);
      CheckBulkFiles(run, generated->dir, out);
    }
  }
}

TEST_CASE(
    "SnapshotInspector info refuses a snapshot whose index-N and snap-*.dat disagree, as docs",
    "[e2e][corpus][cli]") {
  auto root = rfs::test::CorpusPath("es-snapshots");
  if (!root) return;
  MigrationRun run;
  int runs = 0;
  std::string out, err;  // the last run's
  auto inspector = [&](std::vector<std::string> args) {
    args.insert(args.begin(), RFS_INSPECTOR_TOOL);
    const std::string name = "inspect-" + std::to_string(++runs);
    const int code = rfs::test::RunProcess(args, run.Out(name), run.Err(name));
    out = rfs::test::ReadTextFile(run.Out(name));
    err = rfs::test::ReadTextFile(run.Err(name));
    return code;
  };
  auto damage = [&](const std::string& name, const std::string& blob, const std::string& from,
                    const std::string& to) {
    const fs::path copy = run.dir.File(name);
    fs::copy(*root / name, copy, fs::copy_options::recursive);
    std::string text = rfs::test::ReadTextFile((copy / blob).string());
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    std::ofstream(copy / blob, std::ios::binary | std::ios::trunc) << text;
    return copy.string();
  };

  SECTION("the older of two snapshots no longer listed under its index: marked, exit 5") {
    // The index both snapshots hold lists only the first one's uuid (one changed character).
    const std::string repo =
        damage("ES_7_10_Double", "index-1", R"("7_1RHMshSc6c0cuzX1NCDg","MLvfrD_pTnO_XKWl4qrhOw")",
               R"("7_1RHMshSc6c0cuzX1NCDg","MLvfrD_pTnO_XKWl4qrhOx")");
    CHECK(inspector({"docs", "--snapshot-local-dir", repo, "--snapshot-name",
                     "global_state_snapshot_2"}) == 5);
    // info of the sound snapshot still lists the damaged one: named so, and exit 5.
    CHECK(inspector({"info", "--snapshot-local-dir", repo, "--snapshot-name",
                     "global_state_snapshot"}) == 5);
    INFO(out << err);
    CHECK(out.find("global_state_snapshot_2  uuid=MLvfrD_pTnO_XKWl4qrhOw  state=SUCCESS\n"
                   "    DAMAGED: index-1 of ") != std::string::npos);
    CHECK(err.find("1 snapshot(s) of the repository cannot be read (see DAMAGED above): "
                   "global_state_snapshot_2") != std::string::npos);
    CHECK(inspector({"info", "--snapshot-local-dir", repo, "--snapshot-name",
                     "global_state_snapshot", "--json"}) == 5);
    const auto json_out = json::parse(out).as_object();
    CHECK(json_out.at("damaged_snapshots") == json::array{"global_state_snapshot_2"});
    // The newest (no name): the damaged one itself.
    CHECK(inspector({"info", "--snapshot-local-dir", repo}) == 5);
  }
  SECTION("a repository's only snapshot whose indices key is changed: exit 5, not 0 indices") {
    const std::string repo =
        damage("ES_7_10_Single", "index-1", R"("indices":{)", R"("indicez":{)");
    CHECK(inspector({"info", "--snapshot-local-dir", repo}) == 5);
    CHECK(err.find("disagree on the indices") != std::string::npos);
    CHECK(inspector({"docs", "--snapshot-local-dir", repo, "--snapshot-name",
                     "global_state_snapshot"}) == 5);
  }
  SECTION("intact, both read") {
    CHECK(inspector({"info", "--snapshot-local-dir", (*root / "ES_7_10_Double").string()}) == 0);
    INFO(out << err);
    CHECK(out.find("DAMAGED") == std::string::npos);
  }
}

namespace {

// (action, _id) of every bulk line of the files under `folder`, files in name order.
std::vector<std::pair<std::string, std::string>> BulkActions(const fs::path& folder) {
  std::vector<fs::path> files;
  if (fs::exists(folder)) {
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
      if (entry.path().extension() == ".ndjson" &&
          entry.path().string().find("/.rfs/") == std::string::npos) {
        files.push_back(entry.path());
      }
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& file : files) {
    std::istringstream lines(rfs::test::ReadTextFile(file.string()));
    std::string line;
    while (std::getline(lines, line)) {
      const auto value = json::parse(line);
      const auto& [action, meta] = *value.as_object().begin();
      out.emplace_back(std::string(action), std::string(meta.at("_id").as_string()));
      if (action != "delete") std::getline(lines, line);  // its source
    }
  }
  return out;
}

}  // namespace

TEST_CASE("delta runs into the embedded target write only what changed, in a folder of their own",
          "[e2e][corpus][delta]") {
  auto root = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3");
  if (!root) return;
  for (const char* name : {"es1_nocomp", "es7_nocomp", "os3_nocomp"}) {
    INFO(name);
    const std::string repo = (*root / name).string();
    MigrationRun run;
    int runs = 0;
    std::string err;  // the last run's
    auto tool = [&](std::vector<std::string> args) {
      args.insert(args.begin(), {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo});
      const std::string name = "tool-" + std::to_string(++runs);
      const int code = rfs::test::RunProcess(args, run.Out(name), run.Err(name));
      err = rfs::test::ReadTextFile(run.Err(name));
      return code;
    };
    const std::string full = run.dir.File("full"), delta = run.dir.File("delta"),
                      back = run.dir.File("back");
    REQUIRE(tool({"--snapshot-name", "snapshot_v1", "--output-dir", full}) == kExitNoWorkLeft);
    CHECK(BulkActions(full) == std::vector<std::pair<std::string, std::string>>{{"index", "1"}});
    // Into the full run's folder, the delta is refused by the folder's store.
    CHECK(tool({"--snapshot-name", "snapshot_v2", "--previous-snapshot-name", "snapshot_v1",
                "--output-dir", full}) != kExitNoWorkLeft);
    // A store elsewhere would let it overwrite the full run's files: a usage error.
    CHECK(tool({"--snapshot-name", "snapshot_v2", "--previous-snapshot-name", "snapshot_v1",
                "--output-dir", delta, "--coordinator-db", run.dir.File("elsewhere.sqlite")}) ==
          64);
    REQUIRE(tool({"--snapshot-name", "snapshot_v2", "--previous-snapshot-name", "snapshot_v1",
                  "--output-dir", delta}) == kExitNoWorkLeft);
    INFO(err);
    CHECK(BulkActions(delta) == std::vector<std::pair<std::string, std::string>>{{"index", "2"}});
    // The way back (a "previous" snapshot newer than the one migrated) would delete doc 2, added
    // since: refused as a usage error, by the snapshots' own start times, before anything is
    // written; in every delta mode.
    CHECK(tool({"--snapshot-name", "snapshot_v1", "--previous-snapshot-name", "snapshot_v2",
                "--output-dir", back}) == 64);
    CHECK(err.find("--previous-snapshot-name 'snapshot_v2' started at") != std::string::npos);
    CHECK(BulkActions(back).empty());
    CHECK(tool({"--snapshot-name", "snapshot_v1", "--previous-snapshot-name", "snapshot_v2",
                "--delta-mode", "UPDATES_ONLY", "--output-dir", back}) == 64);
    // The same snapshot twice, by name or as the newest: a usage error too.
    CHECK(tool({"--snapshot-name", "snapshot_v2", "--previous-snapshot-name", "snapshot_v2",
                "--output-dir", back}) == 64);
    CHECK(err.find("names the snapshot to migrate, 'snapshot_v2'") != std::string::npos);
    CHECK(tool({"--previous-snapshot-name", "snapshot_v2", "--output-dir", back}) == 64);
    CHECK(err.find("names snapshot 'snapshot_v2', the snapshot being migrated") !=
          std::string::npos);
    CHECK(BulkActions(back).empty());
    // RfsWorker refuses the way back before its store or the target is touched.
    const std::string worker_out = run.dir.File("worker");
    CHECK(rfs::test::RunProcess(
              {RFS_WORKER_TOOL, "--snapshot-local-dir", repo, "--snapshot-name", "snapshot_v1",
               "--previous-snapshot-name", "snapshot_v2", "--output-dir", worker_out},
              run.Out("worker-1"), run.Err("worker-1")) == 64);
    CHECK(
        rfs::test::ReadTextFile(run.Err("worker-1")).find("a delta goes from an older snapshot") !=
        std::string::npos);
    CHECK_FALSE(fs::exists(fs::path(worker_out) / ".rfs" / "coordination.sqlite"));
    CHECK(rfs::test::RunProcess(
              {RFS_WORKER_TOOL, "--snapshot-local-dir", repo, "--snapshot-name", "snapshot_v2",
               "--previous-snapshot-name", "snapshot_v2", "--output-dir", worker_out},
              run.Out("worker-2"), run.Err("worker-2")) == 64);
  }
}

TEST_CASE("a trial run migrates at most N documents of each shard into prefixed indices",
          "[e2e][generated][trial]") {
  auto generated = rfs::test::Generate("--indices 2 --shards 2 --docs 400 --seed 83");
  if (!generated) return;
  const std::string repo = generated->repo().string();
  MigrationRun run;
  auto tool = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo});
    return rfs::test::RunProcess(args, run.Out("tool"), run.Err("tool"));
  };
  const std::string out = run.dir.File("trial");
  REQUIRE(tool({"--output-dir", out, "--max-docs-per-shard", "7"}) == kExitNoWorkLeft);
  INFO(run.Logs("tool"));
  CHECK(run.Logs("tool").find("TRIAL run: at most 7 documents of each shard into indices prefixed "
                              "'trial-'") != std::string::npos);
  // OUT/<index>/<shard>/*.ndjson: 7 documents from each of the 4 shards, all in trial- indices.
  std::map<std::string, size_t> per_shard;
  for (const auto& entry : fs::recursive_directory_iterator(out)) {
    if (entry.path().extension() != ".ndjson" ||
        entry.path().string().find("/.rfs/") != std::string::npos) {
      continue;
    }
    const std::string index = entry.path().parent_path().parent_path().filename().string();
    CHECK(index.starts_with("trial-"));
    std::istringstream lines(rfs::test::ReadTextFile(entry.path().string()));
    for (std::string action, source; std::getline(lines, action) && std::getline(lines, source);) {
      CHECK(json::parse(action).at("index").at("_index").as_string() == index.c_str());
      ++per_shard[index + "/" + entry.path().parent_path().filename().string()];
    }
  }
  CHECK(per_shard.size() == 4);
  // Accounted per source index: 14 read (7 of each of its 2 shards), all written.
  const std::string logs = run.Logs("tool");
  size_t accounted = 0;
  for (size_t at = logs.find(": 14 read, 14 written, 0 rejected, 0 not convertible");
       at != std::string::npos;
       at = logs.find(": 14 read, 14 written, 0 rejected, 0 not convertible", at + 1)) {
    ++accounted;
  }
  CHECK(accounted == 2);
  for (const auto& [shard, count] : per_shard) {
    INFO(shard);
    CHECK(count == 7);
  }
  // The trial's store takes no full run, nor a trial with other limits; a bad prefix is a usage
  // error.
  CHECK(tool({"--output-dir", out}) == 64);
  CHECK(tool({"--output-dir", out, "--max-docs-per-shard", "8"}) == 64);
  CHECK(tool({"--output-dir", run.dir.File("bad"), "--max-docs-per-shard", "1",
              "--target-index-prefix", "Trial-"}) == 64);
  CHECK(tool({"--output-dir", run.dir.File("bad"), "--max-docs-per-shard", "1",
              "--previous-snapshot-name", "x"}) == 64);
  // MetadataMigration makes the trial's indices, prefixed, and no template.
  REQUIRE(rfs::test::RunProcess({RFS_METADATA_TOOL, "migrate", "--snapshot-local-dir", repo,
                                 "--output-dir", out, "--target-index-prefix", "trial-"},
                                run.Out("metadata"), run.Err("metadata")) == 0);
  size_t indices = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(out) / ".rfs/metadata/index")) {
    CHECK(entry.path().filename().string().starts_with("trial-"));
    ++indices;
  }
  CHECK(indices == 2);
  CHECK_FALSE(fs::exists(fs::path(out) / ".rfs/metadata/index_template"));

  // RfsWorker runs a trial end to end: its verify phase expects the first N of each shard in
  // the prefixed indices, and its summary says it was a trial.
  const std::string worker_out = run.dir.File("worker-trial");
  const int worker = rfs::test::RunProcess(
      {RFS_WORKER_TOOL, "--snapshot-local-dir", repo, "--output-dir", worker_out,
       "--max-docs-per-shard", "5", "--target-index-prefix", "try-"},
      run.Out("worker"), run.Err("worker"));
  INFO(run.Logs("worker"));
  CHECK(worker == 0);
  CHECK(run.Logs("worker").find("TRIAL run: at most 5 documents of each shard into indices "
                                "prefixed 'try-'") != std::string::npos);
  CHECK(run.Logs("worker").find("expected 10, migrated 10") != std::string::npos);
}

TEST_CASE("RfsWorker ends COMPLETED_WITH_FINDINGS when documents could not be migrated",
          "[e2e][generated]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 20 --seed 91");
  if (!generated) return;
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  // A strict mapping without the documents' fields: the target refuses every document for good.
  const ExpectedDocs expected = ReadExpectedDocs(generated->dir / "expected-docs.ndjson");
  REQUIRE(expected.size() == 1);
  for (const auto& [index, docs] : expected) {
    REQUIRE((*target)
                ->CreateIndex(index, R"({"mappings":{"dynamic":"strict","properties":{)"
                                     R"("rfs_absent":{"type":"keyword"}}}})")
                .ok());
  }
  MigrationRun run;
  const int code = rfs::test::RunProcess(
      {RFS_WORKER_TOOL, "--snapshot-local-dir", generated->repo().string(), "--target-host",
       (*target)->endpoint(), "--coordinator-db", run.dir.File("records.sqlite"),
       "--failed-documents-dir", run.dir.File("failed")},
      run.Out("worker"), run.Err("worker"));
  const std::string logs = run.Logs("worker");
  INFO(logs);
  CHECK(code == 6);
  CHECK(logs.find("every phase COMPLETED_WITH_FINDINGS") != std::string::npos);
  CHECK(logs.find(R"("outcome":"COMPLETED_WITH_FINDINGS")") != std::string::npos);
  CHECK(logs.find("every phase COMPLETED:") == std::string::npos);
}

TEST_CASE("the tools load the PostgreSQL client only when a store uses it",
          "[e2e][cli][postgres]") {
  // libpq and the twenty libraries it brings took a third of each tool's start (about 3 ms) when
  // every tool linked it. The dynamic loader's own log says what a process loaded.
  MigrationRun run;
  int runs = 0;
  std::string last_log;
  auto loads_libpq = [&](std::vector<std::string> args, int expected_exit) {
    args.insert(args.begin(), {"/usr/bin/env", "LD_DEBUG=libs"});
    const std::string name = "ld-" + std::to_string(++runs);
    CHECK(rfs::test::RunProcess(args, run.Out(name), run.Err(name)) == expected_exit);
    last_log = rfs::test::ReadTextFile(run.Err(name));
    REQUIRE(last_log.find("calling init:") != std::string::npos);  // the log is there at all
    // Initialized, not only looked for: a library the loader found and ran.
    std::istringstream lines(last_log);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("calling init:") != std::string::npos && line.ends_with("/libpq.so.5")) {
        return true;
      }
    }
    return false;
  };
  std::vector<std::string> tools = {RFS_DOCUMENTS_TOOL, RFS_METADATA_TOOL, RFS_INSPECTOR_TOOL};
#ifdef RFS_WORKER_TOOL
  tools.push_back(RFS_WORKER_TOOL);
#endif
#ifdef RFS_CONSOLE_TOOL
  tools.push_back(RFS_CONSOLE_TOOL);
#endif
#ifdef RFS_CREATE_SNAPSHOT_TOOL
  tools.push_back(RFS_CREATE_SNAPSHOT_TOOL);
#endif
  for (const std::string& tool : tools) {
    INFO(tool);
    REQUIRE_FALSE(tool.empty());
    CHECK_FALSE(loads_libpq({tool, "--help"}, 0));
  }
  // A worker told to coordinate through PostgreSQL loads it, and names the server it could not
  // reach with the exit code of an unreachable store.
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 20 --seed 64");
  const std::string unreachable =
      "postgresql://postgres@127.0.0.1:" + std::to_string(rfs::test::FreeLoopbackPort()) +
      "/postgres?connect_timeout=5";
  CHECK(loads_libpq({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(),
                     "--output-dir", run.dir.File("out"), "--coordinator-db", unreachable},
                    rfs::core::kExitFailure));
  CHECK(last_log.find("cannot connect to the server") != std::string::npos);
}
