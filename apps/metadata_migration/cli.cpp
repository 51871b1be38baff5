// The command line of MetadataMigration.
#include "cli.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/core/str_cat.hpp"
#include "rfs/transform/index_filter.hpp"
#include "rfs/transform/metadata_transform.hpp"
#include "rfs/transform/type_policy.hpp"

#include "absl/strings/ascii.h"
#include "common/connection.hpp"
#include "common/options.hpp"
#include "common/repository.hpp"

namespace rfs::apps::metadata {

namespace po = boost::program_options;
using migration::MetadataMode;

const char* const kUsage =
    "Usage: MetadataMigration evaluate|migrate --snapshot-local-dir DIR [--snapshot-name NAME]\n"
    "         [--target-host URL | --output-dir OUT] [options]\n"
    "       MetadataMigration evaluate|migrate --source-host URL [--target-host URL | ...]\n"
    "\n"
    "Moves the templates and index definitions of a snapshot to a target, before the documents\n"
    "(DocumentsFromSnapshotMigration) follow. With --source-host they are read from a live\n"
    "Elasticsearch or OpenSearch cluster instead (its template, settings, mapping and alias\n"
    "APIs; nothing else is asked of it), and no snapshot is read.\n"
    "In order: legacy templates, component templates, index templates, then indices with their\n"
    "settings, mappings and aliases. Each is rewritten for the target: mapping types of\n"
    "Elasticsearch <= 6 removed (--multi-type-behavior), settings no target accepts (uuid,\n"
    "creation date, versions, ILM, removed settings) dropped and reported. Templates and\n"
    "indices that already exist on the target are left untouched. System indices and templates\n"
    "(names starting with '.', templates Elasticsearch manages) are skipped unless an allowlist\n"
    "names them.\n"
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
    "failed or the source or target could not be read, 5 the snapshot cannot be read, 64 usage.\n"
    "Every option can also be set with an RFS_ environment variable, e.g. RFS_TARGET_HOST for\n"
    "--target-host, RFS_INDEX_ALLOWLIST=a,b for --index-allowlist. The Java tool's JSON form is\n"
    "taken too: migrate ---INLINE-JSON '{\"targetHost\": URL, ...}' (or its base64), or\n"
    "---JSON-FILE PATH, the command beside it or as \"jcommanderCommand\" in it.\n";

po::options_description Options() {
  po::options_description options("Options");
  options.add_options()("help,h", "show this help");
  AddRepositoryOptions(options);
  options.add_options()("snapshot-name", po::value<std::string>(),
                        "snapshot to migrate (default: the newest)")(
      "source-version", po::value<std::string>(),
      "override the detected source version, e.g. \"ES 6.8\" or \"OS 1.3\"; \"SOLR 9\" (or 6, "
      "7, 8): the location holds Solr backups and --snapshot-name names one (docs/solr.md)");
  AddSolrBackupOptions(options);
  AddConnectionOptions(options, "target", "target");
  AddConnectionOptions(options, "source", "source (read for its metadata instead of a snapshot)");
  AddPlainHttpOption(options);
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
      "creates <index>_<type> per type")("min-replicas", po::value<Bounded<int, 0, 1000>>(),
                                         "raise index.number_of_replicas to at least this")(
      "knn-engine", po::value<std::string>()->default_value("lucene"),
      "engine of the knn_vector fields translated from Elasticsearch dense_vector: lucene (the "
      "HNSW Elasticsearch uses) or faiss (docs/es-mapping-compatibility.md)")(
      "cluster-awareness-attributes", po::value<Bounded<int, 1, 1000>>()->default_value({1}),
      "raise index.number_of_replicas, where an index or template sets it, so that the copies of "
      "each shard (replicas + 1) are a multiple of this: the zones of a target with forced "
      "awareness (1: unchanged)")(
      "allow-existing-indexes", po::value<std::string>(),
      "true: an index already on the target is left untouched and reported (rfs's default); "
      "false (the Java tool's default): it fails, and the run exits 1")(
      "succeed-on-empty", po::value<std::string>()->default_value("true"),
      "false: a snapshot with nothing to migrate (no template, data stream or index but those "
      "left out by the allowlists or as system items) fails the run, exit 1")(
      "output", po::value<std::string>()->default_value("human-readable"),
      "human-readable or json")("output-file", po::value<std::string>(),
                                "also write the output (as --output) to this file")(
      "target-index-prefix", po::value<std::string>(),
      "a trial (DocumentsFromSnapshotMigration --max-docs-per-shard): create the indices, and "
      "their aliases, under names with this prefix; templates and data streams are left out");
  AddTraceOption(options);
  options.add_options()("otel-metrics-collector-endpoint", po::value<std::string>(),
                        "accepted for compatibility with the Java tool: MetadataMigration "
                        "exports no metrics, and says so at start");
  AddIgnoredJavaOption(options, "enable-sourceless-migrations", false,
                       "indices that keep no _source are created as any other; "
                       "DocumentsFromSnapshotMigration takes the option to rebuild their "
                       "documents, and evaluate lists what can be rebuilt");
  AddIgnoredJavaOption(options, "use-recovery-source", false,
                       "it concerns documents (as for the Java tool)");
  AddLooseVersionMatchingOption(options);
  AddIgnoredJavaOption(options, "disable-compression", false,
                       "metadata requests are small and sent uncompressed");
  AddTransformerOptions(options, "transformer-config",
                        "user transforms of each template and index: a JSON list of "
                        "{\"<Provider>\": <config>} applied in order, before the transforms for "
                        "the target version");
  return options;
}

namespace {

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

absl::StatusOr<transform::Allowlist> ParseAllowlist(const po::variables_map& vm, const char* name) {
  if (!vm.count(name)) return transform::Allowlist();
  auto list = transform::Allowlist::Parse(vm[name].as<std::vector<std::string>>());
  if (!list.ok()) {
    return absl::InvalidArgumentError(core::StrCat("--", name, ": ", list.status().message()));
  }
  return list;
}

}  // namespace

absl::StatusOr<CommandLine> ParseCommand(const std::string& command, const po::variables_map& vm) {
  if (command != "evaluate" && command != "migrate") {
    return Invalid(
        core::StrCat("unknown command '", command, "': the commands are evaluate and migrate"));
  }
  CommandLine line;
  // The Java tool takes its enum's names in any case (JSON, HUMAN_READABLE).
  std::string output = absl::AsciiStrToLower(vm["output"].as<std::string>());
  std::replace(output.begin(), output.end(), '_', '-');
  if (output != "human-readable" && output != "json") {
    return Invalid(core::StrCat("--output '", output, "' is not one of: human-readable, json"));
  }
  line.json_output = output == "json";
  line.output_file = Text(vm, "output-file");
  migration::MetadataToolOptions run;
  migration::MetadataMigrationOptions& metadata = run.migration;
  metadata.mode = command == "migrate" ? MetadataMode::kMigrate : MetadataMode::kEvaluate;
  for (auto [name, into] : std::initializer_list<std::pair<const char*, transform::Allowlist*>>{
           {"index-allowlist", &metadata.index_allowlist},
           {"index-template-allowlist", &metadata.index_template_allowlist},
           {"component-template-allowlist", &metadata.component_template_allowlist}}) {
    auto list = ParseAllowlist(vm, name);
    if (!list.ok()) return list.status();
    *into = *std::move(list);
  }
  auto policy = transform::ParseMultiTypePolicy(vm["multi-type-behavior"].as<std::string>());
  if (!policy.ok()) return policy.status();
  metadata.multi_type_policy = *policy;
  auto engine = transform::ParseKnnEngine(vm["knn-engine"].as<std::string>());
  if (!engine.ok()) return Invalid(core::StrCat("--knn-engine: ", engine.status().message()));
  metadata.knn_engine = *engine;
  if (vm.count("target-index-prefix")) {
    metadata.target_index_prefix = vm["target-index-prefix"].as<std::string>();
    if (absl::Status prefix = CheckIndexPrefix(metadata.target_index_prefix); !prefix.ok()) {
      return prefix;
    }
  }
  metadata.replica_copies_multiple =
      vm["cluster-awareness-attributes"].as<Bounded<int, 1, 1000>>().value;
  auto allow_existing = JavaBoolean(vm, "allow-existing-indexes", true);
  if (!allow_existing.ok()) return allow_existing.status();
  metadata.existing_index_fails = !*allow_existing;
  auto succeed_on_empty = JavaBoolean(vm, "succeed-on-empty", true);
  if (!succeed_on_empty.ok()) return succeed_on_empty.status();
  metadata.empty_fails = !*succeed_on_empty;
  if (vm.count("min-replicas")) {
    const int replicas = vm["min-replicas"].as<Bounded<int, 0, 1000>>().value;
    if (replicas < 0) return Invalid("--min-replicas must not be negative");
    metadata.min_replicas = replicas;
  }
  if (vm.count("source-version")) {
    auto solr = migration::ParseSolrSourceVersion(vm["source-version"].as<std::string>());
    if (!solr.ok()) return Invalid(core::StrCat("--source-version: ", solr.status().message()));
    if (*solr) {
      line.solr.emplace();
      line.solr->major = **solr;
      if (vm.count("solr-collection")) line.solr->collection = Text(vm, "solr-collection");
      if (vm.count("solr-backup-id")) {
        line.solr->backup_id = vm["solr-backup-id"].as<Bounded<int, 0, 1000000000>>().value;
      }
      if (vm.count("solr-schema")) line.solr->schema_file = Text(vm, "solr-schema");
    }
  }
  if (!line.solr &&
      (vm.count("solr-collection") || vm.count("solr-backup-id") || vm.count("solr-schema"))) {
    return Invalid(
        "--solr-collection, --solr-backup-id and --solr-schema need --source-version "
        "\"SOLR <major>\"");
  }
  if (line.solr && (vm.count("allow-existing-indexes") || metadata.empty_fails ||
                    metadata.replica_copies_multiple > 1)) {
    return Invalid(
        "--allow-existing-indexes, --succeed-on-empty and --cluster-awareness-attributes apply "
        "to Elasticsearch and OpenSearch snapshots, not to Solr backups");
  }
  if (vm.count("source-version") && !line.solr) {
    auto source = core::ClusterVersion::ParseKnown(vm["source-version"].as<std::string>());
    if (!source.ok()) return Invalid(core::StrCat("--source-version: ", source.status().message()));
    metadata.source_version = *source;
  }
  auto target_version = core::ClusterVersion::ParseKnown(vm["target-version"].as<std::string>());
  if (!target_version.ok()) {
    return Invalid(core::StrCat("--target-version: ", target_version.status().message()));
  }
  metadata.assumed_target_version = *target_version;
  auto transformers = TransformerConfig(vm, "transformer-config");
  if (!transformers.ok()) return transformers.status();
  metadata.transformer_config = *std::move(transformers);
  if (metadata.transformer_config) {
    // A broken configuration is a usage error, found before the snapshot is opened.
    auto loaded = transform::LoadTransformers(*metadata.transformer_config);
    if (!loaded.ok()) {
      return Invalid(core::StrCat("--transformer-config: ", loaded.status().message()));
    }
  }
  auto source = ConnectionOptions(vm, "source");
  if (!source.ok()) return source.status();
  run.source = *std::move(source);
  if (run.source && line.solr) {
    // As the Java tool, a Solr backup's location wins over a live source: rfs reads no live
    // Solr, so without a location there is nothing to read.
    if (!HasRepositoryOption(vm)) {
      return Invalid(
          "--source-host reads an Elasticsearch or OpenSearch cluster; a Solr backup is read "
          "from its location (--snapshot-local-dir, --repo-uri)");
    }
    line.warnings.push_back("--source-host is not read: the metadata comes from the Solr backup");
    run.source.reset();
  }
  if (run.source) {
    // As the Java tool, a live source wins over a repository given beside it.
    if (HasRepositoryOption(vm) || vm.count("snapshot-name")) {
      line.warnings.push_back(
          "the snapshot repository and --snapshot-name are not read: the metadata comes from "
          "--source-host");
    }
  } else {
    // The repository first: it is what every command reads.
    auto repository = RepositoryOption(vm);
    if (!repository.ok()) return repository.status();
    run.repository = *std::move(repository);
    if (vm.count("snapshot-name")) run.snapshot_name = Text(vm, "snapshot-name");
  }
  auto target = ConnectionOptions(vm, "target");
  if (!target.ok()) return target.status();
  run.target = *std::move(target);
  if (!run.target && vm.count("output-dir"))
    metadata.output_dir = vm["output-dir"].as<std::string>();

  line.run = std::move(run);
  return line;
}

}  // namespace rfs::apps::metadata
