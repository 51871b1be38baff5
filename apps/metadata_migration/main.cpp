// MetadataMigration: moves the templates and index definitions of a snapshot to a target, with
// the option names of the Java tool of opensearch-migrations.
//
//   MetadataMigration evaluate|migrate --snapshot-local-dir DIR [--snapshot-name NAME]
//                     (--target-host URL | --output-dir DIR | --target-version V) [options]
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "rfs/core/str_cat.hpp"
#include "rfs/migration/tools.hpp"
#include "rfs/transform/index_filter.hpp"
#include "rfs/transform/metadata_transform.hpp"
#include "rfs/transform/type_policy.hpp"

#include "common/connection.hpp"
#include "common/options.hpp"
#include "common/repository.hpp"

namespace {

namespace po = boost::program_options;
namespace json = boost::json;
using rfs::migration::MetadataMode;

constexpr int kUsageExitCode = rfs::migration::kExitUsage;
constexpr const char* kProgram = "MetadataMigration";

constexpr const char* kUsage =
    "Usage: MetadataMigration evaluate|migrate --snapshot-local-dir DIR [--snapshot-name NAME]\n"
    "         [--target-host URL | --output-dir OUT] [options]\n"
    "\n"
    "Moves the templates and index definitions of a snapshot to a target, before the documents\n"
    "(DocumentsFromSnapshotMigration) follow. In order: legacy templates, component templates,\n"
    "index templates, then indices with their settings, mappings and aliases. Each is rewritten\n"
    "for the target: mapping types of Elasticsearch <= 6 removed (--multi-type-behavior),\n"
    "settings no target accepts (uuid, creation date, versions, ILM, removed settings) dropped\n"
    "and reported. Templates and indices that already exist on the target are left untouched.\n"
    "System indices and templates (names starting with '.', templates Elasticsearch manages)\n"
    "are skipped unless an allowlist names them.\n"
    "\n"
    "Commands:\n"
    "  evaluate  report what migrate would do; only reads the target (GET/HEAD)\n"
    "  migrate   create what is missing. A setting the target rejects as unknown or private is\n"
    "            dropped, reported and the create retried\n"
    "\n"
    "Targets:\n"
    "  --target-host URL   an OpenSearch (or Elasticsearch) cluster\n"
    "  --output-dir OUT    embedded default, without a cluster: migrate writes each item to\n"
    "                      OUT/.rfs/metadata/<kind>/<name>.json (as --target-version)\n"
    "  neither             evaluate only, for the version --target-version (OS 2.19)\n"
    "\n"
    "Output: a list of items grouped by kind with their outcome (created, would_create,\n"
    "already_exists, skipped_by_allowlist, skipped_system, skipped_unsupported, failed), the\n"
    "settings dropped and notes, and a summary line; --output json prints one JSON document.\n"
    "\n"
    "Exit codes: 0 every item fine (created, would create, already exists or skipped), 1 an item\n"
    "failed or the target could not be reached, 5 the snapshot cannot be read, 64 usage.\n"
    "Every option can also be set with an RFS_ environment variable, e.g. RFS_TARGET_HOST for\n"
    "--target-host, RFS_INDEX_ALLOWLIST=a,b for --index-allowlist.\n";

po::options_description Options() {
  po::options_description options("Options");
  options.add_options()("help,h", "show this help");
  rfs::apps::AddRepositoryOptions(options);
  options.add_options()("snapshot-name", po::value<std::string>(),
                        "snapshot to migrate (default: the newest)")(
      "source-version", po::value<std::string>(),
      "override the detected source version, e.g. \"ES 6.8\" or \"OS 1.3\"");
  rfs::apps::AddConnectionOptions(options, "target", "target");
  options.add_options()("output-dir", po::value<std::string>(),
                        "directory target (embedded default) when there is no --target-host")(
      "target-version", po::value<std::string>()->default_value("OS 2.19"),
      "the target's version when there is no --target-host, e.g. \"OS 2.19\", \"ES 7.10\"")(
      "index-allowlist", po::value<std::vector<std::string>>()->multitoken(),
      "indices to migrate: names or regex:<pattern>, space- or comma-separated "
      "(default: every non-system index)")(
      "index-template-allowlist", po::value<std::vector<std::string>>()->multitoken(),
      "legacy and index templates to migrate (default: every non-system template)")(
      "component-template-allowlist", po::value<std::vector<std::string>>()->multitoken(),
      "component templates to migrate (default: every non-system template)")(
      "multi-type-behavior", po::value<std::string>()->default_value("union"),
      "indices with several mapping types (ES <= 5): union merges them into one index, split "
      "creates <index>_<type> per type")("min-replicas", po::value<int>(),
                                         "raise index.number_of_replicas to at least this")(
      "output", po::value<std::string>()->default_value("human-readable"),
      "human-readable or json");
  return options;
}

// Prints an error in the chosen output form and returns `code`.
int Error(bool json_output, const std::string& message, int code) {
  std::cerr << kProgram << ": " << message << "\n";
  if (json_output) {
    std::cout << json::serialize(json::object{{"ok", false}, {"error", message}}) << "\n";
  }
  return code;
}

int Usage(const std::string& message) {
  std::cerr << kProgram << ": " << message << "\nTry '" << kProgram << " --help'.\n";
  return kUsageExitCode;
}

absl::StatusOr<rfs::transform::Allowlist> ParseAllowlist(const po::variables_map& vm,
                                                         const char* name) {
  if (!vm.count(name)) return rfs::transform::Allowlist();
  auto list = rfs::transform::Allowlist::Parse(vm[name].as<std::vector<std::string>>());
  if (!list.ok()) {
    return absl::InvalidArgumentError(rfs::core::StrCat("--", name, ": ", list.status().message()));
  }
  return list;
}

}  // namespace

int main(int argc, char** argv) {
  const po::options_description options = Options();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h" || (i == 1 && arg == "help")) {
      std::cout << kUsage << "\n" << options << "\n";
      return 0;
    }
  }
  if (argc < 2) return Usage("a command is required: evaluate or migrate");
  const std::string command = argv[1];
  if (command != "evaluate" && command != "migrate") {
    return Usage(rfs::core::StrCat("unknown command '", command,
                                   "': the commands are evaluate and migrate"));
  }
  po::variables_map vm;
  // argv[1] (the command) stands where the parser expects the program name.
  if (!rfs::apps::ParseOptions(argc, argv, 1, options, vm, kProgram)) return kUsageExitCode;

  const std::string output = vm["output"].as<std::string>();
  if (output != "human-readable" && output != "json") {
    return Usage(rfs::core::StrCat("--output '", output, "' is not one of: human-readable, json"));
  }
  const bool json_output = output == "json";

  rfs::migration::MetadataToolOptions run;
  rfs::migration::MetadataMigrationOptions& migration = run.migration;
  migration.mode = command == "migrate" ? MetadataMode::kMigrate : MetadataMode::kEvaluate;
  for (auto [name, into] :
       std::initializer_list<std::pair<const char*, rfs::transform::Allowlist*>>{
           {"index-allowlist", &migration.index_allowlist},
           {"index-template-allowlist", &migration.index_template_allowlist},
           {"component-template-allowlist", &migration.component_template_allowlist}}) {
    auto list = ParseAllowlist(vm, name);
    if (!list.ok()) return Usage(std::string(list.status().message()));
    *into = *std::move(list);
  }
  auto policy = rfs::transform::ParseMultiTypePolicy(vm["multi-type-behavior"].as<std::string>());
  if (!policy.ok()) return Usage(std::string(policy.status().message()));
  migration.multi_type_policy = *policy;
  if (vm.count("min-replicas")) {
    const int replicas = vm["min-replicas"].as<int>();
    if (replicas < 0) return Usage("--min-replicas must not be negative");
    migration.min_replicas = replicas;
  }
  if (vm.count("source-version")) {
    auto source = rfs::transform::ParseClusterDescription(vm["source-version"].as<std::string>());
    if (!source.ok())
      return Usage(rfs::core::StrCat("--source-version: ", source.status().message()));
    migration.source_version = *source;
  }
  auto target_version =
      rfs::transform::ParseClusterDescription(vm["target-version"].as<std::string>());
  if (!target_version.ok()) {
    return Usage(rfs::core::StrCat("--target-version: ", target_version.status().message()));
  }
  migration.assumed_target_version = *target_version;
  // The repository first: it is what every command reads.
  auto folder = rfs::apps::RepositoryFolder(vm);
  if (!folder.ok()) return Usage(std::string(folder.status().message()));
  run.repository_folder = *folder;
  if (vm.count("snapshot-name")) run.snapshot_name = vm["snapshot-name"].as<std::string>();
  auto target = rfs::apps::ConnectionOptions(vm, "target");
  if (!target.ok()) return Usage(std::string(target.status().message()));
  run.target = *std::move(target);
  if (!run.target && vm.count("output-dir"))
    migration.output_dir = vm["output-dir"].as<std::string>();

  const rfs::migration::MetadataToolResult result =
      rfs::migration::RunMetadataMigration(std::move(run));
  if (result.exit_code == rfs::migration::kExitUsage) {
    return Usage(std::string(result.status.message()));
  }
  if (!result.status.ok()) {
    return Error(json_output, std::string(result.status.message()), result.exit_code);
  }
  if (json_output) {
    std::cout << json::serialize(result.report->ToJson(/*with_bodies=*/true)) << "\n";
  } else {
    std::cout << result.report->ToText();
  }
  return result.exit_code;
}
