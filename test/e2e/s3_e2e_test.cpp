// The tools on a snapshot repository in S3 (s3rver behind a proxy that verifies signatures and
// fails a tenth of the requests), read in place: the same migration as from a folder, with the
// Java tools' S3 options, credentials from the environment, and a target that checks SigV4 as
// Amazon OpenSearch Service does.
#include <cstdlib>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

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
  std::ifstream expected(generated->dir / "expected-docs.ndjson");
  std::string line;
  size_t count = 0;
  while (std::getline(expected, line)) {
    if (line.empty()) continue;
    const auto doc = boost::json::parse(line).as_object();
    const std::string index(doc.at("_index").as_string());
    const std::string id(doc.at("_id").as_string());
    auto stored = (*target)->GetDocument(index, id);
    INFO(index << "/" << id);
    REQUIRE(stored.has_value());
    CHECK(boost::json::parse(stored->source) == doc.at("_source"));
    ++count;
  }
  CHECK(count > 900);
  // Every request to S3 and to the target was signed correctly; S3's faults were retried.
  CHECK(proxy.rejected() == 0);
  CHECK(proxy.faults() > 0);
  CHECK((*target)->stats().signature_rejections == 0);
  CHECK((*target)->stats().requests > 10);
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
}

}  // namespace
