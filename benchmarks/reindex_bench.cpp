// reindex_bench: bulk throughput of DocumentReindexer, in documents/s and MB/s of `_source`.
//
//   reindex_bench [--docs N] [--doc-bytes B] [--batch-mb M] [--connections C] [--rounds R]
//                 [--targets serialize,serialize-gzip,ndjson,ndjson-nosync,http,http-gzip]
//                 [--dir PATH] [--snapshot REPOSITORY]
//                 [--reject-429 P] [--capacity C] [--backpressure on|off|both]
//
// Backpressure: --reject-429 makes the double answer a fraction P of bulk requests with 429, and
// --capacity C puts a gate in front of the http sink that delays every request by 5 ms per
// request in flight (a target slowing under load), sends it, and answers 429 (as a queue-full
// cluster does, after receiving the body) when more than C were in flight. --backpressure both runs
// each http round with and without the reindexer's AIMD backpressure.
//
// Targets:
//   ndjson         NdjsonDirectorySink into --dir (fsync per file, as in production)
//   ndjson-nosync  the same without fsync (isolates serialization from the disk)
//   http           OpenSearchBulkSink through BeastHttpTransport to an in-process HTTP server
//                  (the OpenSearch test double in discard mode: it reads each body, counts its
//                  action lines and answers one success item per action)
//   http-gzip      the same with gzip request bodies
//   serialize      the client side alone: bulk bodies built as for `_bulk`, then dropped
//   serialize-gzip the same, gzip-compressed (what a remote target's client pays)
// The server shares the process and its cores, so the http figures include its cost; the
// serialize figures bound what a worker sends to a remote cluster.
//
// With --snapshot, the documents are the first N of shard 0 of a generated snapshot (e.g.
// build/release/bench-data/best_speed-1000000x1000/repo from lucene_extract_bench), read before
// timing. Otherwise they are generated in memory before timing (about B bytes each, one in five
// pretty-printed over several lines), because the Lucene reader is measured by
// lucene_extract_bench; only Reindex() is timed. Build in Release without sanitizers.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rfs/core/clock.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/net/gzip.hpp"
#include "rfs/opensearch/client.hpp"
#include "rfs/reindex/document_reindexer.hpp"
#include "rfs/reindex/document_sink.hpp"

#include "opensearch_double.hpp"
#include <sys/resource.h>

namespace {

using rfs::reindex::SourceDocument;

struct Options {
  size_t docs = 200'000;
  size_t doc_bytes = 1024;
  size_t batch_mb = 10;
  size_t connections = 10;
  double reject_429 = 0;
  int capacity = 0;
  std::string backpressure = "on";
  int rounds = 3;
  std::string targets = "serialize,serialize-gzip,ndjson,ndjson-nosync,http,http-gzip";
  std::string dir;
  // A snapshot repository (e.g. one the fixture generator wrote): documents are read from its
  // first index's shard 0 instead of being generated.
  std::string snapshot;
};

// The first `options.docs` live documents of shard 0 of the newest snapshot's first index, read
// with the Lucene reader (not timed).
std::vector<SourceDocument> LoadShardDocs(const Options& options) {
  auto fail = [](const absl::Status& status) {
    std::fprintf(stderr, "reindex_bench: %s\n", std::string(status.message()).c_str());
    std::exit(1);
  };
  auto repo = rfs::snapshot::FileSystemRepo::Open(options.snapshot);
  if (!repo.ok()) fail(repo.status());
  auto repository = rfs::snapshot::SnapshotRepository::Open(*repo);
  if (!repository.ok()) fail(repository.status());
  auto snapshot = (*repository)->LatestSnapshot();
  if (!snapshot.ok()) fail(snapshot.status());
  const std::string index = (*repository)->IndicesIn(**snapshot).at(0);
  auto reader = rfs::lucene::OpenSnapshotShard(**repository, **snapshot, index, 0);
  if (!reader.ok()) fail(reader.status());
  auto cursor = (*reader)->OpenAt(0);
  if (!cursor.ok()) fail(cursor.status());
  std::vector<SourceDocument> docs;
  rfs::lucene::Document doc;
  while (docs.size() < options.docs) {
    auto more = (*cursor)->Next(doc);
    if (!more.ok()) fail(more.status());
    if (!*more) break;
    docs.push_back(SourceDocument{.index = index,
                                  .id = doc.id,
                                  .routing = doc.routing,
                                  .source = std::string(doc.source.begin(), doc.source.end()),
                                  .cursor = doc.cursor});
  }
  return docs;
}

// A log-like document of about `bytes` bytes: a few typed fields and a message of random words.
std::vector<SourceDocument> GenerateDocs(const Options& options, uint64_t seed) {
  static const char* kWords[] = {"alpha", "bravo",    "charlie", "delta",  "echo",   "foxtrot",
                                 "golf",  "hotel",    "india",   "juliet", "kilo",   "lima",
                                 "mike",  "november", "oscar",   "papa",   "quebec", "romeo"};
  std::mt19937_64 rng(seed);
  std::vector<SourceDocument> docs;
  docs.reserve(options.docs);
  for (size_t i = 0; i < options.docs; ++i) {
    const bool pretty = i % 5 == 0;
    const char* nl = pretty ? "\n  " : "";
    std::string source =
        std::string("{") + nl + "\"@timestamp\":\"2024-05-0" + std::to_string(1 + i % 9) +
        "T12:00:00Z\"," + nl + "\"host\":\"web-" + std::to_string(rng() % 100) + "\"," + nl +
        "\"status\":" + std::to_string(200 + rng() % 300) + "," + nl +
        "\"bytes\":" + std::to_string(rng() % 100000) + "," + nl + "\"message\":\"";
    while (source.size() + 4 < options.doc_bytes) {
      source += kWords[rng() % (sizeof(kWords) / sizeof(kWords[0]))];
      source += ' ';
    }
    source += pretty ? "\"\n}" : "\"}";
    SourceDocument doc;
    doc.index = "bench";
    doc.id = "doc-" + std::to_string(i);
    doc.cursor = i + 1;
    doc.source = std::move(source);
    docs.push_back(std::move(doc));
  }
  return docs;
}

// Builds each batch's bulk body exactly as OpenSearchBulkSink does (optionally gzipped), then
// drops it: the client's cost without a network or a server.
class SerializeOnlySink final : public rfs::reindex::IDocumentSink {
 public:
  explicit SerializeOnlySink(bool gzip) : gzip_(gzip) {}
  absl::StatusOr<std::vector<rfs::reindex::ItemFailure>> Write(
      std::span<const SourceDocument* const> docs) override {
    std::string body;
    size_t bytes = 0;
    for (const SourceDocument* doc : docs) bytes += rfs::reindex::EstimateBulkBytes(*doc);
    body.reserve(bytes);
    for (const SourceDocument* doc : docs) {
      rfs::reindex::AppendBulkAction(*doc, {}, body);
      rfs::reindex::AppendSourceLine(doc->source, body);
    }
    if (gzip_) {
      auto packed = rfs::net::GzipCompress(body);
      if (!packed.ok()) return packed.status();
      sink_bytes_ += packed->size();
    } else {
      sink_bytes_ += body.size();
    }
    return std::vector<rfs::reindex::ItemFailure>();
  }
  std::string description() const override { return "serialize only"; }

 private:
  bool gzip_;
  std::atomic<uint64_t> sink_bytes_{0};
};

struct Result {
  double seconds = 0;
  double cpu_seconds = 0;  // user + system time of the whole process (server included)
  uint64_t docs = 0;
  uint64_t source_bytes = 0;
  int rejected = 0;  // 429s met (gate and double)
};

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// A target that takes at most `capacity` bulks at once (the others get 429) and slows down with
// load, in front of another sink.
class CapacityGate final : public rfs::reindex::IDocumentSink {
 public:
  CapacityGate(rfs::reindex::IDocumentSink& inner, int capacity)
      : inner_(inner), capacity_(capacity) {}
  absl::StatusOr<std::vector<rfs::reindex::ItemFailure>> Write(
      std::span<const SourceDocument* const> docs) override {
    const int now = ++active_;
    // Every request costs its transfer and parsing; past capacity it is then refused (the
    // cluster's write queue is full) and the client must send it again.
    std::this_thread::sleep_for(std::chrono::milliseconds(5 * now));
    absl::StatusOr<std::vector<rfs::reindex::ItemFailure>> result = inner_.Write(docs);
    if (capacity_ > 0 && now > capacity_) {
      ++rejected;
      result = absl::ResourceExhaustedError("429 es_rejected_execution_exception (gate)");
    }
    --active_;
    return result;
  }
  std::string description() const override { return inner_.description(); }
  std::atomic<int> rejected{0};

 private:
  rfs::reindex::IDocumentSink& inner_;
  const int capacity_;
  std::atomic<int> active_{0};
};

Result RunOnce(rfs::reindex::IDocumentSink& sink, const Options& options,
               std::vector<SourceDocument> docs, bool backpressure = true) {
  rfs::reindex::DocumentReindexerOptions reindexer_options{
      .max_bytes_per_batch = options.batch_mb << 20, .max_concurrent_batches = options.connections};
  reindexer_options.retry.max_attempts = 0;  // as a worker under a lease: retry until done
  reindexer_options.retry.initial_backoff = std::chrono::milliseconds(50);
  reindexer_options.retry.max_backoff = std::chrono::milliseconds(2000);
  reindexer_options.backpressure = backpressure;
  rfs::reindex::DocumentReindexer reindexer(sink, nullptr, rfs::core::SystemClock::Instance(),
                                            reindexer_options);
  rfs::reindex::VectorDocumentStream stream(std::move(docs));
  const double cpu_start = CpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  auto summary = reindexer.Reindex(stream);
  const auto end = std::chrono::steady_clock::now();
  const double cpu = CpuSeconds() - cpu_start;
  if (!summary.ok()) {
    std::fprintf(stderr, "reindex failed: %s\n", std::string(summary.status().message()).c_str());
    std::exit(1);
  }
  return {std::chrono::duration<double>(end - start).count(), cpu,
          summary->docs_written + summary->docs_failed, summary->source_bytes};
}

void Report(const std::string& target, const std::vector<Result>& results) {
  // The best round: the machine is shared, and the best run is the least disturbed one.
  Result best = results.front();
  for (const auto& r : results) {
    if (r.seconds < best.seconds) best = r;
  }
  // Wall-clock rates depend on what else runs on the machine; MB per CPU-second (all threads of
  // the process, the in-process server included) does not, and times the core count gives what
  // a process with that many cores to itself would sustain.
  std::printf(
      "%-14s %9.0f docs/s %8.1f MB/s wall | %7.1f MB per CPU-second (%.2f s wall, "
      "%.2f s CPU for %llu docs, %.1f MB of _source; best of %zu; %d 429s)\n",
      target.c_str(), best.docs / best.seconds, best.source_bytes / best.seconds / 1e6,
      best.source_bytes / best.cpu_seconds / 1e6, best.seconds, best.cpu_seconds,
      static_cast<unsigned long long>(best.docs), best.source_bytes / 1e6, results.size(),
      best.rejected);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    const std::string value = argv[i + 1];
    if (arg == "--docs") {
      options.docs = std::stoull(value);
    } else if (arg == "--doc-bytes") {
      options.doc_bytes = std::stoull(value);
    } else if (arg == "--batch-mb") {
      options.batch_mb = std::stoull(value);
    } else if (arg == "--connections") {
      options.connections = std::stoull(value);
    } else if (arg == "--rounds") {
      options.rounds = std::stoi(value);
    } else if (arg == "--targets") {
      options.targets = value;
    } else if (arg == "--snapshot") {
      options.snapshot = value;
    } else if (arg == "--dir") {
      options.dir = value;
    } else if (arg == "--reject-429") {
      options.reject_429 = std::stod(value);
    } else if (arg == "--capacity") {
      options.capacity = std::stoi(value);
    } else if (arg == "--backpressure") {
      options.backpressure = value;
    } else {
      std::fprintf(stderr, "unknown option %s\n", arg.c_str());
      return 2;
    }
  }
  if (options.dir.empty()) {
    options.dir = (std::filesystem::temp_directory_path() / "rfs-reindex-bench").string();
  }
  std::printf("reindex_bench: %zu docs of ~%zu bytes, %zu MiB batches, %zu in flight, %u cores\n",
              options.docs, options.doc_bytes, options.batch_mb, options.connections,
              std::thread::hardware_concurrency());

  std::vector<SourceDocument> shard_docs;
  if (!options.snapshot.empty()) {
    shard_docs = LoadShardDocs(options);
    size_t bytes = 0;
    for (const auto& doc : shard_docs) bytes += doc.source.size();
    std::printf("documents from a generated shard: %zu docs, %.1f MB of _source\n",
                shard_docs.size(), bytes / 1e6);
  }
  auto has = [&](const std::string& target) {
    return ("," + options.targets + ",").find("," + target + ",") != std::string::npos;
  };
  for (const std::string target :
       {"serialize", "serialize-gzip", "ndjson", "ndjson-nosync", "http", "http-gzip"}) {
    if (!has(target)) continue;
    std::vector<Result> results;
    std::vector<Result> off_results;
    for (int round = 0; round < options.rounds; ++round) {
      std::vector<SourceDocument> docs =
          shard_docs.empty() ? GenerateDocs(options, 42 + round) : shard_docs;
      if (target.starts_with("serialize")) {
        SerializeOnlySink sink(target == "serialize-gzip");
        results.push_back(RunOnce(sink, options, std::move(docs)));
      } else if (target.starts_with("ndjson")) {
        std::filesystem::remove_all(options.dir);
        auto sink = rfs::reindex::NdjsonDirectorySink::Open(
            {.directory = options.dir, .sync = target == "ndjson"});
        if (!sink.ok()) {
          std::fprintf(stderr, "%s\n", std::string(sink.status().message()).c_str());
          return 1;
        }
        results.push_back(RunOnce(**sink, options, std::move(docs)));
        std::filesystem::remove_all(options.dir);
      } else {
        auto server = rfs::testing::OpenSearchDouble::Start(
            {.discard_bulk = true, .max_content_length = size_t{1} << 31});
        if (!server.ok()) return 1;
        if (options.reject_429 > 0) {
          rfs::testing::FaultOptions faults;
          faults.path_contains = "_bulk";
          faults.reject_429 = options.reject_429;
          (*server)->SetFaults(faults);
        }
        auto transport = rfs::net::BeastHttpTransport::Open({.endpoint = (*server)->endpoint()});
        if (!transport.ok()) return 1;
        rfs::opensearch::OpenSearchClient client(**transport,
                                                 {.compression = target == "http-gzip"});
        rfs::reindex::OpenSearchBulkSink sink(client);
        CapacityGate gate(sink, options.capacity);
        for (const std::string mode : {"on", "off"}) {
          if (options.backpressure != "both" && options.backpressure != mode) continue;
          const int rejected_before = gate.rejected.load();
          auto stats_before = (*server)->stats();
          Result r = RunOnce(gate, options, docs, mode == "on");
          r.rejected =
              gate.rejected.load() - rejected_before +
              static_cast<int>((*server)->stats().faults_injected - stats_before.faults_injected);
          (mode == "on" ? results : off_results).push_back(r);
        }
      }
    }
    Report(target + (options.backpressure == "both" ? " bp-on" : ""), results);
    if (!off_results.empty()) Report(target + " bp-off", off_results);
    off_results.clear();
  }
  return 0;
}
