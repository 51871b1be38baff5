// The tools on one snapshot repository in a folder, in S3 (s3rver), in GCS (fake-gcs-server) and
// in Azure Blob Storage (Azurite), each emulator started and filled through scripts/local-cloud
// and the tools pointed at it with the lines it prints: SnapshotInspector's documents are the same
// bytes from all four, and DocumentsFromSnapshotMigration moves the same documents from each.
// A malformed URI is a usage error (64); a bucket or container that is not there, an unreadable
// repository (5).
#include <cstdlib>
#include <memory>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/cloud/azure_repo.hpp"
#include "rfs/cloud/gcs_repo.hpp"

#include "e2e_support.hpp"
#include "support/generated_repo.hpp"
#include "support/local_cloud.hpp"
#include "support/opensearch_double.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

#ifndef RFS_INSPECTOR_TOOL
#define RFS_INSPECTOR_TOOL ""
#endif

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("the tools read one repository alike from a folder, S3, GCS and Azure",
          "[e2e][cloud][generated]") {
  REQUIRE(std::string(RFS_INSPECTOR_TOOL) != "");
  auto generated = rfs::test::Generate(
      "--indices 2 --shards 2 --docs 400 --updates 20 --deletes 10 --routing-fraction 0.1 "
      "--seed 97");
  if (!generated) return;
  rfs::test::TempDir dir("rfs-cloud-e2e");
  const std::string repo = generated->repo().string();
  REQUIRE(rfs::test::RunProcess({RFS_INSPECTOR_TOOL, "docs", "--snapshot-local-dir", repo,
                                 "--snapshot-name", "snap-1"},
                                dir.File("folder.ndjson"), dir.File("folder.err")) == 0);
  const std::string from_folder = rfs::test::ReadTextFile(dir.File("folder.ndjson"));
  REQUIRE(std::count(from_folder.begin(), from_folder.end(), '\n') > 700);

  for (const std::string kind : {"s3", "gcs", "azure"}) {
    DYNAMIC_SECTION(kind) {
      rfs::test::LocalCloud cloud(kind);
      cloud.Upload(generated->repo(), "backups", "cluster-a");
      cloud.ExportEnvironment();
      const auto repository = cloud.ToolArguments("backups/cluster-a");

      // The same NDJSON, byte for byte.
      const int inspect = rfs::test::RunProcess(
          Concat({RFS_INSPECTOR_TOOL, "docs", "--snapshot-name", "snap-1"}, repository),
          dir.File(kind + ".ndjson"), dir.File(kind + ".err"));
      INFO(rfs::test::ReadTextFile(dir.File(kind + ".err")));
      REQUIRE(inspect == 0);
      CHECK(rfs::test::ReadTextFile(dir.File(kind + ".ndjson")) == from_folder);

      // A fleet of two workers migrating from it at once (coordinated through the target):
      // every expected document on the target.
      auto target = rfs::testing::OpenSearchDouble::Start({});
      REQUIRE(target.ok());
      std::vector<std::unique_ptr<rfs::test::ChildProcess>> fleet;
      for (const std::string worker : {"w1", "w2"}) {
        const std::string log = dir.File(kind + "-" + worker);
        fleet.push_back(std::make_unique<rfs::test::ChildProcess>(
            Concat({RFS_DOCUMENTS_TOOL, "--target-host", (*target)->endpoint(), "--worker-id",
                    kind + "-" + worker, "--failed-documents-dir", dir.File(kind + "-failed")},
                   repository),
            log + ".out", log + ".err"));
      }
      for (size_t i = 0; i < fleet.size(); ++i) {
        const int code = fleet[i]->Wait();
        const std::string log = dir.File(kind + "-w" + std::to_string(i + 1));
        INFO(rfs::test::ReadTextFile(log + ".out") + rfs::test::ReadTextFile(log + ".err"));
        // No work left, or every remaining item leased by the other worker.
        CHECK((code == 3 || code == 4));
      }
      CHECK(rfs::e2e::CheckExpectedSources(**target, generated->dir / "expected-docs.ndjson") >
            700);

      // A bucket or container that is not there: the repository cannot be read (5), naming it.
      auto missing = cloud.ToolArguments("no-such-bucket/x");
      const int unreadable =
          rfs::test::RunProcess(Concat({RFS_INSPECTOR_TOOL, "info"}, missing),
                                dir.File(kind + "-missing.out"), dir.File(kind + "-missing.err"));
      const std::string missing_err = rfs::test::ReadTextFile(dir.File(kind + "-missing.err"));
      INFO(missing_err);
      CHECK(unreadable == 5);
      CHECK(missing_err.find("no-such-bucket") != std::string::npos);

      // A malformed URI: usage (64).
      auto malformed = repository;
      malformed[1] = cloud.Variable("LOCAL_CLOUD_URI_SCHEME") + "://B";
      CHECK(rfs::test::RunProcess(Concat({RFS_INSPECTOR_TOOL, "info"}, malformed),
                                  dir.File(kind + "-bad.out"), dir.File(kind + "-bad.err")) == 64);
      cloud.UnsetEnvironment();
    }
  }
}

TEST_CASE("failed documents go to GCS and Azure as the failed-document stream",
          "[e2e][cloud][generated]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 30 --seed 96");
  if (!generated) return;
  for (const std::string kind : {"gcs", "azure"}) {
    DYNAMIC_SECTION(kind) {
      rfs::test::LocalCloud cloud(kind);
      // The stream's bucket or container exists beforehand, as in production.
      cloud.Upload(generated->repo(), "dlq", "seed");
      cloud.ExportEnvironment();
      auto target = rfs::testing::OpenSearchDouble::Start();
      REQUIRE(target.ok());
      // A strict mapping without the documents' fields: every document is rejected for good.
      REQUIRE((*target)
                  ->CreateIndex("index-0", R"({"mappings":{"dynamic":"strict",)"
                                           R"("properties":{"x":{"type":"long"}}}})")
                  .ok());
      rfs::test::TempDir dir("rfs-cloud-failed");
      std::vector<std::string> command = {RFS_DOCUMENTS_TOOL,
                                          "--snapshot-local-dir",
                                          generated->repo().string(),
                                          "--target-host",
                                          (*target)->endpoint(),
                                          "--coordinator-db",
                                          dir.File("coordination.sqlite"),
                                          "--worker-id",
                                          kind + "-stream-worker",
                                          "--failed-document-stream-session-id",
                                          "run-8"};
      const std::string scheme = kind == "gcs" ? "gs" : "az";
      if (kind == "gcs") {
        command.insert(command.end(), {"--failed-document-stream-gcs-bucket", "dlq",
                                       "--failed-document-stream-gcs-prefix", "failed",
                                       "--failed-document-stream-gcs-endpoint", cloud.endpoint()});
      } else {
        command.insert(command.end(), {"--failed-document-stream-azure-container", "dlq",
                                       "--failed-document-stream-azure-prefix", "failed",
                                       "--failed-document-stream-azure-endpoint",
                                       cloud.endpoint() + "/devstoreaccount1"});
      }
      const int code = rfs::test::RunProcess(command, dir.File("out"), dir.File("err"));
      const std::string out = rfs::test::ReadTextFile(dir.File("out"));
      INFO(out << rfs::test::ReadTextFile(dir.File("err")));
      CHECK(code == 6);  // documents failed
      CHECK(out.find(scheme + "://dlq/failed/session=run-8/") != std::string::npos);

      // Every rejected document's record, read back from the store.
      std::shared_ptr<rfs::cloud::RangedObjectRepo> stream;
      const std::string location = scheme + "://dlq/failed/session=run-8";
      if (kind == "gcs") {
        rfs::cloud::GcsOptions options;
        options.endpoint = cloud.endpoint();
        stream = rfs::cloud::GcsRepo::Open(location, options).value();
      } else {
        rfs::cloud::AzureOptions options;
        options.endpoint = cloud.endpoint() + "/devstoreaccount1";
        stream = rfs::cloud::AzureRepo::Open(location, options).value();
      }
      auto objects = stream->ListBlobsBelow("");
      REQUIRE(objects.ok());
      REQUIRE_FALSE(objects->empty());
      for (const auto& name : *objects) {
        INFO(name);
        CHECK(name.starts_with("index=index-0/worker=" + kind + "-stream-worker/"));
      }
      const auto records = rfs::e2e::ReadStreamRecords(*stream, *objects);
      for (const auto& [name, record] : records) {
        INFO(name);
        CHECK(record.at("sessionId").as_string() == "run-8");
        CHECK(record.at("failureType").as_string() == "strict_dynamic_mapping_exception");
      }
      CHECK(records.size() == 30);
      cloud.UnsetEnvironment();
    }
  }
}
