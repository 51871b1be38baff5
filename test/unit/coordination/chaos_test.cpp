// The coordination chaos test: kWorkers chaos_worker processes share one SQLite file holding
// 66 shard work items; the test SIGKILLs random workers at random moments (mid-transaction,
// mid-checkpoint, mid-batch) and restarts them, and freezes others with SIGSTOP past their
// lease, until every item is done. Then it checks, from
// the workers' audit logs (one file per worker process) and the store itself:
//   - every item (initial and successor) is complete, and nothing else is in the store;
//   - no two grants of one item overlap in time (store clock), generations only grow;
//   - every write a worker made for an item fell inside that worker's lease;
//   - each shard's successor chain is consistent: cursors strictly increase from 0, each link was
//     checkpointed by a grant whose writes cover exactly the link's range, and the last link's
//     grant completed the shard at its end cursor.
// The logs are parsed strictly (ReadAuditLogs): a worker SIGKILLed in the middle of a write() can
// leave its last line cut, which is reported with its offset and set aside; any other line that
// does not parse is the log's fault, reported as such. So a failed chain check means the store.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include "rfs/console/console_server.hpp"
#include "rfs/coordination/console_work_coordinator.hpp"
#include "rfs/coordination/postgres_work_coordinator.hpp"
#include "rfs/coordination/sqlite_work_coordinator.hpp"

#include "support/pgbouncer.hpp"
#include "support/postgres_server.hpp"
#include "support/temp_dir.hpp"
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

using namespace std::chrono_literals;
using rfs::coordination::WorkItemId;

constexpr int kWorkers = 8;
constexpr int kIndices = 6;
constexpr int kShardsPerIndex = 11;       // 66 initial work items.
constexpr uint64_t kDocsPerShard = 1000;  // As in chaos_worker.cpp.
constexpr int kLeaseMs = 150;

pid_t Spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  REQUIRE(rc == 0);
  return pid;
}

struct Grant {
  std::string worker;
  int64_t generation = 0;
  int64_t start = 0;
  int64_t end = 0;
  // The start on the worker's own clock. The store-clock start is the upper end of the store
  // time estimate (up to a round trip after the worker's reading), so a worker's first write
  // may come before it.
  int64_t local_start = 0;
};

struct Write {
  std::string event;
  std::string worker;
  std::string item;
  int64_t generation = 0;
  int64_t at = 0;
  std::string a;  // WORK: from; CHECKPOINT: successor; COMPLETE: end cursor.
  std::string b;  // WORK: to.
};

struct StoredItem {
  bool completed = false;
  std::vector<std::string> successors;
  int64_t generation = 0;
};

// Every worker's audit log (chaos_worker.cpp: <worker>.log, one line per event, each written by
// one write() ending in '\n'), parsed strictly.
struct AuditLogs {
  std::map<std::string, std::vector<Grant>> grants;           // Item -> grants in log order.
  std::map<std::pair<std::string, int64_t>, Grant> grant_of;  // (item, generation) -> grant.
  std::vector<Write> writes;
  // "<file> at offset <n>: <text>": a last line without its newline, the write() a SIGKILL cut.
  // Set aside (it may even parse: "WORK ... 0 2" cut from "... 0 25"): not a fault.
  std::vector<std::string> torn;
  // The same for any other line that does not parse, or names another worker than its file's,
  // or repeats a grant: the log's fault, never to be taken for the store's.
  std::vector<std::string> damaged;
};

bool Number(std::string_view text, int64_t& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && error == std::errc() && end == text.data() + text.size();
}

AuditLogs ReadAuditLogs(const std::filesystem::path& dir) {
  AuditLogs logs;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    const std::string worker = file.stem().string();
    std::ifstream in(file, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t offset = 0; offset < text.size();) {
      const size_t newline = text.find('\n', offset);
      const std::string line =
          text.substr(offset, newline == std::string::npos ? std::string::npos : newline - offset);
      const std::string where =
          file.filename().string() + " at offset " + std::to_string(offset) + ": " + line;
      offset = newline == std::string::npos ? text.size() : newline + 1;
      if (newline == std::string::npos) {
        logs.torn.push_back(where);
        continue;
      }
      // Fields split at single spaces, every one of them checked.
      std::vector<std::string_view> f;
      for (size_t from = 0; from <= line.size();) {
        const size_t space = std::min(line.find(' ', from), line.size());
        f.emplace_back(std::string_view(line).substr(from, space - from));
        from = space + 1;
      }
      const std::string_view event = f[0];
      const size_t want = event == "ACQUIRE"                             ? 8
                          : event == "WORK"                              ? 7
                          : event == "CHECKPOINT" || event == "COMPLETE" ? 6
                                                                         : 0;
      bool ok = want != 0 && f.size() == want && f[1] == worker && !f[2].empty();
      int64_t n[5] = {};
      if (ok && event == "ACQUIRE") {
        for (int i = 0; i < 5; ++i) ok = ok && Number(f[3 + i], n[i]);
        if (ok) {
          const Grant g{worker, n[0], n[1], n[2], n[4]};
          ok = logs.grant_of.emplace(std::make_pair(std::string(f[2]), g.generation), g).second;
          if (ok) logs.grants[std::string(f[2])].push_back(g);
        }
      } else if (ok) {
        ok = Number(f[3], n[0]) && Number(f[4], n[1]);
        // WORK: from and to cursors; COMPLETE: the end cursor; CHECKPOINT: the successor's id.
        if (event != "CHECKPOINT") ok = ok && Number(f[5], n[2]);
        if (event == "WORK") ok = ok && Number(f[6], n[3]);
        if (ok) {
          logs.writes.push_back(Write{std::string(event), worker, std::string(f[2]), n[0], n[1],
                                      std::string(f[5]),
                                      event == "WORK" ? std::string(f[6]) : std::string()});
        }
      }
      if (!ok) logs.damaged.push_back(where);
    }
  }
  return logs;
}

std::map<std::string, StoredItem> ReadStore(const std::string& path) {
  std::map<std::string, StoredItem> out;
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db,
                             "SELECT id, completed_at_ms IS NOT NULL, successors, generation "
                             "FROM work_items",
                             -1, &stmt, nullptr) == SQLITE_OK);
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    StoredItem item;
    item.completed = sqlite3_column_int(stmt, 1) != 0;
    std::stringstream successors(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 2)));
    for (std::string s; std::getline(successors, s, ',');) item.successors.push_back(s);
    item.generation = sqlite3_column_int64(stmt, 3);
    out[reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))] = item;
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

}  // namespace

// A store the chaos workers share: the argument chaos_worker opens it with, an observer
// coordinator on it, and a reader of every item's record.
struct ChaosStore {
  std::string worker_argument;
  std::unique_ptr<rfs::coordination::IWorkCoordinator> observer;
  std::function<std::map<std::string, StoredItem>()> read;
};

std::map<std::string, StoredItem> ReadPostgres(const std::string& uri) {
  std::map<std::string, StoredItem> out;
  auto connection = rfs::coordination::PostgresConnection::Open(uri);
  REQUIRE(connection.ok());
  auto rows =
      (*connection)
          ->Exec("SELECT id, completed_at_ms IS NOT NULL, successors, generation FROM work_items");
  REQUIRE(rows.ok());
  for (int row = 0; row < rows->rows(); ++row) {
    StoredItem item;
    item.completed = rows->Text(row, 1) == "t";
    std::stringstream successors{std::string(rows->Text(row, 2))};
    for (std::string s; std::getline(successors, s, ',');) item.successors.push_back(s);
    item.generation = rows->Int(row, 3).value();
    out[std::string(rows->Text(row, 0))] = item;
  }
  return out;
}

// Failed audit logs are kept beside the build (the test's folder goes with it), to be read.
void KeepAuditLogs(const std::string& audit_dir) {
  static bool kept = false;
  if (kept) return;
  kept = true;
  const std::filesystem::path to =
      std::filesystem::path(RFS_BINARY_DIR) / ("chaos-audit-" + std::to_string(::getpid()));
  std::error_code error;
  std::filesystem::copy(audit_dir, to, std::filesystem::copy_options::overwrite_existing, error);
  WARN("the audit logs are kept in " << to.string() << (error ? " (copy failed)" : ""));
}

// `audit_dir`: a folder for the workers' logs, one file per worker process.
void RunChaos(ChaosStore& store, const std::string& audit_dir) {
  std::filesystem::create_directories(audit_dir);
  const auto started = std::chrono::steady_clock::now();
  auto& observer = *store.observer;
  REQUIRE(observer.Setup().ok());
  std::vector<std::string> initial;
  for (int index = 0; index < kIndices; ++index) {
    for (uint32_t shard = 0; shard < kShardsPerIndex; ++shard) {
      initial.push_back(WorkItemId{"index-" + std::to_string(index), shard, 0}.ToString());
      REQUIRE(*observer.CreateUnassignedWorkItem(initial.back(), 0));
    }
  }

  std::mt19937_64 rng(Catch::rngSeed() + 17);
  int spawned = 0;
  auto start_worker = [&] {
    ++spawned;
    // A log of its own: a line cut by a SIGKILL cannot have another worker's glued to it.
    const std::string worker = "w" + std::to_string(spawned);
    return Spawn({RFS_CHAOS_WORKER, store.worker_argument, audit_dir + "/" + worker + ".log",
                  worker, std::to_string(kLeaseMs), std::to_string(rng())});
  };
  std::vector<pid_t> pids(kWorkers);
  for (auto& pid : pids) pid = start_worker();

  int kills = 0;
  int lease_exits = 0;
  int freezes = 0;
  std::map<pid_t, std::chrono::steady_clock::time_point> frozen;  // Worker -> when to wake it.
  bool done = false;
  const auto deadline = std::chrono::steady_clock::now() + 90s;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(2, 40)(rng)));
    // Reap workers that exited: those that lost a lease (2) are restarted like killed ones.
    for (auto& pid : pids) {
      int status = 0;
      if (pid > 0 && waitpid(pid, &status, WNOHANG) == pid) {
        INFO("worker exit status " << status);
        REQUIRE(WIFEXITED(status));
        REQUIRE(WEXITSTATUS(status) != 1);
        if (WEXITSTATUS(status) == 2) {
          ++lease_exits;
          pid = start_worker();
        } else {
          pid = 0;  // Found no work left.
        }
      }
    }
    auto incomplete = observer.CountIncompleteWorkItems();
    REQUIRE(incomplete.ok());
    if (*incomplete == 0) {
      done = true;
      break;
    }
    // Wake the frozen workers whose time has come.
    for (auto it = frozen.begin(); it != frozen.end();) {
      if (std::chrono::steady_clock::now() < it->second) {
        ++it;
        continue;
      }
      ::kill(it->first, SIGCONT);
      it = frozen.erase(it);
    }
    pid_t& victim = pids[std::uniform_int_distribution<int>(0, kWorkers - 1)(rng)];
    if (victim > 0 && !frozen.contains(victim) &&
        std::uniform_int_distribution<int>(0, 5)(rng) == 0) {
      // Freeze one instead (a GC pause, a stalled VM) for longer than a first lease: on waking
      // it must notice that its lease is gone, and stop writing.
      ::kill(victim, SIGSTOP);
      frozen[victim] = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(std::uniform_int_distribution<int>(200, 400)(rng));
      ++freezes;
      continue;
    }
    // Kill one at random and start a fresh worker (a new id, as after a real crash).
    if (victim > 0) {
      frozen.erase(victim);
      ::kill(victim, SIGKILL);
      int status = 0;
      REQUIRE(waitpid(victim, &status, 0) == victim);
      ++kills;
    }
    victim = start_worker();
  }
  for (const auto& [pid, until] : frozen) ::kill(pid, SIGCONT);
  // Let the survivors notice there is nothing left, then stop any straggler.
  for (pid_t pid : pids) {
    if (pid <= 0) continue;
    int status = 0;
    for (int i = 0; i < 200 && waitpid(pid, &status, WNOHANG) == 0; ++i) {
      std::this_thread::sleep_for(10ms);
    }
    if (waitpid(pid, &status, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
  }
  const auto elapsed = std::chrono::steady_clock::now() - started;
  REQUIRE(done);
  CHECK(kills >= 30);
  WARN("chaos: " << kills << " SIGKILLs, " << freezes << " SIGSTOP freezes, " << lease_exits
                 << " exits on a lost lease, " << spawned << " worker processes, "
                 << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()
                 << " ms");

  // --- The audit logs -----------------------------------------------------------------------
  AuditLogs logs = ReadAuditLogs(audit_dir);
  for (const std::string& torn : logs.torn) {
    WARN("a line cut by a SIGKILL (not a fault, set aside): " << torn);
  }
  for (const std::string& damaged : logs.damaged) {
    FAIL_CHECK("the audit log is damaged (the log's fault, not the store's): " << damaged);
  }
  if (!logs.damaged.empty()) KeepAuditLogs(audit_dir);
  std::map<std::string, std::vector<Grant>>& grants = logs.grants;
  const auto& grant_of = logs.grant_of;
  const std::vector<Write>& writes = logs.writes;
  const std::map<std::string, StoredItem> stored_items = store.read();

  // No two grants of an item overlap: each begins after the previous one's expiry.
  for (auto& [item, list] : grants) {
    std::sort(list.begin(), list.end(),
              [](const Grant& a, const Grant& b) { return a.generation < b.generation; });
    for (size_t i = 1; i < list.size(); ++i) {
      INFO(item << ": generation " << list[i - 1].generation << " by " << list[i - 1].worker << " ["
                << list[i - 1].start << ", " << list[i - 1].end << ") and " << list[i].generation
                << " by " << list[i].worker << " [" << list[i].start << ", " << list[i].end << ")");
      CHECK(list[i].start > list[i - 1].end);
    }
    REQUIRE(stored_items.contains(item));
    CHECK(list.back().generation <= stored_items.at(item).generation);
  }
  // Every write happened inside the writer's own lease.
  for (const Write& w : writes) {
    INFO(w.event << " " << w.worker << " " << w.item << " gen " << w.generation << " at " << w.at);
    auto g = grant_of.find({w.item, w.generation});
    REQUIRE(g != grant_of.end());
    CHECK(g->second.worker == w.worker);
    CHECK(w.at >= g->second.local_start);
    CHECK(w.at < g->second.end);
  }

  // --- The store and the successor chains -------------------------------------------------------
  std::set<std::string> on_chains;
  for (const std::string& head : initial) {
    std::string item = head;
    uint64_t cursor = 0;
    while (true) {
      INFO("chain of " << head << " at " << item);
      REQUIRE(on_chains.insert(item).second);
      REQUIRE(stored_items.contains(item));
      const StoredItem& stored = stored_items.at(item);
      CHECK(stored.completed);
      auto id = WorkItemId::Parse(item);
      REQUIRE(id.ok());
      CHECK(id->starting_cursor == cursor);
      // The writes of one grant that ended this link: a CHECKPOINT naming the recorded successor,
      // or a COMPLETE at the shard's end.
      REQUIRE(stored.successors.size() <= 1);
      const std::string successor = stored.successors.empty() ? "" : stored.successors[0];
      uint64_t end = kDocsPerShard;
      if (!successor.empty()) {
        auto next = WorkItemId::Parse(successor);
        REQUIRE(next.ok());
        CHECK(next->index_name == id->index_name);
        CHECK(next->shard == id->shard);
        end = next->starting_cursor;
        CHECK(end > cursor);
      }
      bool covered = false;
      for (const Write& w : writes) {
        const bool closes =
            w.item == item &&
            ((w.event == "CHECKPOINT" && w.a == successor && !successor.empty()) ||
             (w.event == "COMPLETE" && successor.empty() && w.a == std::to_string(kDocsPerShard)));
        if (!closes) continue;
        // That grant's batches cover [cursor, end) contiguously.
        uint64_t at = cursor;
        for (const Write& b : writes) {
          if (b.event == "WORK" && b.item == item && b.generation == w.generation &&
              std::stoull(b.a) == at) {
            at = std::stoull(b.b);
          }
        }
        covered = covered || at == end;
      }
      // The logs parsed whole: a link no grant's batches cover is the store's fault.
      INFO("a store fault: no grant's logged batches cover [" << cursor << ", " << end << ")");
      CHECK(covered);
      if (!covered) KeepAuditLogs(audit_dir);
      if (successor.empty()) break;
      item = successor;
      cursor = end;
    }
  }
  CHECK(on_chains.size() == stored_items.size());  // Nothing in the store off the chains.

  // How often the interesting paths ran: checkpoints, and handoffs that a later holder finished
  // (the item's last grant is newer than the grant that recorded its successor).
  int checkpoints = 0;
  int handoffs = 0;
  for (const auto& [item, stored] : stored_items) {
    if (stored.successors.empty()) continue;
    ++checkpoints;
    int64_t recorder = 0;
    for (const Write& w : writes) {
      if (w.event == "CHECKPOINT" && w.item == item && w.a == stored.successors[0]) {
        recorder = std::max(recorder, w.generation);
      }
    }
    handoffs += stored.generation > recorder;
  }
  size_t acquisitions = 0;
  for (const auto& [item, list] : grants) acquisitions += list.size();
  WARN("chaos: " << stored_items.size() << " work items (" << initial.size() << " initial), "
                 << acquisitions << " grants, " << checkpoints << " checkpoints, " << handoffs
                 << " handoffs finished by a later holder");
  CHECK(elapsed < 60s);
}

TEST_CASE("the chaos test's audit logs are read strictly: a cut last line is set aside, named",
          "[coordination][chaos]") {
  rfs::test::TempDir dir("rfs-chaos-audit");
  const std::string w1_whole = "ACQUIRE w1 a 1 100 250 0 99\nWORK w1 a 1 120 0 25\n";
  // Cut by a SIGKILL inside its write(): "25 5" of "25 50" would parse as a batch to cursor 5.
  std::ofstream(dir.File("w1.log")) << w1_whole << "WORK w1 a 1 130 25 5";
  const std::string w2_first = "ACQUIRE w2 b 1 100 250 0 99\n";
  const std::string glued = "WORK w2 b 1 120 0 2WORK w2 b 1 121 0 25";  // as in a shared log
  const std::string foreign = "WORK w3 b 1 125 0 25";                   // not this file's worker
  std::ofstream(dir.File("w2.log")) << w2_first << glued << "\n"
                                    << foreign << "\nCOMPLETE w2 b 1 140 1000\n";
  const AuditLogs logs = ReadAuditLogs(dir.path());
  REQUIRE(logs.torn.size() == 1);
  CHECK(logs.torn[0] ==
        "w1.log at offset " + std::to_string(w1_whole.size()) + ": WORK w1 a 1 130 25 5");
  REQUIRE(logs.damaged.size() == 2);
  CHECK(logs.damaged[0] == "w2.log at offset " + std::to_string(w2_first.size()) + ": " + glued);
  CHECK(logs.damaged[1] ==
        "w2.log at offset " + std::to_string(w2_first.size() + glued.size() + 1) + ": " + foreign);
  // What parsed is kept, nothing else: w1's grant and first batch, w2's grant and completion.
  CHECK(logs.grant_of.size() == 2);
  REQUIRE(logs.writes.size() == 2);
  CHECK(logs.writes[0].event == "WORK");
  CHECK(logs.writes[0].b == "25");
  CHECK(logs.writes[1].event == "COMPLETE");
  CHECK(logs.writes[1].a == "1000");
}

TEST_CASE("workers SIGKILLed at random still migrate every shard exactly through its chain",
          "[coordination][chaos][slow]") {
  rfs::test::TempDir dir("rfs-chaos");
  const std::string db = dir.File("work.db");
  rfs::coordination::SqliteWorkCoordinatorOptions options;
  options.worker_id = "chaos-test";
  options.path = db;
  auto opened = rfs::coordination::SqliteWorkCoordinator::Open(options);
  REQUIRE(opened.ok());
  ChaosStore store{db, *std::move(opened), [&] { return ReadStore(db); }};
  RunChaos(store, dir.File("audit"));
}

TEST_CASE("workers SIGKILLed at random on a PostgreSQL store migrate every shard exactly",
          "[coordination][chaos][postgres][slow]") {
  rfs::test::TempDir dir("rfs-chaos");
  rfs::test::PostgresServer server;
  rfs::coordination::PostgresWorkCoordinatorOptions options;
  options.worker_id = "chaos-test";
  options.connection = server.uri();
  auto opened = rfs::coordination::PostgresWorkCoordinator::Open(options);
  REQUIRE(opened.ok());
  ChaosStore store{server.uri(), *std::move(opened), [&] { return ReadPostgres(server.uri()); }};
  RunChaos(store, dir.File("audit"));
}

TEST_CASE(
    "workers SIGKILLed at random on a PostgreSQL store behind PgBouncer in transaction mode "
    "migrate every shard exactly",
    "[coordination][chaos][postgres][pgbouncer][slow]") {
  // A worker killed inside a transaction leaves the pooler to give up its server connection; the
  // others' transactions share the pool's four. A frozen worker keeps its server connection until
  // it is woken, so the test's own observer, which wakes them, connects to the server directly:
  // through the pool it could wait for a connection that only a worker it must wake would free.
  rfs::test::TempDir dir("rfs-chaos");
  rfs::test::PostgresServer server;
  rfs::test::PgBouncer pooler(server, 4);
  rfs::coordination::PostgresWorkCoordinatorOptions options;
  options.worker_id = "chaos-test";
  options.connection = server.uri();
  auto opened = rfs::coordination::PostgresWorkCoordinator::Open(options);
  REQUIRE(opened.ok());
  ChaosStore store{pooler.uri(), *std::move(opened), [&] { return ReadPostgres(server.uri()); }};
  RunChaos(store, dir.File("audit"));
}

namespace {

// The items as the console lists them (the same records its store holds).
std::map<std::string, StoredItem> ReadListed(rfs::coordination::IWorkCoordinator& observer) {
  std::map<std::string, StoredItem> out;
  auto items = observer.ListWorkItems();
  REQUIRE(items.ok());
  for (const auto& item : *items) {
    out[item.id] = StoredItem{item.completed(), item.successor_ids, item.lease_generation};
  }
  return out;
}

void RunChaosThroughConsole(const std::string& store_uri, const std::string& audit_dir) {
  rfs::console::ConsoleServerOptions options;
  options.store.uri = store_uri;
  options.service.admin_token = "chaos-admin-token-0123456789";
  // Every answer the chaos workers get holds to the console's OpenAPI document.
  auto departures = std::make_shared<std::pair<std::mutex, std::vector<std::string>>>();
  options.service.on_departure_from_openapi = [departures](const std::string& departure) {
    std::lock_guard lock(departures->first);
    departures->second.push_back(departure);
  };
  auto console = rfs::console::ConsoleServer::Start(std::move(options));
  INFO(console.status().ToString());
  REQUIRE(console.ok());
  const bool created = *(*console)->store().CreateSession("chaos", "");
  REQUIRE(created);
  rfs::coordination::ConsoleWorkCoordinatorOptions observer;
  observer.worker_id = "chaos-test";
  observer.url = (*console)->url();
  observer.session = "chaos";
  observer.token = "chaos-admin-token-0123456789";
  auto opened = rfs::coordination::ConsoleWorkCoordinator::Open(observer);
  REQUIRE(opened.ok());
  rfs::coordination::IWorkCoordinator& reader = **opened;
  ChaosStore store{"console:" + observer.url + "|chaos|" + observer.token, *std::move(opened),
                   [&] { return ReadListed(reader); }};
  RunChaos(store, audit_dir);
  (*console)->Stop();
  std::lock_guard lock(departures->first);
  for (const auto& departure : departures->second) UNSCOPED_INFO(departure);
  CHECK(departures->second.empty());
}

}  // namespace

TEST_CASE("workers SIGKILLed at random migrate every shard exactly through a console (SQLite)",
          "[coordination][chaos][console][slow]") {
  rfs::test::TempDir dir("rfs-chaos");
  RunChaosThroughConsole("sqlite:" + dir.File("console.db"), dir.File("audit"));
}

TEST_CASE("workers SIGKILLed at random migrate every shard exactly through a console (PostgreSQL)",
          "[coordination][chaos][console][postgres][slow]") {
  rfs::test::TempDir dir("rfs-chaos");
  rfs::test::PostgresServer server;
  RunChaosThroughConsole(server.uri(), dir.File("audit"));
}
