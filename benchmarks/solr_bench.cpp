// solr_bench: a Solr shard's documents rebuilt by rfs from a backup, against Solr's own /export
// and /select of the same shard in the same run. A real Solr 9 (scripts/local-cluster) indexes
// N documents of about 400 bytes (stored text and strings, numbers, a date, a boolean, doc-values-
// only strings and numbers) into a one-shard collection and backs it up; then:
//   - rfs: every document of the backup rebuilt as /select returns it, on one thread in-process
//     (documents/s, MB/s of JSON, CPU-seconds per GB), and through `SnapshotInspector docs`
//     (wall and its own CPU);
//   - Solr /export: the fields that have doc values (every one but the text and the boolean),
//     sorted by id: documents/s and the Solr JVM's CPU-seconds per GB of its JSON;
//   - Solr /select with cursorMark, pages of 10,000, every field: the same.
// Each figure is the best of --rounds runs; the ratios are printed beside them.
//
//   solr_bench [--docs N] [--rounds R] [--data-dir DIR]
//
// Build in Release without sanitizers to measure. Solr runs under the data dir and is stopped at
// the end; its backup is kept for later runs of the same size.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/solr/documents.hpp"

#include "bench_support.hpp"
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using bench::fs::path;

struct Options {
  long docs = 200'000;
  int rounds = 3;
  path data_dir = RFS_BENCH_DATA_DIR;
};

double SelfCpuSeconds() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec +
         usage.ru_stime.tv_usec / 1e6;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// One measured run: documents, bytes of JSON, wall seconds, CPU seconds of whoever did the work.
struct Run {
  uint64_t docs = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  double cpu = 0;
  double cpu_per_gb() const { return bytes > 0 ? cpu / (bytes / 1e9) : 0; }
  double docs_per_second() const { return seconds > 0 ? docs / seconds : 0; }
};

Run Best(const std::vector<Run>& runs) {
  Run best = runs.front();
  for (const Run& run : runs) {
    if (run.seconds < best.seconds) best = run;
  }
  return best;
}

void Print(const char* name, const Run& run) {
  std::printf("%-34s %9.0f docs/s %8.1f MB/s %8.2f CPU-s/GB  (%llu docs, %.1f MB, %.2f s)\n", name,
              run.docs_per_second(), run.seconds > 0 ? run.bytes / run.seconds / 1e6 : 0,
              run.cpu_per_gb(), static_cast<unsigned long long>(run.docs), run.bytes / 1e6,
              run.seconds);
}

// The documents of batch `b` (ids b*size ... ), as Solr's JSON update format.
std::string Batch(long first, long count) {
  std::string out = "[";
  char buffer[640];
  for (long i = first; i < first + count; ++i) {
    std::snprintf(buffer, sizeof buffer,
                  "%s{\"id\":\"doc-%09ld\",\"title_t\":\"A title of document %ld about "
                  "topic %ld, long enough to look like one\",\"tags_ss\":[\"tag-%ld\",\"common\","
                  "\"tag-%ld\"],\"n_i\":%ld,\"price_d\":%ld.25,\"when_dt\":\"2024-%02ld-%02ldT"
                  "%02ld:%02ld:%02ld.%03ldZ\",\"flag_b\":%s,\"codes_sdv\":[\"c%ld\",\"b\"],"
                  "\"nums_idv\":[%ld,%ld],\"owner_s\":\"user-%ld\",\"score_l\":%ld}",
                  i == first ? "" : ",", i, i, i % 97, i % 13, i % 7, i, i % 1000, i % 12 + 1,
                  i % 28 + 1, i % 24, i % 60, i % 59, i % 1000, i % 2 ? "true" : "false", i % 5,
                  i % 100, i % 10, i % 5000, i * 7919);
    out += buffer;
  }
  return out + "]";
}

// Runs `command` (its stdout to `out_file`) and returns its wall seconds.
double Timed(const std::string& command) {
  const auto start = std::chrono::steady_clock::now();
  bench::Shell(command);
  return Seconds(start);
}

uint64_t FileSize(const path& file) { return bench::fs::file_size(file); }

// Documents in a Solr JSON answer file: occurrences of "id": at the top of each document.
uint64_t CountIds(const path& file) {
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t n = 0;
  for (size_t at = 0; (at = text.find("\"id\":\"doc-", at)) != std::string::npos; ++at) ++n;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  bench::program = "solr_bench";
  Options options;
  if (auto exit_code = bench::ParseOptions(
          argc, argv,
          {{"--docs", [&](const std::string& v) { options.docs = std::stol(v); }},
           {"--rounds", [&](const std::string& v) { options.rounds = std::stoi(v); }},
           {"--data-dir", [&](const std::string& v) { options.data_dir = v; }}},
          "[--docs N] [--rounds R] [--data-dir DIR]")) {
    return *exit_code;
  }
  const path work = options.data_dir / ("solr-bench-" + std::to_string(options.docs));
  const path node_dir = work / "node";
  const path backups = work / "backups";
  static std::string stop_command;  // run at exit, also when a step fails
  stop_command = std::string(RFS_SOURCE_DIR) + "/scripts/local-cluster stop --dir '" +
                 node_dir.string() + "' >/dev/null 2>&1";
  std::system(stop_command.c_str());
  std::atexit([] { std::system(stop_command.c_str()); });
  bench::fs::create_directories(backups);
  const std::string url =
      bench::Shell(std::string(RFS_SOURCE_DIR) + "/scripts/local-cluster start --dir '" +
                   node_dir.string() + "' --distribution solr --repo-path '" + backups.string() +
                   "' 2>'" + (work / "start.log").string() + "'");
  const pid_t solr_pid = std::stoi(bench::Shell("cat '" + (node_dir / "node.pid").string() + "'"));
  const std::string solr = url + "/solr";

  // The collection and its backup (kept: a later run of the same size reads it again).
  std::fprintf(stderr, "solr_bench: indexing %ld documents ...\n", options.docs);
  bench::Shell("curl -sf '" + solr +
               "/admin/collections?action=CREATE&name=bench&numShards=1&replicationFactor=1' "
               ">/dev/null");
  const path batch_file = work / "batch.json";
  for (long first = 0; first < options.docs; first += 20'000) {
    std::ofstream(batch_file) << Batch(first, std::min<long>(20'000, options.docs - first));
    bench::Shell("curl -sf -X POST -H 'Content-Type: application/json' --data-binary @'" +
                 batch_file.string() + "' '" + solr + "/bench/update' >/dev/null");
  }
  bench::Shell("curl -sf '" + solr + "/bench/update?commit=true' >/dev/null");
  bench::fs::remove_all(backups / "bench");
  bench::Shell("curl -sf '" + solr +
               "/admin/collections?action=BACKUP&name=bench&collection=bench&location=" +
               backups.string() + "' >/dev/null");

  auto repo = rfs::snapshot::FileSystemRepo::Open(backups.string());
  if (!repo.ok()) bench::Fail(std::string(repo.status().message()));
  std::vector<Run> in_process, tool, exported, selected;
  for (int round = 0; round < options.rounds; ++round) {
    // rfs, one thread, in-process: the backup opened, every document rebuilt.
    {
      const auto start = std::chrono::steady_clock::now();
      const double cpu_start = SelfCpuSeconds();
      auto repository = rfs::solr::OpenBackupAsSnapshotRepository(*repo, "bench");
      if (!repository.ok()) bench::Fail(std::string(repository.status().message()));
      auto snapshot = (*repository)->FindSnapshot("bench");
      auto metadata = (*repository)->ReadIndexMetadata(**snapshot, "bench");
      if (!metadata.ok()) bench::Fail(std::string(metadata.status().message()));
      rfs::lucene::ShardReaderOptions reader_options;
      reader_options.rebuild_plan = *rfs::solr::RebuildPlanForBackupIndex(*metadata);
      auto reader =
          rfs::lucene::OpenSnapshotShard(**repository, **snapshot, "bench", 0, reader_options);
      if (!reader.ok()) bench::Fail(std::string(reader.status().message()));
      auto cursor = (*reader)->OpenAt(0);
      Run run;
      rfs::lucene::Document doc;
      for (;;) {
        auto more = (*cursor)->Next(doc);
        if (!more.ok()) bench::Fail(std::string(more.status().message()));
        if (!*more) break;
        ++run.docs;
        run.bytes += doc.source.size();
      }
      run.seconds = Seconds(start);
      run.cpu = SelfCpuSeconds() - cpu_start;
      in_process.push_back(run);
    }
    // SnapshotInspector docs: the whole tool, its NDJSON lines to a file.
    {
      const path out = work / "inspector.ndjson";
      const auto start = std::chrono::steady_clock::now();
      std::fflush(stdout);
      const pid_t pid = ::fork();
      if (pid == 0) {
        std::FILE* sink = std::fopen(out.c_str(), "w");
        if (sink == nullptr) std::_Exit(127);
        ::dup2(fileno(sink), STDOUT_FILENO);
        std::FILE* err = std::fopen((work / "inspector.err").c_str(), "w");
        if (err != nullptr) ::dup2(fileno(err), STDERR_FILENO);
        ::execl(RFS_INSPECTOR_TOOL, RFS_INSPECTOR_TOOL, "docs", "--snapshot-local-dir",
                backups.c_str(), "--snapshot-name", "bench", "--source-version", "SOLR 9",
                static_cast<char*>(nullptr));
        std::_Exit(127);
      }
      int status = 0;
      struct rusage usage {};
      if (::wait4(pid, &status, 0, &usage) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        bench::Fail("SnapshotInspector docs failed (see " + (work / "inspector.err").string() +
                    ")");
      }
      Run run;
      run.seconds = Seconds(start);
      run.cpu = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec +
                usage.ru_stime.tv_usec / 1e6;
      run.bytes = FileSize(out);
      run.docs = in_process.back().docs;
      tool.push_back(run);
    }
    // Solr's /export of every field with doc values, sorted by id.
    {
      const path out = work / "export.json";
      const double cpu_start = bench::ProcessCpuSeconds(solr_pid);
      Run run;
      run.seconds = Timed("curl -sf -o '" + out.string() + "' '" + solr +
                          "/bench/export?q=*:*&sort=id+asc&fl=id,tags_ss,n_i,price_d,when_dt,"
                          "codes_sdv,nums_idv,owner_s,score_l'");
      run.cpu = bench::ProcessCpuSeconds(solr_pid) - cpu_start;
      run.bytes = FileSize(out);
      run.docs = CountIds(out);
      exported.push_back(run);
    }
    // Solr's /select of every field, 10,000 a page, by cursorMark.
    {
      const path out = work / "select.json";
      const double cpu_start = bench::ProcessCpuSeconds(solr_pid);
      const auto start = std::chrono::steady_clock::now();
      Run run;
      std::string mark = "*";
      for (;;) {
        bench::Shell("curl -sf -o '" + out.string() + "' '" + solr +
                     "/bench/select?q=*:*&sort=id+asc&rows=10000&wt=json&cursorMark=" + mark + "'");
        run.bytes += FileSize(out);
        const uint64_t page = CountIds(out);
        run.docs += page;
        const std::string next = bench::Shell(
            "sed -n 's/.*\"nextCursorMark\":\"\\([^\"]*\\)\".*/\\1/p' '" + out.string() + "'");
        if (page == 0 || next.empty() || next == mark) break;
        mark = next;
      }
      run.seconds = Seconds(start);
      run.cpu = bench::ProcessCpuSeconds(solr_pid) - cpu_start;
      selected.push_back(run);
    }
  }
  const Run rfs_run = Best(in_process), tool_run = Best(tool), export_run = Best(exported),
            select_run = Best(selected);
  std::printf("solr_bench: %ld documents, one shard, best of %d rounds\n", options.docs,
              options.rounds);
  Print("rfs, one thread, in-process", rfs_run);
  Print("rfs, SnapshotInspector docs", tool_run);
  Print("Solr /export (doc-values fields)", export_run);
  Print("Solr /select, cursorMark", select_run);
  std::printf("rfs in-process vs /export: %.2fx documents/s; vs /select: %.2fx\n",
              rfs_run.docs_per_second() / std::max(1.0, export_run.docs_per_second()),
              rfs_run.docs_per_second() / std::max(1.0, select_run.docs_per_second()));
  if (rfs_run.docs != static_cast<uint64_t>(options.docs) ||
      export_run.docs != static_cast<uint64_t>(options.docs)) {
    bench::Fail("not every document was read: rfs " + std::to_string(rfs_run.docs) + ", /export " +
                std::to_string(export_run.docs));
  }
  return 0;
}
