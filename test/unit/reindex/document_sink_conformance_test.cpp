// The IDocumentSink conformance suite on both sinks rfs ships: OpenSearchBulkSink into the
// OpenSearch double, and NdjsonDirectorySink, whose files are replayed in cursor order as
// `_bulk` would apply them.
#include "conformance/document_sink_conformance.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/net/beast_http_transport.hpp"
#include "rfs/opensearch/client.hpp"
#include "rfs/reindex/document_sink.hpp"

#include "support/opensearch_double.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace json = boost::json;
using rfs::reindex::conformance::HeldDocument;
using rfs::reindex::conformance::SinkUnderTest;

struct BulkTarget {
  std::unique_ptr<rfs::testing::OpenSearchDouble> server;
  std::unique_ptr<rfs::net::BeastHttpTransport> transport;
  std::unique_ptr<rfs::opensearch::OpenSearchClient> client;
  std::unique_ptr<rfs::reindex::OpenSearchBulkSink> sink;
};

SinkUnderTest BulkSinkOnDouble() {
  auto target = std::make_shared<BulkTarget>();
  auto server = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(server.ok());
  target->server = *std::move(server);
  auto transport = rfs::net::BeastHttpTransport::Open({.endpoint = target->server->endpoint()});
  REQUIRE(transport.ok());
  target->transport = *std::move(transport);
  target->client = std::make_unique<rfs::opensearch::OpenSearchClient>(*target->transport);
  target->sink = std::make_unique<rfs::reindex::OpenSearchBulkSink>(*target->client);
  SinkUnderTest out;
  out.sink = std::shared_ptr<rfs::reindex::IDocumentSink>(target, target->sink.get());
  out.get = [target](const std::string& index,
                     const std::string& id) -> std::optional<HeldDocument> {
    auto stored = target->server->GetDocument(index, id);
    if (!stored) return std::nullopt;
    return HeldDocument{stored->source, stored->routing};
  };
  out.count = [target](const std::string& index) { return target->server->DocumentCount(index); };
  return out;
}

// What `_bulk` would hold after replaying every file of an NdjsonDirectorySink folder in cursor
// order: index -> id -> document.
std::map<std::string, std::map<std::string, HeldDocument>> Replay(
    const std::filesystem::path& root) {
  std::vector<std::pair<uint64_t, std::filesystem::path>> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".ndjson") continue;
    files.emplace_back(std::stoull(entry.path().stem().string()), entry.path());
  }
  std::sort(files.begin(), files.end());
  std::map<std::string, std::map<std::string, HeldDocument>> held;
  for (const auto& [first_cursor, file] : files) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      const json::object action = json::parse(line).as_object();
      REQUIRE(action.size() == 1);
      const std::string op(action.begin()->key());
      const json::object& meta = action.begin()->value().as_object();
      const std::string index(meta.at("_index").as_string());
      const std::string id(meta.at("_id").as_string());
      if (op == "delete") {
        held[index].erase(id);
        continue;
      }
      std::string source;
      REQUIRE(std::getline(in, source));
      HeldDocument doc{source, std::nullopt};
      if (const json::value* routing = meta.if_contains("routing")) {
        doc.routing = std::string(routing->as_string());
      }
      held[index][id] = doc;
    }
  }
  return held;
}

}  // namespace

TEST_CASE("OpenSearchBulkSink keeps the IDocumentSink contract", "[reindex][conformance]") {
  rfs::reindex::conformance::RunDocumentSinkConformance(BulkSinkOnDouble);
}

TEST_CASE("NdjsonDirectorySink keeps the IDocumentSink contract", "[reindex][conformance]") {
  rfs::reindex::conformance::RunDocumentSinkConformance([] {
    auto dir = std::make_shared<rfs::test::TempDir>("rfs-ndjson-conformance");
    auto sink = rfs::reindex::NdjsonDirectorySink::Open({.directory = dir->path().string()});
    REQUIRE(sink.ok());
    SinkUnderTest out;
    out.sink = std::shared_ptr<rfs::reindex::IDocumentSink>(*std::move(sink));
    out.get = [dir](const std::string& index,
                    const std::string& id) -> std::optional<HeldDocument> {
      const auto held = Replay(dir->path());
      auto in_index = held.find(index);
      if (in_index == held.end()) return std::nullopt;
      auto doc = in_index->second.find(id);
      if (doc == in_index->second.end()) return std::nullopt;
      return doc->second;
    };
    out.count = [dir](const std::string& index) {
      const auto held = Replay(dir->path());
      auto in_index = held.find(index);
      return in_index == held.end() ? size_t{0} : in_index->second.size();
    };
    return out;
  });
}
