// ExportDocumentsAsNdjson (SnapshotInspector docs) on a real Lucene shard holding pretty-printed
// sources and one source of several MB (a sliced chunk, and a document the parallel path leaves
// to the writing thread): the serial and parallel exports write the same bytes, and every line
// holds exactly the generator's document.
#include "rfs/migration/export.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/migration/tools.hpp"

#include "support/generated_repo.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace json = boost::json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Exported {
  std::string text;
  rfs::migration::ExportResult result;
};

Exported Export(const std::string& repo, int threads, const rfs::test::TempDir& dir,
                bool sourceless = false, uint64_t from_cursor = 0) {
  rfs::migration::ExportOptions options;
  options.enable_sourceless_migrations = sourceless;
  if (from_cursor > 0) {
    options.index = "index-0";
    options.shard = 0;
    options.from_cursor = from_cursor;
  }
  options.repository = repo;
  options.snapshot_name = "snap-1";
  options.reader_threads = threads;
  const std::string path = dir.File("export-" + std::to_string(threads) + ".ndjson");
  std::FILE* out = std::fopen(path.c_str(), "wb");
  REQUIRE(out != nullptr);
  Exported exported;
  exported.result = rfs::migration::ExportDocumentsAsNdjson(options, out);
  std::fclose(out);
  exported.text = ReadFile(path);
  return exported;
}

}  // namespace

TEST_CASE("serial and parallel exports write every document exactly, huge ones included",
          "[migration][export][generated][tsan]") {
  auto generated = rfs::test::Generate(
      "--indices 1 --shards 1 --docs 400 --segments 3 --deletes 20 --write-docs true "
      "--huge-doc-bytes 3000000 --seed 17");
  rfs::test::TempDir dir("rfs-export");
  const Exported serial = Export(generated->repo().string(), 0, dir);
  REQUIRE(serial.result.status.ok());
  // Expected: the generator's live documents by id.
  std::map<std::string, json::value> expected;
  std::istringstream expected_lines(ReadFile((generated->dir / "expected-docs.ndjson").string()));
  for (std::string line; std::getline(expected_lines, line);) {
    json::object doc = json::parse(line).as_object();
    expected[std::string(doc.at("_id").as_string())] = doc.at("_source");
  }
  REQUIRE(expected.size() == 380);
  size_t lines = 0;
  size_t pretty = 0;
  size_t largest = 0;
  std::istringstream exported_lines(serial.text);
  for (std::string line; std::getline(exported_lines, line); ++lines) {
    json::object doc = json::parse(line).as_object();
    const std::string id(doc.at("_id").as_string());
    REQUIRE(expected.contains(id));
    CHECK(doc.at("_source") == expected.at(id));
    largest = std::max(largest, line.size());
    if (line.find("{     ") != std::string::npos) ++pretty;  // a pretty source made one line
  }
  CHECK(lines == expected.size());
  CHECK(serial.result.totals.docs == expected.size());
  CHECK(largest > 3000000);
  CHECK(pretty > 0);
  for (int threads : {1, 2, 3}) {
    CAPTURE(threads);
    const Exported parallel = Export(generated->repo().string(), threads, dir);
    REQUIRE(parallel.result.status.ok());
    CHECK(parallel.text == serial.text);
    CHECK(parallel.result.totals.docs == serial.result.totals.docs);
    CHECK(parallel.result.totals.source_bytes == serial.result.totals.source_bytes);
  }
  // From a cursor in the middle: the same lines in both modes, the end of the whole export.
  const Exported tail = Export(generated->repo().string(), 0, dir, false, 200);
  REQUIRE(tail.result.status.ok());
  CHECK(tail.result.totals.docs > 0);
  CHECK(tail.result.totals.docs < serial.result.totals.docs);
  REQUIRE(tail.text.size() < serial.text.size());
  CHECK(serial.text.ends_with(tail.text));
  CHECK(serial.text[serial.text.size() - tail.text.size() - 1] == '\n');
  const Exported parallel_tail = Export(generated->repo().string(), 2, dir, false, 200);
  REQUIRE(parallel_tail.result.status.ok());
  CHECK(parallel_tail.text == tail.text);
}

TEST_CASE("an index without _source stops the export unless its documents are rebuilt",
          "[migration][export][sourceless]") {
  auto generated =
      rfs::test::Generate("--docs 40 --shards 2 --segments 2 --seed 9 --source-enabled false");
  if (!generated) return;
  rfs::test::TempDir dir("rfs-export-sourceless");
  const Exported refused = Export(generated->repo().string(), 0, dir);
  INFO(refused.result.status.ToString());
  CHECK(refused.result.exit_code == rfs::core::kExitUsage);
  CHECK(refused.result.status.message().find("--enable-sourceless-migrations") !=
        std::string_view::npos);
  CHECK(refused.text.empty());
  for (int threads : {0, 2}) {
    const Exported rebuilt = Export(generated->repo().string(), threads, dir, true);
    INFO(rebuilt.result.status.ToString());
    REQUIRE(rebuilt.result.status.ok());
    CHECK(rebuilt.result.totals.docs == 40);
    CHECK(rebuilt.result.totals.without_source == 0);
    std::istringstream lines(rebuilt.text);
    size_t sources = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.find("\"author\"") != std::string::npos) ++sources;
    }
    CHECK(sources == 40);
  }
}
