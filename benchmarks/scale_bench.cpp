// scale_bench: what rfs costs as clusters grow to many small indices, as logging clusters have.
//
//   1. Coordination, through each store: a SQLite file, PostgreSQL (Debian's server in a
//      temporary folder), the same behind PgBouncer in transaction mode with its default pool of
//      20 server connections, the target's own working-state index on a real OpenSearch 2 node
//      (scripts/local-cluster), and the migration console (in process, over SQLite). For each
//      number of work items (--items, ids as the worker makes them for one-shard indices): the
//      time one worker takes to create them (as the first worker's setup does), then the
//      acquisitions per second, each followed by its completion, of 1, 8 and 32 concurrent
//      workers over --sample acquisitions each. Setup and acquisition are linear or better when
//      the cost per item at the largest count is within 1.5x of that at the smallest.
//   2. The worker at scale: DocumentsFromSnapshotMigration to bulk files (the embedded default,
//      coordinating in its SQLite file) of generated snapshots of --shards one-shard indices of
//      5 documents each, against one shard of as many documents of the same size: the cost of a
//      shard beside the cost of a document.
//   3. MetadataMigration of generated snapshots of --metadata-indices indices with 1,002
//      templates (legacy, component and composable): evaluate against a real OpenSearch 2 node and
//      migrate to a directory, the tool's time and CPU; then migrate into the node (its
//      cluster.max_shards_per_node raised) for the smallest count, the node's CPU beside the
//      tool's (index creation on a node costs more as the cluster grows; see MetadataAtScale).
//
//   scale_bench [--items 1000,5000,20000] [--sample 1000] [--workers 1,8,32]
//               [--stores sqlite,postgres,pgbouncer,opensearch,console] [--shards 2000,20000]
//               [--metadata-indices 1000,5000] [--data-dir DIR]
//
// Snapshots come from the real-Lucene fixture generator and are cached in the data dir. Build in
// Release.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
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

#include "bench_support.hpp"
#include "support/pgbouncer.hpp"
#include "support/postgres_server.hpp"
#include <sys/resource.h>
#include <sys/wait.h>

namespace {

using bench::Fail;
using bench::fs::path;
using rfs::coordination::Acquired;
using rfs::coordination::IWorkCoordinator;
using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<int> items = {1000, 5000, 20000};
  int sample = 1000;
  std::vector<int> workers = {1, 8, 32};
  std::vector<std::string> stores = {"sqlite", "postgres", "pgbouncer", "opensearch", "console"};
  std::vector<int> shards = {2000, 20000};
  std::vector<int> metadata_indices = {1000, 5000};
  path data_dir = RFS_BENCH_DATA_DIR;
};

template <typename T>
std::vector<T> ParseList(const std::string& text) {
  std::vector<T> out;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    if constexpr (std::is_same_v<T, int>) {
      out.push_back(std::stoi(part));
      if (out.back() < 1) {
        Fail("'" + text + "': counts are at least 1 (an empty list skips its section)");
      }
    } else {
      out.push_back(part);
    }
  }
  return out;
}

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

template <typename T>
T Check(absl::StatusOr<T> value, const std::string& what) {
  if (!value.ok()) Fail(what + ": " + value.status().ToString());
  return *std::move(value);
}

using Open = std::function<std::unique_ptr<IWorkCoordinator>(const std::string& worker_id)>;

// A coordinator that opened and set up, or the end of the program.
std::unique_ptr<IWorkCoordinator> Ready(absl::StatusOr<std::unique_ptr<IWorkCoordinator>> opened) {
  auto coordinator = Check(std::move(opened), "open the store");
  if (auto s = coordinator->Setup(); !s.ok()) Fail("set up the store: " + s.ToString());
  return coordinator;
}

// Acquisitions per second of `count` workers, each acquiring and completing until `sample`
// acquisitions have been made in all.
double AcquisitionRate(const Open& open, int count, int sample, const std::string& tag) {
  std::vector<std::unique_ptr<IWorkCoordinator>> workers;
  for (int i = 0; i < count; ++i) workers.push_back(open(tag + "-w" + std::to_string(i)));
  std::atomic<int> taken{0};
  std::atomic<bool> go{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (auto& worker : workers) {
    threads.emplace_back([&, w = worker.get()] {
      while (!go.load()) std::this_thread::yield();
      while (taken.load() < sample) {
        auto outcome = w->AcquireNextWorkItem(std::chrono::minutes(10));
        if (!outcome.ok()) {
          // Contention (a busy store, a lost race) is retried, within bounds.
          if (++failures > 100 * sample) {
            std::fprintf(stderr, "%s: %s\n", tag.c_str(), outcome.status().ToString().c_str());
            return;
          }
          continue;
        }
        if (std::holds_alternative<rfs::coordination::NoAvailableWork>(*outcome)) return;
        // Every candidate this worker saw was taken by a racing worker: look again.
        if (!std::holds_alternative<Acquired>(*outcome)) {
          if (++failures > 100 * sample) return;
          continue;
        }
        ++taken;
        while (!w->CompleteWorkItem(std::get<Acquired>(*outcome).lease).ok()) ++failures;
      }
    });
  }
  const auto start = Clock::now();
  go.store(true);
  for (auto& t : threads) t.join();
  const double seconds = Since(start);
  if (taken.load() < sample) Fail(tag + ": the store ran out of items before the sample");
  return taken.load() / seconds;
}

// Section 1 for one store: `open(worker_id, run)` opens a coordinator on the store of run `run`
// (a fresh table, index or session per item count).
void CoordinationAtScale(
    const std::string& store, const Options& options,
    const std::function<std::unique_ptr<IWorkCoordinator>(const std::string&, const std::string&)>&
        open) {
  std::vector<double> setup_per_item, rate_of_one;
  for (int items : options.items) {
    const std::string run = "scale" + std::to_string(items);
    auto creator = open("creator", run);
    const auto start = Clock::now();
    for (int i = 0; i < items; ++i) {
      const rfs::coordination::WorkItemId id{"logs-" + std::to_string(i), 0, 0};
      Check(creator->CreateUnassignedWorkItem(id.ToString(), 0), "create an item");
    }
    const double setup = Since(start);
    setup_per_item.push_back(setup / items);
    std::printf("  %-10s %6d items: set up in %7.2f s (%6.3f ms an item); acquisitions/s:",
                store.c_str(), items, setup, 1000 * setup / items);
    std::fflush(stdout);
    // Every worker count takes its sample from what the ones before left; the last may take a
    // few more than its sample (workers already acquiring when the count is reached).
    const int sample =
        std::min(options.sample, items / static_cast<int>(options.workers.size() + 1));
    for (int count : options.workers) {
      const double rate =
          AcquisitionRate([&](const std::string& id) { return open(id, run); }, count, sample,
                          store + "-" + std::to_string(items) + "-" + std::to_string(count));
      if (count == options.workers.front()) rate_of_one.push_back(rate);
      std::printf(" %d: %7.0f", count, rate);
      std::fflush(stdout);
    }
    std::printf("\n");
  }
  if (setup_per_item.size() > 1) {
    const double setup_growth = setup_per_item.back() / setup_per_item.front();
    const double acquire_growth = rate_of_one.front() / rate_of_one.back();
    std::printf(
        "  %-10s from %d to %d items: cost per item set up %.2fx, per acquisition %.2fx "
        "(linear or better: <= 1.5x) %s\n",
        store.c_str(), options.items.front(), options.items.back(), setup_growth, acquire_growth,
        setup_growth <= 1.5 && acquire_growth <= 1.5 ? "met" : "NOT MET");
  }
}

void Coordination(const Options& options, const path& work) {
  std::printf("coordination at scale (%d acquisitions sampled per worker count):\n",
              options.sample);
  for (const std::string& store : options.stores) {
    if (store == "sqlite") {
      const path dir = work / "sqlite";
      bench::fs::remove_all(dir);
      bench::fs::create_directories(dir);
      CoordinationAtScale(store, options, [&](const std::string& id, const std::string& run) {
        rfs::coordination::SqliteWorkCoordinatorOptions o;
        o.worker_id = id;
        o.path = (dir / (run + ".db")).string();
        return Ready(rfs::coordination::SqliteWorkCoordinator::Open(o));
      });
    } else if (store == "postgres" || store == "pgbouncer") {
      rfs::test::PostgresServer server;
      std::optional<rfs::test::PgBouncer> pooler;
      if (store == "pgbouncer") pooler.emplace(server, 20);
      const std::string uri = pooler ? pooler->uri() : server.uri();
      CoordinationAtScale(store, options, [&](const std::string& id, const std::string& run) {
        rfs::coordination::PostgresWorkCoordinatorOptions o;
        o.worker_id = id;
        o.connection = uri;
        o.table = run;
        return Ready(rfs::coordination::PostgresWorkCoordinator::Open(o));
      });
    } else if (store == "opensearch") {
      const std::string url = bench::StartLocalNode(work / "coordination-node", "--version 2");
      auto transport = std::shared_ptr<rfs::net::IHttpTransport>(
          Check(rfs::net::BeastHttpTransport::Open({.endpoint = url, .max_idle_connections = 64}),
                "open a transport"));
      CoordinationAtScale(store, options, [&](const std::string& id, const std::string& run) {
        rfs::coordination::OpenSearchWorkCoordinatorOptions o;
        o.worker_id = id;
        o.transport = transport;
        o.session_name = run;
        return Ready(rfs::coordination::OpenSearchWorkCoordinator::Open(o));
      });
    } else if (store == "console") {
      const path dir = work / "console";
      bench::fs::remove_all(dir);
      bench::fs::create_directories(dir);
      rfs::console::ConsoleServerOptions server_options;
      server_options.store.uri = "sqlite:" + (dir / "console.db").string();
      server_options.service.admin_token = "scale-bench-admin-token";
      auto console =
          Check(rfs::console::ConsoleServer::Start(std::move(server_options)), "start the console");
      CoordinationAtScale(store, options, [&](const std::string& id, const std::string& run) {
        Check(console->store().CreateSession(run, ""), "create the session");
        rfs::coordination::ConsoleWorkCoordinatorOptions o;
        o.worker_id = id;
        o.url = console->url();
        o.session = run;
        o.token = "scale-bench-admin-token";
        return Ready(rfs::coordination::ConsoleWorkCoordinator::Open(o));
      });
    } else {
      Fail("unknown store " + store);
    }
  }
}

// Seconds DocumentsFromSnapshotMigration takes to export `repo` to bulk files (it ends with 3:
// nothing left to migrate).
double ExportSeconds(const path& repo, const path& out) {
  bench::fs::remove_all(out);
  const auto start = Clock::now();
  const std::string command = std::string(RFS_DOCUMENTS_TOOL) + " --snapshot-local-dir '" +
                              repo.string() + "' --output-dir '" + out.string() +
                              "' >/dev/null 2>&1";
  const int status = std::system(command.c_str());
  const double seconds = Since(start);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 3) Fail("failed: " + command);
  bench::fs::remove_all(out);
  return seconds;
}

void WorkerAtScale(const Options& options, const path& work) {
  std::printf(
      "the worker to bulk files: one-shard indices of 5 documents of ~1 KB against one "
      "shard of as many documents:\n");
  std::vector<double> per_shard;
  for (int shards : options.shards) {
    const std::string n = std::to_string(shards);
    const path many = bench::Generate(options.data_dir, "scale-" + n + "x5",
                                      "--indices " + n + " --docs 5 --doc-size 1000 --seed 7");
    const path one =
        bench::Generate(options.data_dir, "scale-1x" + std::to_string(5 * shards),
                        "--docs " + std::to_string(5 * shards) + " --doc-size 1000 --seed 7");
    const double many_seconds = ExportSeconds(many / "repo", work / "out");
    const double one_seconds = ExportSeconds(one / "repo", work / "out");
    const double per_document = one_seconds / (5.0 * shards);
    per_shard.push_back((many_seconds - one_seconds) / shards);
    std::printf(
        "  %6d shards: %7.2f s; one shard: %6.2f s; a shard costs %6.2f ms more, the "
        "time of %.0f documents\n",
        shards, many_seconds, one_seconds, 1000 * per_shard.back(),
        per_shard.back() / per_document);
  }
  if (per_shard.size() > 1) {
    const double growth = per_shard.back() / per_shard.front();
    std::printf("  from %d to %d shards: cost per shard %.2fx (linear or better: <= 1.5x) %s\n",
                options.shards.front(), options.shards.back(), growth,
                growth <= 1.5 ? "met" : "NOT MET");
  }
}

struct ToolRun {
  double seconds = 0;
  double cpu_seconds = 0;  // the tool's user + system time
};

// MetadataMigration with `args`, its output in `log`; it must end with 0.
ToolRun RunMetadataMigration(const std::string& args, const std::string& log) {
  const std::string command = std::string(RFS_METADATA_TOOL) + " " + args + " >'" + log + "' 2>&1";
  const double cpu_before = bench::CpuSecondsOf(RUSAGE_CHILDREN);
  const auto start = Clock::now();
  const int status = std::system(command.c_str());
  ToolRun run{Since(start), bench::CpuSecondsOf(RUSAGE_CHILDREN) - cpu_before};
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Fail("MetadataMigration did not end with 0 (" + std::to_string(status) + "; its log: " + log +
         ")");
  }
  return run;
}

// Section 3. A real node creates indices one cluster-state update at a time, each costlier as the
// cluster grows: on a 2-core machine 0.2 s an index over the first 1,000, seconds an index past
// 2,000, nearly all of it the node's. So the tool's own cost is measured where the node does not
// set the pace (evaluate against the real node: the snapshot read, every item transformed, the node
// asked what it holds; and migrate to the embedded default, a directory), and migrate into the real
// node is timed for the smallest count, the node's CPU beside the tool's.
void MetadataAtScale(const Options& options, const path& work) {
  std::printf("MetadataMigration with 1,002 templates (legacy, component, composable):\n");
  const std::string url = bench::StartLocalNode(work / "metadata-node", "--version 2");
  std::vector<double> per_index;
  for (int indices : options.metadata_indices) {
    const std::string n = std::to_string(indices);
    // 334 copies of each of the three template kinds: 1,002 templates.
    const path dir =
        bench::Generate(options.data_dir, "scale-metadata-" + n,
                        "--indices " + n + " --docs 1 --templates true --template-copies 334");
    const std::string source =
        "--snapshot-local-dir '" + (dir / "repo").string() + "' --snapshot-name snap-1";
    const ToolRun evaluate =
        RunMetadataMigration("evaluate " + source + " --target-host " + url,
                             (work / ("metadata-evaluate-" + n + ".log")).string());
    const path out = work / "metadata-out";
    bench::fs::remove_all(out);
    const ToolRun to_dir =
        RunMetadataMigration("migrate " + source + " --output-dir '" + out.string() + "'",
                             (work / ("metadata-migrate-dir-" + n + ".log")).string());
    bench::fs::remove_all(out);
    per_index.push_back(to_dir.cpu_seconds / indices);
    std::printf(
        "  %6d indices: evaluate against the node %6.2f s (%5.2f CPU-s); migrate to a "
        "directory %6.2f s (%5.2f CPU-s, %.2f ms an index)\n",
        indices, evaluate.seconds, evaluate.cpu_seconds, to_dir.seconds, to_dir.cpu_seconds,
        1000 * per_index.back());
  }
  if (per_index.size() > 1) {
    const double growth = per_index.back() / per_index.front();
    std::printf(
        "  from %d to %d indices: the tool's CPU per index %.2fx (linear or better: <= "
        "1.5x) %s\n",
        options.metadata_indices.front(), options.metadata_indices.back(), growth,
        growth <= 1.5 ? "met" : "NOT MET");
  }
  // Into the node, the smallest count.
  const int indices = options.metadata_indices.front();
  const std::string n = std::to_string(indices);
  bench::Shell("curl -sf -X PUT '" + url +
               "/_cluster/settings' -H 'content-type: application/json' -d "
               "'{\"persistent\":{\"cluster.max_shards_per_node\":" +
               std::to_string(4 * indices + 1000) + "}}' >/dev/null");
  const pid_t node =
      std::stoi(bench::Shell("cat '" + (work / "metadata-node" / "node.pid").string() + "'"));
  const double node_before = bench::ProcessCpuSeconds(node);
  const ToolRun migrate =
      RunMetadataMigration("migrate --snapshot-local-dir '" +
                               (options.data_dir / ("scale-metadata-" + n) / "repo").string() +
                               "' --snapshot-name snap-1 --target-host " + url,
                           (work / ("metadata-migrate-" + n + ".log")).string());
  const double node_cpu = bench::ProcessCpuSeconds(node) - node_before;
  const std::string created =
      bench::Shell("curl -sf '" + url + "/_cat/indices/index-*?h=index' | wc -l");
  std::printf(
      "  %6d indices into the node: %7.2f s; the tool %5.2f CPU-s, the node %6.1f "
      "CPU-s; %s indices on the node\n",
      indices, migrate.seconds, migrate.cpu_seconds, node_cpu, created.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  bench::program = "scale_bench";
  Options options;
  if (auto exit_code = bench::ParseOptions(
          argc, argv,
          {{"--items", [&](const std::string& v) { options.items = ParseList<int>(v); }},
           {"--sample", [&](const std::string& v) { options.sample = std::stoi(v); }},
           {"--workers", [&](const std::string& v) { options.workers = ParseList<int>(v); }},
           {"--stores", [&](const std::string& v) { options.stores = ParseList<std::string>(v); }},
           {"--shards", [&](const std::string& v) { options.shards = ParseList<int>(v); }},
           {"--metadata-indices",
            [&](const std::string& v) { options.metadata_indices = ParseList<int>(v); }},
           {"--data-dir", [&](const std::string& v) { options.data_dir = v; }}},
          "[--items 1000,5000,20000] [--sample 1000] [--workers 1,8,32] "
          "[--stores sqlite,postgres,pgbouncer,opensearch,console] [--shards 2000,20000] "
          "[--metadata-indices 1000,5000] [--data-dir DIR] (an empty list skips its section)")) {
    return *exit_code;
  }
  const path work = options.data_dir / "scale-bench";
  bench::fs::create_directories(work);
  std::printf("scale_bench: %u hardware threads\n", std::thread::hardware_concurrency());
  if (!options.items.empty()) Coordination(options, work);
  if (!options.shards.empty()) WorkerAtScale(options, work);
  if (!options.metadata_indices.empty()) MetadataAtScale(options, work);
  return 0;
}
