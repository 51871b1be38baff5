// target_bench: the perf shard (1,000,000 documents of ~1 KB, 4 segments, from the real-Lucene
// fixture generator) migrated by one DocumentsFromSnapshotMigration worker with default options
// into a real OpenSearch node (scripts/local-cluster), with gzip on and off. For each: documents/s,
// MB/s of _source, the worker's CPU-seconds per GB of _source and its peak RSS, and the CPU the
// node and the worker took (a share of the machine's cores). The worker must never be the
// bottleneck: its share is printed beside the node's.
//
//   target_bench [--docs N] [--doc-size BYTES] [--version 2|3] [--data-dir DIR]
//
// Build in Release without sanitizers to measure. The node runs under the data dir and is
// stopped at the end.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
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

// CPU seconds a process has used so far (/proc/<pid>/stat utime + stime).
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) {
      stime = std::stod(field);
      break;
    }
  }
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
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
           {"--data-dir", [&](const std::string& v) { options.data_dir = v; }}},
          "[--docs N] [--doc-size BYTES] [--version 2|3] [--data-dir DIR]")) {
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
  std::system(stop_command.c_str());
  std::atexit([] { std::system(stop_command.c_str()); });
  bench::fs::remove_all(work);
  bench::fs::create_directories(work);
  const path node_dir = work / "node";
  const std::string cluster = std::string(RFS_SOURCE_DIR) + "/scripts/local-cluster";
  const std::string url =
      bench::Shell(cluster + " start --dir '" + node_dir.string() + "' --version " +
                   options.version + " 2>'" + (work / "start.log").string() + "'");
  const pid_t node_pid = std::stoi(bench::Shell("cat '" + (node_dir / "node.pid").string() + "'"));
  std::printf(
      "target_bench: %ld docs of ~%ld bytes (4 segments) into %s (OpenSearch %s), %ld cores\n",
      options.docs, options.doc_size, url.c_str(), options.version.c_str(), cores);
  for (const bool gzip : {true, false}) {
    bench::Shell("curl -s -X DELETE '" + url + "/index-0?ignore_unavailable=true' >/dev/null");
    bench::fs::remove(work / "coordination.sqlite");
    std::vector<std::string> argv = {RFS_DOCUMENTS_TOOL,
                                     "--snapshot-local-dir",
                                     repo,
                                     "--target-host",
                                     url,
                                     "--coordinator-db",
                                     (work / "coordination.sqlite").string(),
                                     "--failed-documents-dir",
                                     (work / "failed").string()};
    if (!gzip) argv.push_back("--disable-compression");
    const double node_before = ProcessCpuSeconds(node_pid);
    const Child run = RunChild(argv, work / (gzip ? "gzip.log" : "plain.log"));
    const double node_cpu = ProcessCpuSeconds(node_pid) - node_before;
    if (run.code != 3) {
      bench::Fail("the worker exited with " + std::to_string(run.code) + "; see " +
                  (work / (gzip ? "gzip.log" : "plain.log")).string());
    }
    // The summary: "...; N docs, M MB of _source, ..."
    unsigned long long docs = 0;
    double mb = 0;
    const auto at = run.out.find("; ");
    if (at != std::string::npos)
      std::sscanf(run.out.c_str() + at, "; %llu docs, %lf MB", &docs, &mb);
    const double gb = mb / 1000;
    std::printf(
        "  gzip %-3s  %8.0f docs/s %7.1f MB/s  worker %5.2f CPU-s per GB, peak RSS %6.1f MiB, "
        "%4.0f%% of %ld cores; node %4.0f%% of %ld cores (%.1f s wall, %llu docs)\n",
        gzip ? "on" : "off", docs / run.seconds, mb / run.seconds,
        gb > 0 ? run.cpu_seconds / gb : 0, run.peak_mib,
        100.0 * run.cpu_seconds / (run.seconds * cores), cores,
        100.0 * node_cpu / (run.seconds * cores), cores, run.seconds, docs);
  }
  return 0;  // the node is stopped at exit
}
