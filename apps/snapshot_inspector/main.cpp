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

#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/lucene/source_json.hpp"
#include "rfs/migration/tools.hpp"
#include "rfs/snapshot/inspect.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/snapshot/smile.hpp"
#include "rfs/snapshot/source_repo.hpp"

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
    "         templates\n"
    "  docs   every live document of a snapshot as NDJSON on stdout, one per line, in\n"
    "         elasticdump's format: {\"_index\",\"_type\" (typed indices only),\"_id\",\n"
    "         \"_routing\" (when set),\"_source\"}; a summary goes to stderr\n"
    "\n"
    "Every option can also be set with an RFS_ environment variable, e.g.\n"
    "RFS_SNAPSHOT_LOCAL_DIR for --snapshot-local-dir.\n";

// Opens the repository named by the shared repository options (--snapshot-local-dir,
// --file-system-repo-path or --repo-uri). Returns 64 for bad options, 5 when it cannot be read,
// 0 with `out` set otherwise.
int OpenRepository(const po::variables_map& vm,
                   std::unique_ptr<rfs::snapshot::SnapshotRepository>& out) {
  auto folder = rfs::apps::RepositoryFolder(vm);
  if (!folder.ok()) {
    std::cerr << "SnapshotInspector: " << folder.status().message() << "\n";
    return 64;
  }
  auto repository = rfs::migration::OpenSnapshotRepository(*folder);
  if (!repository.ok()) {
    std::cerr << "SnapshotInspector: " << repository.status().message() << "\n";
    return 5;
  }
  out = std::move(repository).value();
  return 0;
}

int Info(int argc, char** argv) {
  po::options_description options("info options");
  options.add_options()("help,h", "show this help");
  rfs::apps::AddRepositoryOptions(options);
  options.add_options()("snapshot-name", po::value<std::string>(),
                        "snapshot to describe (default: the newest)")(
      "json", po::bool_switch(), "print one JSON object instead of text");
  po::variables_map vm;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << kUsage << "\n" << options << "\n";
      return 0;
    }
  }
  if (!rfs::apps::ParseOptions(argc, argv, 1, options, vm, "SnapshotInspector info")) return 64;

  std::unique_ptr<rfs::snapshot::SnapshotRepository> repository;
  if (int code = OpenRepository(vm, repository); code != 0) return code;
  std::optional<std::string> name;
  if (vm.count("snapshot-name")) name = vm["snapshot-name"].as<std::string>();
  auto inspection = rfs::snapshot::InspectRepository(*repository, name);
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

void AppendJsonString(std::string_view value, std::string& out) {
  out += boost::json::serialize(boost::json::string_view(value.data(), value.size()));
}

// Sources may be pretty-printed over lines; in valid JSON a raw CR or LF can only be
// whitespace between tokens, so replacing them with spaces keeps the document and makes it one
// line without a parse.
void AppendOneLine(std::span<const uint8_t> source, std::string& out) {
  const size_t start = out.size();
  out.append(reinterpret_cast<const char*>(source.data()), source.size());
  for (size_t i = start; i < out.size(); ++i) {
    if (out[i] == '\n' || out[i] == '\r') out[i] = ' ';
  }
}

struct DocsTotals {
  uint64_t docs = 0;
  uint64_t source_bytes = 0;
  uint64_t without_source = 0;
  uint64_t unconvertible = 0;
};

// Writes the live documents of one shard from `from_cursor` to stdout.
absl::Status DumpShard(const rfs::snapshot::SnapshotRepository& repository,
                       const rfs::snapshot::SnapshotEntry& snapshot,
                       const rfs::snapshot::IndexMetadata& index, int shard, uint64_t from_cursor,
                       DocsTotals& totals) {
  rfs::lucene::ShardReaderOptions options;
  options.pass_through_non_json_source = true;
  auto reader = rfs::lucene::OpenSnapshotShard(repository, snapshot, index.name, shard, options);
  if (!reader.ok()) return reader.status();
  auto cursor = (*reader)->OpenAt(from_cursor);
  if (!cursor.ok()) return cursor.status();
  const auto mapping_type = rfs::lucene::IndexMappingType(index);
  std::string line;
  std::string buffer;
  rfs::lucene::Document doc;
  while (true) {
    auto more = (*cursor)->Next(doc);
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (!doc.has_source) {
      ++totals.without_source;
      std::cerr << "SnapshotInspector: document " << index.name << "/" << doc.id << " (shard "
                << shard << ", cursor " << doc.cursor << ") has no _source; not written\n";
      continue;
    }
    line.clear();
    line += "{\"_index\":";
    AppendJsonString(index.name, line);
    if (doc.type || mapping_type) {
      line += ",\"_type\":";
      AppendJsonString(doc.type ? *doc.type : *mapping_type, line);
    }
    line += ",\"_id\":";
    AppendJsonString(doc.id, line);
    if (doc.routing) {
      line += ",\"_routing\":";
      AppendJsonString(*doc.routing, line);
    }
    line += ",\"_source\":";
    if (doc.source_format == rfs::lucene::SourceFormat::kJson) {
      AppendOneLine(doc.source, line);
    } else if (auto converted = rfs::lucene::AppendSourceAsJson(
                   doc.source, doc.source_format, line, rfs::core::StrCat("_source of ", doc.id));
               absl::IsUnimplemented(converted)) {
      ++totals.unconvertible;
      std::cerr << "SnapshotInspector: document " << index.name << "/" << doc.id << ": "
                << converted.message() << "; not written\n";
      continue;
    } else if (!converted.ok()) {
      return converted;
    }
    line += "}\n";
    ++totals.docs;
    totals.source_bytes += doc.source.size();
    buffer += line;
    if (buffer.size() > (1 << 20)) {
      std::fwrite(buffer.data(), 1, buffer.size(), stdout);
      buffer.clear();
    }
  }
  std::fwrite(buffer.data(), 1, buffer.size(), stdout);
  return absl::OkStatus();
}

int Docs(int argc, char** argv) {
  po::options_description options("docs options");
  options.add_options()("help,h", "show this help");
  rfs::apps::AddRepositoryOptions(options);
  options.add_options()("snapshot-name", po::value<std::string>()->required(), "snapshot to read")(
      "index", po::value<std::string>(), "only this index (default: every index)")(
      "shard", po::value<rfs::apps::ShardNumber>(), "only this shard (default: every shard)")(
      "from-cursor", po::value<rfs::apps::Count>()->default_value({0}),
      "start at this shard-global document number (needs --index and --shard)");
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << kUsage << "\n" << options << "\n";
      return 0;
    }
  }
  po::variables_map vm;
  if (!rfs::apps::ParseOptions(argc, argv, 1, options, vm, "SnapshotInspector docs")) return 64;
  const uint64_t from_cursor = rfs::apps::Get<rfs::apps::Count>(vm, "from-cursor");
  if (from_cursor > 0 && (!vm.count("index") || !vm.count("shard"))) {
    std::cerr << "SnapshotInspector docs: --from-cursor needs --index and --shard\n";
    return 64;
  }
  std::unique_ptr<rfs::snapshot::SnapshotRepository> repository;
  if (int code = OpenRepository(vm, repository); code != 0) return code;
  auto snapshot = repository->FindSnapshot(vm["snapshot-name"].as<std::string>());
  if (!snapshot.ok()) {
    std::cerr << "SnapshotInspector: " << snapshot.status().message() << "\n";
    return 5;
  }
  std::vector<std::string> indices = repository->IndicesIn(**snapshot);
  if (vm.count("index")) indices = {vm["index"].as<std::string>()};
  DocsTotals totals;
  for (const auto& name : indices) {
    auto meta = repository->ReadIndexMetadata(**snapshot, name);
    if (!meta.ok()) {
      std::cerr << "SnapshotInspector: " << meta.status().message() << "\n";
      return 5;
    }
    int first = 0;
    int last = meta->number_of_shards - 1;
    if (vm.count("shard")) {
      first = last = rfs::apps::Get<rfs::apps::ShardNumber>(vm, "shard");
      if (first >= meta->number_of_shards) {
        std::cerr << "SnapshotInspector docs: --shard " << first << " is out of range: index "
                  << name << " has " << meta->number_of_shards << " shard(s)\n";
        return 64;
      }
    }
    for (int shard = first; shard <= last; ++shard) {
      auto status = DumpShard(*repository, **snapshot, *meta, shard, from_cursor, totals);
      if (!status.ok()) {
        std::fflush(stdout);
        std::cerr << "SnapshotInspector: " << status.message() << "\n";
        return 5;
      }
    }
  }
  std::fflush(stdout);
  std::cerr << "SnapshotInspector: " << totals.docs << " documents, " << totals.source_bytes
            << " bytes of _source";
  if (totals.without_source > 0) std::cerr << ", " << totals.without_source << " without _source";
  if (totals.unconvertible > 0)
    std::cerr << ", " << totals.unconvertible << " not JSON-convertible";
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
    return 70;
  }
  std::cerr << "SnapshotInspector: unknown command '" << command << "'\n" << kUsage;
  return 64;
}
