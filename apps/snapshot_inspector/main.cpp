// SnapshotInspector: look inside a snapshot repository without a cluster.
//
//   SnapshotInspector info REPOSITORY [--snapshot-name NAME] [--json]
//   SnapshotInspector docs REPOSITORY --snapshot-name NAME [--index I] [--shard N]
//                          [--from-cursor C]
// where REPOSITORY is --snapshot-local-dir DIR, --file-system-repo-path DIR or --repo-uri URI.
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include <boost/json.hpp>

#include "rfs/core/exit_codes.hpp"
#include "rfs/core/json_text.hpp"
#include "rfs/migration/export.hpp"
#include "rfs/migration/solr_migration.hpp"
#include "rfs/migration/tools.hpp"
#include "rfs/snapshot/inspect.hpp"

#include "common/options.hpp"
#include "common/repository.hpp"

namespace {

namespace po = boost::program_options;

constexpr const char* kUsage =
    "Usage: SnapshotInspector <command> [options]\n"
    "\n"
    "Reads an Elasticsearch (1.x-9.x) or OpenSearch (1.x-3.x) snapshot repository directly.\n"
    "\n"
    "Commands:\n"
    "  info   the repository's snapshots, the source version, each index of a snapshot\n"
    "         (shard count, size of its shard files, aliases, settings, mappings) and the\n"
    "         templates; exit 5 when a snapshot's entry in the repository index disagrees\n"
    "         with its snap-*.dat (each listed so is marked DAMAGED), as for `docs`\n"
    "         With --source-version \"SOLR 9\" (or 6, 7, 8): the Solr backups of the location,\n"
    "         or with --snapshot-name the one named (its shards, files, schema)\n"
    "  docs   every live document of a snapshot as NDJSON on stdout, one per line, in\n"
    "         elasticdump's format: {\"_index\",\"_type\" (typed indices only),\"_id\",\n"
    "         \"_routing\" (when set),\"_source\"}; a summary goes to stderr. With\n"
    "         --source-version \"SOLR 9\": a Solr backup's documents as Solr returns them\n"
    "\n"
    "Every option can also be set with an RFS_ environment variable, e.g.\n"
    "RFS_SNAPSHOT_LOCAL_DIR for --snapshot-local-dir.\n";

constexpr const char* kInfo = "SnapshotInspector info";
constexpr const char* kDocs = "SnapshotInspector docs";

int Fail(const absl::Status& status) {
  std::cerr << "SnapshotInspector: " << status.message() << "\n";
  return rfs::core::kExitSnapshotUnreadable;
}

// info --source-version "SOLR N": the location's Solr backups, or the one named.
int SolrInfo(const po::variables_map& vm, const rfs::migration::RepositoryLocation& location,
             int major) {
  rfs::migration::SolrSourceOptions solr;
  solr.major = major;
  if (vm.count("solr-collection")) solr.collection = vm["solr-collection"].as<std::string>();
  if (vm.count("solr-backup-id")) {
    solr.backup_id = vm["solr-backup-id"].as<rfs::apps::Bounded<int, 0, 1000000000>>().value;
  }
  const std::string name = vm.count("snapshot-name") ? vm["snapshot-name"].as<std::string>() : "";
  auto inspection = rfs::migration::InspectSolrBackups(location, name, solr);
  if (!inspection.ok()) {
    if (absl::IsInvalidArgument(inspection.status())) {
      return rfs::apps::UsageError(kInfo, inspection.status().message());
    }
    return Fail(inspection.status());
  }
  if (vm["json"].as<bool>()) {
    std::cout << rfs::core::JsonText(*inspection) << "\n";
  } else {
    std::cout << rfs::migration::FormatSolrInspection(*inspection);
  }
  return std::cout.flush() ? 0 : rfs::core::kExitFailure;
}

int Info(int argc, char** argv) {
  po::options_description options("info options");
  options.add_options()("help,h", "show this help");
  rfs::apps::AddRepositoryOptions(options);
  options.add_options()("snapshot-name", po::value<std::string>(),
                        "snapshot to describe (default: the newest)")(
      "json", po::bool_switch(), "print one JSON object instead of text")(
      "source-version", po::value<std::string>(),
      "\"SOLR 9\" (or 6, 7, 8): the location holds Solr backups; without --snapshot-name "
      "every backup is listed, with it that backup is described (docs/solr.md)");
  rfs::apps::AddSolrBackupOptions(options);
  po::variables_map vm;
  if (auto done = rfs::apps::ParseCommandLine(argc, argv, 1, options, kUsage, kInfo, vm))
    return *done;
  auto location = rfs::apps::RepositoryOption(vm);
  if (!location.ok()) return rfs::apps::UsageError(kInfo, location.status().message());
  if (vm.count("source-version")) {
    auto solr = rfs::migration::ParseSolrSourceVersion(vm["source-version"].as<std::string>());
    if (!solr.ok()) return rfs::apps::UsageError(kInfo, solr.status().message());
    if (*solr) return SolrInfo(vm, *location, **solr);
  }
  auto repository = rfs::migration::OpenSnapshotRepository(*location);
  if (!repository.ok()) return Fail(repository.status());
  std::optional<std::string> name;
  if (vm.count("snapshot-name")) name = vm["snapshot-name"].as<std::string>();
  auto inspection = rfs::snapshot::InspectRepository(**repository, name);
  if (!inspection.ok()) return Fail(inspection.status());
  if (vm["json"].as<bool>()) {
    std::cout << rfs::core::JsonText(*inspection) << "\n";
  } else {
    std::cout << rfs::snapshot::FormatInspection(*inspection);
  }
  if (!std::cout.flush()) {
    std::cerr << "SnapshotInspector: writing the standard output failed\n";
    return rfs::core::kExitFailure;
  }
  // A snapshot that a migration (or `docs`) would refuse to read fails `info` the same way.
  const auto& damaged = inspection->at("damaged_snapshots").as_array();
  if (!damaged.empty()) {
    std::cerr << "SnapshotInspector: " << damaged.size()
              << " snapshot(s) of the repository cannot be read (see DAMAGED above):";
    for (const auto& name : damaged) std::cerr << " " << std::string_view(name.as_string());
    std::cerr << "\n";
    return rfs::core::kExitSnapshotUnreadable;
  }
  return 0;
}

int Docs(int argc, char** argv) {
  po::options_description options("docs options");
  options.add_options()("help,h", "show this help");
  rfs::apps::AddRepositoryOptions(options);
  options.add_options()("snapshot-name", po::value<std::string>()->required(), "snapshot to read")(
      "index", po::value<std::string>(), "only this index (default: every index)")(
      "shard", po::value<rfs::apps::ShardNumber>(), "only this shard (default: every shard)")(
      "from-cursor", po::value<rfs::apps::Count>()->default_value({0}),
      "start at this shard-global document number (needs --index and --shard)")(
      "source-version", po::value<std::string>(),
      "\"SOLR 9\" (or 6, 7, 8): the location holds Solr backups and --snapshot-name names "
      "one; its documents are printed as Solr returns them (docs/solr.md)");
  rfs::apps::AddSolrBackupOptions(options);
  rfs::apps::AddReaderThreadsOption(options);
  rfs::apps::AddSourcelessOption(options);
  po::variables_map vm;
  if (auto done = rfs::apps::ParseCommandLine(argc, argv, 1, options, kUsage, kDocs, vm))
    return *done;
  rfs::migration::ExportOptions run;
  auto location = rfs::apps::RepositoryOption(vm);
  if (!location.ok()) return rfs::apps::UsageError(kDocs, location.status().message());
  run.repository = location->uri;
  run.s3 = location->s3;
  run.gcs = location->gcs;
  run.azure = location->azure;
  run.snapshot_name = vm["snapshot-name"].as<std::string>();
  const std::string source_version =
      vm.count("source-version") ? vm["source-version"].as<std::string>() : "";
  if (auto solr = rfs::apps::ApplySolrSource(vm, source_version, run.snapshot_name, *location);
      !solr.ok()) {
    return rfs::apps::UsageError(kDocs, solr.message());
  }
  if (!source_version.empty() && !location->solr) {
    return rfs::apps::UsageError(kDocs, "--source-version takes only \"SOLR <major>\" here");
  }
  run.solr = location->solr;
  if (vm.count("index")) run.index = vm["index"].as<std::string>();
  if (vm.count("shard")) run.shard = rfs::apps::Get<rfs::apps::ShardNumber>(vm, "shard");
  run.from_cursor = rfs::apps::Get<rfs::apps::Count>(vm, "from-cursor");
  auto reader_threads = rfs::apps::ReaderThreads(vm);
  if (!reader_threads.ok()) return rfs::apps::UsageError(kDocs, reader_threads.status().message());
  run.reader_threads = *reader_threads;
  run.enable_sourceless_migrations = vm["enable-sourceless-migrations"].as<bool>();
  run.on_skipped = [](const std::string& message) {
    std::cerr << "SnapshotInspector: " << message << "\n";
  };
  const rfs::migration::ExportResult result = rfs::migration::ExportDocumentsAsNdjson(run, stdout);
  if (result.exit_code == rfs::core::kExitUsage) {
    return rfs::apps::UsageError(kDocs, result.status.message());
  }
  if (!result.status.ok()) {
    std::cerr << "SnapshotInspector: " << result.status.message() << "\n";
    return result.exit_code;
  }
  const auto& totals = result.totals;
  std::cerr << "SnapshotInspector: " << totals.docs << " documents, " << totals.source_bytes
            << " bytes of _source";
  if (totals.without_source > 0) std::cerr << ", " << totals.without_source << " without _source";
  if (totals.unconvertible > 0) {
    std::cerr << ", " << totals.unconvertible << " not JSON-convertible";
  }
  std::cerr << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::cout << kUsage;
    return argc < 2 ? 64 : 0;
  }
  const std::string command = argv[1];
  try {
    if (command == "info") return Info(argc, argv);
    if (command == "docs") return Docs(argc, argv);
  } catch (const std::exception& e) {
    // Last resort: the library reports errors as Status; this catches only the unexpected.
    std::cerr << "SnapshotInspector: internal error: " << e.what() << "\n";
    return rfs::core::kExitInternal;
  }
  std::cerr << "SnapshotInspector: unknown command '" << command << "'\n" << kUsage;
  return rfs::core::kExitUsage;
}
