#include "rfs/opensearch/client.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/errors.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/net/gzip.hpp"
#include "rfs/reindex/document_sink.hpp"

#include "reindex_test_util.hpp"
#include "support/double_connection.hpp"
#include "support/opensearch_double.hpp"

namespace rfs::opensearch {
using namespace rfs::net;      // NOLINT: the layers this test drives
using namespace rfs::reindex;  // NOLINT: the layers this test drives
namespace {

namespace json = boost::json;
using rfs::testing::OpenSearchDouble;
using rfs::testing::OpenSearchDoubleOptions;

// A double plus a transport and client talking to it.
struct Target : rfs::test::DoubleConnection {
  explicit Target(OpenSearchDoubleOptions double_options = {},
                  OpenSearchClientOptions client_options = {})
      : DoubleConnection(std::move(double_options)) {
    client = std::make_unique<OpenSearchClient>(*transport, client_options);
  }
  std::unique_ptr<OpenSearchClient> client;
};

json::object Json(std::string_view text) {
  return json::parse(json::string_view(text.data(), text.size())).as_object();
}

TEST_CASE("ParseClusterVersion reads OpenSearch and Elasticsearch roots", "[reindex][client]") {
  auto os = ParseClusterVersion(
      R"({"version":{"distribution":"opensearch","number":"2.11.1"},"tagline":"x"})");
  REQUIRE(os.ok());
  CHECK(os->opensearch());
  CHECK(os->LongName() == "OpenSearch 2.11.1");
  CHECK_FALSE(os->RequiresDocumentType());
  auto es = ParseClusterVersion(R"({"version":{"number":"6.8.23"}})");
  REQUIRE(es.ok());
  CHECK(es->elasticsearch());
  CHECK(es->major == 6);
  CHECK(es->RequiresDocumentType());
  CHECK_FALSE(es->SupportsComposableTemplates());
  auto es8 = ParseClusterVersion(R"({"version":{"number":"8.12.0-SNAPSHOT"}})");
  REQUIRE(es8.ok());
  CHECK(es8->minor == 12);
  CHECK_FALSE(es8->RequiresDocumentType());
  CHECK(absl::IsInvalidArgument(ParseClusterVersion("{}").status()));
  CHECK(absl::IsInvalidArgument(ParseClusterVersion("not json").status()));
}

TEST_CASE("ParseBulkResponse returns per-item results", "[reindex][client]") {
  auto all_ok =
      ParseBulkResponse(R"({"took":3,"errors":false,"items":[{"index":{"status":201}}]})", 1);
  REQUIRE(all_ok.ok());
  CHECK_FALSE(all_ok->errors);
  CHECK(all_ok->items.empty());

  auto mixed = ParseBulkResponse(
      R"({"took":3,"errors":true,"items":[{"index":{"_index":"a","_id":"1","status":201}},)"
      R"({"index":{"_index":"a","_id":"2","status":400,"error":{"type":"mapper_parsing_exception",)"
      R"("reason":"failed to parse"}}},{"create":{"_index":"a","_id":"3","status":429,)"
      R"("error":{"type":"rejected_execution_exception","reason":"busy"}}}]})",
      3);
  REQUIRE(mixed.ok());
  REQUIRE(mixed->items.size() == 3);
  CHECK(mixed->items[0].ok());
  CHECK(mixed->items[1].status == 400);
  CHECK(mixed->items[1].error_type == "mapper_parsing_exception");
  CHECK(mixed->items[1].error_reason == "failed to parse");
  CHECK(mixed->items[2].error_type == "rejected_execution_exception");

  CHECK(absl::IsDataLoss(
      ParseBulkResponse(R"({"took":1,"errors":true,"items":[{"index":{"status":400}}]})", 2)
          .status()));
  CHECK(absl::IsDataLoss(ParseBulkResponse("garbage", 1).status()));
}

TEST_CASE("StatusFromResponse maps HTTP codes by what the caller does next", "[reindex][client]") {
  auto status_of = [](int code) {
    net::HttpResponse r;
    r.status = code;
    r.body = R"({"error":{"type":"some_exception","reason":"why"},"status":)" +
             std::to_string(code) + "}";
    return StatusFromResponse(r, "GET /x");
  };
  CHECK(status_of(200).ok());
  CHECK(absl::IsResourceExhausted(status_of(429)));
  CHECK(absl::IsUnavailable(status_of(503)));
  CHECK(absl::IsInvalidArgument(status_of(400)));
  CHECK(absl::IsUnauthenticated(status_of(401)));
  CHECK(absl::IsPermissionDenied(status_of(403)));
  CHECK(absl::IsNotFound(status_of(404)));
  // Whole-request 409 and 413 are never read as a lost lease (FailedPrecondition/Aborted).
  CHECK(absl::IsAlreadyExists(status_of(409)));
  CHECK(absl::IsOutOfRange(status_of(413)));
  CHECK(absl::IsInvalidArgument(status_of(422)));
  CHECK(absl::IsDeadlineExceeded(status_of(408)));
  for (int code : {409, 413, 405, 406, 415, 422, 451}) {
    INFO(code);
    CHECK_FALSE(absl::IsFailedPrecondition(status_of(code)));
    CHECK_FALSE(absl::IsAborted(status_of(code)));
  }
  CHECK(status_of(400).message() == "GET /x: HTTP 400 some_exception: why");
  // A block (cluster.blocks.read_only, a global block that fails a whole _bulk) is lifted: a
  // 403 cluster_block_exception is transient, other 403s are not.
  net::HttpResponse blocked;
  blocked.status = 403;
  blocked.body =
      R"({"error":{"root_cause":[],"type":"cluster_block_exception","reason":"blocked by: )"
      R"([FORBIDDEN/6/cluster read-only (api)];"},"status":403})";
  const absl::Status block = StatusFromResponse(blocked, "POST /_bulk");
  CHECK(absl::IsUnavailable(block));
  CHECK(block.message() ==
        "POST /_bulk: HTTP 403 cluster_block_exception: blocked by: [FORBIDDEN/6/cluster "
        "read-only (api)];");
}

TEST_CASE("client detects version and compression", "[reindex][client]") {
  Target os;
  auto version = os.client->GetVersion();
  REQUIRE(version.ok());
  CHECK(version->LongName() == "OpenSearch 2.11.0");
  CHECK(*os.client->CompressionActive());

  Target disabled({}, {.compression = false});
  CHECK_FALSE(*disabled.client->CompressionActive());

  Target refuses({.http_compression = false});
  CHECK_FALSE(*refuses.client->CompressionActive());

  Target es5({.version = "5.6.16", .distribution = "elasticsearch"});
  CHECK_FALSE(*es5.client->CompressionActive());
  CHECK(es5.client->GetVersion()->RequiresDocumentType());
}

TEST_CASE("client creates indices and reports existing ones", "[reindex][client]") {
  Target t;
  CHECK_FALSE(*t.client->IndexExists("books"));
  auto created = t.client->CreateIndex(
      "books", Json(R"({"settings":{"index":{"number_of_shards":2}},"mappings":{"properties":)"
                    R"({"title":{"type":"text"}}}})"));
  REQUIRE(created.ok());
  CHECK(*created);
  CHECK(*t.client->IndexExists("books"));
  auto again = t.client->CreateIndex("books", {});
  REQUIRE(again.ok());
  CHECK_FALSE(*again);
  auto bad = t.client->CreateIndex("Bad_Name", {});
  CHECK(absl::IsInvalidArgument(bad.status()));
  CHECK(bad.status().message().find("invalid_index_name_exception") != std::string::npos);
}

TEST_CASE("client manages legacy, component and index templates", "[reindex][client]") {
  Target t;
  CHECK_FALSE(*t.client->TemplateExists(TemplateKind::kLegacy, "logs"));
  REQUIRE(t.client
              ->PutTemplate(TemplateKind::kLegacy, "logs",
                            Json(R"({"index_patterns":["logs-*"],"order":0,"settings":)"
                                 R"({"number_of_shards":3}})"))
              .ok());
  CHECK(*t.client->TemplateExists(TemplateKind::kLegacy, "logs"));

  auto missing_component =
      t.client->PutTemplate(TemplateKind::kIndex, "metrics",
                            Json(R"({"index_patterns":["metrics-*"],"composed_of":["base"]})"));
  CHECK(absl::IsInvalidArgument(missing_component));
  REQUIRE(t.client
              ->PutTemplate(TemplateKind::kComponent, "base",
                            Json(R"({"template":{"mappings":{"dynamic":"strict","properties":)"
                                 R"({"v":{"type":"long"}}}}})"))
              .ok());
  REQUIRE(t.client
              ->PutTemplate(TemplateKind::kIndex, "metrics",
                            Json(R"({"index_patterns":["metrics-*"],"composed_of":["base"]})"))
              .ok());
  CHECK(*t.client->TemplateExists(TemplateKind::kIndex, "metrics"));
  CHECK(*t.client->TemplateExists(TemplateKind::kComponent, "base"));

  // The composed strict mapping applies to an auto-created index.
  std::string body =
      "{\"index\":{\"_index\":\"metrics-1\",\"_id\":\"a\"}}\n{\"v\":1}\n"
      "{\"index\":{\"_index\":\"metrics-1\",\"_id\":\"b\"}}\n{\"w\":1}\n";
  auto bulk = t.client->Bulk(body, 2);
  REQUIRE(bulk.ok());
  REQUIRE(bulk->errors);
  CHECK(bulk->items[0].ok());
  CHECK(bulk->items[1].error_type == "strict_dynamic_mapping_exception");
}

TEST_CASE("client bulk returns per-item results and sends gzip", "[reindex][client]") {
  Target t;
  REQUIRE(t.server
              ->CreateIndex("strict", R"({"mappings":{"dynamic":"strict","properties":)"
                                      R"({"n":{"type":"long"},"s":{"type":"keyword"}}}})")
              .ok());
  std::string body =
      "{\"index\":{\"_index\":\"strict\",\"_id\":\"1\"}}\n{\"n\":1}\n"
      "{\"index\":{\"_index\":\"strict\",\"_id\":\"2\"}}\n{\"extra\":true}\n"
      "{\"index\":{\"_index\":\"strict\",\"_id\":\"3\"}}\n{\"n\":\"not a number\"}\n"
      "{\"index\":{\"_index\":\"strict\",\"_id\":\"4\"}}\n{not json}\n";
  auto response = t.client->Bulk(body, 4);
  REQUIRE(response.ok());
  REQUIRE(response->errors);
  REQUIRE(response->items.size() == 4);
  CHECK(response->items[0].status == 201);
  CHECK(response->items[1].status == 400);
  CHECK(response->items[1].error_type == "strict_dynamic_mapping_exception");
  CHECK(response->items[2].error_type == "mapper_parsing_exception");
  CHECK(response->items[3].error_type == "mapper_parsing_exception");
  CHECK(t.server->stats().gzip_requests >= 1);
  CHECK(t.server->DocumentCount("strict") == 1);

  auto malformed = t.client->Bulk("{\"index\":{\"_index\":\"x\"}}\n", 1);
  CHECK(absl::IsInvalidArgument(malformed.status()));
}

TEST_CASE("client handles documents with seq_no and primary_term", "[reindex][client]") {
  Target t;
  auto created = t.client->PutDocument("work", "item-1", R"({"state":"new"})",
                                       {.create_only = true, .refresh = "true"});
  REQUIRE(created.ok());
  CHECK(created->outcome == PutDocumentResult::Outcome::kCreated);
  auto duplicate =
      t.client->PutDocument("work", "item-1", R"({"state":"other"})", {.create_only = true});
  REQUIRE(duplicate.ok());
  CHECK(duplicate->outcome == PutDocumentResult::Outcome::kVersionConflict);

  auto got = t.client->GetDocument("work", "item-1");
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->source == R"({"state":"new"})");
  const DocumentVersion v = (*got)->version;

  auto updated = t.client->PutDocument("work", "item-1", R"({"state":"leased"})",
                                       {.if_seq_no = v.seq_no, .if_primary_term = v.primary_term});
  REQUIRE(updated.ok());
  CHECK(updated->outcome == PutDocumentResult::Outcome::kUpdated);
  CHECK(updated->version.seq_no > v.seq_no);
  CHECK(updated->version.version == v.version + 1);
  // The old seq_no no longer matches: a lost race is a conflict outcome.
  auto stale = t.client->PutDocument("work", "item-1", R"({"state":"stolen"})",
                                     {.if_seq_no = v.seq_no, .if_primary_term = v.primary_term});
  REQUIRE(stale.ok());
  CHECK(stale->outcome == PutDocumentResult::Outcome::kVersionConflict);

  auto absent = t.client->GetDocument("work", "nope");
  REQUIRE(absent.ok());
  CHECK_FALSE(absent->has_value());
  CHECK(absl::IsNotFound(t.client->GetDocument("no-index", "x").status()));
}

TEST_CASE("client refreshes, counts and searches", "[reindex][client]") {
  Target t;
  for (int i = 0; i < 12; ++i) {
    const std::string state = i % 3 == 0 ? "done" : "todo";
    REQUIRE(t.client
                ->PutDocument("work", "w" + std::to_string(i),
                              R"({"state":")" + state + R"(","n":)" + std::to_string(i) + "}")
                .ok());
  }
  REQUIRE(t.client->Refresh("work").ok());
  REQUIRE(t.client->Refresh().ok());
  CHECK(absl::IsNotFound(t.client->Refresh("missing")));
  CHECK(*t.client->Count("work") == 12);
  CHECK(*t.client->Count("work", Json(R"({"term":{"state":"done"}})")) == 4);

  auto result = t.client->Search(
      "work", Json(R"({"query":{"bool":{"filter":[{"term":{"state":"todo"}},)"
                   R"({"range":{"n":{"gte":2}}}],"must_not":[{"ids":{"values":["w5"]}}]}},)"
                   R"("size":3,"sort":[{"n":{"order":"desc"}}]})"));
  REQUIRE(result.ok());
  CHECK(result->total == 6);  // todo with n >= 2, without w5: 2, 4, 7, 8, 10, 11
  REQUIRE(result->hits.size() == 3);
  CHECK(result->hits[0].id == "w11");
  CHECK(result->hits[1].id == "w10");
  CHECK(result->hits[2].id == "w8");
  CHECK(result->hits[0].version.primary_term == 1);
  CHECK(result->hit_indices[0] == "work");
  CHECK(absl::IsInvalidArgument(
      t.client->Search("work", Json(R"({"query":{"fuzzy":{}}})")).status()));
}

TEST_CASE("client reads and writes cluster settings", "[reindex][client]") {
  Target t;
  REQUIRE(t.client
              ->PutClusterSettings(
                  Json(R"({"persistent":{"cluster":{"routing":{"allocation":{"enable":"all"}}}}})"))
              .ok());
  auto settings = t.client->GetClusterSettings(false);
  REQUIRE(settings.ok());
  CHECK(json::serialize(settings->at("persistent")) ==
        R"({"cluster.routing.allocation.enable":"all"})");
  auto with_defaults = t.client->GetClusterSettings(true);
  REQUIRE(with_defaults.ok());
  CHECK(with_defaults->at("defaults").as_object().contains("http.compression"));
}

TEST_CASE("bulk sink writes typed actions for Elasticsearch 6 targets", "[reindex][client]") {
  Target es6({.version = "6.8.23", .distribution = "elasticsearch"});
  OpenSearchBulkSink sink(*es6.client);
  auto docs = testutil::MakeDocs(3, "legacy");
  docs[1].type = "post";
  std::vector<const SourceDocument*> pointers;
  for (const auto& d : docs) pointers.push_back(&d);
  auto failures = sink.Write(pointers);
  REQUIRE(failures.ok());
  CHECK(failures->empty());
  CHECK(es6.server->DocumentCount("legacy") == 3);
  CHECK(sink.action_options().include_type);

  // OpenSearch 2 rejects `_type`; the sink leaves it out there.
  Target os2;
  OpenSearchBulkSink os_sink(*os2.client);
  auto os_failures = os_sink.Write(pointers);
  REQUIRE(os_failures.ok());
  CHECK(os_failures->empty());
  CHECK(os2.server->DocumentCount("legacy") == 3);
  std::string typed = "{\"index\":{\"_index\":\"legacy\",\"_type\":\"_doc\",\"_id\":\"z\"}}\n{}\n";
  CHECK(absl::IsInvalidArgument(os2.client->Bulk(typed, 1).status()));
}

TEST_CASE("a bulk body reused for the next batch carries that batch alone", "[reindex][client]") {
  // The sink keeps its bodies (laid out and gzipped) for the next batch: a smaller batch after a
  // larger one must send its own documents only, with gzip and without.
  for (const bool compression : {true, false}) {
    CAPTURE(compression);
    Target t({}, {.compression = compression});
    OpenSearchBulkSink sink(*t.client);
    const auto large = testutil::MakeDocs(300, "large", 2'000);
    const auto small = testutil::MakeDocs(2, "small");
    for (const auto* batch : {&large, &small, &large}) {
      std::vector<const SourceDocument*> pointers;
      for (const auto& d : *batch) pointers.push_back(&d);
      auto failures = sink.Write(pointers);
      REQUIRE(failures.ok());
      CHECK(failures->empty());
    }
    CHECK(t.server->DocumentCount("large") == 300);
    CHECK(t.server->DocumentCount("small") == 2);
    CHECK(t.server->stats().bulk_items == 602);
    CHECK(t.server->stats().gzip_requests == (compression ? 3 : 0));
    // The client's own call leaves the body with the caller, as sent.
    std::string body = "{\"index\":{\"_index\":\"kept\",\"_id\":\"1\"}}\n{}\n";
    const std::string sent = body;
    auto kept = t.client->BulkKeepingBody(body, /*gzipped=*/false, 1);
    REQUIRE(kept.ok());
    CHECK_FALSE(kept->errors);
    CHECK(body == sent);
  }
}

TEST_CASE("double in discard mode acknowledges bulk actions unread", "[reindex][client]") {
  Target t({.discard_bulk = true});
  std::string body;
  for (int i = 0; i < 3; ++i) body += "{\"index\":{\"_index\":\"d\",\"_id\":\"1\"}}\n{}\n";
  auto plain = t.client->Bulk(body, 3);
  REQUIRE(plain.ok());
  CHECK_FALSE(plain->errors);
  CHECK(t.server->stats().bulk_items == 3);
  CHECK(t.server->DocumentCount("d") == 0);
  net::HttpRequest request;
  request.method = "POST";
  request.target = "/_bulk";
  request.body = body;
  auto response = t.transport->Send(request);
  REQUIRE(response.ok());
  auto parsed = json::parse(response->body).as_object();
  CHECK(parsed.at("items").as_array().size() == 3);
}

// Answers bulks as a target that takes no `filter_path` does (or as one that does, with
// `refuse_filter` off), recording each request's target.
class BulkTargetTransport final : public net::IHttpTransport {
 public:
  explicit BulkTargetTransport(bool refuse_filter) : refuse_filter_(refuse_filter) {}
  absl::StatusOr<net::HttpResponse> Send(const net::HttpRequest& request) override {
    net::HttpResponse response;
    if (request.target.find("_bulk") == std::string::npos) {  // the client's version check
      response.status = 200;
      response.body = R"({"version":{"distribution":"opensearch","number":"2.19.0"}})";
      return response;
    }
    targets.push_back(request.target);
    std::string body = request.body;
    for (std::string_view piece : request.body_pieces) body += piece;
    for (const auto& [name, value] : request.headers) {
      if (name == "Content-Encoding" && value == "gzip") body = net::GzipDecompress(body).value();
    }
    bodies.push_back(std::move(body));
    if (refuse_whole_) {
      response.status = 400;
      response.body =
          R"({"error":{"type":"illegal_argument_exception","reason":"The bulk request must be )"
          R"(terminated by a newline [\n]"},"status":400})";
      return response;
    }
    if (refuse_filter_ && request.target.find("filter_path") != std::string::npos) {
      response.status = 400;
      response.body =
          R"({"error":{"type":"illegal_argument_exception","reason":"request [/_bulk] contains )"
          R"(unrecognized parameter: [filter_path]"},"status":400})";
      return response;
    }
    response.status = 200;
    response.body =
        R"({"errors":true,"items":[{"index":{"status":201}},{"index":{"status":400,"error":)"
        R"({"type":"mapper_parsing_exception","reason":"bad n"}}}]})";
    return response;
  }
  std::string endpoint() const override { return "http://bulk-target:9200"; }
  std::vector<std::string> targets;
  std::vector<std::string> bodies;  // each bulk's body, its pieces joined
  bool refuse_whole_ = false;       // every bulk refused for a reason of its own

 private:
  const bool refuse_filter_;
};

TEST_CASE("bulks ask only for the items' status and error, unless the target refuses that",
          "[reindex][client]") {
  const std::string body =
      "{\"index\":{\"_index\":\"i\",\"_id\":\"1\"}}\n{}\n"
      "{\"index\":{\"_index\":\"i\",\"_id\":\"2\"}}\n{\"n\":\"x\"}\n";
  auto check = [](const absl::StatusOr<BulkResponse>& response) {
    REQUIRE(response.ok());
    CHECK(response->errors);
    REQUIRE(response->items.size() == 2);
    CHECK(response->items[0].status == 201);
    CHECK(response->items[1].status == 400);
    CHECK(response->items[1].error_type == "mapper_parsing_exception");
    CHECK(response->items[1].error_reason == "bad n");
  };
  const std::string filtered = "/_bulk?filter_path=errors,items.*.status,items.*.error";
  SECTION("a target that takes the filter") {
    BulkTargetTransport transport(false);
    OpenSearchClient client(transport);
    check(client.Bulk(body, 2));
    const std::string_view pieces[] = {std::string_view(body).substr(0, 40),
                                       std::string_view(body).substr(40)};
    check(client.BulkPieces(pieces, 2));
    CHECK(transport.targets == std::vector<std::string>{filtered, filtered});
  }
  SECTION("a target that refuses it: the bulk is sent again without, and so is every later one") {
    BulkTargetTransport transport(true);
    OpenSearchClient client(transport);
    check(client.Bulk(body, 2));
    const std::string_view pieces[] = {body};
    check(client.BulkPieces(pieces, 2));
    check(client.Bulk(body, 2));
    CHECK(transport.targets == std::vector<std::string>{filtered, "/_bulk", "/_bulk", "/_bulk"});
    // Each sent again whole: the body and its pieces are the caller's until it returns.
    for (const std::string& sent : transport.bodies) CHECK(sent == body);
  }
  SECTION("a bulk refused for another reason is not sent again") {
    BulkTargetTransport transport(false);
    transport.refuse_whole_ = true;
    OpenSearchClient client(transport);
    auto refused = client.Bulk(body, 2);
    CHECK(absl::IsInvalidArgument(refused.status()));
    CHECK(transport.targets == std::vector<std::string>{filtered});
  }
}

// A transport failure no retry can fix (a TLS certificate refused) keeps that mark through the
// client's context, so that the reindexer fails the batch at once instead of retrying it for as
// long as the lease lasts.
class RefusingTransport final : public net::IHttpTransport {
 public:
  absl::StatusOr<net::HttpResponse> Send(const net::HttpRequest&) override {
    return rfs::core::NotRetryable(absl::UnavailableError("tlsv13 alert certificate required"));
  }
  std::string endpoint() const override { return "https://refusing:9200"; }
};

TEST_CASE("the client keeps a transport failure's no-retry mark", "[reindex][opensearch]") {
  RefusingTransport transport;
  OpenSearchClient client(transport);
  auto response = client.Send({.method = "GET", .target = "/"});
  REQUIRE_FALSE(response.ok());
  CHECK(absl::IsUnavailable(response.status()));
  CHECK_FALSE(rfs::core::IsRetryable(response.status()));
  CHECK(response.status().message().find("GET / on https://refusing:9200") != std::string::npos);
}

}  // namespace
}  // namespace rfs::opensearch
