// DocumentsFromSnapshotMigration: one worker of a fleet that moves every live document of a
// snapshot into a target, reading each shard's Lucene files in place. Start as many as you like,
// anywhere that sees the repository and the coordination store; each takes shards under a lease
// and exits with the Java tool's codes.
#include <iostream>
#include <string>
#include <vector>

#include "rfs/core/duration.hpp"
#include "rfs/migration/tools.hpp"

#include "common/connection.hpp"
#include "common/options.hpp"
#include "common/progress.hpp"
#include "common/repository.hpp"
#include "common/text.hpp"
#include <unistd.h>

namespace {

namespace po = boost::program_options;
using rfs::migration::kExitUsage;

constexpr const char* kProgram = "DocumentsFromSnapshotMigration";

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
  if (!rfs::apps::ParseOptions(argc, argv, 0, options, vm, kProgram)) return kExitUsage;
  auto usage_error = [&](const absl::Status& status) {
    std::cerr << kProgram << ": " << status.message() << "\nTry '" << kProgram << " --help'.\n";
    return kExitUsage;
  };

  // --- Options -------------------------------------------------------------------------------
  rfs::migration::DocumentsToolOptions run;
  auto folder = rfs::apps::RepositoryFolder(vm);
  if (!folder.ok()) return usage_error(folder.status());
  run.repository_folder = *folder;
  auto text = [&](const char* name) {
    return vm.count(name) ? vm[name].as<std::string>() : std::string();
  };
  run.output_dir = text("output-dir");
  for (auto [side, into] : {std::pair{"target", &run.target}, {"coordinator", &run.coordinator}}) {
    auto connection = rfs::apps::ConnectionOptions(vm, side);
    if (!connection.ok()) return usage_error(connection.status());
    *into = *std::move(connection);
  }
  run.coordinator_db = text("coordinator-db");
  run.session_name = text("session-name");
  run.failed_documents_dir = text("failed-documents-dir");
  run.worker_id = text("worker-id");
  run.source_version = text("source-version");
  rfs::migration::DocumentMigrationOptions& migration = run.migration;
  migration.snapshot_name = text("snapshot-name");
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
  if (run.worker_id.empty()) run.worker_id = rfs::migration::DefaultWorkerId();

  // --- Run -----------------------------------------------------------------------------------
  rfs::apps::WorkerProgress progress(run.worker_id, isatty(STDERR_FILENO) == 1);
  migration.on_event = [&](const rfs::migration::WorkerEvent& e) { progress.OnEvent(e); };
  run.on_warning = [](const std::string& warning) {
    std::cerr << kProgram << ": warning: " << warning << "\n";
  };
  const rfs::migration::DocumentsToolResult result =
      rfs::migration::RunDocumentsFromSnapshotMigration(std::move(run));
  progress.Finish();
  if (result.exit_code == kExitUsage) return usage_error(result.status);
  rfs::apps::PrintWorkerSummary(kProgram, result);
  if (!result.status.ok()) return Fail(result.status, result.exit_code);
  return result.exit_code;
}
