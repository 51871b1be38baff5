// transform_bench: documents per second through each user-transform provider
// (TransformingDocumentStream, as a worker runs it) on the documents of the perf shard, against no
// transform. One thread; the documents are read from the shard into memory before timing.
//
//   transform_bench [--docs N] [--shard-docs N] [--doc-size BYTES] [--rounds R] [--data-dir DIR]
//
// The shard is perf_report's (perf-<shard-docs>x<doc-size>, generated once and kept under
// --data-dir); the first --docs documents of it go through each configuration. Half the documents
// are given mapping type "book" and half "author", so the type-mapping split has two targets.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/reindex/transforming_stream.hpp"
#include "rfs/transform/json_transformer.hpp"

#include "bench_support.hpp"

namespace {

using rfs::reindex::SourceDocument;

struct Options {
  size_t docs = 200'000;
  long shard_docs = 1'000'000;
  long doc_size = 1000;
  int rounds = 3;
  bench::fs::path data_dir = RFS_BENCH_DATA_DIR;
};

std::vector<SourceDocument> LoadDocs(const bench::fs::path& dir, size_t limit) {
  std::unique_ptr<rfs::snapshot::SnapshotRepository> keep;
  const rfs::snapshot::SnapshotEntry* snapshot = nullptr;
  auto repo = rfs::snapshot::FileSystemRepo::Open((dir / "repo").string());
  if (!repo.ok()) bench::Fail(std::string(repo.status().message()));
  auto repository = rfs::snapshot::SnapshotRepository::Open(*repo);
  if (!repository.ok()) bench::Fail(std::string(repository.status().message()));
  keep = std::move(repository).value();
  auto latest = keep->LatestSnapshot();
  if (!latest.ok()) bench::Fail(std::string(latest.status().message()));
  snapshot = *latest;
  auto reader = rfs::lucene::OpenSnapshotShard(*keep, *snapshot, "index-0", 0);
  if (!reader.ok()) bench::Fail(std::string(reader.status().message()));
  auto cursor = (*reader)->OpenAt(0);
  if (!cursor.ok()) bench::Fail(std::string(cursor.status().message()));
  std::vector<SourceDocument> docs;
  rfs::lucene::Document doc;
  while (docs.size() < limit) {
    auto more = (*cursor)->Next(doc);
    if (!more.ok()) bench::Fail(std::string(more.status().message()));
    if (!*more) break;
    SourceDocument out;
    out.index = "index-0";
    out.id = doc.id;
    out.type = docs.size() % 2 ? "author" : "book";
    out.routing = doc.routing;
    out.source.assign(doc.source.begin(), doc.source.end());
    out.cursor = doc.cursor;
    docs.push_back(std::move(out));
  }
  return docs;
}

struct Measured {
  double seconds = 0;
  uint64_t out_docs = 0;
  uint64_t out_bytes = 0;
};

// One pass of `docs` through `config` (empty: no transform, the documents as read).
Measured RunOnce(const std::vector<SourceDocument>& docs, const std::string& config) {
  std::vector<SourceDocument> copy = docs;  // not timed: the stream consumes its input
  rfs::reindex::VectorDocumentStream input(std::move(copy));
  std::unique_ptr<rfs::transform::IJsonTransformer> transformer;
  std::unique_ptr<rfs::reindex::TransformingDocumentStream> transforming;
  rfs::reindex::IDocumentStream* stream = &input;
  if (!config.empty()) {
    auto loaded = rfs::transform::LoadTransformers(config);
    if (!loaded.ok()) bench::Fail(std::string(loaded.status().message()));
    transformer = std::move(loaded).value();
    transforming =
        std::make_unique<rfs::reindex::TransformingDocumentStream>(input, *transformer, nullptr);
    stream = transforming.get();
  }
  Measured m;
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    auto next = stream->Next();
    if (!next.ok()) bench::Fail(std::string(next.status().message()));
    if (!next->has_value()) break;
    ++m.out_docs;
    m.out_bytes += (*next)->source.size();
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (transforming && transforming->docs_failed() > 0) {
    bench::Fail(config + ": " + std::to_string(transforming->docs_failed()) + " documents failed");
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  bench::program = "transform_bench";
  Options options;
  if (auto exit_code = bench::ParseOptions(
          argc, argv,
          {{"--docs", [&](const std::string& v) { options.docs = std::stoul(v); }},
           {"--shard-docs", [&](const std::string& v) { options.shard_docs = std::stol(v); }},
           {"--doc-size", [&](const std::string& v) { options.doc_size = std::stol(v); }},
           {"--rounds", [&](const std::string& v) { options.rounds = std::stoi(v); }},
           {"--data-dir", [&](const std::string& v) { options.data_dir = v; }}},
          "[--docs N] [--shard-docs N] [--doc-size BYTES] [--rounds R] [--data-dir DIR]")) {
    return *exit_code;
  }
  const std::string name =
      "perf-" + std::to_string(options.shard_docs) + "x" + std::to_string(options.doc_size);
  const bench::fs::path dir =
      bench::Generate(options.data_dir, name,
                      "--docs " + std::to_string(options.shard_docs) + " --doc-size " +
                          std::to_string(options.doc_size) + " --segments 4 --seed 7");
  const std::vector<SourceDocument> docs = LoadDocs(dir, options.docs);
  uint64_t source_bytes = 0;
  for (const auto& d : docs) source_bytes += d.source.size();

  struct Case {
    const char* label;
    std::string config;
  };
  const std::vector<Case> cases = {
      {"no transform", ""},
      {"NoopTransformerProvider", R"J([{"NoopTransformerProvider":{}}])J"},
      {"TypeMappingSanitization, split into 2 indices",
       R"J([{"TypeMappingSanitizationTransformerProvider":{"staticMappings":)J"
       R"J({"index-0":{"book":"books","author":"authors"}}}}])J"},
      {"JqTransformerProvider, rename a field",
       R"J([{"JqTransformerProvider":{"script":)J"
       R"J(".document |= (.heading = .title | del(.title))"}}])J"},
      {"JsonJSTransformerProvider, rename a field",
       R"J([{"JsonJSTransformerProvider":{"initializationScript":"(function () { return )J"
       R"J(function (docs) { for (var i = 0; i < docs.length; i++) { var d = docs[i].document; )J"
       R"J(d.heading = d.title; delete d.title; } return docs; }; })"}}])J"},
      {"JsonPythonTransformerProvider, rename a field",
       R"J([{"JsonPythonTransformerProvider":{"initializationScript":)J"
       R"J("def main(context):\n    def transform(docs):\n        for d in docs:\n)J"
       R"J(            source = d['document']\n            source['heading'] = source.pop('title')\n)J"
       R"J(        return docs\n    return transform\nmain\n"}}])J"},
      {"JsonJMESPathTransformerProvider, keep one field",
       R"J([{"JsonJMESPathTransformerProvider":{"script":)J"
       R"J("[*].{operation: operation, document: {heading: document.title}}"}}])J"},
      {"JsonJoltTransformerProvider, rename a field (shift)",
       R"J([{"JsonJoltTransformerProvider":{"script":{"operation":"shift","spec":{"*":{)J"
       R"J("operation":"[&1].operation","document":{"title":"[&2].document.heading",)J"
       R"J("*":"[&2].document.&"}}}}}}])J"},
      {"JsonJoltTransformerProvider, upper-case a field (modify)",
       R"J([{"JsonJoltTransformerProvider":{"script":{"operation":"modify-overwrite-beta",)J"
       R"J("spec":{"*":{"document":{"title":"=toUpper"}}}}}}])J"},
      {"JsonConditionalTransformerProvider, jq predicate",
       R"J([{"JsonConditionalTransformerProvider":[{"JqPredicateProvider":{"script":)J"
       R"J(".operation._type == \"book\""}},)J"
       R"J([{"JsonTransformerForDocumentTypeRemovalProvider":{}}]]}])J"},
  };
  std::printf("transform_bench: %zu documents (%.1f MB of _source) of %s, best of %d, 1 thread\n",
              docs.size(), source_bytes / 1e6, name.c_str(), options.rounds);
  double baseline = 0;
  for (const Case& c : cases) {
    Measured best;
    for (int round = 0; round < options.rounds; ++round) {
      Measured m = RunOnce(docs, c.config);
      if (best.seconds == 0 || m.seconds < best.seconds) best = m;
    }
    const double docs_per_second = docs.size() / best.seconds;
    if (baseline == 0) baseline = docs_per_second;
    std::printf("  %-50s %10.0f docs/s %8.1f MB/s  %6.3fx  (%llu docs out)\n", c.label,
                docs_per_second, source_bytes / 1e6 / best.seconds, docs_per_second / baseline,
                static_cast<unsigned long long>(best.out_docs));
  }
  return 0;
}
