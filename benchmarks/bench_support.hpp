// Helpers shared by the benchmark programs that compare rfs with real Java Lucene on shards the
// fixture generator writes: generating (cached) repositories, restoring a shard's Lucene files to
// a plain folder, running the Java baseline. Each program defines RFS_GENERATE_SNAPSHOT, RFS_JAVA
// and RFS_BENCH_CLASSPATH (CMake) and sets bench::program for messages.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "rfs/core/random_access.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace bench {

namespace fs = std::filesystem;

inline const char* program = "bench";

struct Result {
  uint64_t docs = 0;
  uint64_t source_bytes = 0;
  double seconds = 0;
  double docs_per_second() const { return seconds > 0 ? docs / seconds : 0; }
  double mb_per_second() const { return seconds > 0 ? source_bytes / seconds / 1e6 : 0; }
};

[[noreturn]] inline void Fail(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program, message.c_str());
  std::exit(1);
}

/// Parses `--name value` arguments, each given to its setter. --help prints `usage` and gives 0,
/// anything unknown prints it and gives 2; nullopt means go on.
inline std::optional<int> ParseOptions(
    int argc, char** argv,
    const std::map<std::string, std::function<void(const std::string&)>>& setters,
    const std::string& usage) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto setter = setters.find(arg);
    if (setter == setters.end()) {
      std::printf("usage: %s %s\n", argv[0], usage.c_str());
      return arg == "--help" ? 0 : 2;
    }
    if (i + 1 >= argc) Fail("missing value for " + arg);
    setter->second(argv[++i]);
  }
  return std::nullopt;
}

/// Peak RSS (MiB) of a forked child that runs `work` (false: the child failed, and so does the
/// benchmark), so one measurement never counts another's memory.
inline double PeakRssOfChild(const std::function<bool()>& work) {
  std::fflush(stdout);
  const pid_t child = ::fork();
  if (child == 0) std::_Exit(work() ? 0 : 3);
  int status = 0;
  struct rusage usage {};
  if (::wait4(child, &status, 0, &usage) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Fail("the memory measurement child failed");
  }
  return usage.ru_maxrss / 1024.0;
}

/// Runs a shell command to completion and returns its stdout without the trailing line break;
/// fails the benchmark when the command fails.
inline std::string Shell(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) Fail("cannot run " + command);
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  if (::pclose(pipe) != 0) Fail("failed: " + command + "\n" + out);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

#ifdef RFS_SOURCE_DIR
/// Starts a real node with scripts/local-cluster in `dir` (`args` such as "--version 2"; its
/// start-up log in dir/../<dir name>.log) and returns its URL. The node is stopped when the
/// program exits, also when a later step fails; one left running in `dir` by an earlier run is
/// stopped first.
inline std::string StartLocalNode(const fs::path& dir, const std::string& args) {
  static std::vector<std::string> stop_commands;  // run at exit
  const std::string cluster = std::string(RFS_SOURCE_DIR) + "/scripts/local-cluster";
  const std::string stop = cluster + " stop --dir '" + dir.string() + "' >/dev/null 2>&1";
  std::system(stop.c_str());
  if (stop_commands.empty()) {
    std::atexit([] {
      for (const auto& command : stop_commands) std::system(command.c_str());
    });
  }
  stop_commands.push_back(stop);
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  return Shell(cluster + " start --dir '" + dir.string() + "' " + args + " 2>'" + dir.string() +
               ".log'");
}
#endif

/// User plus system seconds of `usage`.
inline double CpuSeconds(const struct rusage& usage) {
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

/// CPU seconds of this process (RUSAGE_SELF) or of its waited-for children (RUSAGE_CHILDREN).
inline double CpuSecondsOf(int who) {
  struct rusage usage {};
  ::getrusage(who, &usage);
  return CpuSeconds(usage);
}

/// CPU seconds a process has used so far (/proc/<pid>/stat utime + stime).
inline double ProcessCpuSeconds(pid_t pid) {
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

/// The repository generated with `args` under data_dir/name (kept for later runs).
inline fs::path Generate(const fs::path& data_dir, const std::string& name,
                         const std::string& args) {
  const fs::path dir = data_dir / name;
  if (fs::exists(dir / "expected.json")) return dir;
  fs::remove_all(dir);
  fs::create_directories(data_dir);
  const std::string command = std::string(RFS_GENERATE_SNAPSHOT) + " --out '" + dir.string() +
                              "' --write-docs false --templates false " + args;
  std::fprintf(stderr, "generating %s ...\n", name.c_str());
  if (std::system(command.c_str()) != 0) Fail("generator failed: " + command);
  return dir;
}

inline std::shared_ptr<const rfs::core::IDirectory> SnapshotShard(
    const fs::path& dir, std::unique_ptr<rfs::snapshot::SnapshotRepository>& keep,
    const rfs::snapshot::SnapshotEntry** snapshot) {
  auto repo = rfs::snapshot::FileSystemRepo::Open((dir / "repo").string());
  if (!repo.ok()) Fail(std::string(repo.status().message()));
  auto repository = rfs::snapshot::SnapshotRepository::Open(*repo);
  if (!repository.ok()) Fail(std::string(repository.status().message()));
  keep = std::move(repository).value();
  auto latest = keep->LatestSnapshot();
  if (!latest.ok()) Fail(std::string(latest.status().message()));
  *snapshot = *latest;
  auto files = keep->OpenShardFiles(**latest, "index-0", 0);
  if (!files.ok()) Fail(std::string(files.status().message()));
  return *files;
}

// Restores the shard's Lucene files into a plain folder (for Java Lucene and the plain-folder
// measurement).
inline fs::path Restore(const fs::path& dir) {
  const fs::path out = dir / "lucene";
  if (fs::exists(out / ".complete")) return out;
  fs::remove_all(out);
  fs::create_directories(out);
  std::unique_ptr<rfs::snapshot::SnapshotRepository> keep;
  const rfs::snapshot::SnapshotEntry* snapshot = nullptr;
  auto files = SnapshotShard(dir, keep, &snapshot);
  for (const auto& name : files->ListFiles()) {
    auto file = files->OpenFile(name);
    if (!file.ok()) Fail(std::string(file.status().message()));
    std::ofstream stream(out / name, std::ios::binary);
    std::vector<uint8_t> buffer(1 << 20);
    for (uint64_t offset = 0; offset < (*file)->size(); offset += buffer.size()) {
      const size_t n = std::min<uint64_t>(buffer.size(), (*file)->size() - offset);
      if (!(*file)->ReadAt(offset, std::span(buffer).first(n)).ok()) Fail("read " + name);
      stream.write(reinterpret_cast<const char*>(buffer.data()), n);
    }
  }
  std::ofstream(out / ".complete") << "ok";
  return out;
}

/// Java Lucene 8's read of the plain folder (benchmarks/java LuceneReadBench): the best of
/// `rounds` rounds in `mode` ("document" or "sequential").
inline Result RunJava(const fs::path& lucene_dir, int rounds, const char* mode) {
  const std::string command = std::string(RFS_JAVA) + " -cp '" + RFS_BENCH_CLASSPATH +
                              "' rfs.bench.LuceneReadBench '" + lucene_dir.string() + "' " +
                              std::to_string(rounds) + " " + mode;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) Fail("cannot run java");
  Result best;
  char line[512];
  while (std::fgets(line, sizeof(line), pipe) != nullptr) {
    Result r;
    unsigned long long docs = 0, bytes = 0;
    if (std::sscanf(line, "docs=%llu source_bytes=%llu seconds=%lf", &docs, &bytes, &r.seconds) ==
        3) {
      r.docs = docs;
      r.source_bytes = bytes;
      if (best.seconds == 0 || r.seconds < best.seconds) best = r;
    }
  }
  if (::pclose(pipe) != 0) Fail("java baseline failed: " + command);
  return best;
}

}  // namespace bench
