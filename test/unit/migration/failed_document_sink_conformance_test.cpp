// The IFailedDocumentSink conformance suite on both sinks rfs ships: GzipFailedDocumentSink (gzip
// NDJSON files in a folder) and S3FailedDocumentStream (the Java tool's failed-document stream,
// into a bucket that a real S3-compatible server, s3rver, serves, and into GCS and Azure
// emulators).
#include "conformance/failed_document_sink_conformance.hpp"

#include <fstream>
#include <map>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "rfs/migration/failed_document_stream.hpp"
#include "rfs/reindex/failed_document_sink.hpp"
#include "rfs/s3/s3_repo.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "support/local_cloud.hpp"
#include "support/s3_server.hpp"
#include "support/temp_dir.hpp"

using rfs::reindex::conformance::FailedSinkUnderTest;

TEST_CASE("GzipFailedDocumentSink keeps the IFailedDocumentSink contract",
          "[migration][conformance]") {
  rfs::reindex::conformance::RunFailedDocumentSinkConformance([] {
    struct Folder {
      rfs::test::TempDir dir{"rfs-failed-conformance"};
      std::shared_ptr<rfs::snapshot::FileSystemRepo> repo;
    };
    auto folder = std::make_shared<Folder>();
    auto sink = rfs::reindex::GzipFailedDocumentSink::Open(folder->dir.path().string());
    REQUIRE(sink.ok());
    auto repo = rfs::snapshot::FileSystemRepo::Open(folder->dir.path().string());
    REQUIRE(repo.ok());
    folder->repo = *std::move(repo);
    FailedSinkUnderTest out;
    out.sink = std::shared_ptr<rfs::reindex::IFailedDocumentSink>(*std::move(sink));
    // The repository keeps its folder alive as long as the suite reads it.
    out.written = std::shared_ptr<const rfs::snapshot::ISourceRepo>(folder, folder->repo.get());
    return out;
  });
}

TEST_CASE("S3FailedDocumentStream keeps the IFailedDocumentSink contract",
          "[migration][conformance]") {
  // One server for every section of the suite; each section writes under a prefix of its own.
  static rfs::test::S3Server server("rfs-failed-conformance");
  static int run = 0;
  rfs::reindex::conformance::RunFailedDocumentSinkConformance([] {
    rfs::s3::S3Options s3;
    s3.endpoint = server.endpoint();
    s3.region = "us-east-1";
    s3.credentials = rfs::test::S3Server::Credentials();
    rfs::migration::FailedDocumentStreamOptions options;
    options.bucket = server.bucket();
    options.prefix = "run-" + std::to_string(++run) + "/";
    options.s3 = s3;
    options.session_id = "conformance";
    options.worker_id = "w-1";
    auto stream = rfs::migration::S3FailedDocumentStream::Open(options);
    REQUIRE(stream.ok());
    auto written = rfs::s3::S3Repo::Open("s3://" + server.bucket() + "/" + options.prefix, s3);
    REQUIRE(written.ok());
    FailedSinkUnderTest out;
    out.sink = std::shared_ptr<rfs::reindex::IFailedDocumentSink>(*std::move(stream));
    out.written = std::shared_ptr<const rfs::snapshot::ISourceRepo>(*std::move(written));
    return out;
  });
}

TEST_CASE("the failed-document stream in GCS and Azure keeps the IFailedDocumentSink contract",
          "[migration][conformance][cloud]") {
  for (const std::string scheme : {"gs", "az"}) {
    DYNAMIC_SECTION(scheme) {
      // fake-gcs-server or Azurite through scripts/local-cloud, the bucket made by an upload.
      static std::map<std::string, std::unique_ptr<rfs::test::LocalCloud>> clouds;
      auto& cloud = clouds[scheme];
      if (cloud == nullptr) {
        cloud = std::make_unique<rfs::test::LocalCloud>(scheme == "gs" ? "gcs" : "azure");
        rfs::test::TempDir seed("rfs-failed-seed");
        std::ofstream(seed.File("seed")) << "x";
        cloud->Upload(seed.path(), "failed", "seed");
      }
      static int run = 0;
      rfs::reindex::conformance::RunFailedDocumentSinkConformance([&] {
        rfs::migration::FailedDocumentStreamOptions options;
        options.scheme = scheme;
        options.bucket = "failed";
        options.prefix = "run-" + std::to_string(++run) + "/";
        options.session_id = "conformance";
        options.worker_id = "w-1";
        const auto environment = cloud->environment();
        auto getenv = [environment](const char* name) -> const char* {
          auto it = environment.find(name);
          return it == environment.end() ? nullptr : it->second.c_str();
        };
        options.gcs.endpoint = cloud->endpoint();
        options.gcs.getenv = getenv;
        options.azure.endpoint = cloud->endpoint() + "/devstoreaccount1";
        options.azure.getenv = getenv;
        auto stream = rfs::migration::S3FailedDocumentStream::Open(options);
        REQUIRE(stream.ok());
        CHECK((*stream)->location().starts_with(scheme + "://failed/run-"));
        auto written = rfs::migration::OpenFailedDocumentStore(options);
        REQUIRE(written.ok());
        FailedSinkUnderTest out;
        out.sink = std::shared_ptr<rfs::reindex::IFailedDocumentSink>(*std::move(stream));
        out.written = std::shared_ptr<const rfs::snapshot::ISourceRepo>(*std::move(written));
        return out;
      });
    }
  }
}
