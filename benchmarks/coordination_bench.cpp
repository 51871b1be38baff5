// coordination_bench: work-item acquisitions per second with 1, 8 and 64 concurrent workers, for
// SqliteWorkCoordinator, PostgresWorkCoordinator, OpenSearchWorkCoordinator and
// ConsoleWorkCoordinator (through a migration console on each of its stores).
//
//   coordination_bench [--backend sqlite|postgres|opensearch|console-sqlite|console-postgres|all]
//                      [--workers 1,8,64] [--items N]
//                      [--latency-ms N]
//
// Each worker is a thread with its own coordinator (its own SQLite connection, or its own
// OpenSearch client state over a shared transport), as separate worker processes would be. The
// store starts with --items unassigned items; every worker loops acquire -> complete until
// nothing is left to acquire, so each acquisition is followed by its completion, as in a migration.
// The rate is items / wall time. SQLite runs on a file in the system temp directory (WAL, BEGIN
// IMMEDIATE). PostgreSQL is a server from Debian's packages started in a temporary folder
// (support/postgres_server.hpp: loopback TCP, fsync off), a table per run. OpenSearch runs over
// HTTP against the project's OpenSearch double (in-process, loopback, with Date headers): that
// measures the coordinator's protocol (requests and 409 conflicts per acquisition) and client cost,
// not a cluster; --latency-ms delays every response. The console runs in-process on a loopback
// port (8 serving threads), its workers reach it over HTTP with keep-alive connections.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rfs/console/console_server.hpp"
#include "rfs/coordination/console_work_coordinator.hpp"
#include "rfs/coordination/opensearch_work_coordinator.hpp"
#include "rfs/coordination/postgres_work_coordinator.hpp"
#include "rfs/coordination/sqlite_work_coordinator.hpp"
#include "rfs/coordination/work_coordinator.hpp"
#include "rfs/net/beast_http_transport.hpp"

#include "opensearch_double.hpp"
#include "support/postgres_server.hpp"
#include <unistd.h>

namespace {

using rfs::coordination::Acquired;
using rfs::coordination::IWorkCoordinator;

struct Result {
  double seconds = 0;
  int64_t acquisitions = 0;
  int64_t errors = 0;
};

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "coordination_bench: %s\n", what.c_str());
  std::exit(1);
}

template <typename T>
T Check(absl::StatusOr<T> value, const char* what) {
  if (!value.ok()) Fail(std::string(what) + ": " + value.status().ToString());
  return *std::move(value);
}

// Runs `workers` threads of acquire -> complete over a store already holding the items.
Result Run(std::vector<std::unique_ptr<IWorkCoordinator>>& workers) {
  std::atomic<int64_t> acquisitions{0};
  std::atomic<int64_t> errors{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (auto& worker : workers) {
    threads.emplace_back([&, w = worker.get()] {
      while (!go.load()) std::this_thread::yield();
      while (true) {
        auto outcome = w->AcquireNextWorkItem(std::chrono::minutes(10));
        if (!outcome.ok()) {
          ++errors;  // Retryable contention (busy timeout, lost races): try again.
          continue;
        }
        // Nothing left, or only items other workers hold (with ten-minute leases, those finish
        // them): this worker is done.
        if (!std::holds_alternative<Acquired>(*outcome)) return;
        ++acquisitions;
        while (!w->CompleteWorkItem(std::get<Acquired>(*outcome).lease).ok()) ++errors;
      }
    });
  }
  const auto start = std::chrono::steady_clock::now();
  go.store(true);
  for (auto& t : threads) t.join();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return Result{elapsed.count(), acquisitions.load(), errors.load()};
}

// A coordinator that opened and set up, or the end of the program.
std::unique_ptr<IWorkCoordinator> Ready(absl::StatusOr<std::unique_ptr<IWorkCoordinator>> opened) {
  if (!opened.ok()) Fail("open: " + opened.status().ToString());
  if (auto s = (*opened)->Setup(); !s.ok()) Fail("setup: " + s.ToString());
  return *std::move(opened);
}

// Creates `items` items through one coordinator from `open`, then runs `workers` more.
template <typename Open>
Result Scenario(
    const char* backend, const Open& open, int workers, int items,
    const std::function<void()>& before_run = [] {}) {
  auto creator = open("creator");
  for (int i = 0; i < items; ++i) {
    const auto id = rfs::coordination::WorkItemId{"bench-index", static_cast<uint32_t>(i), 0};
    Check(creator->CreateUnassignedWorkItem(id.ToString(), 0), "create");
  }
  std::vector<std::unique_ptr<IWorkCoordinator>> pool;
  for (int i = 0; i < workers; ++i) pool.push_back(open("w" + std::to_string(i)));
  before_run();
  const Result r = Run(pool);
  if (r.acquisitions != items) Fail(std::string(backend) + ": an item was not acquired once");
  return r;
}

void Report(const char* backend, int workers, int items, const Result& r,
            const std::string& extra) {
  std::printf("%-11s workers=%-3d items=%-5d %8.3f s %10.0f acquisitions/s  errors=%lld%s\n",
              backend, workers, items, r.seconds, r.acquisitions / r.seconds,
              static_cast<long long>(r.errors), extra.c_str());
  std::fflush(stdout);
}

void BenchSqlite(int workers, int items) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("rfs-coordination-bench-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto open = [&](const std::string& id) {
    rfs::coordination::SqliteWorkCoordinatorOptions options;
    options.worker_id = id;
    options.path = (dir / "work.db").string();
    return Ready(rfs::coordination::SqliteWorkCoordinator::Open(options));
  };
  Report("sqlite", workers, items, Scenario("sqlite", open, workers, items), "");
  std::filesystem::remove_all(dir);
}

void BenchPostgres(rfs::test::PostgresServer& server, int workers, int items) {
  static int run = 0;
  const std::string table = "bench_" + std::to_string(run++);
  auto open = [&](const std::string& id) {
    rfs::coordination::PostgresWorkCoordinatorOptions options;
    options.worker_id = id;
    options.connection = server.uri();
    options.table = table;
    return Ready(rfs::coordination::PostgresWorkCoordinator::Open(options));
  };
  Report("postgres", workers, items, Scenario("postgres", open, workers, items), "");
}

void BenchConsole(const char* backend, const std::string& store_uri, int workers, int items) {
  static int run = 0;
  const std::string session = "bench-" + std::to_string(run++);
  rfs::console::ConsoleServerOptions options;
  options.store.uri = store_uri;
  options.service.admin_token = "coordination-bench-admin-token";
  auto console = Check(rfs::console::ConsoleServer::Start(std::move(options)), "start the console");
  if (!Check(console->store().CreateSession(session, ""), "create the session")) {
    Fail("the session exists already");
  }
  auto open = [&](const std::string& id) {
    rfs::coordination::ConsoleWorkCoordinatorOptions client;
    client.worker_id = id;
    client.url = console->url();
    client.session = session;
    client.token = "coordination-bench-admin-token";
    return Ready(rfs::coordination::ConsoleWorkCoordinator::Open(client));
  };
  Report(backend, workers, items, Scenario(backend, open, workers, items), "");
}

void BenchOpenSearch(int workers, int items, std::chrono::milliseconds latency) {
  rfs::testing::OpenSearchDoubleOptions double_options;
  double_options.send_date_header = true;
  auto cluster = Check(rfs::testing::OpenSearchDouble::Start(double_options), "start the double");
  if (latency.count() > 0) {
    rfs::testing::FaultOptions faults;
    faults.path_contains = "";
    faults.slow = 1.0;
    faults.slow_delay = latency;
    cluster->SetFaults(faults);
  }
  auto transport = std::shared_ptr<rfs::net::IHttpTransport>(Check(
      rfs::net::BeastHttpTransport::Open(
          {.endpoint = cluster->endpoint(), .max_idle_connections = static_cast<size_t>(workers)}),
      "open a transport"));
  auto open = [&](const std::string& id) {
    rfs::coordination::OpenSearchWorkCoordinatorOptions options;
    options.worker_id = id;
    options.transport = transport;
    return Ready(rfs::coordination::OpenSearchWorkCoordinator::Open(options));
  };
  // Count the workers' requests and conflicts only, not those of set-up and item creation.
  uint64_t requests_before = 0;
  uint64_t conflicts_before = 0;
  const Result r = Scenario("opensearch", open, workers, items, [&] {
    requests_before = cluster->stats().requests;
    conflicts_before = cluster->stats().conflicts;
  });
  if (!cluster->protocol_errors().empty()) Fail("double: " + cluster->protocol_errors().front());
  char extra[160];
  std::snprintf(extra, sizeof(extra), "  requests/acq=%.2f  409s/acq=%.3f  latency=%lldms",
                static_cast<double>(cluster->stats().requests - requests_before) / items,
                static_cast<double>(cluster->stats().conflicts - conflicts_before) / items,
                static_cast<long long>(latency.count()));
  Report("opensearch", workers, items, r, extra);
}

std::vector<int> ParseList(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) out.push_back(std::stoi(part));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "all";
  std::vector<int> worker_counts = {1, 8, 64};
  int sqlite_items = 5000;
  int opensearch_items = 1000;
  std::chrono::milliseconds latency{0};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--backend") {
      backend = value;
    } else if (flag == "--workers") {
      worker_counts = ParseList(value);
    } else if (flag == "--items") {
      sqlite_items = opensearch_items = std::stoi(value);
    } else if (flag == "--latency-ms") {
      latency = std::chrono::milliseconds(std::stoll(value));
    } else {
      Fail("unknown flag " + flag);
    }
  }
  std::printf(
      "coordination_bench: %u hardware threads; each acquisition is followed by its "
      "completion\n",
      std::thread::hardware_concurrency());
  std::unique_ptr<rfs::test::PostgresServer> postgres;
  if (backend == "all" || backend == "postgres") {
    postgres = std::make_unique<rfs::test::PostgresServer>();
  }
  if (backend == "console-postgres") postgres = std::make_unique<rfs::test::PostgresServer>();
  const auto console_dir = std::filesystem::temp_directory_path() /
                           ("rfs-coordination-bench-console-" + std::to_string(::getpid()));
  for (int workers : worker_counts) {
    if (backend == "all" || backend == "sqlite") BenchSqlite(workers, sqlite_items);
    if (postgres && backend != "console-postgres") BenchPostgres(*postgres, workers, sqlite_items);
    if (backend == "all" || backend == "console-sqlite") {
      std::filesystem::remove_all(console_dir);
      std::filesystem::create_directories(console_dir);
      BenchConsole("console-sqlite", "sqlite:" + (console_dir / "console.db").string(), workers,
                   opensearch_items);
      std::filesystem::remove_all(console_dir);
    }
    if (postgres && (backend == "all" || backend == "console-postgres")) {
      BenchConsole("console-pg", postgres->uri(), workers, opensearch_items);
    }
    if (backend == "all" || backend == "opensearch") {
      BenchOpenSearch(workers, opensearch_items, latency);
    }
  }
  return 0;
}
