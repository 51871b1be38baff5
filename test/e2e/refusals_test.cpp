// No silent wrong results, round two: a store set up for one migration refuses another (or adds
// what a wider allowlist needs), errors that no retry can fix (a full disk, a file-size limit)
// end the run at once naming the path, RfsWorker's exit codes (stop, unreadable snapshot,
// usage before the store is touched) and its --reset-failed, transient target faults retried
// by MetadataMigration and RfsWorker, and options that are refused instead of ignored.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/exit_codes.hpp"
#include "rfs/net/beast_http_transport.hpp"

#include "e2e_support.hpp"
#include "support/generated_repo.hpp"
#include "support/opensearch_double.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/tool_runner.hpp"
#include <signal.h>
#include <sys/mount.h>

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

using rfs::core::kExitNoWorkLeft;
using rfs::core::kExitPhaseFailed;
using rfs::core::kExitSnapshotUnreadable;
using rfs::core::kExitUsage;

struct Runner : rfs::test::ToolRunner {
  Runner() : ToolRunner("rfs-refusals") {}
};

using rfs::e2e::OutputIds;

size_t ExpectedDocCount(const rfs::test::GeneratedRepo& repo) {
  std::istringstream lines(rfs::test::ReadTextFile(repo.dir.string() + "/expected-docs.ndjson"));
  size_t count = 0;
  for (std::string line; std::getline(lines, line);) count += line.empty() ? 0 : 1;
  return count;
}

// The uuid of a generated repository's one snapshot (its snap-<uuid>.dat).
std::string SnapshotUuid(const rfs::test::GeneratedRepo& repo) {
  for (const auto& entry : fs::directory_iterator(repo.repo())) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("snap-") && name.ends_with(".dat")) return name.substr(5, name.size() - 9);
  }
  return "";
}

std::vector<std::string> Docs(std::vector<std::string> args) {
  args.insert(args.begin(), RFS_DOCUMENTS_TOOL);
  return args;
}

}  // namespace

TEST_CASE("a store set up for one snapshot refuses another and a wider allowlist is set up",
          "[e2e][generated][cli]") {
  auto first = rfs::test::Generate("--docs 30 --indices 2 --seed 1601");
  auto second = rfs::test::Generate("--docs 40 --indices 2 --seed 1602");
  REQUIRE(first.has_value());
  REQUIRE(second.has_value());
  Runner runner;
  const std::string out = runner.dir.File("out");

  SECTION("another snapshot into the same folder: refused, then migrated in its own session") {
    REQUIRE(runner.Run(Docs({"--snapshot-local-dir", first->repo().string(), "--output-dir",
                             out})) == kExitNoWorkLeft);
    const auto before = OutputIds(out);
    CHECK(before.size() == ExpectedDocCount(*first));
    const int code =
        runner.Run(Docs({"--snapshot-local-dir", second->repo().string(), "--output-dir", out}));
    INFO(runner.out << runner.err);
    CHECK(code == kExitUsage);
    CHECK(runner.err.find("was set up for another snapshot") != std::string::npos);
    // Both snapshots are named: this run's and the one the store was set up for.
    CHECK(runner.err.find("this run's snapshot 'snap-1' (uuid " + SnapshotUuid(*second) + ")") !=
          std::string::npos);
    CHECK(runner.err.find("it was set up for snapshot 'snap-1' (uuid " + SnapshotUuid(*first) +
                          ")") != std::string::npos);
    CHECK(runner.err.find("--session-name") != std::string::npos);
    CHECK(OutputIds(out) == before);  // nothing written for the refused run
    // In a session of its own the second snapshot migrates.
    const int own = runner.Run(Docs({"--snapshot-local-dir", second->repo().string(),
                                     "--output-dir", runner.dir.File("out2")}));
    CHECK(own == kExitNoWorkLeft);
    CHECK(OutputIds(runner.dir.File("out2")).size() == ExpectedDocCount(*second));
  }
  SECTION("a wider allowlist sets up the indices it adds") {
    REQUIRE(runner.Run(Docs({"--snapshot-local-dir", first->repo().string(), "--output-dir", out,
                             "--index-allowlist", "index-0"})) == kExitNoWorkLeft);
    const size_t narrow = OutputIds(out).size();
    CHECK(narrow > 0);
    CHECK(narrow < ExpectedDocCount(*first));
    const int code =
        runner.Run(Docs({"--snapshot-local-dir", first->repo().string(), "--output-dir", out}));
    INFO(runner.out << runner.err);
    CHECK(code == kExitNoWorkLeft);
    CHECK(OutputIds(out).size() == ExpectedDocCount(*first));
  }
  SECTION("another split size over the same store: refused") {
    REQUIRE(runner.Run(Docs({"--snapshot-local-dir", first->repo().string(), "--output-dir",
                             out})) == kExitNoWorkLeft);
    const int code = runner.Run(Docs({"--snapshot-local-dir", first->repo().string(),
                                      "--output-dir", out, "--split-shard-bytes", "1000"}));
    INFO(runner.out << runner.err);
    CHECK(code == kExitUsage);
    CHECK(runner.err.find("(uuid " + SnapshotUuid(*first) + "), --split-shard-bytes 1000,") !=
          std::string::npos);
    CHECK(runner.err.find("it was set up for snapshot 'snap-1' (uuid " + SnapshotUuid(*first) +
                          "), --split-shard-bytes 10737418240,") != std::string::npos);
  }
}

TEST_CASE("RfsWorker refuses a store set up for another snapshot", "[e2e][generated][cli]") {
  auto first = rfs::test::Generate("--docs 30 --indices 2 --seed 1601");
  auto second = rfs::test::Generate("--docs 40 --indices 2 --seed 1602");
  REQUIRE(first.has_value());
  REQUIRE(second.has_value());
  Runner runner;
  const std::string out = runner.dir.File("out");
  int code = runner.Run(
      {RFS_WORKER_TOOL, "--snapshot-local-dir", first->repo().string(), "--output-dir", out});
  INFO(runner.out << runner.err);
  REQUIRE(code == 0);
  code = runner.Run(
      {RFS_WORKER_TOOL, "--snapshot-local-dir", second->repo().string(), "--output-dir", out});
  INFO(runner.out << runner.err);
  CHECK(code == kExitUsage);
  CHECK(runner.err.find("for another snapshot") != std::string::npos);
  // Both snapshots are named: this run's and the one the store's records were made for.
  CHECK(runner.err.find("this run's (snapshot 'snap-1' with uuid " + SnapshotUuid(*second) + ")") !=
        std::string::npos);
  CHECK(runner.err.find("they were made for snapshot 'snap-1' with uuid " + SnapshotUuid(*first)) !=
        std::string::npos);
  CHECK(runner.out.find("every phase COMPLETED") == std::string::npos);
}

TEST_CASE("errors no retry fixes end the run at once, naming the path", "[e2e][generated][cli]") {
  auto generated = rfs::test::Generate("--docs 400 --doc-size 2000 --seed 1603");
  REQUIRE(generated.has_value());
  Runner runner;

  SECTION("SnapshotInspector docs into a full device") {
    auto snapshot = json::parse(rfs::test::ReadTextFile(generated->expected().string()));
    const std::string name(snapshot.at("snapshot").as_string());
    const int code = runner.Run({RFS_INSPECTOR_TOOL, "docs", "--snapshot-local-dir",
                                 generated->repo().string(), "--snapshot-name", name},
                                "/dev/full");
    INFO(runner.err);
    CHECK(code == 1);
    CHECK(runner.err.find("standard output") != std::string::npos);
    CHECK(runner.err.find("No space left") != std::string::npos);
  }
  SECTION("the worker's bulk files under a file-size limit") {
    const std::string out = runner.dir.File("out");
    const auto started = std::chrono::steady_clock::now();
    // SIGXFSZ ignored (inherited through exec): writes past the limit fail with EFBIG. 512 KiB
    // holds the coordination file, not a bulk file of this shard (800 KB of sources).
    const int code = runner.Run({"/bin/sh", "-c", "trap '' XFSZ; ulimit -f 512; exec \"$@\"", "sh",
                                 RFS_DOCUMENTS_TOOL, "--snapshot-local-dir",
                                 generated->repo().string(), "--output-dir", out,
                                 "--coordinator-db", runner.dir.File("coordination.sqlite")});
    INFO(runner.out << runner.err);
    CHECK(code == 1);
    CHECK(runner.err.find(out) != std::string::npos);
    CHECK(runner.err.find("too large") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(60));
  }
  SECTION("the worker's bulk files on a full file system") {
    const fs::path mount_point = runner.dir.path() / "small";
    fs::create_directories(mount_point);
    // A 256 KiB tmpfs: the bulk files (800 KB) do not fit.
    REQUIRE(::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, "size=256k") == 0);
    struct Unmount {
      fs::path path;
      ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
    } unmount{mount_point};
    const std::string out = (mount_point / "out").string();
    const auto started = std::chrono::steady_clock::now();
    const int code =
        runner.Run(Docs({"--snapshot-local-dir", generated->repo().string(), "--output-dir", out,
                         "--coordinator-db", runner.dir.File("coordination.sqlite")}));
    INFO(runner.out << runner.err);
    CHECK(code == 1);
    CHECK(runner.err.find(out) != std::string::npos);
    CHECK(runner.err.find("No space left") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(60));
    // RfsWorker too: exit 1 naming the path, never a FAILED migration.
    const int worker = runner.Run({RFS_WORKER_TOOL, "--snapshot-local-dir",
                                   generated->repo().string(), "--output-dir", out + "-worker",
                                   "--coordinator-db", runner.dir.File("records.sqlite")});
    INFO(runner.out << runner.err);
    CHECK(worker == 1);
    CHECK(runner.err.find("No space left") != std::string::npos);
  }
}

TEST_CASE("RfsWorker: usage before the store, exit 5, exit 2 on SIGTERM, --reset-failed",
          "[e2e][generated][cli]") {
  auto generated = rfs::test::Generate("--docs 50 --seed 1604");
  REQUIRE(generated.has_value());
  Runner runner;
  const std::string out = runner.dir.File("out");

  SECTION("a mistyped --snapshot-name is a usage error and the store is never touched") {
    const int code =
        runner.Run({RFS_WORKER_TOOL, "--snapshot-local-dir", generated->repo().string(),
                    "--output-dir", out, "--snapshot-name", "no-such-snapshot"});
    INFO(runner.out << runner.err);
    CHECK(code == kExitUsage);
    CHECK(runner.err.find("no-such-snapshot") != std::string::npos);
    CHECK(!fs::exists(fs::path(out) / ".rfs" / "coordination.sqlite"));
  }
  SECTION("an unreadable snapshot is exit 5 and not FAILED: fixed, the next worker goes on") {
    const fs::path repo = runner.dir.path() / "repo";
    fs::copy(generated->repo(), repo, fs::copy_options::recursive);
    // The shard's snapshot file list goes missing after the store is set up.
    int code = runner.Run({RFS_WORKER_TOOL, "--snapshot-local-dir", repo.string(), "--output-dir",
                           out, "--skip-verify", "--index-allowlist", "no-index-matches"});
    INFO(runner.out << runner.err);
    REQUIRE(code == 0);
    std::vector<fs::path> shard_files;
    for (const auto& entry : fs::recursive_directory_iterator(repo / "indices")) {
      if (entry.is_regular_file() && entry.path().filename().string().starts_with("snap-")) {
        shard_files.push_back(entry.path());
      }
    }
    REQUIRE(!shard_files.empty());
    for (const auto& file : shard_files) fs::rename(file, file.string() + ".away");
    const std::string out2 = runner.dir.File("out2");
    code = runner.Run({RFS_WORKER_TOOL, "--snapshot-local-dir", repo.string(), "--output-dir", out2,
                       "--skip-verify"});
    INFO(runner.out << runner.err);
    CHECK(code == kExitSnapshotUnreadable);
    for (const auto& file : shard_files) fs::rename(file.string() + ".away", file);
    code = runner.Run({RFS_WORKER_TOOL, "--snapshot-local-dir", repo.string(), "--output-dir", out2,
                       "--skip-verify"});
    INFO(runner.out << runner.err);
    CHECK(code == 0);
    CHECK(OutputIds(out2).size() == ExpectedDocCount(*generated));
  }
  SECTION("SIGTERM ends a waiting worker with exit 2") {
    // A record held by a worker that no longer runs: the second worker waits for its lease.
    auto target = rfs::testing::OpenSearchDouble::Start();
    REQUIRE(target.ok());
    rfs::testing::FaultOptions faults;
    faults.reject_429 = 1.0;  // every template request refused: phase 2 keeps retrying
    faults.path_contains = "_template";
    (*target)->SetFaults(faults);
    rfs::test::ChildProcess child(
        {RFS_WORKER_TOOL, "--snapshot-local-dir", generated->repo().string(), "--target-host",
         (*target)->endpoint(), "--coordinator-db", runner.dir.File("records.sqlite")},
        runner.dir.File("term.out"), runner.dir.File("term.err"));
    // Signalled once phase 2 is retrying (its template request refused twice), not after a fixed
    // time that a slow machine may not reach phase 2 in.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((*target)->stats().faults_injected < 2 && !child.Exited() &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    REQUIRE((*target)->stats().faults_injected >= 2);
    REQUIRE_FALSE(child.Exited());
    ::kill(child.pid(), SIGTERM);
    const int code = child.Wait();
    INFO(rfs::test::ReadTextFile(runner.dir.File("term.err")));
    CHECK(code == 2);
  }
  SECTION("a FAILED migration is reset with --reset-failed once its cause is fixed") {
    auto snapshot = json::parse(rfs::test::ReadTextFile(generated->expected().string()));
    const std::string name(snapshot.at("snapshot").as_string());
    // The source's snapshot ends FAILED: phase 1 fails for good.
    rfs::testing::OpenSearchDoubleOptions failing;
    failing.snapshot_polls_to_complete = 1;
    failing.snapshot_final_state = "FAILED";
    auto bad_source = rfs::testing::OpenSearchDouble::Start(failing);
    REQUIRE(bad_source.ok());
    auto run = [&](const std::string& source, bool reset) {
      std::vector<std::string> argv = {RFS_WORKER_TOOL,
                                       "--snapshot-local-dir",
                                       generated->repo().string(),
                                       "--output-dir",
                                       out,
                                       "--source-host",
                                       source,
                                       "--snapshot-name",
                                       name,
                                       "--skip-verify"};
      if (reset) argv.push_back("--reset-failed");
      return runner.Run(argv);
    };
    int code = run((*bad_source)->endpoint(), false);
    INFO(runner.out << runner.err);
    REQUIRE(code == kExitPhaseFailed);
    // The cause fixed (a source whose snapshot succeeds): still FAILED until reset.
    rfs::testing::OpenSearchDoubleOptions fine;
    fine.snapshot_polls_to_complete = 1;
    auto good_source = rfs::testing::OpenSearchDouble::Start(fine);
    REQUIRE(good_source.ok());
    code = run((*good_source)->endpoint(), false);
    INFO(runner.out << runner.err);
    CHECK(code == kExitPhaseFailed);
    CHECK(runner.err.find("--reset-failed") != std::string::npos);
    code = run((*good_source)->endpoint(), true);
    INFO(runner.out << runner.err);
    CHECK(code == 0);
    CHECK(OutputIds(out).size() == ExpectedDocCount(*generated));
    // Reset once: later workers go on without the option.
    code = run((*good_source)->endpoint(), false);
    CHECK(code == 0);
  }
}

TEST_CASE("transient target faults are retried by MetadataMigration and RfsWorker",
          "[e2e][generated][cli]") {
  auto generated = rfs::test::Generate("--docs 20 --indices 3 --templates true --seed 1605");
  REQUIRE(generated.has_value());
  Runner runner;
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  rfs::testing::FaultOptions faults;
  faults.reject_429 = 0.2;
  faults.unavailable_503 = 0.1;
  faults.path_contains = "/";  // every request, not only _bulk
  faults.seed = 1605;
  (*target)->SetFaults(faults);
  SECTION("MetadataMigration") {
    const int code =
        runner.Run({RFS_METADATA_TOOL, "migrate", "--snapshot-local-dir",
                    generated->repo().string(), "--target-host", (*target)->endpoint()});
    INFO(runner.out << runner.err);
    CHECK(code == 0);
    CHECK((*target)->IndexNames().size() >= 3);
  }
  SECTION("RfsWorker: never FAILED for a flaky target") {
    const int code =
        runner.Run({RFS_WORKER_TOOL, "--snapshot-local-dir", generated->repo().string(),
                    "--target-host", (*target)->endpoint(), "--coordinator-db",
                    runner.dir.File("records.sqlite"), "--max-attempts", "1"},
                   "", std::chrono::seconds(400));
    INFO(runner.out << runner.err);
    CHECK(code == 0);
  }
}

TEST_CASE("options that would be ignored or misread are refused", "[e2e][cli]") {
  Runner runner;
  const std::string repo = runner.dir.File("repo");
  fs::create_directories(repo);
  const std::string out = runner.dir.File("out");
  struct Case {
    std::vector<std::string> argv;
    std::string says;
  };
  const std::vector<Case> cases = {
      {Docs({"--snapshot-local-dir", repo, "--output-dir", out, "--max-connections", "100000"}),
       "from 1 to 1024"},
      {Docs({"--snapshot-local-dir", repo, "--output-dir", out, "--max-connections", "0"}),
       "from 1 to 1024"},
      {Docs({"--snapshot-local-dir", repo, "--output-dir", out, "stray"}), "stray"},
      {Docs({"--snapshot-local-dir", repo, "--output-dir", out, "--source-version", "banana"}),
       "banana"},
      {Docs({"--snapshot-local-dir", repo, "--target-host", "http://127.0.0.1:9",
             "--coordinator-db", "mysql://x"}),
       "mysql"},
      {{RFS_METADATA_TOOL, "evaluate", "--snapshot-local-dir", repo, "--target-version", "OS_99"},
       "OS_99"},
      {{RFS_WORKER_TOOL, "--snapshot-local-dir", repo, "--output-dir", out, "--max-attempts", "0"},
       "max-attempts"},
      {{RFS_CONSOLE_TOOL, "serve", "--port", "70000"}, "70000"},
      {{RFS_INSPECTOR_TOOL, "info", "--snapshot-local-dir", repo, "extra"}, "extra"},
  };
  for (const auto& c : cases) {
    std::string line;
    for (const auto& a : c.argv) line += a + " ";
    INFO(line);
    const int code = runner.Run(c.argv);
    INFO(runner.err);
    CHECK(code == kExitUsage);
    CHECK(runner.err.find(c.says) != std::string::npos);
  }
  // A misspelt RFS_ variable.
  ::setenv("RFS_TARGET_HOTS", "http://127.0.0.1:9", 1);
  const int code = runner.Run(Docs({"--snapshot-local-dir", repo, "--output-dir", out}));
  ::unsetenv("RFS_TARGET_HOTS");
  INFO(runner.err);
  CHECK(code == kExitUsage);
  CHECK(runner.err.find("RFS_TARGET_HOTS") != std::string::npos);
}

TEST_CASE("the verify phase samples documents with custom routing too", "[e2e][generated][cli]") {
  auto generated = rfs::test::Generate("--docs 60 --shards 3 --routing-fraction 0.5 --seed 1606");
  REQUIRE(generated.has_value());
  Runner runner;
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  const std::vector<std::string> args = {RFS_WORKER_TOOL,
                                         "--snapshot-local-dir",
                                         generated->repo().string(),
                                         "--target-host",
                                         (*target)->endpoint(),
                                         "--coordinator-db",
                                         runner.dir.File("records.sqlite"),
                                         "--verify-sample",
                                         "1000"};
  int code = runner.Run(args);
  INFO(runner.out << runner.err);
  REQUIRE(code == 0);
  // One routed document changed on the target: only a sample that includes it can see it.
  std::istringstream lines(
      rfs::test::ReadTextFile(generated->dir.string() + "/expected-docs.ndjson"));
  std::string index, id, routing;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const auto doc = json::parse(line).as_object();
    auto plain = [](std::string_view text) {
      return std::all_of(text.begin(), text.end(),
                         [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_'; });
    };
    const std::string candidate(doc.at("_id").as_string());
    const auto* r = doc.if_contains("_routing");
    if (r != nullptr && plain(candidate) && plain(std::string_view(r->as_string()))) {
      index = std::string(doc.at("_index").as_string());
      id = candidate;
      routing = std::string(r->as_string());
      break;
    }
  }
  REQUIRE(!routing.empty());
  auto transport = rfs::net::BeastHttpTransport::Open({.endpoint = (*target)->endpoint()});
  REQUIRE(transport.ok());
  rfs::net::HttpRequest put;
  put.method = "PUT";
  put.target = "/" + index + "/_doc/" + id + "?routing=" + routing + "&refresh=true";
  put.headers.emplace_back("Content-Type", "application/json");
  put.body = R"({"changed":true})";
  auto response = (*transport)->Send(put);
  REQUIRE(response.ok());
  REQUIRE(response->status == 200);
  std::vector<std::string> verify = args;
  verify.push_back("--verify-only");
  code = runner.Run(verify);
  INFO(runner.out << runner.err);
  CHECK(code == kExitPhaseFailed);
  CHECK(runner.out.find(id + ": _source differs") != std::string::npos);
}
