// perf_report: the performance figures of one machine in one run, side by side with Java
// Lucene 8.8.1's fastest single-threaded read of the same shard:
//
//   1. read speed: `SnapshotInspector docs` and the export to bulk files against Java, the
//      median of --read-rounds rounds interleaved with Java's (goals 3.5x and 2x), beside the
//      ceiling this machine sets (every document read in-process with no line laid out, its CPU
//      spread over every core); then each with --reader-threads 0 and auto, best of --rounds;
//   1b. S3 at cloud latency (s3rver behind the test proxy: 30 ms to the first byte, 80 MB/s per
//      connection) against the folder: the worker's own CPU per GB (goal <= 1.25x the folder's),
//      wall time, the proxy's CPU and requests, and the time to the first document, for the
//      shard and for a shard of 64 segments;
//   2. export speed and peak RSS: one `DocumentsFromSnapshotMigration` into the embedded default
//      (bulk files) for the 1 GB shard, serial and with --reader-threads auto;
//   3. a shard with one 100 MB document: peak RSS of SnapshotInspector and of the worker, and the
//      worker's output checked exactly against the generator's documents;
//   4. the 1 GB shard split in 4 parts (--split-shard-bytes) migrated by 1 worker vs 4 workers;
//   4b. a shard with 20, 50 and 100 MB documents among 3,000 others (--mix-doc-mb): the worker's
//      peak RSS with default options to bulk files (output checked exactly) and over HTTP into
//      the double in discard mode, gzip on and off; and with --reader-threads 0;
//   4d. the same shard on the other paths, default options, to bulk files: from S3 (s3rver behind
//      the test proxy at 30 ms first-byte latency and 80 MB/s per connection), through a jq and a
//      JavaScript transform (documents over the transform memory budget fail and are counted),
//      and a shard without _source rebuilt (--enable-sourceless-migrations);
//   4c. the 1 GB shard over HTTP into the double in discard mode with default options, gzip on
//      and off, in rounds with the export to bulk files: MB/s, the worker's CPU-seconds per GB of
//      _source (goal with gzip: <= 2x the export's in the same rounds) and peak RSS, beside the
//      floor this machine sets (the export's CPU plus igzip's alone on the export's own bodies);
//   4e. huge documents as Lucene may lay them out (several in a row, one per segment, base64
//      bodies LZ4 cannot shrink) on the same paths (HTTP only up to 100 MB documents);
//   4f. the delta path: snapshots A and B of a real OpenSearch node, B with 20, 50 and 100 MB
//      documents of base64 added and 30 updated; the delta A -> B to bulk files;
//      perf_report exits 1 when any memory run passes 256 MiB or its output is not exact;
//   4g. small documents into a slow target: 3,000,000 documents of about 200 bytes over HTTP
//      into the double in discard mode answering every bulk after 300 ms, default options, gzip
//      on and off: wall time, documents/s and peak RSS (what a bulk in flight holds per
//      document decides how many go at once within the memory budget);
//   5. throughput into the OpenSearch double answering 20% of bulks with 429, and into a target
//      with capacity for 3 bulks, with and without backpressure (reindex_bench).
//
//   perf_report [--docs N] [--doc-size BYTES] [--huge-doc-mb MB] [--mix-doc-mb MB,MB,..]
//               [--rounds R] [--read-rounds R] [--data-dir DIR] [--only-memory] [--only-read]
//               [--only-s3] [--only-delta] [--only-http] [--only-slow-target]
//
// The tools run as child processes (wall time, peak RSS from wait4). Repositories come from the
// real-Lucene fixture generator and are cached in the data dir. Build in Release without
// sanitizers. Goals: read >= 3.5x Java, export >= 2x Java (medians, section 1), <= 256 MiB
// peak RSS on every memory run.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "rfs/core/file_util.hpp"
#include "rfs/net/gzip.hpp"

#include "bench_read.hpp"
#include "bench_support.hpp"
#include "opensearch_double.hpp"
#include "support/s3_proxy.hpp"
#include "support/s3_server.hpp"
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using bench::Fail;
using bench::fs::path;

struct Options {
  long docs = 1000000;
  long doc_size = 1000;
  long huge_doc_mb = 100;
  std::string mix_doc_mb = "20,50,100";
  int rounds = 2;
  path data_dir = RFS_BENCH_DATA_DIR;
  bool only_memory = false;       // only the sections on peak RSS (4b, 4d, 4e, 4f)
  bool only_read = false;         // only the read ratios (section 1)
  bool only_s3 = false;           // only S3's cost against the folder's
  bool only_delta = false;        // only the delta path's peak RSS (4f)
  bool only_http = false;         // only HTTP's cost against the bulk files' (4c)
  bool only_slow_target = false;  // only small documents into a slow target (4g)
  int read_rounds = 5;            // interleaved rounds behind the read ratios' medians
};

struct Run {
  double seconds = 0;
  double peak_mib = 0;     // the largest child's peak RSS
  double cpu_seconds = 0;  // user + system time of every child
  std::vector<int> exit_codes;
};

// Starts each command with stdout to `out` (or /dev/null), stderr to /dev/null, waits for all.
// With `errors_too`, stderr goes to `out` as well (the worker's JSON log is on stderr).
Run RunAll(const std::vector<std::vector<std::string>>& commands, const std::string& out = "",
           bool errors_too = false) {
  std::fflush(stdout);
  const auto start = std::chrono::steady_clock::now();
  std::vector<pid_t> children;
  std::vector<std::string> peak_files;
  for (const auto& command : commands) {
    // Each tool runs under peak_rss_exec, which reports the tool's own peak RSS.
    peak_files.push_back(
        (bench::fs::temp_directory_path() / ("perf_report-peak-" + std::to_string(::getpid()) +
                                             "-" + std::to_string(peak_files.size())))
            .string());
    const pid_t child = ::fork();
    if (child < 0) Fail("fork failed");
    if (child == 0) {
      const int fd = ::open(out.empty() ? "/dev/null" : out.c_str(),
                            O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (fd < 0 || null < 0) std::_Exit(127);
      ::dup2(fd, 1);
      ::dup2(errors_too ? fd : null, 2);
      std::vector<char*> argv = {const_cast<char*>(RFS_PEAK_RSS_EXEC),
                                 const_cast<char*>(peak_files.back().c_str())};
      for (const auto& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      std::_Exit(127);
    }
    children.push_back(child);
  }
  Run run;
  for (size_t i = 0; i < children.size(); ++i) {
    int status = 0;
    struct rusage usage {};
    if (::wait4(children[i], &status, 0, &usage) < 0) Fail("wait4 failed");
    run.exit_codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    std::ifstream peak(peak_files[i]);
    long peak_kib = 0;
    if (!(peak >> peak_kib)) Fail("peak_rss_exec reported no peak RSS for " + commands[i][0]);
    bench::fs::remove(peak_files[i]);
    run.peak_mib = std::max(run.peak_mib, peak_kib / 1024.0);
    run.cpu_seconds += bench::CpuSeconds(usage);
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

// The best (fastest) of `rounds` runs; `prepare` runs before each (e.g. to empty an output dir).
template <typename Prepare>
Run Best(int rounds, const std::vector<std::vector<std::string>>& commands, Prepare prepare,
         const std::vector<int>& accepted_codes, const char* what) {
  Run best;
  for (int i = 0; i < rounds; ++i) {
    prepare();
    Run run = RunAll(commands);
    for (int code : run.exit_codes) {
      if (std::find(accepted_codes.begin(), accepted_codes.end(), code) == accepted_codes.end()) {
        Fail(std::string(what) + " exited with " + std::to_string(code));
      }
    }
    if (best.seconds == 0 || run.seconds < best.seconds) best = run;
  }
  return best;
}

uint64_t DirectoryBytes(const path& dir) {
  uint64_t total = 0;
  for (const auto& entry : bench::fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) total += entry.file_size();
  }
  return total;
}

void Line(const char* what, const Run& run, double source_mb, double java_mb_s) {
  const double mb_s = source_mb / run.seconds;
  std::printf("  %-52s %7.2f s %8.1f MB/s %6.2fx Java  peak RSS %6.1f MiB\n", what, run.seconds,
              mb_s, mb_s / java_mb_s, run.peak_mib);
}

// The number after "key": in the last line of `file` that has it (the worker's JSON log).
long LastCount(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  long value = -1;
  const std::regex pattern("\"" + key + "\":([0-9]+)");
  while (std::getline(in, line)) {
    std::smatch match;
    if (std::regex_search(line, match, pattern)) value = std::stol(match[1]);
  }
  return value;
}

// The mixed shard on the worker's other paths, default options: from S3 at cloud latency,
// through jq and JavaScript transforms, and a shard without _source rebuilt. Each must stay
// within the 256 MiB goal.
// Runs of the memory sections over the 256 MiB bound (or with output not exact): perf_report
// exits 1 when there is any.
int runs_over_bound = 0;

// "OVER" (and counted) for a peak above the bound, blank otherwise.
const char* Bound(double peak_mib, bool exact = true) {
  const bool over = peak_mib > 256.0 || !exact;
  runs_over_bound += over ? 1 : 0;
  return over ? "OVER" : "    ";
}

// The proxy's options that make s3rver look like S3 over a network: 30 ms to the first byte,
// 80 MB/s per connection, the repository's GETs answered from its folder (s3rver alone would set
// the pace). Sets the worker's keys in the environment.
rfs::test::S3ProxyOptions CloudLatencyProxy(const rfs::test::S3Server& server,
                                            const std::string& repo) {
  rfs::test::S3ProxyOptions proxy_options;
  proxy_options.upstream = server.endpoint();
  proxy_options.upstream_credentials = rfs::test::S3Server::Credentials();
  proxy_options.expect.secrets = {{"AKIDPERFREPORT", "perf-report-secret"}};
  proxy_options.first_byte_latency = std::chrono::milliseconds(30);
  proxy_options.bytes_per_second = 80e6;
  proxy_options.local_prefix = "/rfs-perf/repo/";
  proxy_options.local_folder = repo;
  ::setenv("AWS_ACCESS_KEY_ID", "AKIDPERFREPORT", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "perf-report-secret", 1);
  return proxy_options;
}

template <typename Clear>
void OtherPaths(const Options& options, const path& mix, const std::string& out_dir,
                const path& work, Clear clear_out) {
  const std::string mix_repo = (mix / "repo").string();
  const std::string failed_dir = (work / "failed").string();
  const std::string log = (work / "worker.log").string();
  auto clear_all = [&] {
    clear_out();
    bench::fs::remove_all(failed_dir);
  };
  std::printf("the same shard on the other paths, default options (goal: peak RSS <= 256 MiB):\n");
  {
    rfs::test::S3Server server("rfs-perf");
    server.Upload(mix_repo, "repo/");
    rfs::test::S3Proxy proxy(CloudLatencyProxy(server, mix_repo));
    clear_out();
    const Run worker =
        RunAll({{RFS_DOCUMENTS_TOOL, "--s3-repo-uri", "s3://rfs-perf/repo", "--s3-region",
                 "us-east-1", "--s3-endpoint", proxy.endpoint(), "--output-dir", out_dir}},
               log, /*errors_too=*/true);
    ::unsetenv("AWS_ACCESS_KEY_ID");
    ::unsetenv("AWS_SECRET_ACCESS_KEY");
    if (worker.exit_codes[0] != 3) {
      // Counted as a miss, and the report goes on; the worker's log is kept beside the shard.
      const path kept = mix / "s3-worker.log";
      bench::fs::copy_file(log, kept, bench::fs::copy_options::overwrite_existing);
      ++runs_over_bound;
      std::printf("  %-52s FAILED: exit %d (its log: %s)\n",
                  "from S3 (proxy: 30 ms, 80 MB/s per connection)", worker.exit_codes[0],
                  kept.c_str());
    } else {
      const Run check =
          RunAll({{RFS_CHECK_OUTPUT_TOOL, "--expected-docs",
                   (mix / "expected-docs.ndjson").string(), "--output-dir", out_dir}});
      std::printf("  %-52s %7.2f s  peak RSS %6.1f MiB %s output %s\n",
                  "from S3 (proxy: 30 ms, 80 MB/s per connection)", worker.seconds, worker.peak_mib,
                  Bound(worker.peak_mib, check.exit_codes[0] == 0),
                  check.exit_codes[0] == 0 ? "exact" : "DIFFERENT (rfs-check-output failed)");
    }
  }
  const std::pair<const char*, const char*> transforms[] = {
      {"through a jq transform",
       R"J([{"JqTransformerProvider": {"script": ".document.rfs = 1"}}])J"},
      {"through a JavaScript transform",
       R"J([{"JsonJSTransformerProvider": {"initializationScript": "(function (b) { return )J"
       R"J(function (docs) { for (var i = 0; i < docs.length; i++) { docs[i].document.rfs = 1; } )J"
       R"J(return docs; }; })", "bindingsObject": {}}}])J"}};
  for (const auto& [title, config] : transforms) {
    clear_all();
    const Run worker =
        RunAll({{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", mix_repo, "--output-dir", out_dir,
                 "--failed-documents-dir", failed_dir, "--doc-transformer-config", config}},
               log, /*errors_too=*/true);
    if (worker.exit_codes[0] != 3 && worker.exit_codes[0] != 6) {
      Fail(std::string("DocumentsFromSnapshotMigration ") + title + " exited with " +
           std::to_string(worker.exit_codes[0]));
    }
    std::printf(
        "  %-52s %7.2f s  peak RSS %6.1f MiB %s %ld written, %ld over the transform "
        "budget\n",
        title, worker.seconds, worker.peak_mib, Bound(worker.peak_mib), LastCount(log, "written"),
        LastCount(log, "transform_failed"));
  }
  // Without _source: each document rebuilt from doc values, points and stored fields.
  const long docs = std::max(options.docs / 4, 1000L);
  const path sourceless =
      bench::Generate(options.data_dir, "perf-sourceless-" + std::to_string(docs),
                      "--docs " + std::to_string(docs) +
                          " --doc-size 1000 --source-enabled false --segments 4 "
                          "--write-docs false --seed 7");
  clear_all();
  const Run rebuilt =
      RunAll({{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", (sourceless / "repo").string(),
               "--output-dir", out_dir, "--enable-sourceless-migrations"}},
             log, /*errors_too=*/true);
  if (rebuilt.exit_codes[0] != 3) Fail("the sourceless migration failed");
  std::printf("  %-52s %7.2f s  peak RSS %6.1f MiB %s %ld documents rebuilt\n",
              ("a shard of " + std::to_string(docs) + " documents without _source").c_str(),
              rebuilt.seconds, rebuilt.peak_mib, Bound(rebuilt.peak_mib),
              LastCount(log, "rebuilt"));
  clear_all();
}

// One shard's documents to bulk files and over HTTP into the double (discard mode), gzip on and
// off, each with --reader-threads auto and 0: peak RSS against the bound, output checked.
template <typename Clear>
void FilesAndHttp(const path& shard, const std::string& out_dir, Clear clear_out, bool http) {
  const std::string repo = (shard / "repo").string();
  for (const char* threads : {"auto", "0"}) {
    const Run worker = Best(1,
                            {{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo, "--output-dir",
                              out_dir, "--reader-threads", threads}},
                            clear_out, {3}, "DocumentsFromSnapshotMigration");
    const Run check =
        RunAll({{RFS_CHECK_OUTPUT_TOOL, "--expected-docs",
                 (shard / "expected-docs.ndjson").string(), "--output-dir", out_dir}});
    std::printf("  %-52s %7.2f s  peak RSS %6.1f MiB %s output %s\n",
                (std::string("one worker to bulk files, --reader-threads ") + threads).c_str(),
                worker.seconds, worker.peak_mib, Bound(worker.peak_mib, check.exit_codes[0] == 0),
                check.exit_codes[0] == 0 ? "exact" : "DIFFERENT (rfs-check-output failed)");
  }
  if (!http) return;
  for (const bool gzip : {true, false}) {
    for (const char* threads : {"auto", "0"}) {
      // A fresh double each time: the worker coordinates in the target's working-state index.
      auto server = rfs::testing::OpenSearchDouble::Start(
          {.discard_bulk = true, .max_content_length = size_t{1} << 31});
      if (!server.ok()) Fail("the OpenSearch double did not start");
      std::vector<std::string> command = {
          RFS_DOCUMENTS_TOOL,    "--snapshot-local-dir", repo,   "--target-host",
          (*server)->endpoint(), "--reader-threads",     threads};
      if (!gzip) command.push_back("--disable-compression");
      const Run worker = Best(
          1, {command}, [] {}, {3}, "DocumentsFromSnapshotMigration");
      std::printf("  %-52s %7.2f s  peak RSS %6.1f MiB %s\n",
                  (std::string("over HTTP into the double, ") + (gzip ? "gzip" : "no gzip") +
                   ", --reader-threads " + threads)
                      .c_str(),
                  worker.seconds, worker.peak_mib, Bound(worker.peak_mib));
    }
  }
}

// Several huge documents among ordinary ones: every path of the worker with default options must
// stay within the 256 MiB goal, whatever the mix (issue "Performance where users run it").
template <typename Clear>
void MixedHugeDocuments(const Options& options, const std::string& out_dir, const path& work,
                        Clear clear_out) {
  std::string bytes_list;
  for (size_t start = 0; start < options.mix_doc_mb.size();) {
    const size_t comma = std::min(options.mix_doc_mb.find(',', start), options.mix_doc_mb.size());
    if (!bytes_list.empty()) bytes_list += ',';
    bytes_list +=
        std::to_string(std::stol(options.mix_doc_mb.substr(start, comma - start)) * 1000 * 1000);
    start = comma + 1;
  }
  const path mix = bench::Generate(options.data_dir, "perf-mix-" + bytes_list,
                                   "--docs 3000 --doc-size 1000 --write-docs true "
                                   "--huge-doc-bytes " +
                                       bytes_list + " --seed 7");
  std::printf("a shard with %s MB documents among 3,000 others (goal: peak RSS <= 256 MiB):\n",
              options.mix_doc_mb.c_str());
  FilesAndHttp(mix, out_dir, clear_out, /*http=*/true);
  OtherPaths(options, mix, out_dir, work, clear_out);
}

// Huge documents laid out as Lucene may hold them (the generator's --huge-doc-layout and
// --huge-doc-content): several in a row in one run of stored-fields chunks, one in each segment,
// and base64 bodies that LZ4 cannot shrink. Every path, default options, within 256 MiB; over
// HTTP only documents up to OpenSearch's default 100 MB request limit.
template <typename Clear>
void HugeDocumentLayouts(const Options& options, const std::string& out_dir, const path& work,
                         Clear clear_out) {
  struct Layout {
    const char* name;
    const char* generator_options;
    bool http;
  };
  const Layout layouts[] = {
      {"20, 50 and 100 MB in a row, 2 segments",
       "--huge-doc-bytes 20000000,50000000,100000000 --huge-doc-layout adjacent --segments 2",
       true},
      {"20, 50 and 100 MB of base64 in a row, 2 segments",
       "--huge-doc-bytes 20000000,50000000,100000000 --huge-doc-layout adjacent "
       "--huge-doc-content base64 --segments 2",
       true},
      {"3 x 100 MB of base64 in a row",
       "--huge-doc-bytes 100000000,100000000,100000000 --huge-doc-layout adjacent "
       "--huge-doc-content base64",
       true},
      {"20 to 150 MB of base64, one in each of 5 segments",
       "--huge-doc-bytes 20000000,50000000,80000000,100000000,150000000 --huge-doc-layout "
       "per-segment --huge-doc-content base64 --segments 5",
       false},
  };
  int number = 0;
  for (const Layout& layout : layouts) {
    const path dir =
        bench::Generate(options.data_dir, "perf-layout-" + std::to_string(++number),
                        std::string("--docs 3000 --doc-size 1000 --write-docs true --seed 7 ") +
                            layout.generator_options);
    std::printf(
        "huge documents as Lucene lays them out: %s, among 3,000 others (goal: peak RSS "
        "<= 256 MiB):\n",
        layout.name);
    FilesAndHttp(dir, out_dir, clear_out, layout.http);
    if (layout.http) OtherPaths(options, dir, out_dir, work, clear_out);
  }
}

// Writes {"kind":"huge","n":N,"body":"<base64 of random bytes>"} of about `bytes` bytes to
// `file`, and returns it: a body LZ4 cannot shrink, as in the base64 layouts above.
std::string HugeBase64Document(long n, size_t bytes, const path& file) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string text = "{\"kind\":\"huge\",\"n\":" + std::to_string(n) + ",\"body\":\"";
  const size_t body = bytes > text.size() + 2 ? bytes - text.size() - 2 : 0;
  text.reserve(bytes + 8);
  uint64_t state = 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(n + 1);
  for (size_t i = 0; i < body; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    text.push_back(kAlphabet[state & 63]);
  }
  text += "\"}";
  std::ofstream(file, std::ios::binary) << text;
  return text;
}

// The delta path (--previous-snapshot-name) with huge documents: a real OpenSearch node holds
// 3,000 ordinary documents in snapshot A; then 20, 50 and 100 MB documents of base64 are added
// (OpenSearch's default 100 MB request limit is the ceiling here: they reach the node over HTTP)
// and 30 documents updated, and it takes snapshot B. The worker migrates the delta A -> B to bulk
// files with default options: its peak RSS against the bound, and its output checked exactly
// (the huge documents and the updated ones, nothing else).
template <typename Clear>
void DeltaHugeDocuments(const Options& options, const std::string& out_dir, const path& work,
                        Clear clear_out) {
  const path small = bench::Generate(options.data_dir, "perf-delta-base-3000",
                                     "--docs 3000 --doc-size 1000 --write-docs true --seed 7");
  const path dir = work / "delta";
  // A node an interrupted run left in the folder is stopped before the folder goes.
  const std::string stop_node = std::string(RFS_SOURCE_DIR) +
                                "/scripts/local-cluster stop --dir '" + (dir / "node").string() +
                                "' >/dev/null 2>&1";
  std::system(stop_node.c_str());
  bench::fs::remove_all(dir);
  bench::fs::create_directories(dir / "repo");
  ::setenv("LOCAL_CLUSTER_HEAP", "1g", 1);  // a 100 MB document in one request
  const std::string url = bench::StartLocalNode(
      dir / "node", "--version 2 --repo-path '" + (dir / "repo").string() + "'");
  ::unsetenv("LOCAL_CLUSTER_HEAP");
  const std::string index = "index-0";
  const std::string json_header = " -H 'content-type: application/json'";
  // Stored only: the documents' fields are not indexed, so the node's heap holds the requests.
  bench::Shell("curl -sf -X PUT '" + url + "/" + index + "'" + json_header +
               " -d '{\"settings\":{\"number_of_shards\":1,\"number_of_replicas\":0},"
               "\"mappings\":{\"dynamic\":false}}' >/dev/null");
  bench::Shell(std::string(RFS_DOCUMENTS_TOOL) + " --snapshot-local-dir '" +
               (small / "repo").string() + "' --target-host " + url + " --coordinator-db '" +
               (dir / "load.sqlite").string() + "' >/dev/null 2>'" + (dir / "load.log").string() +
               "' || test $? -eq 3");
  bench::Shell("curl -sf -X PUT '" + url + "/_snapshot/delta'" + json_header +
               " -d '{\"type\":\"fs\",\"settings\":{\"location\":\"" + (dir / "repo").string() +
               "\"}}' >/dev/null");
  auto snapshot = [&](const std::string& name) {
    bench::Shell("curl -sf -X POST '" + url + "/" + index + "/_flush' >/dev/null");
    bench::Shell("curl -sf -X PUT '" + url + "/_snapshot/delta/" + name +
                 "?wait_for_completion=true'" + json_header + " -d '{\"indices\":\"" + index +
                 "\",\"include_global_state\":false}' >/dev/null");
  };
  snapshot("a");
  // What the delta must carry: the huge documents and the updated ones.
  std::ofstream expected(dir / "expected-docs.ndjson", std::ios::binary);
  const size_t sizes[] = {20'000'000, 50'000'000, 100'000'000};
  long n = 0;
  for (const size_t bytes : sizes) {
    const path file = dir / ("huge-" + std::to_string(++n) + ".json");
    const std::string text = HugeBase64Document(n, bytes, file);
    expected << "{\"_index\":\"" << index << "\",\"_id\":\"huge-" << n << "\",\"_source\":" << text
             << "}\n";
    bench::Shell("curl -sf -X PUT '" + url + "/" + index + "/_doc/huge-" + std::to_string(n) + "'" +
                 json_header + " --data-binary @'" + file.string() + "' >/dev/null");
    bench::fs::remove(file);
  }
  std::ifstream base(small / "expected-docs.ndjson");
  std::string line;
  for (int updated = 0; updated < 30 && std::getline(base, line);) {
    auto parsed = boost::json::parse(line);
    auto& doc = parsed.as_object();
    if (doc.contains("_routing")) continue;  // sent again by id alone below
    const std::string id(doc.at("_id").as_string());
    doc.at("_source").as_object()["updated"] = true;
    const std::string source = boost::json::serialize(doc.at("_source"));
    const path file = dir / "updated.json";
    std::ofstream(file, std::ios::binary) << source;
    bench::Shell("curl -sf -X PUT '" + url + "/" + index + "/_doc/" + id + "'" + json_header +
                 " --data-binary @'" + file.string() + "' >/dev/null");
    expected << boost::json::serialize(doc) << "\n";
    ++updated;
  }
  expected.close();
  snapshot("b");
  // The node's work is done: it must not take CPU from the sections measured after this one.
  std::system(stop_node.c_str());
  std::printf(
      "the delta path: 20, 50 and 100 MB documents of base64 and 30 updated among 3,000, "
      "snapshots A and B of a real node (goal: peak RSS <= 256 MiB):\n");
  for (const char* threads : {"auto", "0"}) {
    clear_out();
    const std::string log = (work / "worker.log").string();
    const Run worker = RunAll({{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", (dir / "repo").string(),
                                "--snapshot-name", "b", "--previous-snapshot-name", "a",
                                "--output-dir", out_dir, "--reader-threads", threads}},
                              log, /*errors_too=*/true);
    if (worker.exit_codes[0] != 3) {
      Fail("the delta migration exited with " + std::to_string(worker.exit_codes[0]) +
           " (its log: " + log + ")");
    }
    const Run check = RunAll({{RFS_CHECK_OUTPUT_TOOL, "--expected-docs",
                               (dir / "expected-docs.ndjson").string(), "--output-dir", out_dir}});
    std::printf("  %-52s %7.2f s  peak RSS %6.1f MiB %s output %s\n",
                (std::string("delta A -> B to bulk files, --reader-threads ") + threads).c_str(),
                worker.seconds, worker.peak_mib, Bound(worker.peak_mib, check.exit_codes[0] == 0),
                check.exit_codes[0] == 0 ? "exact" : "DIFFERENT (rfs-check-output failed)");
  }
  clear_out();
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The worker's own CPU per GB of _source from S3 at cloud latency against the same from the
// folder (goal: <= 1.25x), default options, to bulk files. The proxy runs in this process, so the
// worker's user+system time (wait4) is its own; the proxy's is this process's time over the run,
// printed beside it. Time to the first document is `SnapshotInspector docs` reading until its
// first line: the dependent round trips before it (repository index, snapshot, index and shard
// metadata, each segment's headers) are the floor of every S3 read, at 30 ms each.
void S3Cost(const std::string& name, const path& dir, const std::string& out_dir,
            double source_mb) {
  const std::string repo = (dir / "repo").string();
  Run folder;
  for (int round = 0; round < 2; ++round) {
    bench::fs::remove_all(out_dir);
    const Run run =
        RunAll({{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo, "--output-dir", out_dir}});
    if (run.exit_codes[0] != 3) Fail("DocumentsFromSnapshotMigration from the folder failed");
    if (folder.seconds == 0 || run.cpu_seconds < folder.cpu_seconds) folder = run;
  }
  rfs::test::S3Server server("rfs-perf");
  server.Upload(repo, "repo/");
  rfs::test::S3Proxy proxy(CloudLatencyProxy(server, repo));
  const std::vector<std::string> s3 = {"--s3-repo-uri", "s3://rfs-perf/repo", "--s3-region",
                                       "us-east-1",     "--s3-endpoint",      proxy.endpoint()};
  Run best;
  double proxy_cpu = 0;
  uint64_t requests = 0;
  for (int round = 0; round < 2; ++round) {
    bench::fs::remove_all(out_dir);
    std::vector<std::string> command = {RFS_DOCUMENTS_TOOL, "--output-dir", out_dir};
    command.insert(command.end(), s3.begin(), s3.end());
    const uint64_t requests_before = proxy.requests();
    const double cpu_before = bench::CpuSecondsOf(RUSAGE_SELF);
    const Run run = RunAll({command});
    if (run.exit_codes[0] != 3) Fail("DocumentsFromSnapshotMigration from S3 failed");
    if (best.seconds == 0 || run.cpu_seconds < best.cpu_seconds) {
      best = run;
      proxy_cpu = bench::CpuSecondsOf(RUSAGE_SELF) - cpu_before;
      requests = proxy.requests() - requests_before;
    }
  }
  // Time to the first document: the inspector's stdout read until its first line.
  std::string inspect = std::string(RFS_INSPECTOR_TOOL) + " docs --snapshot-name snap-1";
  for (const auto& arg : s3) inspect += " '" + arg + "'";
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = ::popen((inspect + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) Fail("cannot run SnapshotInspector");
  const uint64_t requests_at_start = proxy.requests();
  char first[64];
  if (std::fgets(first, sizeof(first), pipe) == nullptr)
    Fail("SnapshotInspector read nothing from S3");
  const double first_document =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const uint64_t requests_before_first = proxy.requests() - requests_at_start;
  ::pclose(pipe);  // SIGPIPE ends the rest of the read
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  const double gb = source_mb / 1000;
  const double ratio = (best.cpu_seconds / gb) / (folder.cpu_seconds / gb);
  std::printf("  %s:\n", name.c_str());
  std::printf("    %-50s %7.2f s  %5.2f CPU-s/GB\n", "from the folder", folder.seconds,
              folder.cpu_seconds / gb);
  std::printf("    %-50s %7.2f s  %5.2f CPU-s/GB  %.2fx the folder (goal <= 1.25x) %s\n",
              "from S3 through the proxy", best.seconds, best.cpu_seconds / gb, ratio,
              ratio <= 1.25 ? "met" : "NOT MET");
  std::printf(
      "    %-50s %5.2f CPU-s in %llu requests; first document after %.2f s, %llu requests "
      "(%.0f round trips' latency)\n",
      "the proxy", proxy_cpu, static_cast<unsigned long long>(requests), first_document,
      static_cast<unsigned long long>(requests_before_first), first_document / 0.030);
}

// Calls `fn(bytes)` with each bulk file (`.ndjson`, one per bulk) an export wrote under `out_dir`,
// read whole into one reused buffer.
template <typename Fn>
void ForEachBulkFile(const path& out_dir, Fn fn) {
  std::string bytes;
  for (const auto& entry : bench::fs::recursive_directory_iterator(out_dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".ndjson") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    bytes.resize(bench::fs::file_size(entry.path()));
    if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) {
      Fail("could not read " + entry.path().string());
    }
    fn(bytes);
  }
}

// The disk's share of the export: the bulk files one export wrote under `out_dir`, held in
// memory, written again as the worker writes them (core::AtomicFileWriter: direct I/O, synced,
// renamed, the folder synced) by as many threads as the worker sends bulks at once by default.
// No export of the shard to this disk takes less time.
double WriteExportFilesAlone(const path& out_dir, const path& scratch) {
  std::vector<std::string> files;
  ForEachBulkFile(out_dir, [&](const std::string& bytes) { files.push_back(bytes); });
  if (files.empty()) Fail("the export wrote no bulk files under " + out_dir.string());
  bench::fs::remove_all(scratch);
  bench::fs::create_directories(scratch);
  constexpr int kWriters = 10;  // the worker's default --max-connections
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> writers;
  for (int i = 0; i < kWriters; ++i) {
    writers.emplace_back([&] {
      for (size_t f = next++; f < files.size(); f = next++) {
        auto writer = rfs::core::AtomicFileWriter::Create(
            (scratch / (std::to_string(f) + ".ndjson")).string(), true,
            rfs::core::FileCaching::kDirect);
        if (!writer.ok() || !writer->Append(files[f]).ok() || !writer->Commit().ok()) {
          failed = true;
        }
      }
    });
  }
  for (auto& writer : writers) writer.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (failed) Fail("writing the export's files again failed under " + scratch.string());
  bench::fs::remove_all(scratch);
  return seconds;
}

// The read goals as the issue states them: each round runs Java's sequential read (a fresh JVM,
// the best of 4 passes so the JIT has warmed), then `SnapshotInspector docs` and the export to
// bulk files once each, with default options; a round's ratio is Java's seconds over the tool's.
// Interleaving puts the machine's drift into every ratio alike; the median of the rounds is the
// figure, its spread printed beside it.
void ReadRatios(const Options& options, const std::string& repo, const path& lucene_dir,
                const std::string& out_dir, double source_mb) {
  std::vector<double> read_ratios, export_ratios, ceiling_ratios, disk_ratios;
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  std::printf("read, %d rounds interleaved with Java (ratio = Java seconds / rfs seconds):\n",
              options.read_rounds);
  for (int round = 0; round < options.read_rounds; ++round) {
    const bench::Result java = bench::RunJava(lucene_dir, 4, "sequential");
    if (std::abs(java.source_bytes / 1e6 - source_mb) > 1e-6) Fail("Java read other documents");
    const Run read = RunAll(
        {{RFS_INSPECTOR_TOOL, "docs", "--snapshot-local-dir", repo, "--snapshot-name", "snap-1"}});
    if (read.exit_codes[0] != 0) Fail("SnapshotInspector docs failed");
    bench::fs::remove_all(out_dir);
    const Run exported =
        RunAll({{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo, "--output-dir", out_dir}});
    if (exported.exit_codes[0] != 3) Fail("DocumentsFromSnapshotMigration failed");
    const double disk_seconds = WriteExportFilesAlone(out_dir, out_dir + "-written-alone");
    // The ceiling: the same documents decoded in-process on one thread, no line laid out, its
    // CPU as if split evenly over every core with nothing else to do.
    auto local = rfs::core::LocalDirectory::Open(lucene_dir.string());
    if (!local.ok()) Fail(std::string(local.status().message()));
    std::shared_ptr<const rfs::core::IDirectory> folder = *std::move(local);
    const bench::ReadResult decoded = bench::ReadEveryDocument(folder, bench::CommitName(*folder));
    if (decoded.source_bytes != java.source_bytes) Fail("the in-process read read other documents");
    read_ratios.push_back(java.seconds / read.seconds);
    export_ratios.push_back(java.seconds / exported.seconds);
    ceiling_ratios.push_back(java.seconds / (decoded.cpu_seconds / static_cast<double>(cores)));
    disk_ratios.push_back(java.seconds / disk_seconds);
    std::printf(
        "  round %d: Java %.2f s, SnapshotInspector docs %.2f s (%.2fx, %.1f CPU-s), "
        "export %.2f s (%.2fx, %.1f CPU-s), no line laid out %.2f CPU-s (%.2fx), "
        "the export's files written alone %.2f s (%.2fx)\n",
        round + 1, java.seconds, read.seconds, read_ratios.back(), read.cpu_seconds,
        exported.seconds, export_ratios.back(), exported.cpu_seconds, decoded.cpu_seconds,
        ceiling_ratios.back(), disk_seconds, disk_ratios.back());
  }
  auto report = [](const char* what, const std::vector<double>& ratios, double goal) {
    std::printf("  %-52s median %.2fx Java (%.2f-%.2fx)  goal >= %.1fx %s\n", what, Median(ratios),
                *std::min_element(ratios.begin(), ratios.end()),
                *std::max_element(ratios.begin(), ratios.end()), goal,
                Median(ratios) >= goal ? "met" : "NOT MET");
  };
  report("SnapshotInspector docs", read_ratios, 3.5);
  report("export to bulk files", export_ratios, 2.0);
  std::printf(
      "  %-52s median %.2fx Java (%.2f-%.2fx): the ceiling here, every document decoded with no "
      "line laid out, its CPU spread over %ld cores\n",
      "the read alone", Median(ceiling_ratios),
      *std::min_element(ceiling_ratios.begin(), ceiling_ratios.end()),
      *std::max_element(ceiling_ratios.begin(), ceiling_ratios.end()), cores);
  std::printf(
      "  %-52s median %.2fx Java (%.2f-%.2fx): the export's ceiling from this disk, its files "
      "written again as the worker writes them, nothing read\n",
      "the export's files written alone", Median(disk_ratios),
      *std::min_element(disk_ratios.begin(), disk_ratios.end()),
      *std::max_element(disk_ratios.begin(), disk_ratios.end()));
}

// igzip's own CPU on the bodies an export to bulk files wrote (one `.ndjson` file per bulk),
// each compressed as the worker compresses a body, into one reused buffer: what gzip alone adds
// to the export's work over HTTP. Each file is read before its compression is timed.
double GzipAloneCpuSeconds(const std::string& out_dir) {
  std::string compressed;
  double cpu = 0;
  ForEachBulkFile(out_dir, [&](const std::string& body) {
    const double start = bench::CpuSecondsOf(RUSAGE_THREAD);
    if (!rfs::net::GzipCompressInto(body, compressed).ok()) Fail("gzip failed");
    cpu += bench::CpuSecondsOf(RUSAGE_THREAD) - start;
  });
  return cpu;
}

// 4c: the shard over HTTP into the double in discard mode, gzip on and off, each round also
// exporting it to bulk files. The HTTP goal is a ratio to the same worker's export, so both run
// in every round, interleaved; each figure is the round with the least worker CPU.
template <typename Clear>
void HttpCost(const Options& options, const std::string& repo, const std::string& out_dir,
              double source_mb, Clear clear_out) {
  std::printf(
      "the shard over HTTP into the double (discard mode), default options, against the export to "
      "bulk files in the same rounds; the worker's own CPU:\n");
  Run files_best, gzip_best, plain_best;
  double gzip_alone = 0;
  auto keep_least_cpu = [](Run& best, const Run& run) {
    if (best.exit_codes.empty() || run.cpu_seconds < best.cpu_seconds) best = run;
  };
  for (int round = 0; round < options.rounds; ++round) {
    clear_out();
    const Run files =
        RunAll({{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo, "--output-dir", out_dir}});
    if (files.exit_codes[0] != 3) Fail("DocumentsFromSnapshotMigration to bulk files failed");
    keep_least_cpu(files_best, files);
    const double gzip_cpu = GzipAloneCpuSeconds(out_dir);
    if (gzip_alone == 0 || gzip_cpu < gzip_alone) gzip_alone = gzip_cpu;
    clear_out();
    for (const bool gzip : {true, false}) {
      // A fresh double each time: the worker coordinates in the target's working-state index.
      auto server = rfs::testing::OpenSearchDouble::Start(
          {.discard_bulk = true, .max_content_length = size_t{1} << 31});
      if (!server.ok()) Fail("the OpenSearch double did not start");
      std::vector<std::string> command = {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo,
                                          "--target-host", (*server)->endpoint()};
      if (!gzip) command.push_back("--disable-compression");
      const Run run = RunAll({command});
      if (run.exit_codes[0] != 3) Fail("DocumentsFromSnapshotMigration over HTTP failed");
      keep_least_cpu(gzip ? gzip_best : plain_best, run);
    }
  }
  const double gb = source_mb / 1000;
  const double files_cpu_gb = files_best.cpu_seconds / gb;
  std::printf("  %-52s %7.2f s %8.1f MB/s  %4.2f CPU-s/GB  peak RSS %6.1f MiB\n",
              "one worker to bulk files", files_best.seconds, source_mb / files_best.seconds,
              files_cpu_gb, files_best.peak_mib);
  if (gzip_alone == 0) Fail("the export to bulk files wrote no bulk bodies");
  std::printf(
      "  %-52s %7s %15s  %4.2f CPU-s/GB; with the files' CPU %.2fx the files: the floor of the "
      "gzip goal here\n",
      "igzip level 1 alone on the export's bodies", "", "", gzip_alone / gb,
      (files_best.cpu_seconds + gzip_alone) / files_best.cpu_seconds);
  for (const bool gzip : {true, false}) {
    const Run& best = gzip ? gzip_best : plain_best;
    const double ratio = best.cpu_seconds / files_best.cpu_seconds;
    std::printf(
        "  %-52s %7.2f s %8.1f MB/s  %4.2f CPU-s/GB  peak RSS %6.1f MiB  %.2fx the files%s\n",
        gzip ? "one worker, gzip (igzip level 1)" : "one worker, --disable-compression",
        best.seconds, source_mb / best.seconds, best.cpu_seconds / gb, best.peak_mib, ratio,
        gzip ? (ratio <= 2.0 ? " (goal <= 2x) met" : " (goal <= 2x) NOT MET") : "");
  }
}

// Small documents into a target that answers each bulk after 300 ms (4g): the bulks in flight,
// not the reader or the CPU, set the pace, so what each holds per document decides how many fit
// in the memory budget at once.
void SlowTargetSmallDocuments(const Options& options) {
  constexpr long kDocs = 3'000'000;
  const path shard = bench::Generate(options.data_dir, "perf-small-3000000x200",
                                     "--docs 3000000 --doc-size 200 --segments 4 --seed 7");
  std::printf(
      "3,000,000 documents of ~200 bytes into the double answering every bulk after 300 ms, "
      "default options (goal: peak RSS <= 256 MiB):\n");
  for (const bool gzip : {true, false}) {
    Run best;
    for (int round = 0; round < options.rounds; ++round) {
      // A fresh double each round: the worker coordinates in the target's working-state index.
      rfs::testing::OpenSearchDoubleOptions double_options{.discard_bulk = true};
      double_options.faults.slow = 1.0;
      double_options.faults.slow_delay = std::chrono::milliseconds(300);
      auto server = rfs::testing::OpenSearchDouble::Start(double_options);
      if (!server.ok()) Fail("the OpenSearch double did not start");
      std::vector<std::string> command = {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir",
                                          (shard / "repo").string(), "--target-host",
                                          (*server)->endpoint()};
      if (!gzip) command.push_back("--disable-compression");
      const Run worker = Best(
          1, {command}, [] {}, {3}, "DocumentsFromSnapshotMigration");
      const uint64_t items = (*server)->stats().bulk_items;
      if (items < static_cast<uint64_t>(kDocs)) {
        Fail("the double received " + std::to_string(items) + " bulk items, fewer than 3,000,000");
      }
      // The fastest round's time, the highest round's peak.
      const double peak = std::max(best.peak_mib, worker.peak_mib);
      if (best.seconds == 0 || worker.seconds < best.seconds) best = worker;
      best.peak_mib = peak;
    }
    std::printf("  %-52s %7.2f s %8.0f docs/s  peak RSS %6.1f MiB %s\n",
                gzip ? "one worker, gzip" : "one worker, --disable-compression", best.seconds,
                kDocs / best.seconds, best.peak_mib, Bound(best.peak_mib));
  }
}

}  // namespace

int main(int argc, char** argv) {
  bench::program = "perf_report";
  Options options;
  if (auto exit_code = bench::ParseOptions(
          argc, argv,
          {{"--docs", [&](const std::string& v) { options.docs = std::stol(v); }},
           {"--doc-size", [&](const std::string& v) { options.doc_size = std::stol(v); }},
           {"--huge-doc-mb", [&](const std::string& v) { options.huge_doc_mb = std::stol(v); }},
           {"--mix-doc-mb", [&](const std::string& v) { options.mix_doc_mb = v; }},
           {"--rounds", [&](const std::string& v) { options.rounds = std::stoi(v); }},
           {"--data-dir",
            [&](const std::string& v) { options.data_dir = std::filesystem::absolute(v); }},
           {"--read-rounds", [&](const std::string& v) { options.read_rounds = std::stoi(v); }},
           {"--only-read", [&](const std::string& v) { options.only_read = v != "false"; }},
           {"--only-s3", [&](const std::string& v) { options.only_s3 = v != "false"; }},
           {"--only-memory", [&](const std::string& v) { options.only_memory = v != "false"; }},
           {"--only-delta", [&](const std::string& v) { options.only_delta = v != "false"; }},
           {"--only-http", [&](const std::string& v) { options.only_http = v != "false"; }},
           {"--only-slow-target",
            [&](const std::string& v) { options.only_slow_target = v != "false"; }}},
          "[--docs N] [--doc-size BYTES] [--huge-doc-mb MB] [--mix-doc-mb MB,MB,..] [--rounds R] "
          "[--read-rounds R] [--data-dir DIR] [--only-memory true] [--only-read true] [--only-s3 "
          "true] [--only-delta true] [--only-http true] [--only-slow-target true]")) {
    return *exit_code;
  }
  if (options.rounds < 1 || options.read_rounds < 1) {
    Fail("--rounds and --read-rounds take a number of at least 1");
  }
  if (options.only_http &&
      (options.only_memory || options.only_delta || options.only_read || options.only_s3)) {
    Fail("--only-http goes with none of the other --only options");
  }
  if (options.only_slow_target) {
    SlowTargetSmallDocuments(options);
    return runs_over_bound > 0 ? 1 : 0;
  }
  if (options.only_memory || options.only_delta) {
    const path work = options.data_dir / "perf-report-work";
    bench::fs::create_directories(work);
    const std::string out_dir = (work / "out").string();
    if (!options.only_delta) {
      MixedHugeDocuments(options, out_dir, work, [&] { bench::fs::remove_all(out_dir); });
      HugeDocumentLayouts(options, out_dir, work, [&] { bench::fs::remove_all(out_dir); });
    }
    DeltaHugeDocuments(options, out_dir, work, [&] { bench::fs::remove_all(out_dir); });
    bench::fs::remove_all(out_dir);
    if (runs_over_bound > 0) {
      std::printf("perf_report: %d runs over 256 MiB or not exact\n", runs_over_bound);
      return 1;
    }
    return 0;
  }
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  const std::string shard_name =
      "perf-" + std::to_string(options.docs) + "x" + std::to_string(options.doc_size);
  const path dir = bench::Generate(options.data_dir, shard_name,
                                   "--docs " + std::to_string(options.docs) + " --doc-size " +
                                       std::to_string(options.doc_size) + " --segments 4 --seed 7");
  const path lucene_dir = bench::Restore(dir);
  const std::string repo = (dir / "repo").string();
  const path work = options.data_dir / "perf-report-work";
  bench::fs::create_directories(work);
  const std::string out_dir = (work / "out").string();
  auto clear_out = [&] { bench::fs::remove_all(out_dir); };
  auto nothing = [] {};

  std::printf(
      "perf_report: %ld docs of ~%ld bytes in one shard (4 segments), %ld cores, best of %d\n",
      options.docs, options.doc_size, cores, options.rounds);
  const bench::Result java = bench::RunJava(lucene_dir, options.rounds + 3, "sequential");
  const double source_mb = java.source_bytes / 1e6;
  const double java_mb_s = java.mb_per_second();
  std::printf("  %-52s %7.2f s %8.1f MB/s  1.00x       (%llu docs, %.1f MB of _source)\n",
              "Java Lucene 8.8.1, sequential merge reader", java.seconds, java_mb_s,
              static_cast<unsigned long long>(java.docs), source_mb);

  if (options.only_http) {
    HttpCost(options, repo, out_dir, source_mb, clear_out);
    bench::fs::remove_all(out_dir);
    return 0;
  }
  if (!options.only_s3) ReadRatios(options, repo, lucene_dir, out_dir, source_mb);
  if (options.only_read) return 0;

  std::printf(
      "S3 at cloud latency against the folder (proxy: 30 ms to the first byte, 80 MB/s per "
      "connection), default options, to bulk files; the worker's own CPU:\n");
  S3Cost("the shard (4 segments)", dir, out_dir, source_mb);
  {
    const path many = bench::Generate(options.data_dir, "perf-200000x1000-64seg",
                                      "--docs 200000 --doc-size 1000 --segments 64 --seed 7");
    const bench::Result read = bench::RunJava(bench::Restore(many), 1, "sequential");
    S3Cost("a shard of 64 segments (200,000 documents)", many, out_dir, read.source_bytes / 1e6);
  }
  if (options.only_s3) return 0;

  for (const char* threads : {"0", "auto"}) {
    const Run run = Best(options.rounds,
                         {{RFS_INSPECTOR_TOOL, "docs", "--snapshot-local-dir", repo,
                           "--snapshot-name", "snap-1", "--reader-threads", threads}},
                         nothing, {0}, "SnapshotInspector");
    Line((std::string("SnapshotInspector docs, best of rounds, --reader-threads ") + threads)
             .c_str(),
         run, source_mb, java_mb_s);
  }
  for (const char* threads : {"0", "auto"}) {
    const Run run = Best(options.rounds,
                         {{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo, "--output-dir",
                           out_dir, "--reader-threads", threads}},
                         clear_out, {3}, "DocumentsFromSnapshotMigration");
    Line((std::string("export to bulk files, best of rounds, --reader-threads ") + threads).c_str(),
         run, source_mb, java_mb_s);
  }

  std::printf("a shard split in 4 parts (--split-shard-bytes = shard bytes / 4):\n");
  const std::string split = std::to_string(DirectoryBytes(lucene_dir) / 4 + 1);
  for (int workers : {1, 4}) {
    std::vector<std::vector<std::string>> commands;
    for (int w = 0; w < workers; ++w) {
      commands.push_back({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo, "--output-dir", out_dir,
                          "--split-shard-bytes", split, "--worker-id", "w" + std::to_string(w)});
    }
    // A worker that finds every part taken by others ends with 4 or after handing on with 2.
    const Run run = Best(options.rounds, commands, clear_out, {2, 3, 4}, "split workers");
    Line((std::to_string(workers) + (workers == 1 ? " worker" : " workers")).c_str(), run,
         source_mb, java_mb_s);
  }

  if (options.huge_doc_mb > 0) {
    const long bytes = options.huge_doc_mb * 1000 * 1000;
    const path huge = bench::Generate(
        options.data_dir, "perf-huge-" + std::to_string(options.huge_doc_mb) + "mb",
        "--docs 50 --write-docs true --huge-doc-bytes " + std::to_string(bytes) + " --seed 7");
    const std::string huge_repo = (huge / "repo").string();
    std::printf("a shard with one %ld MB document:\n", options.huge_doc_mb);
    const Run inspect = Best(1,
                             {{RFS_INSPECTOR_TOOL, "docs", "--snapshot-local-dir", huge_repo,
                               "--snapshot-name", "snap-1"}},
                             nothing, {0}, "SnapshotInspector");
    std::printf("  %-52s %7.2f s  peak RSS %6.1f MiB %s\n", "SnapshotInspector docs",
                inspect.seconds, inspect.peak_mib, Bound(inspect.peak_mib));
    const Run worker =
        Best(1, {{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", huge_repo, "--output-dir", out_dir}},
             clear_out, {3}, "DocumentsFromSnapshotMigration");
    const Run check = RunAll({{RFS_CHECK_OUTPUT_TOOL, "--expected-docs",
                               (huge / "expected-docs.ndjson").string(), "--output-dir", out_dir}});
    std::printf("  %-52s %7.2f s  peak RSS %6.1f MiB %s output %s\n", "one worker to bulk files",
                worker.seconds, worker.peak_mib, Bound(worker.peak_mib, check.exit_codes[0] == 0),
                check.exit_codes[0] == 0 ? "exact" : "DIFFERENT (rfs-check-output failed)");
  }

  if (!options.mix_doc_mb.empty()) MixedHugeDocuments(options, out_dir, work, clear_out);
  HugeDocumentLayouts(options, out_dir, work, clear_out);
  DeltaHugeDocuments(options, out_dir, work, clear_out);

  HttpCost(options, repo, out_dir, source_mb, clear_out);
  SlowTargetSmallDocuments(options);

  // 1 MiB bulks, 10 in flight: random 429s (a target refusing a fifth of all bulks whatever the
  // load) and a target with capacity for 3 bulks that slows down and refuses above it.
  const std::pair<const char*, std::vector<std::string>> pushback[] = {
      {"into the double answering 20% of bulks with 429", {"--reject-429", "0.2"}},
      {"into a target with capacity 3 (slows, then 429s)", {"--capacity", "3"}}};
  for (const auto& [title, args] : pushback) {
    std::printf("%s (reindex_bench, 200k docs, 1 MiB bulks):\n", title);
    const std::string bench_out = (work / "reindex_bench.txt").string();
    std::vector<std::string> command = {
        RFS_REINDEX_BENCH, "--targets", "http",     "--batch-mb", "1",
        "--backpressure",  "both",      "--rounds", "3"};
    command.insert(command.end(), args.begin(), args.end());
    const Run reindex = RunAll({command}, bench_out);
    if (reindex.exit_codes[0] != 0) Fail("reindex_bench failed");
    std::ifstream lines(bench_out);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.starts_with("http")) std::printf("  %s\n", line.c_str());
    }
  }
  bench::fs::remove_all(out_dir);
  if (runs_over_bound > 0) {
    std::printf("perf_report: %d runs over 256 MiB or not exact\n", runs_over_bound);
    return 1;
  }
  return 0;
}
