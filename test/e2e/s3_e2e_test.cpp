// The tools on a snapshot repository in S3 (s3rver behind a proxy that verifies signatures and
// fails a tenth of the requests), read in place: the same migration as from a folder, with the
// Java tools' S3 options, credentials from the environment, and a target that checks SigV4 as
// Amazon OpenSearch Service does.
#include <cstdlib>
#include <set>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/s3/s3_repo.hpp"

#include "e2e_support.hpp"
#include "support/generated_repo.hpp"
#include "support/opensearch_double.hpp"
#include "support/process.hpp"
#include "support/s3_proxy.hpp"
#include "support/s3_server.hpp"
#include "support/temp_dir.hpp"

namespace {

TEST_CASE("MetadataMigration and DocumentsFromSnapshotMigration read a repository in S3",
          "[e2e][s3][generated]") {
  auto generated = rfs::test::Generate(
      "--indices 2 --shards 2 --docs 500 --updates 20 --deletes 10 --routing-fraction 0.1 "
      "--templates true --seed 93");
  if (!generated) return;
  rfs::test::S3Server s3("rfs-e2e");
  s3.Upload(generated->repo(), "backups/cluster-a/");
  // The SDKs' environment variables: what a pod with static keys has. One key pair signs for S3
  // and for the target.
  const std::string key = "AKIAE2EEXAMPLE", secret = "e2e/secret+key";
  setenv("AWS_ACCESS_KEY_ID", key.c_str(), 1);
  setenv("AWS_SECRET_ACCESS_KEY", secret.c_str(), 1);
  rfs::test::S3ProxyOptions proxy_options;
  proxy_options.upstream = s3.endpoint();
  proxy_options.upstream_credentials = rfs::test::S3Server::Credentials();
  proxy_options.expect.secrets = {{key, secret}};
  proxy_options.fault_rate = 0.1;
  rfs::test::S3Proxy proxy(proxy_options);
  rfs::testing::OpenSearchDoubleOptions target_options;
  target_options.sigv4 = rfs::test::SigV4Expectation{
      .region = "us-east-1", .service = "es", .secrets = {{key, secret}}};
  auto target = rfs::testing::OpenSearchDouble::Start(target_options);
  REQUIRE(target.ok());
  rfs::test::TempDir dir("rfs-s3-e2e");
  const std::vector<std::string> repository = {"--s3-repo-uri",  "s3://rfs-e2e/backups/cluster-a",
                                               "--s3-region",    "us-east-1",
                                               "--s3-endpoint",  proxy.endpoint(),
                                               "--s3-local-dir", dir.File("unused")};

  std::vector<std::string> metadata = {RFS_METADATA_TOOL,     "migrate",
                                       "--target-host",       (*target)->endpoint(),
                                       "--target-aws-region", "us-east-1"};
  metadata.insert(metadata.end(), repository.begin(), repository.end());
  const int metadata_code =
      rfs::test::RunProcess(metadata, dir.File("metadata.out"), dir.File("metadata.err"));
  INFO(rfs::test::ReadTextFile(dir.File("metadata.out")) +
       rfs::test::ReadTextFile(dir.File("metadata.err")));
  REQUIRE(metadata_code == 0);

  std::vector<std::string> documents = {
      RFS_DOCUMENTS_TOOL, "--target-host", (*target)->endpoint(), "--target-aws-region",
      "us-east-1",        "--worker-id",   "s3-worker",           "--failed-documents-dir",
      dir.File("failed")};
  documents.insert(documents.end(), repository.begin(), repository.end());
  const int documents_code =
      rfs::test::RunProcess(documents, dir.File("docs.out"), dir.File("docs.err"));
  INFO(rfs::test::ReadTextFile(dir.File("docs.out")) +
       rfs::test::ReadTextFile(dir.File("docs.err")));
  REQUIRE(documents_code == 3);  // No work left.
  // Nothing was downloaded: the ignored --s3-local-dir stays absent.
  CHECK_FALSE(std::filesystem::exists(dir.File("unused")));

  // Every expected document, with its source and routing.
  CHECK(rfs::e2e::CheckExpectedSources(**target, generated->dir / "expected-docs.ndjson") > 900);
  // Every request to S3 and to the target was signed correctly; S3's faults were retried.
  CHECK(proxy.rejected() == 0);
  CHECK(proxy.faults() > 0);
  CHECK((*target)->stats().signature_rejections == 0);
  CHECK((*target)->stats().requests > 10);
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
}

TEST_CASE("failed documents go to S3 as the Java tool's failed-document stream",
          "[e2e][s3][generated]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 30 --seed 96");
  rfs::test::S3Server s3("rfs-failed");
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  // A strict mapping without the documents' fields: every document is rejected for good.
  REQUIRE(
      (*target)
          ->CreateIndex("index-0",
                        R"({"mappings":{"dynamic":"strict","properties":{"x":{"type":"long"}}}})")
          .ok());
  setenv("AWS_ACCESS_KEY_ID", rfs::test::S3Server::kAccessKey, 1);
  setenv("AWS_SECRET_ACCESS_KEY", rfs::test::S3Server::kSecretKey, 1);
  rfs::test::TempDir dir("rfs-s3-failed");
  const std::vector<std::string> command = {RFS_DOCUMENTS_TOOL,
                                            "--snapshot-local-dir",
                                            generated->repo().string(),
                                            "--target-host",
                                            (*target)->endpoint(),
                                            "--coordinator-db",
                                            dir.File("coordination.sqlite"),
                                            "--worker-id",
                                            "s3-stream-worker",
                                            "--failed-document-stream-s3-bucket",
                                            "rfs-failed",
                                            "--failed-document-stream-s3-prefix",
                                            "dlq",
                                            "--failed-document-stream-s3-endpoint",
                                            s3.endpoint(),
                                            "--failed-document-stream-session-id",
                                            "run-7"};
  const int code = rfs::test::RunProcess(command, dir.File("out"), dir.File("err"));
  const std::string out = rfs::test::ReadTextFile(dir.File("out"));
  INFO(out << rfs::test::ReadTextFile(dir.File("err")));
  CHECK(code == 6);  // documents failed
  CHECK(out.find("s3://rfs-failed/dlq/session=run-7/") != std::string::npos);
  // Nothing went to a local failed-documents file (other tests may use the folder meanwhile).
  bool local_file = false;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator("failed-documents", ignored)) {
    local_file |= entry.path().filename().string().find("s3-stream-worker") != std::string::npos;
  }
  CHECK_FALSE(local_file);

  rfs::s3::S3Options options;
  options.endpoint = s3.endpoint();
  options.credentials = rfs::test::S3Server::Credentials();
  auto bucket = rfs::s3::S3Repo::Open(
      "s3://rfs-failed/dlq/session=run-7/index=index-0/worker=s3-stream-worker", options);
  REQUIRE(bucket.ok());
  auto objects = (*bucket)->ListBlobs("");
  REQUIRE(objects.ok());
  REQUIRE_FALSE(objects->empty());
  for (const auto& name : *objects) {
    INFO(name);
    CHECK(name.starts_with("failed-document-stream-"));
    CHECK(name.ends_with(".ndjson.gz"));
  }
  std::set<std::string> ids;
  for (const auto& [name, record] : rfs::e2e::ReadStreamRecords(**bucket, *objects)) {
    INFO(name);
    CHECK(record.at("sessionId").as_string() == "run-7");
    CHECK(record.at("workerId").as_string() == "s3-stream-worker");
    CHECK(record.at("targetIndex").as_string() == "index-0");
    CHECK(record.at("failureClass").as_string() == "NON_RETRYABLE");
    CHECK(record.at("failureType").as_string() == "strict_dynamic_mapping_exception");
    // The Java record's shapes: the bulk response's item, and the bulk operation with the
    // document sent.
    CHECK(record.at("responseItem").at("index").at("status").as_int64() == 400);
    CHECK(record.at("requestItem").at("operation_type").as_string() == "index");
    CHECK(record.at("requestItem").at("operation").at("_index").as_string() == "index-0");
    CHECK(record.at("requestItem").at("operation").at("_id") == record.at("documentId"));
    CHECK(record.at("requestItem").at("document").is_object());
    ids.insert(std::string(record.at("documentId").as_string()));
  }
  CHECK(ids.size() == 30);

  // Redrive from the stream once the mapping is fixed: every record reaches a target that takes
  // it, and nothing fails again.
  auto fixed = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(fixed.ok());
  const int redriven = rfs::test::RunProcess(
      {RFS_DOCUMENTS_TOOL, "--redrive-failed-documents", "s3://rfs-failed/dlq", "--s3-endpoint",
       s3.endpoint(), "--target-host", (*fixed)->endpoint(), "--coordinator-db",
       dir.File("redrive.sqlite"), "--worker-id", "s3-redrive-worker", "--failed-documents-dir",
       dir.File("failed-again")},
      dir.File("redrive.out"), dir.File("redrive.err"));
  const std::string redrive_out = rfs::test::ReadTextFile(dir.File("redrive.out"));
  INFO(redrive_out << rfs::test::ReadTextFile(dir.File("redrive.err")));
  CHECK(redriven == 0);
  CHECK(redrive_out.find("30 records: 30 accepted, 0 failed again") != std::string::npos);
  CHECK((*fixed)->DocumentCount("index-0") == 30);
  for (const std::string& id : ids) CHECK((*fixed)->GetDocument("index-0", id).has_value());
  const bool failed_again = std::filesystem::exists(dir.File("failed-again")) &&
                            !std::filesystem::is_empty(dir.File("failed-again"));
  CHECK_FALSE(failed_again);
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
}

}  // namespace
