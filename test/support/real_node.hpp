// Real OpenSearch nodes for tests: the ctest fixtures real_os2 and real_os3 start one node each
// (scripts/local-cluster, through test/real/node_fixture.sh) and write its URL to
// <RFS_REAL_NODES_DIR>/<name>/url; tests that need a node read it here. A missing node fails the
// test: it is an install bug, never a skip.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/content/source_json.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/net/encoding.hpp"
#include "rfs/snapshot/repository.hpp"

#include "support/process.hpp"
#include "support/repository_documents.hpp"

namespace rfs::test {

namespace json = boost::json;

/// A running node of a fixture: its URL, its path.repo, and plain HTTP requests.
class RealNode {
 public:
  /// The node of fixture `name` ("os2", "os3"); fails the test when the fixture did not start it.
  explicit RealNode(const std::string& name) : name_(name) {
    const std::filesystem::path dir = std::filesystem::path(RFS_REAL_NODES_DIR) / name;
    url_ = ReadTextFile((dir / "url").string());
    while (!url_.empty() && (url_.back() == '\n' || url_.back() == '\r')) url_.pop_back();
    INFO("the real node '" << name << "' was not started by its ctest fixture (" << dir.string()
                           << "/url is missing; see " << dir.string() << "/fixture.log)");
    REQUIRE(!url_.empty());
    repo_path_ = dir / "repo";
    auto transport = net::BeastHttpTransport::Open({.endpoint = url_});
    REQUIRE(transport.ok());
    transport_ = *std::move(transport);
  }

  const std::string& name() const { return name_; }
  const std::string& url() const { return url_; }
  /// The node's path.repo: fs repositories registered on it live below.
  const std::filesystem::path& repo_path() const { return repo_path_; }

  net::HttpResponse Send(const std::string& method, const std::string& target,
                         const std::string& body = "") {
    net::HttpRequest request;
    request.method = method;
    request.target = target;
    if (!body.empty()) {
      const bool ndjson = target.find("_bulk") != std::string::npos;
      request.headers.emplace_back("Content-Type",
                                   ndjson ? "application/x-ndjson" : "application/json");
    }
    request.body = body;
    auto response = transport_->Send(request);
    INFO(method << " " << target << ": " << response.status().ToString());
    REQUIRE(response.ok());
    return *std::move(response);
  }

  /// Sends and requires a 2xx answer; returns the parsed body (null for an empty one).
  json::value Ok(const std::string& method, const std::string& target,
                 const std::string& body = "") {
    const net::HttpResponse response = Send(method, target, body);
    INFO(method << " " << target << " -> " << response.status << " " << response.body);
    REQUIRE(response.status / 100 == 2);
    return response.body.empty() ? json::value() : json::parse(response.body);
  }

  /// Registers the `fs` snapshot repository `repository` at `location` (below path.repo).
  void RegisterFsRepository(const std::string& repository, const std::filesystem::path& location) {
    Ok("PUT", "/_snapshot/" + repository,
       json::serialize(json::object{{"type", "fs"},
                                    {"settings", json::object{{"location", location.string()}}}}));
  }

  /// Deletes the indices (missing ones ignored) and waits for the deletion.
  void DeleteIndices(const std::vector<std::string>& names) {
    for (const auto& name : names) {
      const auto response = Send("DELETE", "/" + name + "?ignore_unavailable=true");
      INFO("DELETE /" << name << " -> " << response.status << " " << response.body);
      CHECK((response.status == 200 || response.status == 404));
    }
  }

  /// The node's major version (2, 3).
  int Major() {
    const auto info = Ok("GET", "/");
    const std::string number(info.at("version").at("number").as_string());
    return std::stoi(number.substr(0, number.find('.')));
  }

 private:
  std::string name_;
  std::string url_;
  std::filesystem::path repo_path_;
  std::unique_ptr<net::BeastHttpTransport> transport_;
};

/// JSON text without the whitespace between tokens: "whitespace aside" comparisons of texts that
/// must otherwise be identical (key order, number and string texts).
inline std::string WithoutJsonWhitespace(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      out.push_back(c);
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '"') in_string = true;
    out.push_back(c);
  }
  return out;
}

/// One live document as the snapshot holds it: its source as JSON text (the bytes for a JSON
/// source; rfs's conversion for SMILE, CBOR or YAML ones) and its routing.
struct SnapshotDocument {
  std::string source;
  std::optional<std::string> routing;
};
/// index -> _id -> document.
using SnapshotDocuments = std::map<std::string, std::map<std::string, SnapshotDocument>>;

/// Every live document of `snapshot_name` (the newest when empty) of the repository at `root`;
/// with `rebuild`, documents of indices without a complete `_source` are rebuilt
/// (lucene::RebuildPlanForIndex), and `rebuilt` (when given) counts them; `rebuild_all` rebuilds
/// them even where a `_recovery_source` holds the document.
inline SnapshotDocuments ReadSnapshotDocuments(const std::filesystem::path& root,
                                               const std::string& snapshot_name = "",
                                               bool rebuild = false, uint64_t* rebuilt = nullptr,
                                               bool rebuild_all = false) {
  auto base = snapshot::FileSystemRepo::Open(root.string());
  REQUIRE(base.ok());
  auto repository = snapshot::SnapshotRepository::Open(*base);
  INFO(repository.status().ToString());
  REQUIRE(repository.ok());
  auto chosen = snapshot_name.empty() ? (*repository)->LatestSnapshot()
                                      : (*repository)->FindSnapshot(snapshot_name);
  INFO(chosen.status().ToString());
  REQUIRE(chosen.ok());
  SnapshotDocuments out;
  for (const auto& index : (*repository)->IndicesIn(**chosen)) {
    // System indices are not migrated by default; data streams' backing indices are.
    if (index.starts_with(".") && !index.starts_with(".ds-")) continue;
    auto meta = (*repository)->ReadIndexMetadata(**chosen, index);
    REQUIRE(meta.ok());
    auto& docs = out[index];
    lucene::ShardReaderOptions options;
    if (rebuild) {
      auto plan = lucene::RebuildPlanForIndex(*meta);
      INFO(plan.status().ToString());
      REQUIRE(plan.ok());
      options.rebuild_plan = *plan;
      options.rebuild_stored_sources = rebuild_all;
    }
    for (int shard = 0; shard < meta->number_of_shards; ++shard) {
      auto reader = lucene::OpenSnapshotShard(**repository, **chosen, index, shard, options);
      if (absl::IsNotFound(reader.status())) continue;
      INFO(index << "/" << shard << ": " << reader.status().ToString());
      REQUIRE(reader.ok());
      ForEachDocument(**reader, [&](const lucene::Document& doc) {
        if (!doc.has_source) return;
        if (rebuilt != nullptr && doc.rebuilt) ++*rebuilt;
        std::string source;
        REQUIRE(content::AppendSourceAsJson(doc.source, doc.source_format, source).ok());
        docs[doc.id] = SnapshotDocument{std::move(source), doc.routing};
      });
    }
  }
  return out;
}

/// URL-encodes one path segment or query value.
inline std::string Encode(std::string_view text) { return net::PercentEncode(text, false); }

/// Every document of `expected` is on the node with its source text (whitespace aside) and
/// routing, and each index holds exactly as many documents. Returns the documents compared.
inline size_t CheckNodeHolds(RealNode& node, const SnapshotDocuments& expected) {
  size_t compared = 0;
  node.Ok("POST", "/_refresh");
  for (const auto& [index, docs] : expected) {
    INFO("index " << index << " on " << node.name());
    const auto count = node.Ok("GET", "/" + Encode(index) + "/_count");
    CHECK(count.at("count").to_number<uint64_t>() == docs.size());
    for (const auto& [id, doc] : docs) {
      INFO("document " << id);
      const std::string routing = doc.routing ? "?routing=" + Encode(*doc.routing) : "";
      const auto source =
          node.Send("GET", "/" + Encode(index) + "/_source/" + Encode(id) + routing);
      REQUIRE(source.status == 200);
      CHECK(WithoutJsonWhitespace(source.body) == WithoutJsonWhitespace(doc.source));
      const auto got = node.Ok("GET", "/" + Encode(index) + "/_doc/" + Encode(id) + routing);
      const auto* stored_routing = got.as_object().if_contains("_routing");
      CHECK((stored_routing ? std::optional<std::string>(std::string(stored_routing->as_string()))
                            : std::nullopt) == doc.routing);
      ++compared;
    }
  }
  return compared;
}

}  // namespace rfs::test
