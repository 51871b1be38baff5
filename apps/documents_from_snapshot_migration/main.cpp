// DocumentsFromSnapshotMigration: one worker of a fleet that moves every live document of a
// snapshot into a target, reading each shard's Lucene files in place. Start as many as you like,
// anywhere that sees the repository and the coordination store; each takes shards under a lease
// and exits with the Java tool's codes.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "rfs/coordination/opensearch_work_coordinator.hpp"
#include "rfs/coordination/sqlite_work_coordinator.hpp"
#include "rfs/core/duration.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/reindex/document_sink.hpp"
#include "rfs/reindex/documents_migration.hpp"
#include "rfs/reindex/failed_document_sink.hpp"
#include "rfs/reindex/opensearch_client.hpp"

#include "common/connection.hpp"
#include "common/options.hpp"
#include "common/repository.hpp"
#include "common/text.hpp"
#include <unistd.h>

namespace {

namespace po = boost::program_options;
namespace json = boost::json;
using rfs::reindex::WorkerEvent;

constexpr const char* kProgram = "DocumentsFromSnapshotMigration";
constexpr int kUsageExitCode = 64;
constexpr int kFailureExitCode = 1;

constexpr const char* kUsage =
    "Usage: DocumentsFromSnapshotMigration --snapshot-local-dir DIR [--snapshot-name NAME]\n"
    "         (--output-dir OUT | --target-host URL) [options]\n"
    "\n"
    "One migration worker: takes shards of the snapshot under a lease, reads their Lucene files\n"
    "in place, and writes every live document (same _id and routing) to the target, until no\n"
    "work is left. Run several at once, on one host or many, to share the work; any of them may\n"
    "be killed at any time without losing documents.\n"
    "\n"
    "Targets:\n"
    "  --output-dir OUT   embedded default: bulk NDJSON files OUT/<index>/<shard>/*.ndjson\n"
    "                     (replayable with curl --data-binary @file URL/_bulk), coordinated\n"
    "                     through OUT/.rfs/coordination.sqlite\n"
    "  --target-host URL  an OpenSearch (or Elasticsearch) cluster; coordination in its\n"
    "                     .migrations_working_state index, or on --coordinator-host, or in the\n"
    "                     SQLite file --coordinator-db\n"
    "\n"
    "Exit codes: 0 one item done (--single-work-item), 2 the lease ran out and a successor item\n"
    "was handed on (run again), 3 no work left, 4 the remaining work is leased by other workers\n"
    "(run again later), 5 the snapshot cannot be read, 6 some documents could not be migrated\n"
    "(rejected by the target or without _source; they are in the failed-documents folder, and\n"
    "this code wins over 0/2/3/4), 1 other failures, 64 usage.\n"
    "\n"
    "Progress: on a terminal, a live line; otherwise one JSON line per event, on stderr. A\n"
    "summary ends the run on stdout. Every option can also be set through an RFS_ environment\n"
    "variable, e.g. RFS_TARGET_HOST for --target-host.\n";

std::string DefaultWorkerId() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "host");
  std::random_device random;
  return rfs::core::StrCat(host, "-", static_cast<int64_t>(getpid()), "-",
                           static_cast<uint64_t>(random()) % 1000000);
}

double Megabytes(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

// Renders worker events: a live line on a terminal, JSON lines otherwise.
class ProgressReporter {
 public:
  ProgressReporter(std::string worker_id, bool live)
      : worker_id_(std::move(worker_id)), live_(live) {}

  void OnEvent(const WorkerEvent& event) {
    std::lock_guard lock(mu_);
    if (live_) {
      RenderLive(event);
    } else {
      json::object line{{"ts", rfs::apps::NowIso8601()},
                        {"worker", worker_id_},
                        {"event", std::string(rfs::reindex::ToString(event.kind))}};
      if (!event.work_item.empty()) {
        line["work_item"] = event.work_item;
        line["index"] = event.index;
        line["shard"] = event.shard;
        line["starting_cursor"] = event.starting_cursor;
        line["cursor"] = event.cursor;
        line["max_cursor"] = event.max_cursor;
        line["docs"] = event.docs;
        line["source_bytes"] = event.source_bytes;
        line["failed_docs"] = event.failed_docs;
        line["elapsed_s"] = std::chrono::duration<double>(event.elapsed).count();
      }
      if (!event.message.empty()) line["message"] = event.message;
      std::cerr << json::serialize(line) << "\n" << std::flush;
    }
  }

  void Finish() {
    std::lock_guard lock(mu_);
    if (live_ && line_open_) std::cerr << "\n";
    line_open_ = false;
  }

 private:
  void RenderLive(const WorkerEvent& event) {
    const double seconds = std::chrono::duration<double>(event.elapsed).count();
    const double rate = seconds > 0 ? Megabytes(event.source_bytes) / seconds : 0;
    std::string eta = "-";
    const uint64_t span = event.max_cursor - event.starting_cursor;
    const uint64_t done =
        event.cursor > event.starting_cursor ? event.cursor - event.starting_cursor : 0;
    if (event.kind == WorkerEvent::Kind::kProgress && span > 0 && done > 0 && seconds > 0) {
      const double remaining =
          seconds * static_cast<double>(span - std::min(done, span)) / static_cast<double>(done);
      eta = rfs::core::StrCat(static_cast<int64_t>(remaining), "s");
    }
    char text[256];
    switch (event.kind) {
      case WorkerEvent::Kind::kProgress:
        std::snprintf(text, sizeof(text), "[%s] %s/%d: %llu docs, %.1f MB, %.1f MB/s, ETA %s",
                      worker_id_.c_str(), event.index.c_str(), event.shard,
                      static_cast<unsigned long long>(event.docs), Megabytes(event.source_bytes),
                      rate, eta.c_str());
        std::cerr << "\r\033[K" << text << std::flush;
        line_open_ = true;
        return;
      case WorkerEvent::Kind::kAcquired:
        std::snprintf(text, sizeof(text), "[%s] %s/%d: started at cursor %llu", worker_id_.c_str(),
                      event.index.c_str(), event.shard,
                      static_cast<unsigned long long>(event.starting_cursor));
        std::cerr << "\r\033[K" << text << std::flush;
        line_open_ = true;
        return;
      case WorkerEvent::Kind::kCompleted:
        std::snprintf(text, sizeof(text), "[%s] %s/%d: done, %llu docs, %.1f MB in %.1f s",
                      worker_id_.c_str(), event.index.c_str(), event.shard,
                      static_cast<unsigned long long>(event.docs), Megabytes(event.source_bytes),
                      seconds);
        break;
      default:
        std::snprintf(text, sizeof(text), "[%s] %s%s%s", worker_id_.c_str(),
                      std::string(rfs::reindex::ToString(event.kind)).c_str(),
                      event.message.empty() ? "" : ": ", event.message.c_str());
        break;
    }
    std::cerr << "\r\033[K" << text << "\n" << std::flush;
    line_open_ = false;
  }

  const std::string worker_id_;
  const bool live_;
  std::mutex mu_;
  bool line_open_ = false;
};

int Fail(const absl::Status& status, int code) {
  return rfs::apps::ReportFailure(kProgram, status, code);
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description options("Options");
  options.add_options()("help,h", "show this help")("snapshot-name", po::value<std::string>(),
                                                    "snapshot to migrate (default: the newest)");
  rfs::apps::AddRepositoryOptions(options);
  options.add_options()(
      "lucene-dir", po::value<std::string>(),
      "accepted for compatibility with the Java tool and ignored: shards are read in place from "
      "the repository, nothing is unpacked")(
      "source-version", po::value<std::string>(),
      "the source's version, e.g. ES_7_10 or \"OS 2.11\" (default: detected from the snapshot; "
      "a mismatch is reported)")("output-dir", po::value<std::string>(),
                                 "embedded default target: bulk NDJSON files under this folder");
  rfs::apps::AddConnectionOptions(options, "target", "target");
  rfs::apps::AddConnectionOptions(options, "coordinator", "coordination");
  options.add_options()("coordinator-db", po::value<std::string>(),
                        "coordinate through this SQLite file (default with --output-dir: OUT/.rfs/"
                        "coordination.sqlite); workers must share a local file system")(
      "session-name", po::value<std::string>()->default_value(""),
      "names the coordination index (.migrations_working_state_<session>) so several "
      "migrations can share a cluster")(
      "index-allowlist", po::value<std::vector<std::string>>()->multitoken(),
      "indices to migrate: names, comma lists or regex:<pattern> (default: every index except "
      "system indices, whose names start with '.')")(
      "multi-type-behavior", po::value<std::string>()->default_value("union"),
      "for ES <= 6 indices with several mapping types: union (one index) or split "
      "(<index>_<type> per type); must match MetadataMigration's")(
      "max-shard-size-bytes", po::value<rfs::apps::Count>()->default_value({uint64_t{80} << 30}),
      "a shard whose snapshot files are larger stops the worker with an error (it is never "
      "skipped silently)")(
      "initial-lease-duration", po::value<std::string>()->default_value("PT10M"),
      "ISO-8601 lease of a work item's first attempt; each new attempt doubles it")(
      "max-connections", po::value<rfs::apps::Count>()->default_value({10}),
      "bulk requests in flight at once")("documents-per-bulk-request",
                                         po::value<rfs::apps::Count>()->default_value({0}),
                                         "documents per bulk request (0: no limit but the size)")(
      "documents-size-per-bulk-request",
      po::value<rfs::apps::Count>()->default_value({uint64_t{10} << 20}),
      "bytes of documents per bulk request (0: no limit but the document count; a larger "
      "document travels alone)")(
      "allowed-doc-exception-types", po::value<std::vector<std::string>>()->multitoken(),
      "bulk item error types that count as success, e.g. version_conflict_engine_exception")(
      "failed-documents-dir", po::value<std::string>(),
      "where documents the target rejects for good are kept, as gzip NDJSON (default: "
      "OUT/.rfs/failed-documents, or ./failed-documents with --target-host)")(
      "single-work-item", po::bool_switch(), "stop after one completed work item (exit 0)")(
      "worker-id", po::value<std::string>(), "this worker's id (default: host-pid-random)");

  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << kUsage << "\n" << options << "\n";
      return 0;
    }
  }
  po::variables_map vm;
  if (!rfs::apps::ParseOptions(argc, argv, 0, options, vm, kProgram)) return kUsageExitCode;
  auto usage_error = [&](const absl::Status& status) {
    std::cerr << kProgram << ": " << status.message() << "\nTry '" << kProgram << " --help'.\n";
    return kUsageExitCode;
  };

  // --- Options -------------------------------------------------------------------------------
  auto folder = rfs::apps::RepositoryFolder(vm);
  if (!folder.ok()) return usage_error(folder.status());
  const bool to_directory = vm.count("output-dir") > 0;
  const bool to_cluster = vm.count("target-host") > 0;
  if (to_directory == to_cluster) {
    return usage_error(absl::InvalidArgumentError(
        "give exactly one target: --output-dir DIR (embedded default) or --target-host URL"));
  }
  rfs::reindex::DocumentMigrationOptions migration;
  if (vm.count("snapshot-name")) migration.snapshot_name = vm["snapshot-name"].as<std::string>();
  if (vm.count("index-allowlist")) {
    auto allowlist =
        rfs::transform::Allowlist::Parse(vm["index-allowlist"].as<std::vector<std::string>>());
    if (!allowlist.ok()) return usage_error(allowlist.status());
    migration.index_allowlist = *std::move(allowlist);
  }
  auto policy = rfs::transform::ParseMultiTypePolicy(vm["multi-type-behavior"].as<std::string>());
  if (!policy.ok()) return usage_error(policy.status());
  migration.multi_type_policy = *policy;
  migration.max_shard_size_bytes = rfs::apps::Get<rfs::apps::Count>(vm, "max-shard-size-bytes");
  auto lease = rfs::core::ParseIsoDuration(vm["initial-lease-duration"].as<std::string>());
  if (!lease.ok()) return usage_error(lease.status());
  if (*lease <= std::chrono::nanoseconds(0)) {
    return usage_error(absl::InvalidArgumentError("--initial-lease-duration must be positive"));
  }
  migration.initial_lease = *lease;
  migration.reindexer.max_concurrent_batches =
      std::max<size_t>(1, rfs::apps::Get<rfs::apps::Count>(vm, "max-connections"));
  migration.reindexer.max_docs_per_batch =
      rfs::apps::Get<rfs::apps::Count>(vm, "documents-per-bulk-request");
  migration.reindexer.max_bytes_per_batch =
      rfs::apps::Get<rfs::apps::Count>(vm, "documents-size-per-bulk-request");
  if (vm.count("allowed-doc-exception-types")) {
    migration.reindexer.allowed_exception_types =
        rfs::apps::CommaList(vm["allowed-doc-exception-types"].as<std::vector<std::string>>());
  }
  migration.single_work_item = vm["single-work-item"].as<bool>();
  const std::string worker_id =
      vm.count("worker-id") ? vm["worker-id"].as<std::string>() : DefaultWorkerId();

  ProgressReporter reporter(worker_id, isatty(STDERR_FILENO) == 1);
  migration.on_event = [&](const WorkerEvent& event) { reporter.OnEvent(event); };

  // --- Target and coordination ----------------------------------------------------------------
  std::unique_ptr<rfs::core::IHttpTransport> target_transport;
  std::unique_ptr<rfs::reindex::OpenSearchClient> client;
  std::shared_ptr<rfs::reindex::IDocumentSink> cluster_sink;
  std::string output_dir;
  std::string coordinator_db =
      vm.count("coordinator-db") ? vm["coordinator-db"].as<std::string>() : "";
  std::string failed_dir;
  if (to_directory) {
    output_dir = vm["output-dir"].as<std::string>();
    std::error_code error;
    std::filesystem::create_directories(std::filesystem::path(output_dir) / ".rfs", error);
    if (error) {
      return Fail(absl::UnavailableError(
                      rfs::core::StrCat("cannot create ", output_dir, "/.rfs: ", error.message())),
                  kFailureExitCode);
    }
    if (coordinator_db.empty()) coordinator_db = output_dir + "/.rfs/coordination.sqlite";
    failed_dir = output_dir + "/.rfs/failed-documents";
  } else {
    auto transport =
        rfs::apps::OpenConnection(vm, "target", migration.reindexer.max_concurrent_batches + 2);
    if (!transport.ok()) return usage_error(transport.status());
    target_transport = *std::move(transport);
    client = std::make_unique<rfs::reindex::OpenSearchClient>(*target_transport);
    cluster_sink = std::make_shared<rfs::reindex::OpenSearchBulkSink>(*client);
    failed_dir = "failed-documents";
  }
  if (vm.count("failed-documents-dir")) failed_dir = vm["failed-documents-dir"].as<std::string>();

  std::unique_ptr<rfs::core::IHttpTransport> coordinator_transport;
  std::unique_ptr<rfs::coordination::IWorkCoordinator> coordinator;
  if (!coordinator_db.empty()) {
    rfs::coordination::SqliteWorkCoordinatorOptions sqlite;
    sqlite.worker_id = worker_id;
    sqlite.path = coordinator_db;
    auto opened = rfs::coordination::SqliteWorkCoordinator::Open(std::move(sqlite));
    if (!opened.ok()) return Fail(opened.status(), kFailureExitCode);
    coordinator = *std::move(opened);
  } else {
    rfs::coordination::OpenSearchWorkCoordinatorOptions remote;
    remote.worker_id = worker_id;
    remote.session_name = vm["session-name"].as<std::string>();
    if (vm.count("coordinator-host")) {
      auto transport = rfs::apps::OpenConnection(vm, "coordinator");
      if (!transport.ok()) return usage_error(transport.status());
      remote.transport = std::shared_ptr<rfs::core::IHttpTransport>(std::move(*transport));
    } else {
      auto transport = rfs::apps::OpenConnection(vm, "target");
      if (!transport.ok()) return usage_error(transport.status());
      remote.transport = std::shared_ptr<rfs::core::IHttpTransport>(std::move(*transport));
    }
    auto opened = rfs::coordination::OpenSearchWorkCoordinator::Open(std::move(remote));
    if (!opened.ok()) return usage_error(opened.status());
    coordinator = *std::move(opened);
  }

  auto failed_sink = rfs::reindex::GzipFailedDocumentSink::Open(
      failed_dir, rfs::core::StrCat("failed-documents-", worker_id));
  if (!failed_sink.ok()) return Fail(failed_sink.status(), kFailureExitCode);

  rfs::reindex::SinkFactory sinks =
      [&](std::string_view index,
          int shard) -> absl::StatusOr<std::shared_ptr<rfs::reindex::IDocumentSink>> {
    if (cluster_sink) return cluster_sink;
    rfs::reindex::NdjsonDirectorySinkOptions sink_options;
    sink_options.directory = output_dir;
    sink_options.shard = std::to_string(shard);
    auto sink = rfs::reindex::NdjsonDirectorySink::Open(std::move(sink_options));
    if (!sink.ok()) return sink.status();
    return std::shared_ptr<rfs::reindex::IDocumentSink>(std::move(*sink));
  };

  // --- Snapshot ------------------------------------------------------------------------------
  auto repository = rfs::apps::OpenRepository(*folder);
  if (!repository.ok())
    return Fail(repository.status(), rfs::reindex::kSnapshotReadFailureExitCode);
  if (vm.count("source-version")) {
    const auto* snapshot =
        migration.snapshot_name.empty()
            ? (*repository)->LatestSnapshot().value_or(nullptr)
            : (*repository)->FindSnapshot(migration.snapshot_name).value_or(nullptr);
    if (snapshot != nullptr) {
      auto detected = (*repository)->DetectSourceVersion(*snapshot);
      std::string given = vm["source-version"].as<std::string>();
      if (detected.ok()) {
        // "ES_7_10" and "ES 7.10" name the same version; compare product and major.
        std::string normalized = given;
        for (char& c : normalized) c = c == '_' ? ' ' : c;
        const std::string expected_prefix = detected->ToString().substr(0, 4);
        if (!normalized.starts_with(expected_prefix.substr(0, 3)) ||
            normalized.find(std::to_string(detected->major)) == std::string::npos) {
          std::cerr << kProgram << ": warning: --source-version " << given
                    << " differs from the snapshot's " << detected->ToString()
                    << "; reading by what the snapshot's files say\n";
        }
      }
    }
  }

  // --- Run -----------------------------------------------------------------------------------
  rfs::core::SystemClock clock;
  rfs::reindex::DocumentMigrationWorker worker(**repository, *coordinator, sinks,
                                               failed_sink->get(), clock, migration);
  auto result = worker.Run();
  reporter.Finish();
  const rfs::reindex::WorkerSummary& summary = worker.summary();
  const double seconds = std::chrono::duration<double>(summary.elapsed).count();
  const uint64_t docs = summary.docs_written + summary.docs_allowed_errors;
  const uint64_t failed = summary.docs_failed + summary.docs_without_source;
  const std::string outcome =
      result.ok() ? std::string(rfs::reindex::ToString(summary.outcome)) : "error";
  std::printf(
      "%s %s: %s; %llu docs, %.1f MB of _source, %llu failed docs, %.1f s, %.1f MB/s; "
      "items: %llu completed, %llu handed on, %llu lost\n",
      kProgram, worker_id.c_str(), outcome.c_str(), static_cast<unsigned long long>(docs),
      Megabytes(summary.source_bytes), static_cast<unsigned long long>(failed), seconds,
      seconds > 0 ? Megabytes(summary.source_bytes) / seconds : 0.0,
      static_cast<unsigned long long>(summary.items_completed),
      static_cast<unsigned long long>(summary.items_checkpointed),
      static_cast<unsigned long long>(summary.items_lost));
  if (failed > 0) {
    std::printf(
        "%s: %llu documents could not be migrated (%llu rejected by the target, %llu "
        "without _source); they are in %s\n",
        kProgram, static_cast<unsigned long long>(failed),
        static_cast<unsigned long long>(summary.docs_failed),
        static_cast<unsigned long long>(summary.docs_without_source),
        (*failed_sink)->path().c_str());
  }
  std::fflush(stdout);
  if (!result.ok()) {
    return Fail(result.status(), rfs::reindex::IsSnapshotReadFailure(result.status())
                                     ? rfs::reindex::kSnapshotReadFailureExitCode
                                     : kFailureExitCode);
  }
  return rfs::reindex::ExitCode(summary);
}
