// No silent wrong results from DocumentsFromSnapshotMigration: the newest snapshot without
// --snapshot-name, repositories holding FIFOs (a clear error, exit 5, no hang), bad numbers
// (usage errors, exit 64), "0 = no limit" batch options, documents rejected by the target
// (their own exit code, the count and where they are, on stdout), and a damaged SMILE source (a
// recorded failure for the worker, the export stopped naming it).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/exit_codes.hpp"

#include "e2e_support.hpp"
#include "support/corpus.hpp"
#include "support/generated_repo.hpp"
#include "support/opensearch_double.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/tool_runner.hpp"
#include <sys/stat.h>

#ifndef RFS_INSPECTOR_TOOL
#define RFS_INSPECTOR_TOOL ""
#endif

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

using rfs::core::kExitNoWorkLeft;
using rfs::core::kExitSnapshotUnreadable;
constexpr int kDocumentsFailed = 6;
using rfs::core::kExitUsage;

// DocumentsFromSnapshotMigration with `args`; a hang fails the test.
struct Tool : rfs::test::ToolRunner {
  Tool() : ToolRunner("rfs-hostile") {}
  int Run(std::vector<std::string> args, std::chrono::seconds limit = std::chrono::seconds(60)) {
    args.insert(args.begin(), RFS_DOCUMENTS_TOOL);
    return ToolRunner::Run(args, "", limit);
  }
};

using rfs::e2e::OutputIds;

fs::path WritableCopy(const fs::path& from, const fs::path& to) {
  fs::copy(from, to, fs::copy_options::recursive);
  for (auto& entry : fs::recursive_directory_iterator(to)) {
    fs::permissions(entry.path(), fs::perms::owner_write, fs::perm_options::add);
  }
  return to;
}

}  // namespace

TEST_CASE("without --snapshot-name the newest snapshot is migrated, whatever the listing order",
          "[e2e][corpus][cli]") {
  auto root = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3");
  if (!root) return;
  // OpenSearch lists its snapshots newest first, Elasticsearch oldest first.
  for (const char* repo : {"os1_nocomp", "os2_nocomp", "os3_nocomp", "es2_nocomp", "es7_nocomp"}) {
    SECTION(repo) {
      Tool tool;
      const std::string out = tool.dir.File("out");
      const int code =
          tool.Run({"--snapshot-local-dir", (*root / repo).string(), "--output-dir", out});
      INFO(tool.out << tool.err);
      REQUIRE(code == kExitNoWorkLeft);
      // snapshot_v2 holds documents 1 and 2; snapshot_v1 only 1.
      CHECK(OutputIds(out) == std::multiset<std::string>{"1", "2"});
    }
  }
}

TEST_CASE("a repository holding FIFOs: a clear error and exit 5, never a hang",
          "[e2e][corpus][cli]") {
  auto source = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3/es7_nocomp");
  if (!source) return;
  Tool tool;
  SECTION("a FIFO in place of a shard's data blob") {
    const fs::path repo = WritableCopy(*source, tool.dir.path() / "repo");
    size_t replaced = 0;
    for (const auto& entry : fs::recursive_directory_iterator(repo)) {
      if (entry.path().filename().string().starts_with("__") && replaced == 0) {
        const fs::path blob = entry.path();
        fs::remove(blob);
        REQUIRE(::mkfifo(blob.c_str(), 0644) == 0);
        ++replaced;
      }
    }
    REQUIRE(replaced == 1);
    const int code = tool.Run({"--snapshot-local-dir", repo.string(), "--output-dir",
                               tool.dir.File("out"), "--snapshot-name", "snapshot_v2"});
    INFO(tool.out << tool.err);
    CHECK(code == kExitSnapshotUnreadable);
    CHECK(tool.err.find("a FIFO, not a regular file") != std::string::npos);
  }
  SECTION("a FIFO as the repository index") {
    const fs::path repo = WritableCopy(*source, tool.dir.path() / "repo");
    fs::remove(repo / "index-1");
    REQUIRE(::mkfifo((repo / "index-1").c_str(), 0644) == 0);
    const int code =
        tool.Run({"--snapshot-local-dir", repo.string(), "--output-dir", tool.dir.File("out")});
    INFO(tool.out << tool.err);
    CHECK(code == kExitSnapshotUnreadable);
    CHECK(tool.err.find("index-1") != std::string::npos);
    CHECK(tool.err.find("FIFO") != std::string::npos);
  }
}

namespace {

// Offsets of index-N's text worth changing: each byte's neighbours of the facts that decide what
// is read (the snapshot's uuid key and value, the `indices` key, the uuid in an index's list of
// snapshots: the ones a reader once let through for a repository of one snapshot), and a spread
// of the rest.
std::vector<size_t> TellingOffsets(const std::string& text, size_t spread) {
  std::vector<size_t> out;
  auto span = [&](size_t at, size_t length) {
    if (at == std::string::npos) return;
    for (size_t i : {size_t{0}, length / 2, length - 1}) out.push_back(at + i);
  };
  const size_t uuid_key = text.find("\"uuid\"");
  span(uuid_key, 6);
  if (uuid_key != std::string::npos) {
    const size_t value = text.find('"', uuid_key + 7);
    const size_t end = text.find('"', value + 1);
    span(value + 1, end - value - 1);
    // The same uuid in an index's list of snapshots.
    const std::string uuid = text.substr(value + 1, end - value - 1);
    span(text.find(uuid, text.find("\"indices\"")), uuid.size());
  }
  span(text.find("\"indices\""), 9);
  for (size_t at = 1; at < text.size(); at += text.size() / spread + 1) out.push_back(at);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

// The root-file sweep (root_flip_sweep_test.cpp) reads in process through the calls the tools
// make; a sample of its changes also goes through the tool itself, without --snapshot-name.
TEST_CASE("a changed byte of index-N never ends a migration done with documents missing",
          "[e2e][corpus][corrupt]") {
  for (const char* name :
       {"es-snapshots/ES_7_10_Single", "snapshot-matrix-es1-es9-os1-os3/os2_nocomp"}) {
    SECTION(name) {
      auto source = rfs::test::CorpusPath(name);
      if (!source) return;
      Tool tool;
      const fs::path repo = WritableCopy(*source, tool.dir.path() / "repo");
      fs::path index_n;
      for (const auto& entry : fs::directory_iterator(repo)) {
        const std::string file = entry.path().filename().string();
        if (file.starts_with("index-") && (index_n.empty() || file > index_n.filename().string())) {
          index_n = entry.path();
        }
      }
      REQUIRE(!index_n.empty());
      std::string intact;
      {
        std::ifstream in(index_n, std::ios::binary);
        intact.assign(std::istreambuf_iterator<char>(in), {});
      }
      const std::string intact_out = tool.dir.File("intact");
      REQUIRE(tool.Run({"--snapshot-local-dir", repo.string(), "--output-dir", intact_out}) ==
              kExitNoWorkLeft);
      const auto expected = OutputIds(intact_out);
      REQUIRE(!expected.empty());
      size_t runs = 0, refused = 0;
      for (size_t offset : TellingOffsets(intact, 12)) {
        std::string changed = intact;
        changed[offset] = static_cast<char>(changed[offset] ^ 0x01);
        {
          std::ofstream out(index_n, std::ios::binary | std::ios::trunc);
          out << changed;
        }
        const std::string out = tool.dir.File("out-" + std::to_string(offset));
        const int code = tool.Run({"--snapshot-local-dir", repo.string(), "--output-dir", out});
        ++runs;
        INFO(index_n.filename().string()
             << " byte " << offset << " ('" << intact[offset] << "'): exit " << code << "\n"
             << tool.out << tool.err);
        if (code == kExitSnapshotUnreadable) {
          ++refused;
          continue;
        }
        CHECK(code == kExitNoWorkLeft);
        CHECK(OutputIds(out) == expected);
      }
      {
        std::ofstream out(index_n, std::ios::binary | std::ios::trunc);
        out << intact;
      }
      CHECK(runs >= 12);
      CHECK(refused > 0);
    }
  }
}

TEST_CASE("bad numbers are usage errors", "[e2e][cli]") {
  Tool tool;
  const std::string repo = tool.dir.File("repo");
  fs::create_directories(repo);
  const std::vector<std::vector<std::string>> bad = {
      {"--documents-per-bulk-request", "-1"}, {"--documents-size-per-bulk-request", "-5"},
      {"--max-connections", "ten"},           {"--max-shard-size-bytes", "1e9"},
      {"--documents-per-bulk-request", ""},
  };
  for (const auto& extra : bad) {
    std::vector<std::string> args = {"--snapshot-local-dir", repo, "--output-dir",
                                     tool.dir.File("out")};
    args.insert(args.end(), extra.begin(), extra.end());
    INFO(extra[0] << " " << extra[1]);
    CHECK(tool.Run(args) == kExitUsage);
    CHECK(tool.err.find(extra[0]) != std::string::npos);
  }
  for (const char* host : {"http://127.0.0.1:0", "http://127.0.0.1:65536", "http://127.0.0.1:-1",
                           "http://127.0.0.1:99999"}) {
    INFO(host);
    CHECK(tool.Run({"--snapshot-local-dir", repo, "--target-host", host}) == kExitUsage);
    CHECK(tool.err.find("port") != std::string::npos);
  }
}

TEST_CASE("0 means no limit for both batch limits", "[e2e][generated][cli]") {
  auto generated = rfs::test::Generate("--shards 2 --docs 60 --seed 124");
  REQUIRE(generated.has_value());
  Tool tool;
  const std::string out = tool.dir.File("out");
  const int code =
      tool.Run({"--snapshot-local-dir", generated->repo().string(), "--output-dir", out,
                "--documents-per-bulk-request", "0", "--documents-size-per-bulk-request", "0"});
  INFO(tool.out << tool.err);
  REQUIRE(code == kExitNoWorkLeft);
  size_t files = 0;
  const auto ids = OutputIds(out, &files);
  CHECK(ids.size() == 60);
  CHECK(files == 2);  // one bulk per shard, not one per document
}

TEST_CASE("documents rejected by the target end the run with their own exit code",
          "[e2e][corpus][cli]") {
  auto repo = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3/os2_nocomp");
  if (!repo) return;
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  // A strict mapping without the documents' only field: every document is rejected for good.
  REQUIRE((*target)
              ->CreateIndex(
                  "simple_index",
                  R"({"mappings":{"dynamic":"strict","properties":{"other":{"type":"keyword"}}}})")
              .ok());
  Tool tool;
  const std::string failed_dir = tool.dir.File("failed");
  const int code =
      tool.Run({"--snapshot-local-dir", repo->string(), "--target-host", (*target)->endpoint(),
                "--coordinator-db", tool.dir.File("coordination.sqlite"), "--failed-documents-dir",
                failed_dir});
  INFO(tool.out << tool.err);
  CHECK(code == kDocumentsFailed);
  CHECK(tool.out.find("2 failed docs") != std::string::npos);
  CHECK(tool.out.find("2 documents could not be migrated") != std::string::npos);
  CHECK(tool.out.find(failed_dir) != std::string::npos);
  CHECK((*target)->DocumentCount("simple_index") == 0);
  // Accounted for the index: both read, both refused by the target.
  CHECK(tool.out.find("simple_index: 2 read, 0 written, 2 rejected") != std::string::npos);
  // The run's final error line is JSON when stderr is not a terminal: a missing repository.
  const int missing = tool.Run(
      {"--snapshot-local-dir", tool.dir.File("nope"), "--output-dir", tool.dir.File("out")});
  CHECK(missing == kExitSnapshotUnreadable);
  std::istringstream lines(tool.err);
  std::string last;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) last = line;
  }
  INFO(last);
  auto parsed = json::parse(last);
  CHECK(parsed.at("event").as_string() == "error");
  CHECK(parsed.at("exit_code").as_int64() == kExitSnapshotUnreadable);
  CHECK(std::string(parsed.at("message").as_string()).find("not found") != std::string::npos);
}

TEST_CASE("a damaged SMILE source is a recorded failure for the worker and stops the export",
          "[e2e][generated][cli]") {
  const std::string generator = RFS_GENERATE_SNAPSHOT;
  if (generator.empty()) {
    rfs::test::SkipTest("the Java fixture generator is unavailable (no JDK or Lucene jars)");
  }
  Tool tool;
  // Three documents of one shard: JSON, SMILE ({"a":1,"b":"x"}) and the same SMILE cut short in
  // its last string (a 2-byte ASCII value with 1 byte left, no end of object).
  const std::string docs_file = tool.dir.File("docs.ndjson");
  std::ofstream(docs_file) << R"({"_id":"plain","_source":{"a":0,"b":"json"}})"
                              "\n"
                           << R"({"_id":"smile","_source_base64":"OikKAPqAYcKAYkB4+w=="})"
                              "\n"
                           << R"({"_id":"damaged","_source_base64":"OikKAPqAYcKAYkF4"})"
                              "\n";
  const std::string generated = tool.dir.File("generated");
  const int generate = tool.ToolRunner::Run({generator, "--out", generated, "--docs-file",
                                             docs_file, "--templates", "false", "--shards", "1"},
                                            "", std::chrono::seconds(120));
  INFO(tool.out << tool.err);
  REQUIRE(generate == 0);
  // Bytes have no JSON form to expect: the generator writes no expected documents for them.
  CHECK_FALSE(fs::exists(fs::path(generated) / "expected-docs.ndjson"));
  const std::string repo = generated + "/repo";

  {  // The worker writes the others and records the damaged one with its bytes.
    auto target = rfs::testing::OpenSearchDouble::Start();
    REQUIRE(target.ok());
    const std::string failed_dir = tool.dir.File("failed");
    const int code =
        tool.Run({"--snapshot-local-dir", repo, "--snapshot-name", "snap-1", "--target-host",
                  (*target)->endpoint(), "--coordinator-db", tool.dir.File("coordination.sqlite"),
                  "--failed-documents-dir", failed_dir});
    INFO(tool.out << tool.err);
    CHECK(code == rfs::core::kExitDocumentsFailed);
    CHECK((*target)->DocumentCount("index-0") == 2);
    const auto smile = (*target)->GetDocument("index-0", "smile");
    REQUIRE(smile.has_value());
    CHECK(json::parse(smile->source) == json::parse(R"({"a":1,"b":"x"})"));
    CHECK_FALSE((*target)->GetDocument("index-0", "damaged").has_value());
    const auto records = rfs::e2e::ReadFailedDocuments(failed_dir);
    REQUIRE(records.size() == 1);
    INFO(json::serialize(records[0]));
    CHECK(records[0].at("id") == "damaged");
    CHECK(records[0].at("error_type") == "source_conversion_exception");
    const std::string reason(records[0].at("reason").as_string());
    CHECK(reason.find("index-0/damaged") != std::string::npos);
    CHECK(reason.find("offset") != std::string::npos);
    // The bytes as read, for an operator to mend and redrive.
    CHECK(records[0].at("source") == "OikKAPqAYcKAYkF4");

    // Redriven unmended, the record is not sent (the target would refuse base64): it is
    // recorded again with its bytes and why.
    const std::string again_dir = tool.dir.File("failed-again");
    const int redrive = tool.Run(
        {"--redrive-failed-documents", failed_dir, "--target-host", (*target)->endpoint(),
         "--coordinator-db", tool.dir.File("redrive.sqlite"), "--failed-documents-dir", again_dir});
    INFO(tool.out << tool.err);
    CHECK(redrive == rfs::core::kExitDocumentsFailed);
    CHECK((*target)->DocumentCount("index-0") == 2);
    const auto again = rfs::e2e::ReadFailedDocuments(again_dir);
    REQUIRE(again.size() == 1);
    CHECK(again[0].at("id") == "damaged");
    CHECK(again[0].at("error_type") == "source_conversion_exception");
    CHECK(again[0].at("source") == "OikKAPqAYcKAYkF4");
    CHECK(std::string(again[0].at("reason").as_string()).find("mended") != std::string::npos);
  }

  {  // SnapshotInspector docs stops, naming the document and where its bytes fail.
    REQUIRE(std::string(RFS_INSPECTOR_TOOL) != "");
    for (const std::string threads : {"0", "2"}) {
      const int code =
          tool.ToolRunner::Run({RFS_INSPECTOR_TOOL, "docs", "--snapshot-local-dir", repo,
                                "--snapshot-name", "snap-1", "--reader-threads", threads});
      INFO(threads << " reader threads: " << tool.out << tool.err);
      CHECK(code == rfs::core::kExitSnapshotUnreadable);
      CHECK(tool.err.find("index-0/damaged") != std::string::npos);
      CHECK(tool.err.find("offset") != std::string::npos);
      // Nothing of the damaged document is written.
      CHECK(tool.out.find("\"damaged\"") == std::string::npos);
    }
  }
}
