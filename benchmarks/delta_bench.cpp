// delta_bench: what a catch-up (delta) migration reads and sends against a full one. The perf
// shard (1,000,000 documents of ~1 KB from the real-Lucene fixture generator) is loaded into a
// real OpenSearch node (scripts/local-cluster) by DocumentsFromSnapshotMigration; the node takes
// snapshot A, then 1% of the documents are updated and 0.1% deleted, and it takes snapshot B.
// Printed: for a full read of B and for the delta A -> B (lucene::ShardDeltaReader), the segments
// and bytes of segment files decoded, the documents read and sent, and the time.
//
//   delta_bench [--docs N] [--doc-size BYTES] [--changed-percent P] [--data-dir DIR]
//
// Build in Release without sanitizers to measure. The node runs under the data dir and is
// stopped at the end.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "rfs/lucene/shard_delta.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "bench_support.hpp"

namespace {

using bench::fs::path;

struct Options {
  long docs = 1'000'000;
  long doc_size = 1000;
  double changed_percent = 1.0;
  path data_dir = RFS_BENCH_DATA_DIR;
};

// Bytes of the snapshot's files of the segments `decoded` names (a segment's files start with
// its name and '.' or '_').
uint64_t SegmentBytes(const rfs::snapshot::SnapshotRepository& repository,
                      const rfs::snapshot::SnapshotEntry& snapshot, const std::string& index,
                      const std::set<std::string>& decoded) {
  auto shard = repository.ReadShardSnapshot(snapshot, index, 0);
  if (!shard.ok()) bench::Fail(std::string(shard.status().message()));
  uint64_t bytes = 0;
  for (const auto& file : shard->files) {
    for (const auto& segment : decoded) {
      const std::string& name = file.physical_name;
      if (name.size() > segment.size() && name.starts_with(segment) &&
          (name[segment.size()] == '.' || name[segment.size()] == '_')) {
        bytes += file.length;
      }
    }
  }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  bench::program = "delta_bench";
  Options options;
  if (auto exit_code = bench::ParseOptions(
          argc, argv,
          {{"--docs", [&](const std::string& v) { options.docs = std::stol(v); }},
           {"--doc-size", [&](const std::string& v) { options.doc_size = std::stol(v); }},
           {"--changed-percent",
            [&](const std::string& v) { options.changed_percent = std::stod(v); }},
           {"--data-dir", [&](const std::string& v) { options.data_dir = v; }}},
          "[--docs N] [--doc-size BYTES] [--changed-percent P] [--data-dir DIR]")) {
    return *exit_code;
  }
  const path dir = bench::Generate(
      options.data_dir,
      "perf-" + std::to_string(options.docs) + "x" + std::to_string(options.doc_size),
      "--docs " + std::to_string(options.docs) + " --doc-size " + std::to_string(options.doc_size) +
          " --segments 4 --seed 7");
  const path work = options.data_dir / "delta-bench";
  static std::string stop_command;  // run at exit, also when a step fails
  stop_command = std::string(RFS_SOURCE_DIR) + "/scripts/local-cluster stop --dir '" +
                 (work / "node").string() + "' >/dev/null 2>&1";
  std::system(stop_command.c_str());
  std::atexit([] { std::system(stop_command.c_str()); });
  bench::fs::remove_all(work);
  bench::fs::create_directories(work / "repo");
  const std::string url =
      bench::Shell(std::string(RFS_SOURCE_DIR) + "/scripts/local-cluster start --dir '" +
                   (work / "node").string() + "' --version 2 --repo-path '" +
                   (work / "repo").string() + "' 2>'" + (work / "start.log").string() + "'");
  const std::string index = "index-0";
  // One shard, as the generated one: its documents are loaded by rfs itself.
  bench::Shell("curl -sf -X PUT '" + url + "/" + index +
               "' -H 'content-type: application/json' -d "
               "'{\"settings\":{\"number_of_shards\":1,\"number_of_replicas\":0}}' >/dev/null");
  std::fprintf(stderr, "loading %ld documents into %s ...\n", options.docs, url.c_str());
  bench::Shell(std::string(RFS_DOCUMENTS_TOOL) + " --snapshot-local-dir '" +
               (dir / "repo").string() + "' --target-host " + url + " --coordinator-db '" +
               (work / "load.sqlite").string() + "' >/dev/null 2>'" + (work / "load.log").string() +
               "' || test $? -eq 3");
  auto snapshot = [&](const std::string& name) {
    bench::Shell("curl -sf -X POST '" + url + "/" + index + "/_flush' >/dev/null");
    bench::Shell("curl -sf -X PUT '" + url +
                 "/_snapshot/bench' -H 'content-type: application/json' -d "
                 "'{\"type\":\"fs\",\"settings\":{\"location\":\"" +
                 (work / "repo").string() + "\"}}' >/dev/null");
    bench::Shell("curl -sf -X PUT '" + url + "/_snapshot/bench/" + name +
                 "?wait_for_completion=true' -H 'content-type: application/json' -d "
                 "'{\"indices\":\"" +
                 index + "\",\"include_global_state\":false}' >/dev/null");
  };
  snapshot("a");
  // The ids of the generated shard, from snapshot A.
  auto base = rfs::snapshot::FileSystemRepo::Open((work / "repo").string());
  if (!base.ok()) bench::Fail(std::string(base.status().message()));
  auto repository = rfs::snapshot::SnapshotRepository::Open(*base);
  if (!repository.ok()) bench::Fail(std::string(repository.status().message()));
  auto a = (*repository)->FindSnapshot("a");
  if (!a.ok()) bench::Fail(std::string(a.status().message()));
  std::vector<std::pair<std::string, std::optional<std::string>>> ids;
  {
    auto reader = rfs::lucene::OpenSnapshotShard(**repository, **a, index, 0);
    if (!reader.ok()) bench::Fail(std::string(reader.status().message()));
    auto cursor = (*reader)->OpenAt(0);
    rfs::lucene::Document doc;
    while (*(*cursor)->Next(doc)) ids.emplace_back(doc.id, doc.routing);
  }
  // Updates and deletes of random documents, in bulks of 5,000.
  std::mt19937_64 random(11);
  std::shuffle(ids.begin(), ids.end(), random);
  const size_t updates = static_cast<size_t>(ids.size() * options.changed_percent / 100);
  const size_t deletes = updates / 10;
  const path bulk = work / "changes.ndjson";
  auto json_string = [](const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      if (static_cast<unsigned char>(c) < 0x20) continue;
      out += c;
    }
    return out + "\"";
  };
  for (size_t from = 0; from < updates + deletes; from += 5000) {
    std::ofstream out(bulk, std::ios::trunc);
    for (size_t i = from; i < std::min(updates + deletes, from + 5000); ++i) {
      const auto& [id, routing] = ids[i];
      const std::string meta = "{\"_index\":\"" + index + "\",\"_id\":" + json_string(id) +
                               (routing ? ",\"routing\":" + json_string(*routing) : "") + "}";
      if (i < updates) {
        // A new source of about the same size, as little compressible as the generated ones.
        std::string text;
        while (text.size() < static_cast<size_t>(options.doc_size)) {
          char word[20];
          std::snprintf(word, sizeof word, "%llx ", static_cast<unsigned long long>(random()));
          text += word;
        }
        out << "{\"index\":" << meta << "}\n{\"changed\":" << i << ",\"text\":\"" << text
            << "\"}\n";
      } else {
        out << "{\"delete\":" << meta << "}\n";
      }
    }
    out.close();
    bench::Shell("curl -sf -X POST '" + url +
                 "/_bulk' -H 'content-type: application/x-ndjson' --data-binary @'" +
                 bulk.string() + "' >/dev/null");
  }
  bench::Shell("curl -sf -X POST '" + url + "/" + index + "/_refresh' >/dev/null");
  snapshot("b");
  // The repository as it is now, with both snapshots.
  base = rfs::snapshot::FileSystemRepo::Open((work / "repo").string());
  if (!base.ok()) bench::Fail(std::string(base.status().message()));
  repository = rfs::snapshot::SnapshotRepository::Open(*base);
  if (!repository.ok()) bench::Fail(std::string(repository.status().message()));
  a = (*repository)->FindSnapshot("a");
  auto b = (*repository)->FindSnapshot("b");
  if (!a.ok() || !b.ok()) bench::Fail("snapshots a and b not both found");

  // A full read of B.
  auto open = [&](const rfs::snapshot::SnapshotEntry& s) {
    auto reader = rfs::lucene::OpenSnapshotShard(**repository, s, index, 0);
    if (!reader.ok()) bench::Fail(std::string(reader.status().message()));
    return *std::move(reader);
  };
  auto started = std::chrono::steady_clock::now();
  uint64_t full_docs = 0;
  std::set<std::string> all_segments;
  {
    auto reader = open(**b);
    for (const auto& segment : reader->segments()) all_segments.insert(segment.name);
    auto cursor = reader->OpenAt(0);
    rfs::lucene::Document doc;
    while (*(*cursor)->Next(doc)) ++full_docs;
  }
  const double full_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const uint64_t full_bytes = SegmentBytes(**repository, **b, index, all_segments);

  // The delta A -> B.
  started = std::chrono::steady_clock::now();
  auto older = open(**a);
  auto newer = open(**b);
  std::set<std::string> decoded_new, decoded_old;
  {
    std::set<std::string> older_names;
    for (const auto& s : older->segments()) older_names.insert(s.name);
    for (const auto& s : newer->segments()) {
      if (!older_names.contains(s.name)) decoded_new.insert(s.name);
    }
    std::set<std::string> newer_names;
    for (const auto& s : newer->segments()) newer_names.insert(s.name);
    for (const auto& s : older->segments()) {
      if (!newer_names.contains(s.name)) decoded_old.insert(s.name);
    }
  }
  auto delta = rfs::lucene::ShardDeltaReader::Open(std::move(older), std::move(newer),
                                                   rfs::lucene::DeltaMode::kUpdatesAndDeletes);
  if (!delta.ok()) bench::Fail(std::string(delta.status().message()));
  rfs::lucene::Document doc;
  uint64_t sent = 0;
  while (*(*delta)->Next(doc)) ++sent;
  const double delta_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto& stats = (*delta)->stats();
  const uint64_t delta_bytes = SegmentBytes(**repository, **b, index, decoded_new) +
                               SegmentBytes(**repository, **a, index, decoded_old);

  std::printf("delta_bench: %ld docs of ~%ld bytes, %zu updated and %zu deleted between A and B\n",
              options.docs, options.doc_size, updates, deletes);
  std::printf(
      "  full read of B   %3zu segments %9.1f MB decoded %9llu docs read %9llu sent %7.2f s\n",
      all_segments.size(), full_bytes / 1e6, static_cast<unsigned long long>(full_docs),
      static_cast<unsigned long long>(full_docs), full_seconds);
  std::printf(
      "  delta A -> B     %3zu segments %9.1f MB decoded %9llu docs read %9llu sent %7.2f s"
      " (%zu segments shared; %llu indexed, %llu deleted, %llu unchanged skipped)\n",
      decoded_new.size() + decoded_old.size(), delta_bytes / 1e6,
      static_cast<unsigned long long>(stats.previous_docs_read + stats.current_docs_read),
      static_cast<unsigned long long>(sent), delta_seconds, stats.segments_shared,
      static_cast<unsigned long long>(stats.docs_to_index),
      static_cast<unsigned long long>(stats.docs_to_delete),
      static_cast<unsigned long long>(stats.docs_unchanged));
  return 0;
}
