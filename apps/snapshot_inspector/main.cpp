// SnapshotInspector: look inside a snapshot repository without a cluster.
//
//   SnapshotInspector info --snapshot-local-dir DIR [--snapshot-name NAME] [--json]
#include <iostream>
#include <optional>
#include <string>

#include <boost/json.hpp>

#include "rfs/snapshot/inspect.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "common/options.hpp"

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
    "         templates\n"
    "\n"
    "Every option can also be set with an RFS_ environment variable, e.g.\n"
    "RFS_SNAPSHOT_LOCAL_DIR for --snapshot-local-dir.\n";

int Info(int argc, char** argv) {
  po::options_description options("info options");
  options.add_options()("help,h", "show this help")(
      "snapshot-local-dir", po::value<std::string>()->required(),
      "folder of the snapshot repository (an `fs` repository)")(
      "snapshot-name", po::value<std::string>(), "snapshot to describe (default: the newest)")(
      "json", po::bool_switch(), "print one JSON object instead of text");
  po::variables_map vm;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << kUsage << "\n" << options << "\n";
      return 0;
    }
  }
  if (!rfs::apps::ParseOptions(argc, argv, 1, options, vm, "SnapshotInspector info")) return 64;

  auto repo = rfs::snapshot::FileSystemRepo::Open(vm["snapshot-local-dir"].as<std::string>());
  if (!repo.ok()) {
    std::cerr << "SnapshotInspector: " << repo.status().message() << "\n";
    return 5;
  }
  auto repository = rfs::snapshot::SnapshotRepository::Open(*repo);
  if (!repository.ok()) {
    std::cerr << "SnapshotInspector: " << repository.status().message() << "\n";
    return 5;
  }
  std::optional<std::string> name;
  if (vm.count("snapshot-name")) name = vm["snapshot-name"].as<std::string>();
  auto inspection = rfs::snapshot::InspectRepository(**repository, name);
  if (!inspection.ok()) {
    std::cerr << "SnapshotInspector: " << inspection.status().message() << "\n";
    return 5;
  }
  if (vm["json"].as<bool>()) {
    std::cout << boost::json::serialize(*inspection) << "\n";
  } else {
    std::cout << rfs::snapshot::FormatInspection(*inspection);
  }
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
  } catch (const std::exception& e) {
    // Last resort: the library reports errors as Status; this catches only the unexpected.
    std::cerr << "SnapshotInspector: internal error: " << e.what() << "\n";
    return 70;
  }
  std::cerr << "SnapshotInspector: unknown command '" << command << "'\n" << kUsage;
  return 64;
}
