// target_bench: the perf shard (1,000,000 documents of ~1 KB, 4 segments, from the real-Lucene
// fixture generator) migrated by one DocumentsFromSnapshotMigration worker with default options
// into a real OpenSearch node (scripts/local-cluster), with gzip on and off. For each: documents/s,
// MB/s of _source, the worker's CPU-seconds per GB of _source and its peak RSS, and the CPU the
// node and the worker took (a share of the machine's cores). The worker must never be the
// bottleneck: its share is printed beside the node's. With --verify-all on, the gzip run is
// followed by RfsWorker --verify-only --verify-all over the same documents (every one fetched back
// with _mget and compared): its documents/s, CPU-seconds per GB of _source, and the node's share.
//
//   target_bench [--docs N] [--doc-size BYTES] [--version 2|3] [--data-dir DIR] [--verify-all on]
//                [--tuning on] [--target-host URL]
//
// Build in Release without sanitizers to measure. The node runs under the data dir and is
// stopped at the end (--target-host: a node already running, left as it is). --tuning on instead
// loads the index created empty (as MetadataMigration makes it) with --tune-target and without,
// in the same run: documents/s of each, and the settings the index has afterwards.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench_support.hpp"
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using bench::fs::path;

struct Options {
  long docs = 1'000'000;
  long doc_size = 1000;
  std::string version = "2";
  path data_dir = RFS_BENCH_DATA_DIR;
  bool verify_all = false;
  // --tuning on: the index created empty first (as MetadataMigration does), then loaded with
  // --tune-target and without it, in the same run.
  bool tuning = false;
  // A node already running (e.g. the real-node test fixture's) instead of one started here.
  std::string target_host;
};

// Runs a command to completion: its stdout, exit code, wall seconds, CPU seconds, peak RSS.
struct Child {
  std::string out;
  int code = -1;
  double seconds = 0;
  double cpu_seconds = 0;
  double peak_mib = 0;
};

Child RunChild(const std::vector<std::string>& argv, const path& log) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) bench::Fail("pipe failed");
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    FILE* err = std::fopen(log.c_str(), "w");
    if (err != nullptr) ::dup2(fileno(err), STDERR_FILENO);
    ::close(pipe_fds[0]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    std::_Exit(127);
  }
  ::close(pipe_fds[1]);
  Child child;
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;)
    child.out.append(buffer, n);
  ::close(pipe_fds[0]);
  int status = 0;
  struct rusage usage {};
  if (::wait4(pid, &status, 0, &usage) < 0) bench::Fail("wait4 failed");
  child.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  child.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  child.cpu_seconds = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec +
                      usage.ru_stime.tv_usec / 1e6;
  child.peak_mib = usage.ru_maxrss / 1024.0;
  return child;
}

// DocumentsFromSnapshotMigration from `repo` into `url`, its store and failed documents in `work`.
std::vector<std::string> DocumentsArgv(const std::string& repo, const std::string& url,
                                       const path& work) {
  return {RFS_DOCUMENTS_TOOL,
          "--snapshot-local-dir",
          repo,
          "--target-host",
          url,
          "--coordinator-db",
          (work / "coordination.sqlite").string(),
          "--failed-documents-dir",
          (work / "failed").string()};
}

// The worker's summary: "...; N docs, M MB of _source, ...".
std::pair<unsigned long long, double> DocsAndMegabytes(const std::string& out) {
  unsigned long long docs = 0;
  double mb = 0;
  const auto at = out.find("; ");
  if (at != std::string::npos) std::sscanf(out.c_str() + at, "; %llu docs, %lf MB", &docs, &mb);
  return {docs, mb};
}

}  // namespace

int main(int argc, char** argv) {
  bench::program = "target_bench";
  Options options;
  if (auto exit_code = bench::ParseOptions(
          argc, argv,
          {{"--docs", [&](const std::string& v) { options.docs = std::stol(v); }},
           {"--doc-size", [&](const std::string& v) { options.doc_size = std::stol(v); }},
           {"--version", [&](const std::string& v) { options.version = v; }},
           {"--data-dir", [&](const std::string& v) { options.data_dir = v; }},
           {"--verify-all", [&](const std::string& v) { options.verify_all = v == "on"; }},
           {"--tuning", [&](const std::string& v) { options.tuning = v == "on"; }},
           {"--target-host", [&](const std::string& v) { options.target_host = v; }}},
          "[--docs N] [--doc-size BYTES] [--version 2|3] [--data-dir DIR] [--verify-all on] "
          "[--tuning on] [--target-host URL]")) {
    return *exit_code;
  }
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  const path dir = bench::Generate(
      options.data_dir,
      "perf-" + std::to_string(options.docs) + "x" + std::to_string(options.doc_size),
      "--docs " + std::to_string(options.docs) + " --doc-size " + std::to_string(options.doc_size) +
          " --segments 4 --seed 7");
  const std::string repo = (dir / "repo").string();
  const path work = options.data_dir / "target-bench";
  static std::string stop_command;  // run at exit, also when a step fails
  stop_command = std::string(RFS_SOURCE_DIR) + "/scripts/local-cluster stop --dir '" +
                 (work / "node").string() + "' >/dev/null 2>&1";
  if (options.target_host.empty()) {
    std::system(stop_command.c_str());
    std::atexit([] { std::system(stop_command.c_str()); });
  }
  bench::fs::remove_all(work);
  bench::fs::create_directories(work);
  const path node_dir = work / "node";
  const std::string cluster = std::string(RFS_SOURCE_DIR) + "/scripts/local-cluster";
  const std::string url =
      !options.target_host.empty()
          ? options.target_host
          : bench::Shell(cluster + " start --dir '" + node_dir.string() + "' --version " +
                         options.version + " 2>'" + (work / "start.log").string() + "'");
  // A node not started here: its CPU is not measured (0).
  const pid_t node_pid =
      options.target_host.empty()
          ? std::stoi(bench::Shell("cat '" + (node_dir / "node.pid").string() + "'"))
          : 0;
  std::printf(
      "target_bench: %ld docs of ~%ld bytes (4 segments) into %s (OpenSearch %s), %ld cores\n",
      options.docs, options.doc_size, url.c_str(),
      options.target_host.empty() ? options.version.c_str() : "already running", cores);
  if (options.tuning) {
    // Tuned against untuned, the same index created empty before each (1 shard, 1 replica, the
    // default refresh), in the same run.
    for (const bool tuned : {false, true}) {
      bench::Shell("curl -s -X DELETE '" + url + "/index-0?ignore_unavailable=true' >/dev/null");
      bench::Shell("curl -s -X PUT -H 'Content-Type: application/json' '" + url +
                   "/index-0' -d '{\"settings\":{\"number_of_shards\":1,"
                   "\"number_of_replicas\":1}}' >/dev/null");
      bench::fs::remove(work / "coordination.sqlite");
      std::vector<std::string> argv = DocumentsArgv(repo, url, work);
      argv.push_back(tuned ? "--tune-target" : "--no-tune-target");
      const path log = work / (tuned ? "tuned.log" : "untuned.log");
      const double node_before = bench::ProcessCpuSeconds(node_pid);
      const Child run = RunChild(argv, log);
      const double node_cpu = bench::ProcessCpuSeconds(node_pid) - node_before;
      if (run.code != 3) {
        bench::Fail("the worker exited with " + std::to_string(run.code) + "; see " + log.string());
      }
      const auto [docs, mb] = DocsAndMegabytes(run.out);
      // Tuned: the settings are back (and the index refreshed) before the worker exits.
      const std::string settings = bench::Shell(
          "curl -s '" + url +
          "/index-0/_settings/index.number_of_replicas,index.refresh_interval?flat_settings=true'");
      std::printf(
          "  %-7s  %8.0f docs/s %7.1f MB/s  worker %4.0f%% of %ld cores; node %4.0f%% of %ld "
          "cores (%.1f s wall, %llu docs; after: %s)\n",
          tuned ? "tuned" : "untuned", docs / run.seconds, mb / run.seconds,
          100.0 * run.cpu_seconds / (run.seconds * cores), cores,
          100.0 * node_cpu / (run.seconds * cores), cores, run.seconds, docs, settings.c_str());
    }
    bench::Shell("curl -s -X DELETE '" + url + "/index-0?ignore_unavailable=true' >/dev/null");
    return 0;
  }
  for (const bool gzip : {true, false}) {
    bench::Shell("curl -s -X DELETE '" + url + "/index-0?ignore_unavailable=true' >/dev/null");
    bench::fs::remove(work / "coordination.sqlite");
    std::vector<std::string> argv = DocumentsArgv(repo, url, work);
    if (!gzip) argv.push_back("--disable-compression");
    const double node_before = bench::ProcessCpuSeconds(node_pid);
    const Child run = RunChild(argv, work / (gzip ? "gzip.log" : "plain.log"));
    const double node_cpu = bench::ProcessCpuSeconds(node_pid) - node_before;
    if (run.code != 3) {
      bench::Fail("the worker exited with " + std::to_string(run.code) + "; see " +
                  (work / (gzip ? "gzip.log" : "plain.log")).string());
    }
    const auto [docs, mb] = DocsAndMegabytes(run.out);
    const double gb = mb / 1000;
    std::printf(
        "  gzip %-3s  %8.0f docs/s %7.1f MB/s  worker %5.2f CPU-s per GB, peak RSS %6.1f MiB, "
        "%4.0f%% of %ld cores; node %4.0f%% of %ld cores (%.1f s wall, %llu docs)\n",
        gzip ? "on" : "off", docs / run.seconds, mb / run.seconds,
        gb > 0 ? run.cpu_seconds / gb : 0, run.peak_mib,
        100.0 * run.cpu_seconds / (run.seconds * cores), cores,
        100.0 * node_cpu / (run.seconds * cores), cores, run.seconds, docs);
    if (!gzip || !options.verify_all) continue;
    // Every document just migrated, fetched back and compared.
    bench::fs::remove(work / "verify.sqlite");
    const std::vector<std::string> verify = {RFS_WORKER_TOOL,
                                             "--snapshot-local-dir",
                                             repo,
                                             "--target-host",
                                             url,
                                             "--coordinator-db",
                                             (work / "verify.sqlite").string(),
                                             "--failed-documents-dir",
                                             (work / "failed").string(),
                                             "--verify-only",
                                             "--verify-all"};
    const double node_before_verify = bench::ProcessCpuSeconds(node_pid);
    const Child checked = RunChild(verify, work / "verify.log");
    const double node_verify_cpu = bench::ProcessCpuSeconds(node_pid) - node_before_verify;
    if (checked.code != 0) {
      bench::Fail("the verification exited with " + std::to_string(checked.code) + "; see " +
                  (work / "verify.log").string());
    }
    std::printf(
        "  verify-all %8.0f docs/s %7.1f MB/s  worker %5.2f CPU-s per GB, peak RSS %6.1f MiB, "
        "%4.0f%% of %ld cores; node %4.0f%% of %ld cores (%.1f s wall)\n",
        docs / checked.seconds, mb / checked.seconds, gb > 0 ? checked.cpu_seconds / gb : 0,
        checked.peak_mib, 100.0 * checked.cpu_seconds / (checked.seconds * cores), cores,
        100.0 * node_verify_cpu / (checked.seconds * cores), cores, checked.seconds);
  }
  return 0;  // the node is stopped at exit
}
