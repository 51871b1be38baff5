// The ISourceRepo conformance suite on S3Repo: blobs uploaded under a prefix of a bucket that a
// real S3-compatible server (s3rver) serves.
#include <map>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "rfs/s3/s3_repo.hpp"

#include "conformance/source_repo_conformance.hpp"
#include "support/s3_server.hpp"

TEST_CASE("S3Repo keeps the ISourceRepo contract", "[s3][conformance]") {
  // One server for every section of the suite (Catch2 runs the body once per section).
  static rfs::test::S3Server server("rfs-conformance");
  rfs::snapshot::conformance::RunSourceRepoConformance(
      [&](const std::map<std::string, std::string>& blobs) {
        for (const auto& [path, bytes] : blobs) server.Put("repo/" + path, bytes);
        rfs::s3::S3Options options;
        options.endpoint = server.endpoint();
        options.region = "us-east-1";
        options.credentials = rfs::test::S3Server::Credentials();
        auto repo = rfs::s3::S3Repo::Open("s3://rfs-conformance/repo", options);
        REQUIRE(repo.ok());
        return std::shared_ptr<const rfs::snapshot::ISourceRepo>(*std::move(repo));
      },
      {.lists_folders_of_folders = false});
}
