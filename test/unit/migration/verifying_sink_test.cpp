// VerifyingSink (RfsWorker --verify-all) against a scripted target: each document of a batch
// fetched by `_mget` with its routing and compared as a JSON value; documents missing, different
// or in an index that keeps no whole `_source` are item failures the reindexer records (never
// retried), a newer `_version` with --preserve-version is the bulk sink's "already newer", and a
// target that cannot answer for a document fails the batch (asked again).
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/clock.hpp"
#include "rfs/migration/rfs_worker.hpp"
#include "rfs/net/http_transport.hpp"
#include "rfs/opensearch/client.hpp"
#include "rfs/reindex/document_reindexer.hpp"
#include "rfs/reindex/failed_document_sink.hpp"

#include "migration/verifying_sink_internal.hpp"

namespace {

namespace json = boost::json;
using rfs::migration::internal::VerifyingSink;
using rfs::migration::internal::VerifyingSinkOptions;
using rfs::migration::internal::VerifyTally;
using rfs::reindex::ItemFailure;
using rfs::reindex::SourceDocument;

// A target of a few indices: "logs" (plain), "nosource" (`_source` disabled), "trimmed"
// (`_source.excludes`); documents by (index, id, routing). Records every request.
class TargetDouble final : public rfs::net::IHttpTransport {
 public:
  struct Stored {
    std::string source;
    int64_t version = 1;
  };
  std::map<std::tuple<std::string, std::string, std::string>, Stored> docs;
  // _mget answers this error for every document of the index (e.g. a shard not answering).
  std::map<std::string, std::string> item_errors;
  // The _mget of this number (1 for the first) answers an error for every document.
  size_t failing_mget = 0;
  std::vector<std::string> mget_bodies;

  absl::StatusOr<rfs::net::HttpResponse> Send(const rfs::net::HttpRequest& request) override {
    std::lock_guard lock(mu_);
    rfs::net::HttpResponse response;
    response.status = 200;
    if (request.target == "/") {
      response.body = R"({"version":{"number":"2.19.0","distribution":"opensearch"}})";
    } else if (request.target.starts_with("/_cluster/settings")) {
      response.body = "{}";
    } else if (request.target.starts_with("/_data_stream/")) {
      response.status = 404;
      response.body = "{}";
    } else if (request.target == "/logs/_mapping") {
      response.body = R"({"logs":{"mappings":{"properties":{"n":{"type":"long"}}}}})";
    } else if (request.target == "/nosource/_mapping") {
      response.body = R"({"nosource":{"mappings":{"_source":{"enabled":false}}}})";
    } else if (request.target == "/trimmed/_mapping") {
      response.body = R"({"trimmed":{"mappings":{"_source":{"excludes":["secret"]}}}})";
    } else if (request.target.ends_with("/_mapping")) {
      response.status = 404;
      response.body = R"({"error":{"type":"index_not_found_exception"},"status":404})";
    } else if (request.target == "/_mget") {
      mget_bodies.push_back(request.body);
      json::array answers;
      const json::value asked = json::parse(request.body);
      for (const json::value& wanted : asked.at("docs").as_array()) {
        const std::string index(wanted.at("_index").as_string());
        const std::string id(wanted.at("_id").as_string());
        const json::value* routing = wanted.as_object().if_contains("routing");
        const std::string route = routing ? std::string(routing->as_string()) : "";
        auto error = item_errors.find(index);
        if (error != item_errors.end() || mget_bodies.size() == failing_mget) {
          const std::string type =
              error != item_errors.end() ? error->second : "no_shard_available_action_exception";
          answers.push_back(
              json::object{{"_index", index},
                           {"_id", id},
                           {"error", json::object{{"type", type}, {"reason", "as scripted"}}}});
          continue;
        }
        auto it = docs.find({index, id, route});
        if (it == docs.end()) {
          answers.push_back(json::object{{"_index", index}, {"_id", id}, {"found", false}});
        } else {
          answers.push_back(json::object{{"_index", index},
                                         {"_id", id},
                                         {"_version", it->second.version},
                                         {"found", true},
                                         {"_source", json::parse(it->second.source)}});
        }
      }
      response.body = json::serialize(json::object{{"docs", std::move(answers)}});
    } else {
      response.status = 400;
      response.body = "{}";
    }
    return response;
  }
  std::string endpoint() const override { return "http://target.test"; }

 private:
  std::mutex mu_;
};

SourceDocument Doc(std::string index, std::string id, std::string source,
                   std::optional<std::string> routing = std::nullopt,
                   std::optional<int64_t> version = std::nullopt) {
  SourceDocument doc;
  doc.index = std::move(index);
  doc.id = std::move(id);
  doc.source = std::move(source);
  doc.routing = std::move(routing);
  doc.version = version;
  return doc;
}

std::vector<ItemFailure> Write(VerifyingSink& sink, const std::vector<SourceDocument>& docs) {
  std::vector<const SourceDocument*> pointers;
  for (const auto& doc : docs) pointers.push_back(&doc);
  auto failures = sink.Write(pointers);
  REQUIRE(failures.ok());
  return *failures;
}

}  // namespace

TEST_CASE("the verifying sink tells equal, missing and different documents apart", "[verify]") {
  TargetDouble target;
  target.docs[{"logs", "a", ""}] = {R"({"n":1,"o":{"x":[1,2.5,"s"]}})"};
  target.docs[{"logs", "b", "r7"}] = {R"({"n":2})"};
  target.docs[{"logs", "c", ""}] = {R"({"n":3,"changed":true})"};
  rfs::opensearch::OpenSearchClient client(target);
  VerifyTally tally;
  VerifyingSink sink(client, tally, VerifyingSinkOptions{.round = 3});
  // Key order and spacing are not differences; routing finds "b" where it lives.
  const auto failures =
      Write(sink, {Doc("logs", "a", R"({ "o":{"x":[1,2.5,"s"]}, "n":1 })"),
                   Doc("logs", "b", R"({"n":2})", "r7"), Doc("logs", "c", R"({"n":3})"),
                   Doc("logs", "d", R"({"n":4})"), Doc("logs", "b", R"({"n":2})")});
  REQUIRE(failures.size() == 3);
  CHECK(failures[0].position == 2);
  CHECK(failures[0].status == 409);
  CHECK(failures[0].type == "verify_different");
  CHECK(failures[0].reason == "verify round 3: _source differs on the target");
  CHECK(failures[1].position == 3);
  CHECK(failures[1].status == 404);
  CHECK(failures[1].type == "verify_missing");
  CHECK(failures[1].reason == "verify round 3: not on the target");
  // Without its routing, "b" is not where the target looks.
  CHECK(failures[2].position == 4);
  CHECK(failures[2].type == "verify_missing");
  // Neither status is retried: the reindexer records them at once.
  for (const auto& f : failures)
    CHECK_FALSE(rfs::reindex::IsRetryableItemFailure(f.status, f.type));
  REQUIRE(target.mget_bodies.size() == 1);
  CHECK(target.mget_bodies[0].find(R"("routing":"r7")") != std::string::npos);
  VerifyTally::Counts& logs = tally.For("logs");
  CHECK(logs.equal == 2);
  CHECK(logs.missing == 2);
  CHECK(logs.different == 1);
}

TEST_CASE("the verifying sink says why an index cannot be compared, never equal", "[verify]") {
  TargetDouble target;
  target.docs[{"nosource", "a", ""}] = {R"({})"};
  rfs::opensearch::OpenSearchClient client(target);
  VerifyTally tally;
  VerifyingSink sink(client, tally, VerifyingSinkOptions{.round = 1});
  const auto failures =
      Write(sink, {Doc("nosource", "a", R"({"n":1})"), Doc("trimmed", "b", R"({"n":2})"),
                   Doc("gone", "c", R"({"n":3})")});
  REQUIRE(failures.size() == 3);
  CHECK(failures[0].type == "verify_not_comparable");
  CHECK(failures[0].status == 422);
  CHECK(failures[0].reason.find("index nosource on the target keeps no _source "
                                "(_source.enabled false)") != std::string::npos);
  CHECK(failures[1].type == "verify_not_comparable");
  CHECK(failures[1].reason.find("only part of each _source (_source.excludes [\"secret\"])") !=
        std::string::npos);
  CHECK(failures[2].type == "verify_missing");
  CHECK(failures[2].reason == "verify round 1: not on the target (index gone is not there)");
  CHECK_FALSE(rfs::reindex::IsRetryableItemFailure(422, "verify_not_comparable"));
  // No document of those indices was fetched.
  CHECK(target.mget_bodies.empty());
}

TEST_CASE("the verifying sink meets an index deleted mid-round and a target that cannot answer",
          "[verify]") {
  TargetDouble target;
  target.docs[{"logs", "a", ""}] = {R"({"n":1})"};
  rfs::opensearch::OpenSearchClient client(target);
  VerifyTally tally;
  VerifyingSink sink(client, tally, VerifyingSinkOptions{.round = 2});
  CHECK(Write(sink, {Doc("logs", "a", R"({"n":1})")}).empty());
  // Deleted after its mapping was looked at: each document is missing.
  target.item_errors["logs"] = "index_not_found_exception";
  auto failures = Write(sink, {Doc("logs", "a", R"({"n":1})")});
  REQUIRE(failures.size() == 1);
  CHECK(failures[0].type == "verify_missing");
  // Any other error of a document is the target's, not the document's: the batch is asked again.
  target.item_errors["logs"] = "no_shard_available_action_exception";
  const SourceDocument doc = Doc("logs", "a", R"({"n":1})");
  const SourceDocument* pointer = &doc;
  auto failed = sink.Write(std::span<const SourceDocument* const>(&pointer, 1));
  CHECK(absl::IsUnavailable(failed.status()));
}

TEST_CASE("the verifying sink fetches a batch a part at a time and counts it once", "[verify]") {
  TargetDouble target;
  std::vector<SourceDocument> docs;
  for (int i = 0; i < 10; ++i) {
    const std::string id = "d" + std::to_string(i);
    const std::string source =
        R"({"n":)" + std::to_string(i) + R"(,"pad":")" + std::string(200, 'x') + R"("})";
    if (i != 4) target.docs[{"logs", id, ""}] = {i == 7 ? R"({"n":-1})" : source, 5};
    docs.push_back(
        Doc("logs", id, source, std::nullopt, i == 7 ? std::optional<int64_t>(3) : std::nullopt));
  }
  rfs::opensearch::OpenSearchClient client(target);
  VerifyTally tally;
  // About 290 bytes a document: three documents (at least 600 bytes) per _mget.
  VerifyingSink sink(
      client, tally,
      VerifyingSinkOptions{.round = 1, .preserve_version = true, .compare_bytes = 600});
  std::vector<const SourceDocument*> pointers;
  for (const auto& doc : docs) pointers.push_back(&doc);
  // A target that fails the second part: the batch fails, and nothing of it is counted.
  target.failing_mget = 2;
  auto failed = sink.Write(pointers);
  CHECK(absl::IsUnavailable(failed.status()));
  CHECK(target.mget_bodies.size() == 2);
  CHECK(tally.For("logs").equal == 0);
  CHECK(tally.For("logs").already_newer == 0);
  // Written again: four parts of at most three documents, every document judged once.
  target.failing_mget = 0;
  target.mget_bodies.clear();
  auto failures = sink.Write(pointers);
  REQUIRE(failures.ok());
  REQUIRE(target.mget_bodies.size() == 4);
  for (const std::string& body : target.mget_bodies) {
    const size_t asked = json::parse(body).at("docs").as_array().size();
    CHECK(asked >= 1);
    CHECK(asked <= 3);
  }
  REQUIRE(failures->size() == 2);
  CHECK((*failures)[0].position == 4);
  CHECK((*failures)[0].type == "verify_missing");
  CHECK((*failures)[1].position == 7);
  CHECK((*failures)[1].type == "version_conflict_engine_exception");
  CHECK(tally.For("logs").equal == 8);
  CHECK(tally.For("logs").missing == 1);
  CHECK(tally.For("logs").already_newer == 1);
}

TEST_CASE("with --preserve-version, a newer document on the target is already newer", "[verify]") {
  TargetDouble target;
  target.docs[{"logs", "a", ""}] = {R"({"n":"theirs"})", 1000};
  target.docs[{"logs", "b", ""}] = {R"({"n":"older"})", 2};
  rfs::opensearch::OpenSearchClient client(target);
  VerifyTally tally;
  VerifyingSink sink(client, tally, VerifyingSinkOptions{.round = 1, .preserve_version = true});
  const std::vector<SourceDocument> docs = {Doc("logs", "a", R"({"n":1})", std::nullopt, 3),
                                            Doc("logs", "b", R"({"n":2})", std::nullopt, 3)};
  // Through the reindexer: "a" counted as already newer, "b" recorded as different.
  class Records final : public rfs::reindex::IFailedDocumentSink {
   public:
    absl::Status Record(std::span<const rfs::reindex::FailedDocument> docs) override {
      for (const auto& doc : docs) recorded.push_back(doc);
      return absl::OkStatus();
    }
    std::vector<rfs::reindex::FailedDocument> recorded;
  } records;
  rfs::reindex::DocumentReindexer reindexer(sink, &records, rfs::core::SystemClock::Instance(), {});
  rfs::reindex::VectorDocumentStream stream(docs);
  auto summary = reindexer.Reindex(stream);
  REQUIRE(summary.ok());
  CHECK(summary->docs_already_newer == 1);
  CHECK(summary->docs_failed == 1);
  REQUIRE(records.recorded.size() == 1);
  CHECK(records.recorded[0].id == "b");
  CHECK(records.recorded[0].error_type == "verify_different");
  // The action as the migration sends it: what a redrive replays.
  CHECK(records.recorded[0].action ==
        R"({"index":{"_index":"logs","_id":"b","version":3,"version_type":"external"}})");
  CHECK(tally.For("logs").already_newer == 1);
}

TEST_CASE("a round's report names its records only where there are some", "[verify]") {
  rfs::migration::VerifyReport report;
  report.round = 2;
  rfs::migration::IndexVerification extra;
  extra.index = "logs";
  extra.expected = extra.equal = extra.migrated = 3;
  extra.extra = 1;
  report.indices.push_back(extra);
  CHECK_FALSE(report.ok());
  // No folder made (OpenRoundSink makes it with its first record): nothing to redrive.
  CHECK(report.ToText().find("none was recorded") != std::string::npos);
  CHECK(report.ToText().find("--redrive-failed-documents") == std::string::npos);
  report.records = "failed/verify-round-2";
  CHECK(report.ToText().find("their records (for --redrive-failed-documents): "
                             "failed/verify-round-2\n") != std::string::npos);
}
