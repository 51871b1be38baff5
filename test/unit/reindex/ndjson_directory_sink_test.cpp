#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/clock.hpp"
#include "rfs/core/file_util.hpp"
#include "rfs/core/json_string.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/reindex/bulk_format.hpp"
#include "rfs/reindex/document_reindexer.hpp"
#include "rfs/reindex/document_sink.hpp"

#include "reindex_test_util.hpp"
#include "support/direct_io.hpp"
#include "support/opensearch_double.hpp"
#include <sys/wait.h>
#include <unistd.h>

namespace rfs::reindex {
using namespace rfs::net;         // NOLINT: the layers this test drives
using namespace rfs::opensearch;  // NOLINT
namespace {

namespace fs = std::filesystem;
using testutil::LayOut;
using testutil::MakeDocs;
using testutil::TempDir;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<fs::path> FilesUnder(const fs::path& root) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// True when `body` is whole bulk NDJSON: newline-terminated pairs of JSON lines.
bool IsCompleteBulkBody(const std::string& body) {
  if (body.empty() || body.back() != '\n') return false;
  std::istringstream lines(body);
  std::string line;
  size_t count = 0;
  while (std::getline(lines, line)) {
    boost::system::error_code ec;
    boost::json::parse(line, ec);
    if (ec) return false;
    ++count;
  }
  return count % 2 == 0;
}

TEST_CASE("NDJSON sink writes replayable bulk files per index and shard", "[reindex][ndjson]") {
  TempDir dir;
  auto sink = NdjsonDirectorySink::Open({.directory = dir.str(), .shard = "3"});
  REQUIRE(sink.ok());
  core::FakeClock clock;
  auto list = MakeDocs(25, "books");
  for (size_t i = 20; i < 25; ++i) list[i].index = "authors";
  list[7].routing = "r";
  DocumentReindexer reindexer(**sink, nullptr, clock, {.max_docs_per_batch = 10});
  VectorDocumentStream docs(list);
  auto summary = reindexer.Reindex(docs);
  REQUIRE(summary.ok());
  CHECK(summary->docs_written == 25);

  const auto files = FilesUnder(dir.path());
  REQUIRE(files.size() == 3);
  CHECK(files[0] == dir.path() / "authors/3/00000000000000000021-00000000000000000025.ndjson");
  CHECK(files[1] == dir.path() / "books/3/00000000000000000001-00000000000000000010.ndjson");
  CHECK(files[2] == dir.path() / "books/3/00000000000000000011-00000000000000000020.ndjson");
  const std::string first = ReadFile(files[1]);
  CHECK(first.starts_with("{\"index\":{\"_index\":\"books\",\"_id\":\"d0\"}}\n{  "));
  CHECK(first.find(R"({"index":{"_index":"books","_id":"d7","routing":"r"}})") !=
        std::string::npos);
  for (const auto& file : files) CHECK(IsCompleteBulkBody(ReadFile(file)));

  // Replaying the files into a cluster yields every document.
  auto server = testing::OpenSearchDouble::Start();
  REQUIRE(server.ok());
  auto transport = BeastHttpTransport::Open({.endpoint = (*server)->endpoint()});
  REQUIRE(transport.ok());
  for (const auto& file : files) {
    net::HttpRequest request;
    request.method = "POST";
    request.target = "/_bulk";
    request.headers.emplace_back("Content-Type", "application/x-ndjson");
    request.body = ReadFile(file);
    auto response = (*transport)->Send(request);
    REQUIRE(response.ok());
    CHECK(response->status == 200);
    CHECK(response->body.find("\"errors\":false") != std::string::npos);
  }
  CHECK((*server)->DocumentCount("books") == 20);
  CHECK((*server)->DocumentCount("authors") == 5);
}

TEST_CASE("NDJSON sink rejects index names OpenSearch would reject", "[reindex][ndjson]") {
  TempDir dir;
  auto sink = NdjsonDirectorySink::Open({.directory = dir.str()});
  REQUIRE(sink.ok());
  auto list = MakeDocs(4);
  list[1].index = "../escape";
  list[3].index = ".rfs";  // the embedded target's own state folder
  std::vector<const SourceDocument*> pointers{&list[0], &list[1], &list[2], &list[3]};
  auto failures = (*sink)->Write(pointers);
  REQUIRE(failures.ok());
  REQUIRE(failures->size() == 2);
  CHECK((*failures)[0].position == 1);
  CHECK((*failures)[0].status == 400);
  CHECK((*failures)[0].type == "invalid_index_name_exception");
  CHECK((*failures)[1].position == 3);
  CHECK((*failures)[1].reason.find(".rfs") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path() / ".rfs"));
  CHECK(FilesUnder(dir.path()).size() == 1);
  CHECK(absl::IsInvalidArgument(
      NdjsonDirectorySink::Open({.directory = dir.str(), .shard = "a/b"}).status()));
}

// `body` without the spaces that end its lines.
std::string WithoutTrailingSpaces(const std::string& body) {
  std::string out;
  std::istringstream lines(body);
  std::string line;
  while (std::getline(lines, line)) {
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out.append(line).push_back('\n');
  }
  return out;
}

// How many lines of `body` end in spaces; fails the test when one is not an action line.
size_t PaddedActionLines(const std::string& body) {
  size_t padded = 0;
  std::istringstream lines(body);
  std::string line;
  for (bool action = true; std::getline(lines, line); action = !action) {
    if (!line.ends_with(' ')) continue;
    CHECK(action);
    ++padded;
  }
  return padded;
}

TEST_CASE("NDJSON sink writes laid-out lines as they are, long pieces from where they are",
          "[reindex][ndjson]") {
  // Laid-out runs of 400 documents (about 400 KB each), a run laid out with a type in the action
  // (which this sink does not write: it makes its own), documents as they were read, one
  // 700 KB source and one the sink cannot take.
  auto list = MakeDocs(1200, "books", 1000);
  REQUIRE(LayOut(std::span(list).first(600), 400));
  REQUIRE(LayOut(std::span(list).subspan(700, 20), 10, {.include_type = true}));
  REQUIRE(LayOut(std::span(list).subspan(800), 400));
  list[650].source = R"({"big":")" + std::string(700 << 10, 'b') + R"("})";
  list[900].index = "Bad";
  // The same documents, every one as read.
  std::vector<SourceDocument> plain = list;
  for (SourceDocument& doc : plain) {
    if (!doc.rendered) continue;
    doc.source = std::string(SourceBytes(doc));
    doc.rendered.reset();
  }
  auto write = [](const std::string& directory, const std::vector<SourceDocument>& docs) {
    auto sink = NdjsonDirectorySink::Open({.directory = directory});
    REQUIRE(sink.ok());
    std::vector<const SourceDocument*> pointers;
    for (const SourceDocument& doc : docs) pointers.push_back(&doc);
    auto failures = (*sink)->Write(pointers);
    REQUIRE(failures.ok());
    REQUIRE(failures->size() == 1);
    CHECK((*failures)[0].position == 900);
  };
  TempDir laid_out_dir;
  TempDir plain_dir;
  write(laid_out_dir.str(), list);
  write(plain_dir.str(), plain);

  const std::string laid_out = ReadFile(laid_out_dir.path() / "books/0" /
                                        "00000000000000000001-00000000000000001200.ndjson");
  const std::string expected =
      ReadFile(plain_dir.path() / "books/0" / "00000000000000000001-00000000000000001200.ndjson");
  CHECK(expected.size() > 1'900'000);
  CHECK(IsCompleteBulkBody(laid_out));
  // Only padding differs: spaces at the end of action lines.
  CHECK(WithoutTrailingSpaces(laid_out) == WithoutTrailingSpaces(expected));
  const size_t padded = PaddedActionLines(laid_out);
  const size_t padded_plain = PaddedActionLines(expected);
  auto probe = core::AtomicFileWriter::Create((plain_dir.path() / "probe").string(), true,
                                              core::FileCaching::kDirect);
  REQUIRE(probe.ok());
  if (probe->direct()) {
    // Each long piece may have its action line padded: the three runs and the big source.
    CHECK(padded >= 1);
    CHECK(padded <= 4);
    CHECK(padded_plain <= 1);
  } else {
    CHECK_FALSE(rfs::test::DirectIoAvailable(plain_dir.path()));
    WARN("the temporary folder's file system refuses direct I/O: nothing was padded");
    CHECK(padded + padded_plain == 0);
  }
}

TEST_CASE("NDJSON sink leaves only whole files when its process is killed", "[reindex][ndjson]") {
  TempDir dir;
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Write large batches as fast as possible until killed.
    auto sink = NdjsonDirectorySink::Open({.directory = dir.str()});
    if (!sink.ok()) ::_exit(1);
    auto list = MakeDocs(2000, "killed", 2000);
    for (uint64_t round = 0;; ++round) {
      for (auto& doc : list) doc.cursor += list.size();
      std::vector<const SourceDocument*> pointers;
      for (const auto& doc : list) pointers.push_back(&doc);
      if (!(*sink)->Write(pointers).ok()) ::_exit(2);
    }
  }
  // Let it write a few files, then kill it mid-write.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    size_t files = 0;
    if (fs::exists(dir.path() / "killed/0", ec)) {
      for (const auto& e : fs::directory_iterator(dir.path() / "killed/0", ec)) {
        files += e.path().extension() == ".ndjson" ? 1 : 0;
      }
    }
    if (files >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFSIGNALED(status));

  size_t complete = 0;
  for (const auto& file : FilesUnder(dir.path())) {
    if (file.extension() != ".ndjson") continue;  // a temporary file may remain, never renamed
    CHECK(IsCompleteBulkBody(ReadFile(file)));
    ++complete;
  }
  CHECK(complete >= 3);
}

}  // namespace
}  // namespace rfs::reindex
