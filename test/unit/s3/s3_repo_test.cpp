// S3Repo against a real S3-compatible server (s3rver, which parses SigV4 and checks the key): a
// snapshot repository uploaded to a bucket lists, reads and yields every document exactly as the
// same repository read from its folder.
#include "rfs/s3/s3_repo.hpp"

#include <map>
#include <variant>

#include <catch2/catch.hpp>

#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/snapshot/repository.hpp"

#include "s3/list_page_internal.hpp"
#include "support/corpus.hpp"
#include "support/generated_repo.hpp"
#include "support/repository_documents.hpp"
#include "support/repository_walk.hpp"
#include "support/s3_server.hpp"

namespace {

using rfs::s3::S3Options;
using rfs::s3::S3Repo;
using rfs::snapshot::ISourceRepo;

S3Options Local(const rfs::test::S3Server& server) {
  S3Options options;
  options.endpoint = server.endpoint();
  options.region = "us-east-1";
  options.credentials = rfs::test::S3Server::Credentials();
  return options;
}

using rfs::test::CompareEveryShard;
using rfs::test::Walk;

}  // namespace

TEST_CASE("S3 URIs name a bucket and a prefix", "[s3]") {
  auto uri = rfs::s3::S3Uri::Parse("s3://my-bucket/snapshots/prod/");
  REQUIRE(uri.ok());
  CHECK(uri->bucket == "my-bucket");
  CHECK(uri->prefix == "snapshots/prod/");
  CHECK(rfs::s3::S3Uri::Parse("s3://my-bucket")->prefix.empty());
  CHECK(absl::IsInvalidArgument(rfs::s3::S3Uri::Parse("s3://B").status()));
  CHECK(absl::IsInvalidArgument(rfs::s3::S3Uri::Parse("http://bucket/x").status()));
  CHECK(absl::IsInvalidArgument(S3Repo::Open("s3://bucket/x", {}).status()));  // no region
}

TEST_CASE("ListObjectsV2 pages parse with entities, and malformed ones are DataLoss", "[s3]") {
  auto page = rfs::s3::internal::ParseListPage(
      "<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>true</IsTruncated>"
      "<Contents><Key>a/x&amp;y&#233;</Key><Size>3</Size></Contents>"
      "<CommonPrefixes><Prefix>a/indices/</Prefix></CommonPrefixes>"
      "<NextContinuationToken>t&lt;1</NextContinuationToken></ListBucketResult>",
      "page");
  REQUIRE(page.ok());
  CHECK(page->keys == std::vector<std::string>{"a/x&y\xc3\xa9"});
  CHECK(page->prefixes == std::vector<std::string>{"a/indices/"});
  CHECK(page->truncated);
  CHECK(page->next_token == "t<1");
  CHECK(absl::IsDataLoss(rfs::s3::internal::ParseListPage("<Error/>", "p").status()));
  auto unterminated =
      rfs::s3::internal::ParseListPage("<ListBucketResult><Contents><Key>x</Key>", "p");
  CHECK(absl::IsDataLoss(unterminated.status()));
  CHECK(absl::IsDataLoss(
      rfs::s3::internal::ParseListPage(
          "<ListBucketResult><Contents><Key>&bogus;</Key></Contents></ListBucketResult>", "p")
          .status()));
}

TEST_CASE("a repository in S3 reads exactly as from its folder", "[s3][generated]") {
  auto generated = rfs::test::Generate(
      "--indices 2 --shards 2 --docs 300 --updates 20 --deletes 10 --segments 2 --seed 91");
  if (!generated) return;
  rfs::test::S3Server server("rfs-test");
  const size_t uploaded = server.Upload(generated->repo(), "snapshots/one/");
  REQUIRE(uploaded > 10);

  auto local = rfs::snapshot::FileSystemRepo::Open(generated->repo().string());
  REQUIRE(local.ok());
  S3Options options = Local(server);
  // Small enough that Lucene files are read by range through the block cache.
  options.whole_blob_bytes = 2048;
  auto remote = S3Repo::Open("s3://rfs-test/snapshots/one", options);
  REQUIRE(remote.ok());

  std::map<std::string, std::vector<uint8_t>> from_folder, from_s3;
  Walk(**local, "", from_folder);
  Walk(**remote, "", from_s3);
  CHECK(from_s3.size() == uploaded);
  CHECK(from_s3 == from_folder);

  // Positional reads of a large blob, across a block boundary and at its end.
  auto biggest = std::max_element(from_folder.begin(), from_folder.end(), [](auto& a, auto& b) {
    return a.second.size() < b.second.size();
  });
  auto file = (*remote)->OpenBlob(biggest->first);
  REQUIRE(file.ok());
  CHECK((*file)->size() == biggest->second.size());
  std::vector<uint8_t> tail(std::min<size_t>(100, biggest->second.size()));
  REQUIRE((*file)->ReadAt((*file)->size() - tail.size(), tail).ok());
  CHECK(std::equal(tail.begin(), tail.end(), biggest->second.end() - tail.size()));
  std::vector<uint8_t> past(2);
  CHECK(absl::IsDataLoss((*file)->ReadAt((*file)->size() - 1, past)));

  const auto expected = rfs::test::RepositoryDocuments(*local);
  CHECK_FALSE(expected.empty());
  CHECK(rfs::test::RepositoryDocuments(*remote) == expected);

  CHECK(absl::IsNotFound((*remote)->BlobSize("no-such-blob").status()));
  CHECK(absl::IsNotFound((*remote)->OpenBlob("indices/none/0/x").status()));
  CHECK((*remote)->ListBlobs("no-such-folder")->empty());
}

TEST_CASE("S3 listings follow continuation tokens and bad credentials are refused", "[s3]") {
  rfs::test::S3Server server("rfs-pages");
  for (int i = 0; i < 1100; ++i) server.Put("many/" + std::to_string(100000 + i), "x");
  server.Put("many/sub/inner", "y");
  // Pages of 300 keys: four pages, three continuation tokens.
  S3Options options = Local(server);
  options.list_page_keys = 300;
  auto repo = S3Repo::Open("s3://rfs-pages/many", options);
  REQUIRE(repo.ok());
  auto blobs = (*repo)->ListBlobs("");
  INFO(blobs.status().ToString());
  REQUIRE(blobs.ok());
  CHECK(blobs->size() == 1100);  // Four pages.
  CHECK(blobs->front() == "100000");
  CHECK((*repo)->ListFolders("").value() == std::vector<std::string>{"sub"});
  // Every blob below, at any depth, in one flat listing: a folder that holds no object directly
  // (s3rver reports no common prefix for it) and marker objects make no difference.
  server.Put("many/deep/a/b/leaf", "z");
  server.Put("many/deep/", "");
  auto below = (*repo)->ListBlobsBelow("");
  REQUIRE(below.ok());
  CHECK(below->size() == 1102);
  CHECK(std::count(below->begin(), below->end(), "deep/a/b/leaf") == 1);
  CHECK(std::count(below->begin(), below->end(), "sub/inner") == 1);
  CHECK(std::count(below->begin(), below->end(), "deep/") == 0);
  CHECK((*repo)->ListBlobsBelow("", 1)->size() == 1101);  // deep/a/b/leaf is 3 folders down
  CHECK((*repo)->ListBlobsBelow("deep").value() == std::vector<std::string>{"a/b/leaf"});

  // (s3rver checks the access key, not the signature's secret.)
  S3Options wrong = options;
  wrong.credentials = rfs::net::AwsCredentials{"NOT-A-KEY", "not-the-secret", "", std::nullopt};
  auto refused = S3Repo::Open("s3://rfs-pages/many", wrong);
  REQUIRE(refused.ok());
  const auto listing = (*refused)->ListBlobs("");
  CHECK(absl::IsPermissionDenied(listing.status()));
  CHECK(listing.status().message().find("InvalidAccessKeyId") != std::string::npos);
  CHECK(listing.status().message().find("not-the-secret") == std::string::npos);
}

TEST_CASE("every corpus repository uploaded to S3 reads back exactly as from its folder",
          "[s3][corpus]") {
  auto root = rfs::test::CorpusRoot("corpus repositories in S3");  // skips without the corpus
  std::vector<std::filesystem::path> repositories;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(*root)) {
    if (!entry.is_directory() || !std::filesystem::is_directory(entry.path() / "indices")) continue;
    for (const char* marker : {"index.latest", "index", "index-0"}) {
      if (std::filesystem::exists(entry.path() / marker)) {
        repositories.push_back(entry.path());
        break;
      }
    }
  }
  REQUIRE(repositories.size() >= 10);
  rfs::test::S3Server server("rfs-corpus");
  for (const auto& folder : repositories) {
    const std::string relative = std::filesystem::relative(folder, *root).generic_string();
    INFO(relative);
    server.Upload(folder, "corpus/" + relative + "/");
    auto local = rfs::snapshot::FileSystemRepo::Open(folder.string());
    REQUIRE(local.ok());
    S3Options options = Local(server);
    options.whole_blob_bytes = 4096;  // Lucene files by range.
    auto remote = S3Repo::Open("s3://rfs-corpus/corpus/" + relative, options);
    REQUIRE(remote.ok());
    std::map<std::string, std::vector<uint8_t>> from_folder, from_s3;
    Walk(**local, "", from_folder);
    Walk(**remote, "", from_s3);
    CHECK(from_s3 == from_folder);
    CompareEveryShard(*local, *remote);
  }
}
