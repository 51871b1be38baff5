#include "rfs/opensearch/snapshots.hpp"

#include <map>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/net/beast_http_transport.hpp"

#include "support/double_connection.hpp"
#include "support/opensearch_double.hpp"

namespace rfs::opensearch {
using namespace rfs::net;  // NOLINT: the layers this test drives
namespace {

namespace json = boost::json;
using rfs::testing::Fault;
using rfs::testing::OpenSearchDouble;
using rfs::testing::OpenSearchDoubleOptions;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A source cluster (the double) with two indices holding documents, a transport to it and a
// creator using the default repository name.
struct Source : rfs::test::DoubleConnection {
  explicit Source(OpenSearchDoubleOptions options = {}) : DoubleConnection(std::move(options)) {
    client = std::make_unique<OpenSearchClient>(*transport);
    creator = std::make_unique<SnapshotCreator>(*client);
    REQUIRE(server->CreateIndex("logs-2024", "{}").ok());
    REQUIRE(server->CreateIndex("logs-2025", "{}").ok());
    REQUIRE(server->CreateIndex("orders", "{}").ok());
    for (int i = 0; i < 20; ++i) {
      Request(
          "PUT", "/orders/_doc/" + std::to_string(i),
          R"({"item":"a fairly long description of order number )" + std::to_string(i) + R"("})");
    }
  }

  net::HttpResponse Request(const std::string& method, const std::string& target,
                            const std::string& body = "") {
    net::HttpRequest request;
    request.method = method;
    request.target = target;
    request.body = body;
    if (!body.empty()) request.headers.emplace_back("Content-Type", "application/json");
    auto response = transport->Send(request);
    REQUIRE(response.ok());
    return *response;
  }

  json::object Json(const net::HttpResponse& response) {
    return json::parse(response.body).as_object();
  }

  void RegisterFs() {
    RepositoryConfig config{.storage = FileSystemRepositoryConfig{"/mnt/snapshots"}};
    REQUIRE(creator->RegisterRepository(config).ok());
  }

  std::unique_ptr<OpenSearchClient> client;
  std::unique_ptr<SnapshotCreator> creator;
};

OpenSearchDoubleOptions Polls(int polls, std::string final_state = "SUCCESS") {
  OpenSearchDoubleOptions options;
  options.snapshot_polls_to_complete = polls;
  options.snapshot_final_state = std::move(final_state);
  return options;
}

// Answers every request with one canned response (error mapping without a server).
class CannedTransport final : public net::IHttpTransport {
 public:
  explicit CannedTransport(net::HttpResponse response) : response_(std::move(response)) {}
  absl::StatusOr<net::HttpResponse> Send(const net::HttpRequest& request) override {
    last_ = request;
    return response_;
  }
  std::string endpoint() const override { return "http://canned:9200"; }
  const net::HttpRequest& last() const { return last_; }

 private:
  net::HttpResponse response_;
  net::HttpRequest last_;
};

// Answers by request target (404 for others).
class ScriptedTransport final : public net::IHttpTransport {
 public:
  std::map<std::string, std::string> bodies;
  absl::StatusOr<net::HttpResponse> Send(const net::HttpRequest& request) override {
    auto it = bodies.find(request.target);
    if (it == bodies.end()) return net::HttpResponse{404, {}, "{}"};
    return net::HttpResponse{200, {}, it->second};
  }
  std::string endpoint() const override { return "http://scripted:9200"; }
};

TEST_CASE("Progress and snapshot info in Elasticsearch 6 and 7 shapes",
          "[reindex][snapshot_creator]") {
  ScriptedTransport transport;
  // Elasticsearch 6.8: flat stats counters.
  transport.bodies["/_snapshot/repo/s6/_status"] =
      R"({"snapshots":[{"snapshot":"s6","state":"STARTED","shards_stats":{"done":1,"failed":0,)"
      R"("total":4},"stats":{"number_of_files":40,"processed_files":10,"total_size_in_bytes":4000,)"
      R"("processed_size_in_bytes":1000,"time_in_millis":1500}}]})";
  // Elasticsearch 7.x multi-repository form.
  transport.bodies["/_snapshot/repo/s7"] =
      R"({"responses":[{"repository":"repo","snapshots":[{"snapshot":"s7","uuid":"u7",)"
      R"("state":"PARTIAL","indices":["a","b"],"include_global_state":true,)"
      R"("shards":{"total":2,"failed":1,"successful":1},)"
      R"("failures":[{"index":"b","shard_id":0,"reason":"disk full"}]}]}]})";
  OpenSearchClient client(transport);
  SnapshotCreator creator(client, "repo");
  auto progress = creator.GetProgress("s6");
  REQUIRE(progress.ok());
  CHECK(progress->state == SnapshotState::kInProgress);
  CHECK(progress->shards_done == 1);
  CHECK(progress->shards_total == 4);
  CHECK(progress->files_total == 40);
  CHECK(progress->files_processed == 10);
  CHECK(progress->bytes_total == 4000);
  CHECK(progress->bytes_processed == 1000);
  CHECK(progress->fraction() == Approx(0.25));
  CHECK(progress->elapsed == milliseconds(1500));

  auto info = creator.GetSnapshot("s7");
  REQUIRE(info.ok());
  CHECK(info->state == SnapshotState::kPartial);
  CHECK(info->uuid == "u7");
  CHECK(info->indices == std::vector<std::string>{"a", "b"});
  REQUIRE(info->failures.size() == 1);
  CHECK(info->failures[0].index == "b");
  CHECK(info->failures[0].shard_id == 0);
  CHECK(info->failures[0].reason == "disk full");

  transport.bodies["/_snapshot/repo/junk/_status"] = R"({"snapshots":[]})";
  CHECK(absl::IsDataLoss(creator.GetProgress("junk").status()));
  transport.bodies["/_snapshot/repo/other"] =
      R"({"snapshots":[{"snapshot":"else","state":"SUCCESS"}]})";
  CHECK(absl::IsNotFound(creator.GetSnapshot("other").status()));
}

TEST_CASE("ParseS3Uri splits bucket and base path", "[reindex][snapshot_creator]") {
  auto plain = ParseS3Uri("s3://my-bucket");
  REQUIRE(plain.ok());
  CHECK(plain->bucket == "my-bucket");
  CHECK(plain->base_path.empty());
  auto nested = ParseS3Uri("s3://my.bucket-1/migrations/2024/");
  REQUIRE(nested.ok());
  CHECK(nested->bucket == "my.bucket-1");
  CHECK(nested->base_path == "migrations/2024");
  for (const char* bad : {"my-bucket/path", "https://my-bucket/x", "s3://", "s3:///path",
                          "s3://My_Bucket/x", "s3://ab"}) {
    INFO(bad);
    auto parsed = ParseS3Uri(bad);
    CHECK(absl::IsInvalidArgument(parsed.status()));
    CHECK(parsed.status().message().find(bad) != std::string_view::npos);
  }
}

TEST_CASE("RepositoryBody builds fs, s3 and gcs settings", "[reindex][snapshot_creator]") {
  RepositoryConfig fs{.storage = FileSystemRepositoryConfig{"/mnt/snap"},
                      .max_snapshot_rate_mb_per_node = 40,
                      .compress = true};
  auto body = RepositoryBody(fs);
  REQUIRE(body.ok());
  CHECK(
      json::serialize(*body) ==
      R"({"type":"fs","settings":{"location":"/mnt/snap","max_snapshot_bytes_per_sec":"40mb","compress":true}})");

  RepositoryConfig s3{.storage = S3RepositoryConfig{.uri = "s3://bucket-a/base/path",
                                                    .region = "eu-west-1",
                                                    .endpoint = "http://minio:9000",
                                                    .role_arn = "arn:aws:iam::1:role/snap"}};
  body = RepositoryBody(s3);
  REQUIRE(body.ok());
  const json::object& settings = body->at("settings").as_object();
  CHECK(body->at("type") == "s3");
  CHECK(settings.at("bucket") == "bucket-a");
  CHECK(settings.at("base_path") == "base/path");
  CHECK(settings.at("region") == "eu-west-1");
  CHECK(settings.at("endpoint") == "http://minio:9000");
  CHECK(settings.at("role_arn") == "arn:aws:iam::1:role/snap");
  CHECK_FALSE(settings.contains("max_snapshot_bytes_per_sec"));

  // As the Java tool: bucket, base_path, the throttle and compress; the plugin's client
  // settings on the cluster hold the endpoint and credentials.
  body = RepositoryBody({.storage = GcsRepositoryConfig{"bucket-g", "base/path"},
                         .max_snapshot_rate_mb_per_node = 25});
  REQUIRE(body.ok());
  CHECK(
      json::serialize(*body) ==
      R"({"type":"gcs","settings":{"bucket":"bucket-g","base_path":"base/path","max_snapshot_bytes_per_sec":"25mb","compress":false}})");
  body = RepositoryBody({.storage = GcsRepositoryConfig{"bucket-g", ""}});
  REQUIRE(body.ok());
  CHECK_FALSE(body->at("settings").as_object().contains("base_path"));

  CHECK(absl::IsInvalidArgument(
      RepositoryBody({.storage = FileSystemRepositoryConfig{""}}).status()));
  CHECK(absl::IsInvalidArgument(RepositoryBody({.storage = GcsRepositoryConfig{}}).status()));
  CHECK(absl::IsInvalidArgument(
      RepositoryBody({.storage = S3RepositoryConfig{.uri = "s3://bucket-a"}}).status()));
  CHECK(absl::IsInvalidArgument(RepositoryBody({.storage = FileSystemRepositoryConfig{"/x"},
                                                .max_snapshot_rate_mb_per_node = 0})
                                    .status()));
}

TEST_CASE("RegisterRepository registers fs and s3 repositories on the source",
          "[reindex][snapshot_creator]") {
  Source source;
  RepositoryConfig fs{.storage = FileSystemRepositoryConfig{"/mnt/snapshots"},
                      .max_snapshot_rate_mb_per_node = 25,
                      .compress = true};
  REQUIRE(source.creator->RegisterRepository(fs).ok());
  auto stored = source.Json(source.Request("GET", "/_snapshot/migration_assistant_repo"));
  const json::object& repo = stored.at("migration_assistant_repo").as_object();
  CHECK(repo.at("type") == "fs");
  CHECK(repo.at("settings").at("location") == "/mnt/snapshots");
  CHECK(repo.at("settings").at("max_snapshot_bytes_per_sec") == "25mb");
  CHECK(repo.at("settings").at("compress") == "true");

  SnapshotCreator named(*source.client, "s3_repo");
  RepositoryConfig s3{.storage = S3RepositoryConfig{.uri = "s3://migration-bucket/rfs",
                                                    .region = "us-east-2",
                                                    .role_arn = "arn:aws:iam::1:role/r"}};
  REQUIRE(named.RegisterRepository(s3).ok());
  stored = source.Json(source.Request("GET", "/_snapshot/s3_repo"));
  const json::object& settings = stored.at("s3_repo").at("settings").as_object();
  CHECK(stored.at("s3_repo").at("type") == "s3");
  CHECK(settings.at("bucket") == "migration-bucket");
  CHECK(settings.at("base_path") == "rfs");
  CHECK(settings.at("region") == "us-east-2");
  CHECK(settings.at("role_arn") == "arn:aws:iam::1:role/r");
  CHECK_FALSE(settings.contains("endpoint"));
}

TEST_CASE("The double rejects bad repository settings as OpenSearch does",
          "[reindex][snapshot_creator][double]") {
  Source source;
  auto response = source.Request("PUT", "/_snapshot/r", R"({"type":"fs","settings":{}})");
  CHECK(response.status == 500);
  auto error = source.Json(response).at("error").as_object();
  CHECK(error.at("type") == "repository_exception");
  CHECK(error.at("reason") == "[r] failed to create repository");
  CHECK(error.at("caused_by").at("reason") == "[r] missing location");

  response = source.Request("PUT", "/_snapshot/r", R"({"type":"s3","settings":{"region":"x"}})");
  CHECK(response.status == 500);
  CHECK(source.Json(response).at("error").at("caused_by").at("reason") ==
        "[r] No bucket defined for s3 repository");

  response = source.Request("PUT", "/_snapshot/r", R"({"type":"hdfs2","settings":{}})");
  CHECK(response.status == 500);
  CHECK(source.Json(response).at("error").at("reason") ==
        "[r] repository type [hdfs2] does not exist");

  response = source.Request("PUT", "/_snapshot/r", R"({"settings":{"location":"/x"}})");
  CHECK(response.status == 400);
  CHECK(source.Json(response).at("error").at("type") == "action_request_validation_exception");

  response = source.Request(
      "PUT", "/_snapshot/r",
      R"({"type":"fs","settings":{"location":"/x","max_snapshot_bytes_per_sec":"fast"}})");
  CHECK(response.status == 500);

  response = source.Request("PUT", "/_snapshot/r?verify=false",
                            R"({"type":"fs","settings":{"location":"/x"}})");
  CHECK(response.status == 200);
  response = source.Request("PUT", "/_snapshot/r?verify=maybe",
                            R"({"type":"fs","settings":{"location":"/x"}})");
  CHECK(response.status == 400);

  response = source.Request("GET", "/_snapshot/nope");
  CHECK(response.status == 404);
  CHECK(source.Json(response).at("error").at("type") == "repository_missing_exception");
  CHECK(source.Json(response).at("error").at("reason") == "[nope] missing");
}

TEST_CASE("The double lists, reports and deletes snapshots",
          "[reindex][snapshot_creator][double]") {
  Source source(Polls(2));
  source.server->AllowProtocolErrors();  // an unknown parameter, provoked on purpose
  source.RegisterFs();
  auto response =
      source.Request("POST", "/_snapshot/migration_assistant_repo/one?wait_for_completion=true",
                     R"({"indices":["orders"],"metadata":{"by":"test"}})");
  REQUIRE(response.status == 200);
  auto created = source.Json(response).at("snapshot").as_object();
  CHECK(created.at("state") == "SUCCESS");
  CHECK(created.at("metadata").at("by") == "test");
  CHECK(created.at("shards").at("successful") == 1);
  response =
      source.Request("PUT", "/_snapshot/migration_assistant_repo/two", R"({"indices":"logs-*"})");
  CHECK(source.Json(response).at("accepted") == true);

  // Running snapshots: the repository's `_status` lists only them.
  response = source.Request("GET", "/_snapshot/migration_assistant_repo/_status");
  auto running = source.Json(response).at("snapshots").as_array();
  REQUIRE(running.size() == 1);
  CHECK(running[0].at("snapshot") == "two");
  CHECK(running[0].at("state") == "STARTED");

  response = source.Request("GET", "/_snapshot/migration_assistant_repo/_all");
  auto all = source.Json(response).at("snapshots").as_array();
  REQUIRE(all.size() == 2);
  CHECK(all[0].at("snapshot") == "one");
  CHECK(all[1].at("snapshot") == "two");
  CHECK(all[1].at("state") == "SUCCESS");  // second observation of "two"
  CHECK(all[1].at("indices").as_array().size() == 2);

  response = source.Request("DELETE", "/_snapshot/migration_assistant_repo/one");
  CHECK(response.status == 200);
  response = source.Request("GET", "/_snapshot/migration_assistant_repo/one");
  CHECK(response.status == 404);
  CHECK(source.Json(response).at("error").at("reason") ==
        "[migration_assistant_repo:one] is missing");
  response =
      source.Request("GET", "/_snapshot/migration_assistant_repo/one?ignore_unavailable=true");
  CHECK(source.Json(response).at("snapshots").as_array().empty());
  response = source.Request("DELETE", "/_snapshot/migration_assistant_repo/one");
  CHECK(response.status == 404);

  response = source.Request("PUT", "/_snapshot/migration_assistant_repo/three", R"({"indices":7})");
  CHECK(response.status == 400);
  CHECK(source.Json(response).at("error").at("reason") ==
        "malformed indices section, should be an array of strings");
  response = source.Request("GET", "/_snapshot/migration_assistant_repo/two?bogus=1");
  CHECK(response.status == 400);
  response = source.Request("DELETE", "/_snapshot/migration_assistant_repo");
  CHECK(response.status == 200);
  response = source.Request("GET", "/_snapshot/migration_assistant_repo/two");
  CHECK(response.status == 404);
  CHECK(source.Json(response).at("error").at("type") == "repository_missing_exception");
}

TEST_CASE("Repository errors map to InvalidArgument with OpenSearch's cause",
          "[reindex][snapshot_creator]") {
  CannedTransport transport(net::HttpResponse{
      500,
      {},
      R"({"error":{"root_cause":[{"type":"repository_exception","reason":"[r] missing location"}],)"
      R"("type":"repository_exception","reason":"[r] failed to create repository",)"
      R"("caused_by":{"type":"repository_exception","reason":"[r] missing location"}},"status":500})"});
  OpenSearchClient client(transport);
  SnapshotCreator creator(client, "r");
  auto status = creator.RegisterRepository({.storage = FileSystemRepositoryConfig{"/x"}});
  CHECK(absl::IsInvalidArgument(status));
  CHECK(status.message().find("[r] failed to create repository") != std::string_view::npos);
  CHECK(status.message().find("caused by: repository_exception: [r] missing location") !=
        std::string_view::npos);
  CHECK(transport.last().method == "PUT");
  CHECK(transport.last().target == "/_snapshot/r");

  CannedTransport unavailable(net::HttpResponse{503, {}, "{}"});
  OpenSearchClient unavailable_client(unavailable);
  SnapshotCreator other(unavailable_client, "r");
  CHECK(
      absl::IsUnavailable(other.RegisterRepository({.storage = FileSystemRepositoryConfig{"/x"}})));
}

TEST_CASE("WaitForSnapshot reports growing progress until SUCCESS", "[reindex][snapshot_creator]") {
  Source source(Polls(4));
  source.RegisterFs();
  REQUIRE(source.creator->StartSnapshot({.name = "snap-1", .indices = {"orders", "logs-*"}}).ok());

  core::FakeClock clock;
  std::vector<SnapshotProgress> seen;
  WaitOptions options;
  options.poll_interval = milliseconds(500);
  options.on_progress = [&](const SnapshotProgress& p) { seen.push_back(p); };
  auto info = source.creator->WaitForSnapshot("snap-1", clock, options);
  REQUIRE(info.ok());
  CHECK(info->state == SnapshotState::kSuccess);
  CHECK(info->indices == std::vector<std::string>{"orders", "logs-2024", "logs-2025"});
  CHECK(info->shards_total == 3);
  CHECK(info->shards_successful == 3);
  CHECK(info->include_global_state);

  REQUIRE(seen.size() == 4);
  for (size_t i = 0; i < seen.size(); ++i) {
    CHECK(seen[i].poll == static_cast<int>(i + 1));
    CHECK(seen[i].shards_total == 3);
    CHECK(seen[i].bytes_total > 0);
    CHECK(seen[i].elapsed == milliseconds(500) * static_cast<int>(i));
    if (i > 0) {
      CHECK(seen[i].bytes_processed > seen[i - 1].bytes_processed);
      CHECK(seen[i].shards_done >= seen[i - 1].shards_done);
    }
  }
  for (size_t i = 0; i + 1 < seen.size(); ++i) {
    CHECK(seen[i].state == SnapshotState::kInProgress);
    CHECK(seen[i].raw_state == "STARTED");
    CHECK(seen[i].fraction() < 1.0);
  }
  CHECK(seen.back().state == SnapshotState::kSuccess);
  CHECK(seen.back().shards_done == 3);
  CHECK(seen.back().bytes_processed == seen.back().bytes_total);
  CHECK(seen.back().fraction() == 1.0);
  CHECK(clock.total_slept() == milliseconds(1500));

  // The request carried the allowlist and the global state flag.
  bool found = false;
  for (const auto& request : source.server->requests()) {
    if (request.method == "PUT" &&
        request.target.starts_with("/_snapshot/migration_assistant_repo/snap-1")) {
      CHECK(request.target ==
            "/_snapshot/migration_assistant_repo/snap-1?wait_for_completion=false");
      found = true;
    }
  }
  CHECK(found);
}

TEST_CASE("StartSnapshot returns while the snapshot runs (--no-wait)",
          "[reindex][snapshot_creator]") {
  Source source(Polls(3));
  source.RegisterFs();
  REQUIRE(source.creator->StartSnapshot({.name = "nowait", .include_global_state = false}).ok());
  auto info = source.creator->GetSnapshot("nowait");
  REQUIRE(info.ok());
  CHECK(info->state == SnapshotState::kInProgress);
  CHECK_FALSE(info->include_global_state);
  CHECK(info->end_time_ms == 0);
  auto progress = source.creator->GetProgress("nowait");
  REQUIRE(progress.ok());
  CHECK(progress->state == SnapshotState::kInProgress);
  CHECK(progress->shards_total == 3);  // every index when no allowlist is given
  // Third observation completes it.
  info = source.creator->GetSnapshot("nowait");
  REQUIRE(info.ok());
  CHECK(info->state == SnapshotState::kSuccess);
  CHECK(info->end_time_ms >= info->start_time_ms);
}

TEST_CASE("A FAILED or PARTIAL snapshot is an error naming the failures",
          "[reindex][snapshot_creator]") {
  core::FakeClock clock;
  WaitOptions options;
  options.poll_interval = milliseconds(10);
  SECTION("failed") {
    Source source(Polls(2, "FAILED"));
    source.RegisterFs();
    REQUIRE(source.creator->StartSnapshot({.name = "bad", .indices = {"orders"}}).ok());
    SnapshotState last = SnapshotState::kInProgress;
    options.on_progress = [&](const SnapshotProgress& p) { last = p.state; };
    auto info = source.creator->WaitForSnapshot("bad", clock, options);
    CHECK(absl::IsFailedPrecondition(info.status()));
    const std::string message(info.status().message());
    CHECK(message.find("[migration_assistant_repo:bad] ended FAILED") != std::string::npos);
    CHECK(message.find("1 of 1 shards failed") != std::string::npos);
    CHECK(message.find("[orders][0] IndexShardSnapshotFailedException") != std::string::npos);
    CHECK(message.find("reason: simulated snapshot failure") != std::string::npos);
    CHECK(last == SnapshotState::kFailed);
  }
  SECTION("partial") {
    Source source(Polls(2, "PARTIAL"));
    source.RegisterFs();
    REQUIRE(source.creator->StartSnapshot({.name = "part", .indices = {"logs-*,orders"}}).ok());
    SnapshotProgress last;
    options.on_progress = [&](const SnapshotProgress& p) { last = p; };
    auto info = source.creator->WaitForSnapshot("part", clock, options);
    CHECK(absl::IsFailedPrecondition(info.status()));
    const std::string message(info.status().message());
    CHECK(message.find("ended PARTIAL: 1 of 3 shards failed") != std::string::npos);
    CHECK(message.find("[logs-2024][0]") != std::string::npos);
    // `_status` says SUCCESS for a partial snapshot; the creator reports the real state.
    CHECK(last.raw_state == "SUCCESS");
    CHECK(last.state == SnapshotState::kPartial);
    CHECK(last.shards_failed == 1);
  }
}

TEST_CASE("StartSnapshot errors: existing name, bad name, missing index, missing repository",
          "[reindex][snapshot_creator]") {
  Source source(Polls(0));
  SECTION("missing repository") {
    auto status = source.creator->StartSnapshot({.name = "s"});
    CHECK(absl::IsNotFound(status));
    CHECK(
        status.message().find("repository_missing_exception: [migration_assistant_repo] missing") !=
        std::string_view::npos);
  }
  source.RegisterFs();
  SECTION("existing name") {
    REQUIRE(source.creator->StartSnapshot({.name = "once"}).ok());
    auto status = source.creator->StartSnapshot({.name = "once"});
    CHECK(absl::IsAlreadyExists(status));
    CHECK(status.message().find(
              "[migration_assistant_repo:once] Invalid snapshot name [once], snapshot with the "
              "same name already exists") != std::string_view::npos);
  }
  SECTION("bad names") {
    auto status = source.creator->StartSnapshot({.name = "Upper"});
    CHECK(absl::IsInvalidArgument(status));
    CHECK(status.message().find("must be lowercase") != std::string_view::npos);
    status = source.creator->StartSnapshot({.name = "_hidden"});
    CHECK(absl::IsInvalidArgument(status));
    CHECK(status.message().find("must not start with '_'") != std::string_view::npos);
    status = source.creator->StartSnapshot({.name = "a#b"});
    CHECK(absl::IsInvalidArgument(status));
    CHECK(absl::IsInvalidArgument(source.creator->StartSnapshot({.name = ""})));
  }
  SECTION("missing index") {
    auto status = source.creator->StartSnapshot({.name = "m", .indices = {"orders", "nope"}});
    CHECK(absl::IsNotFound(status));
    CHECK(status.message().find("no such index [nope]") != std::string_view::npos);
    CHECK(absl::IsNotFound(source.creator->GetSnapshot("m").status()));
    // Wildcards that match nothing are fine; so is a missing index with ignore_unavailable.
    REQUIRE(source.creator
                ->StartSnapshot(
                    {.name = "m2", .indices = {"orders", "nope"}, .ignore_unavailable = true})
                .ok());
    auto info = source.creator->GetSnapshot("m2");
    REQUIRE(info.ok());
    CHECK(info->indices == std::vector<std::string>{"orders"});
    REQUIRE(source.creator->StartSnapshot({.name = "m3", .indices = {"zzz-*"}}).ok());
    info = source.creator->GetSnapshot("m3");
    REQUIRE(info.ok());
    CHECK(info->indices.empty());
    CHECK(info->state == SnapshotState::kSuccess);
  }
  SECTION("missing snapshot") {
    auto info = source.creator->GetSnapshot("never");
    CHECK(absl::IsNotFound(info.status()));
    CHECK(info.status().message().find("snapshot_missing_exception") != std::string_view::npos);
    core::FakeClock clock;
    CHECK(absl::IsNotFound(source.creator->WaitForSnapshot("never", clock).status()));
  }
}

TEST_CASE("WaitForSnapshot times out and rides over transient poll failures",
          "[reindex][snapshot_creator]") {
  core::FakeClock clock;
  SECTION("timeout") {
    Source source(Polls(1000));
    source.RegisterFs();
    REQUIRE(source.creator->StartSnapshot({.name = "slow"}).ok());
    WaitOptions options;
    options.poll_interval = seconds(2);
    options.timeout = seconds(5);
    int polls = 0;
    options.on_progress = [&](const SnapshotProgress&) { ++polls; };
    auto info = source.creator->WaitForSnapshot("slow", clock, options);
    CHECK(absl::IsDeadlineExceeded(info.status()));
    CHECK(info.status().message().find("last state STARTED") != std::string_view::npos);
    CHECK(polls == 4);  // at 0, 2, 4 and 5 s
    CHECK(clock.total_slept() == seconds(5));
  }
  SECTION("transient failures") {
    OpenSearchDoubleOptions options = Polls(2);
    options.faults.path_contains = "/_status";
    options.faults.schedule = {{1, Fault::kUnavailable503}, {3, Fault::kReject429}};
    Source source(options);
    source.RegisterFs();
    REQUIRE(source.creator->StartSnapshot({.name = "flaky"}).ok());
    WaitOptions wait;
    wait.poll_interval = milliseconds(100);
    auto info = source.creator->WaitForSnapshot("flaky", clock, wait);
    REQUIRE(info.ok());
    CHECK(info->state == SnapshotState::kSuccess);
  }
  SECTION("persistent failures give up") {
    OpenSearchDoubleOptions options = Polls(2);
    options.faults.path_contains = "/_status";
    options.faults.unavailable_503 = 1.0;
    Source source(options);
    source.RegisterFs();
    REQUIRE(source.creator->StartSnapshot({.name = "down"}).ok());
    WaitOptions wait;
    wait.poll_interval = milliseconds(100);
    wait.max_consecutive_poll_errors = 3;
    auto info = source.creator->WaitForSnapshot("down", clock, wait);
    CHECK(absl::IsUnavailable(info.status()));
    CHECK(clock.total_slept() == milliseconds(200));
  }
}

}  // namespace
}  // namespace rfs::opensearch
