// S3Repo through S3Proxy (support/s3_proxy.hpp) in front of s3rver: every request must carry a
// signature S3 would accept; a fifth of the requests fail as S3 fails in production (503
// SlowDown, 500, resets, answers cut short) and every document still reads exactly; temporary
// credentials rotate in the middle of a shard; read-ahead stays within its memory budget.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <ctime>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/core/memory_budget.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/net/aws_credentials.hpp"
#include "rfs/s3/s3_repo.hpp"
#include "rfs/snapshot/repository.hpp"

#include "support/generated_repo.hpp"
#include "support/iso8601.hpp"
#include "support/repository_documents.hpp"
#include "support/s3_proxy.hpp"
#include "support/s3_server.hpp"
#include "support/scripted_http_server.hpp"

namespace {

using rfs::s3::S3Options;
using rfs::s3::S3Repo;
using rfs::test::S3Proxy;

constexpr const char* kClientKey = "AKIACLIENT";
constexpr const char* kClientSecret = "client-secret/with+odd=chars";

rfs::test::S3ProxyOptions ProxyTo(const rfs::test::S3Server& server, double fault_rate) {
  rfs::test::S3ProxyOptions options;
  options.upstream = server.endpoint();
  options.upstream_credentials = rfs::test::S3Server::Credentials();
  options.expect.secrets = {{kClientKey, kClientSecret}};
  options.fault_rate = fault_rate;
  return options;
}

S3Options Through(const S3Proxy& proxy) {
  S3Options options;
  options.endpoint = proxy.endpoint();
  options.region = "us-east-1";
  options.credentials = rfs::net::AwsCredentials{kClientKey, kClientSecret, "", std::nullopt};
  return options;
}

}  // namespace

TEST_CASE("S3 reads survive SlowDown, 500s, resets and cut-short answers, all signed",
          "[s3][faults]") {
  auto generated = rfs::test::Generate(
      "--indices 2 --shards 2 --docs 2000 --doc-size 600 --updates 50 --deletes 20 --segments 3 "
      "--seed 93");
  rfs::test::S3Server server("rfs-faults");
  server.Upload(generated->repo(), "repo/");
  auto local = rfs::snapshot::FileSystemRepo::Open(generated->repo().string());
  REQUIRE(local.ok());
  const auto expected = rfs::test::RepositoryDocuments(*local);
  REQUIRE(expected.size() > 3000);

  S3Proxy proxy(ProxyTo(server, 0.2));
  S3Options options = Through(proxy);
  options.read_block_bytes = 64 << 10;  // many ranged reads per Lucene file
  options.whole_blob_bytes = 4096;
  options.request_attempts = 10;
  auto remote = S3Repo::Open("s3://rfs-faults/repo", options);
  REQUIRE(remote.ok());
  CHECK(rfs::test::RepositoryDocuments(*remote) == expected);

  INFO("requests " << proxy.requests() << ", faults " << proxy.faults());
  CHECK(proxy.rejected() == 0);
  CHECK(proxy.requests() > 100);
  for (auto fault : {S3Proxy::Fault::kSlowDown503, S3Proxy::Fault::kInternalError500,
                     S3Proxy::Fault::kReset, S3Proxy::Fault::kTruncated}) {
    CHECK(proxy.faults(fault) > 0);
  }
  CHECK((*remote)->stats().read_ahead_bytes_held <= options.read_ahead_bytes);
}

TEST_CASE("a signature S3 would refuse is refused, naming the code and not the secret",
          "[s3][faults]") {
  rfs::test::S3Server server("rfs-signed");
  server.Put("repo/index.latest", std::string(8, '\0'));
  S3Proxy proxy(ProxyTo(server, 0));
  S3Options options = Through(proxy);
  auto good = S3Repo::Open("s3://rfs-signed/repo", options);
  REQUIRE(good.ok());
  CHECK((*good)->ListBlobs("").value() == std::vector<std::string>{"index.latest"});
  CHECK((*good)->ReadBlob("index.latest").value().size() == 8);

  options.credentials->secret_access_key = "a-wrong-secret";
  auto bad = S3Repo::Open("s3://rfs-signed/repo", options);
  REQUIRE(bad.ok());
  const auto refused = (*bad)->ListBlobs("");
  CHECK(absl::IsPermissionDenied(refused.status()));
  CHECK(refused.status().message().find("SignatureDoesNotMatch") != std::string::npos);
  CHECK(refused.status().message().find("a-wrong-secret") == std::string::npos);
  CHECK(proxy.rejected() >= 1);
}

TEST_CASE("temporary credentials rotate while a repository is read from S3", "[s3][aws]") {
  // Six shards of 500 documents: the reader loads a shard's stored fields when it opens it, so
  // every shard after the first is fetched with rotated credentials.
  auto generated =
      rfs::test::Generate("--indices 3 --shards 2 --docs 1000 --doc-size 800 --seed 94");
  rfs::test::S3Server server("rfs-rotate");
  server.Upload(generated->repo(), "repo/");
  S3Proxy proxy(ProxyTo(server, 0));

  // A container-credentials endpoint: key n is valid for 10 minutes of the provider's clock;
  // the proxy accepts each key until the test lets it expire.
  rfs::core::FakeClock clock(std::chrono::system_clock::now());
  std::atomic<int> issued{0};
  std::mutex mu;
  rfs::test::SigV4Expectation expect{.service = "s3"};
  rfs::test::ScriptedHttpServer endpoint([&](const rfs::net::HttpRequest&) {
    const std::string key = "ASIAROTATE" + std::to_string(++issued);
    {
      std::lock_guard lock(mu);
      expect.secrets[key] = "secret-" + key;
      proxy.SetExpectation(expect);
    }
    return rfs::net::HttpResponse{
        200,
        {},
        R"({"AccessKeyId":")" + key + R"(","SecretAccessKey":"secret-)" + key +
            R"(","Token":"token-)" + key + R"(","Expiration":")" +
            rfs::test::Iso8601Utc(clock.Now() + std::chrono::minutes(10)) + R"("})"};
  });
  auto provider = rfs::net::AwsCredentialsProvider::Resolve(
      {.sources = {[&](const char* name) -> const char* {
         static const std::string uri = endpoint.endpoint() + "/creds";
         if (std::string_view(name) == "AWS_CONTAINER_CREDENTIALS_FULL_URI") return uri.c_str();
         if (std::string_view(name) == "AWS_EC2_METADATA_DISABLED") return "true";
         return nullptr;
       }},
       .clock = &clock});
  REQUIRE(provider.ok());

  S3Options options;
  options.endpoint = proxy.endpoint();
  options.credentials_provider = *provider;
  options.read_block_bytes = 16 << 10;
  options.whole_blob_bytes = 4096;
  options.read_ahead_blocks = 0;  // every block is fetched when the reader reaches it
  auto remote = S3Repo::Open("s3://rfs-rotate/repo", options);
  REQUIRE(remote.ok());

  // Every 400 documents, 6 minutes pass: the key is refreshed, and the old one stops working.
  int read = 0;
  const auto documents = rfs::test::RepositoryDocuments(*remote, [&] {
    if (++read % 400 != 0) return;
    clock.Advance(std::chrono::minutes(6));
    std::lock_guard lock(mu);
    for (int n = 1; n < issued; ++n) {
      expect.expirations["ASIAROTATE" + std::to_string(n)] = std::chrono::system_clock::now();
    }
    proxy.SetExpectation(expect);
  });
  CHECK(documents.size() == 3000);
  INFO((proxy.rejections().empty() ? std::string() : proxy.rejections().front()));
  CHECK(proxy.rejected() == 0);
  CHECK((*provider)->refreshes() >= 4);
  CHECK(proxy.keys_used().size() >= 4);
}

TEST_CASE("read-ahead fetches in parallel within its budget, and metadata is fetched once",
          "[s3][tsan]") {
  auto generated = rfs::test::Generate(
      "--indices 1 --shards 1 --docs 4000 --doc-size 1000 "
      "--segments 1 --seed 95");
  rfs::test::S3Server server("rfs-ahead");
  server.Upload(generated->repo(), "repo/");
  auto local = rfs::snapshot::FileSystemRepo::Open(generated->repo().string());
  REQUIRE(local.ok());
  const auto expected = rfs::test::RepositoryDocuments(*local);

  S3Options options;
  options.endpoint = server.endpoint();
  options.credentials = rfs::test::S3Server::Credentials();
  options.read_block_bytes = 32 << 10;
  options.whole_blob_bytes = 4096;
  options.read_ahead_blocks = 6;
  options.read_ahead_bytes = 128 << 10;  // at most 4 blocks ahead across every blob
  auto remote = S3Repo::Open("s3://rfs-ahead/repo", options);
  REQUIRE(remote.ok());
  CHECK(rfs::test::RepositoryDocuments(*remote) == expected);
  const auto first = (*remote)->stats();
  CHECK(first.read_ahead_bytes_held <= options.read_ahead_bytes);
  CHECK(first.fetched_block_bytes > 0);
  // A second pass opens the same metadata blobs again: from memory.
  CHECK(rfs::test::RepositoryDocuments(*remote) == expected);
  CHECK((*remote)->stats().metadata_cache_hits > first.metadata_cache_hits);
}

namespace {

// An S3 repository seen through ISourceRepo without its Prefetch: every open waits for its own
// request, as before prefetching.
class WithoutPrefetch final : public rfs::snapshot::ISourceRepo {
 public:
  explicit WithoutPrefetch(std::shared_ptr<const ISourceRepo> repo) : repo_(std::move(repo)) {}
  const std::string& description() const override { return repo_->description(); }
  absl::StatusOr<std::vector<std::string>> ListBlobs(std::string_view dir) const override {
    return repo_->ListBlobs(dir);
  }
  absl::StatusOr<std::vector<std::string>> ListFolders(std::string_view dir) const override {
    return repo_->ListFolders(dir);
  }
  absl::StatusOr<std::vector<std::string>> ListBlobsBelow(std::string_view dir,
                                                          int max_depth) const override {
    return repo_->ListBlobsBelow(dir, max_depth);
  }
  absl::StatusOr<std::shared_ptr<const rfs::core::IRandomAccessFile>> OpenBlob(
      std::string_view path) const override {
    return repo_->OpenBlob(path);
  }
  absl::StatusOr<std::shared_ptr<const rfs::core::IRandomAccessFile>> OpenBlobOfSize(
      std::string_view path, uint64_t size) const override {
    return repo_->OpenBlobOfSize(path, size);
  }
  absl::StatusOr<uint64_t> BlobSize(std::string_view path) const override {
    return repo_->BlobSize(path);
  }

 private:
  std::shared_ptr<const ISourceRepo> repo_;
};

}  // namespace

TEST_CASE("a shard's files are fetched in parallel before they are opened, each with one request",
          "[s3][tsan]") {
  auto generated = rfs::test::Generate(
      "--indices 1 --shards 2 --docs 3000 --doc-size 700 --deletes 40 --segments 4 --seed 97");
  rfs::test::S3Server server("rfs-prefetch");
  server.Upload(generated->repo(), "repo/");
  auto local = rfs::snapshot::FileSystemRepo::Open(generated->repo().string());
  REQUIRE(local.ok());
  const auto expected = rfs::test::RepositoryDocuments(*local);
  REQUIRE(expected.size() > 2000);

  // A first-byte latency, so that requests sent together are seen together by the proxy; no
  // read-ahead, so that only the prefetch sends requests side by side.
  auto read_through_proxy = [&](bool prefetch, S3Proxy& proxy) {
    S3Options options = Through(proxy);
    options.read_ahead_blocks = 0;
    auto remote = S3Repo::Open("s3://rfs-prefetch/repo", options);
    REQUIRE(remote.ok());
    std::shared_ptr<rfs::snapshot::ISourceRepo> repo = *remote;
    if (!prefetch) repo = std::make_shared<WithoutPrefetch>(repo);
    CHECK(rfs::test::RepositoryDocuments(repo) == expected);
    CHECK(proxy.rejected() == 0);
  };
  rfs::test::S3ProxyOptions proxy_options = ProxyTo(server, 0);
  proxy_options.first_byte_latency = std::chrono::milliseconds(20);
  S3Proxy one_by_one(proxy_options);
  read_through_proxy(false, one_by_one);
  S3Proxy prefetching(proxy_options);
  read_through_proxy(true, prefetching);

  INFO("requests " << one_by_one.requests() << " one by one, " << prefetching.requests()
                   << " prefetching, at most " << prefetching.max_in_flight() << " at once");
  // One by one, but the root's listing and index.latest, which the repository asks for together.
  CHECK(one_by_one.max_in_flight() <= 2);
  CHECK(prefetching.max_in_flight() >= 4);
  // Nothing fetched that the read does not use, nothing fetched twice.
  CHECK(prefetching.requests() <= one_by_one.requests());
  // Metadata blobs of unknown size open with one GET (its Content-Range gives the size), not a
  // HEAD first; a shard's files are opened with the size the snapshot lists.
  CHECK(one_by_one.heads() == 0);
  CHECK(prefetching.heads() == 0);
}

namespace {

// A pseudo-random blob of 40 blocks of 4096 bytes and 123 more, put as repo/big.
std::string PutBlockedBlob(rfs::test::S3Server& server, uint32_t seed) {
  std::string bytes(40 * 4096 + 123, '\0');
  uint32_t state = seed;
  for (char& c : bytes) {
    state = state * 1103515245 + 12345;
    c = static_cast<char>(state >> 24);
  }
  server.Put("repo/big", bytes);
  return bytes;
}

// Blocks of 4096 bytes, 4 read ahead, 2 kept once read: small enough to count.
S3Options SmallBlocks(const rfs::test::S3Server& server) {
  S3Options options;
  options.endpoint = server.endpoint();
  options.credentials = rfs::test::S3Server::Credentials();
  options.read_block_bytes = 4096;
  options.whole_blob_bytes = 1024;
  options.read_ahead_blocks = 4;
  options.cached_blocks_per_blob = S3Options{}.cached_blocks_per_blob;
  return options;
}

// `count` blobs "seg0", "seg1"... of `blocks` 4096-byte blocks each, filled with 'a', 'b'...: a
// shard's segment files, as Prefetch is given them.
std::vector<rfs::snapshot::BlobExtent> PutSegments(rfs::test::S3Server& server, int count,
                                                   uint64_t blocks) {
  std::vector<rfs::snapshot::BlobExtent> extents;
  for (int i = 0; i < count; ++i) {
    const std::string name = "seg" + std::to_string(i);
    server.Put("repo/" + name, std::string(blocks * 4096, static_cast<char>('a' + i)));
    extents.push_back({name, blocks * 4096});
  }
  return extents;
}

// The bytes `repo` has fetched once the fetches it started have landed: waits (up to 10 s) until
// `expected` have, and a moment longer, so that more than expected would show.
uint64_t FetchedWhenSettled(const S3Repo& repo, uint64_t expected) {
  for (int i = 0; i < 1000 && repo.stats().fetched_block_bytes < expected; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return repo.stats().fetched_block_bytes;
}

// Two threads, each with its own handle on repo/big, read in step: at step i thread `which` reads
// `piece_bytes` at offsets(which)[i] (none past the end), then both wait for each other.
// Returns the reads that failed or gave other bytes.
int ReadInStep(const S3Repo& repo, const std::string& bytes, size_t piece_bytes,
               const std::function<std::vector<uint64_t>(int)>& offsets) {
  std::barrier step(2);
  std::atomic<int> wrong{0};
  auto read = [&](int which) {
    auto file = repo.OpenBlobOfSize("big", bytes.size());
    if (!file.ok()) {
      ++wrong;
      step.arrive_and_drop();
      return;
    }
    std::vector<uint8_t> out(piece_bytes);
    for (uint64_t at : offsets(which)) {
      if (at < bytes.size()) {
        const auto span = std::span(out).first(std::min<uint64_t>(piece_bytes, bytes.size() - at));
        if (!(*file)->ReadAt(at, span).ok() ||
            std::string(span.begin(), span.end()) != bytes.substr(at, span.size())) {
          ++wrong;
        }
      }
      step.arrive_and_wait();
    }
  };
  std::thread first(read, 0), second(read, 1);
  first.join();
  second.join();
  return wrong;
}

}  // namespace

TEST_CASE("a blob read in order fetches each block once, past Lucene's jump to its footer",
          "[s3][tsan]") {
  rfs::test::S3Server server("rfs-once");
  const std::string bytes = PutBlockedBlob(server, 12345);
  auto remote = S3Repo::Open("s3://rfs-once/repo", SmallBlocks(server));
  REQUIRE(remote.ok());
  auto file = (*remote)->OpenBlobOfSize("big", bytes.size());
  REQUIRE(file.ok());
  // As Lucene opens a file: its header, its footer, then the rest in order.
  std::vector<uint8_t> out(1000);
  REQUIRE((*file)->ReadAt(0, std::span(out).first(16)).ok());
  REQUIRE((*file)->ReadAt(bytes.size() - 16, std::span(out).first(16)).ok());
  for (uint64_t at = 0; at < bytes.size(); at += out.size()) {
    const auto piece = std::span(out).first(std::min<uint64_t>(out.size(), bytes.size() - at));
    REQUIRE((*file)->ReadAt(at, piece).ok());
    REQUIRE(std::string(piece.begin(), piece.end()) == bytes.substr(at, piece.size()));
  }
  const auto stats = (*remote)->stats();
  // Each block once, and the footer's 16 bytes alone (its block used to come twice: read for
  // the footer, long before the reader got there). Blocks dropped before they were read and
  // fetched again would show here.
  CHECK(stats.fetched_block_bytes == bytes.size() + 16);
  file->reset();
  CHECK((*remote)->stats().read_ahead_bytes_held == 0);
}

TEST_CASE("read-ahead keeps less while the worker's budget holds a huge document", "[s3][tsan]") {
  // A 100 MB document decoded and converted beside 64 MiB fetched ahead took a worker past
  // 256 MiB; while the shared budget holds one, the read-ahead keeps at most its smaller budget.
  // The compressed bytes of the document, once decoded, go too (DropCachedPages).
  rfs::test::S3Server server("rfs-yield");
  const std::string bytes = PutBlockedBlob(server, 999);
  S3Options options = SmallBlocks(server);
  options.read_ahead_blocks = 8;
  options.read_ahead_bytes_beside_large_document = 2 * 4096;
  auto remote = S3Repo::Open("s3://rfs-yield/repo", options);
  REQUIRE(remote.ok());
  rfs::core::MemoryBudget budget(1 << 20);
  (*remote)->ShareMemoryBudget(&budget);
  auto file = (*remote)->OpenBlobOfSize("big", bytes.size());
  REQUIRE(file.ok());
  std::vector<uint8_t> out(4096);
  auto read_block = [&](uint64_t block) {
    REQUIRE((*file)->ReadAt(block * 4096, out).ok());
    REQUIRE(std::string(out.begin(), out.end()) == bytes.substr(block * 4096, 4096));
  };
  // Read-ahead is counted as held when its fetch starts.
  read_block(0);
  read_block(1);
  CHECK((*remote)->stats().read_ahead_bytes_held == 8 * 4096);  // blocks 2-9
  {
    auto hold = budget.HoldLargeDocument();
    for (uint64_t block = 2; block < 20; ++block) read_block(block);
    CHECK((*remote)->stats().read_ahead_bytes_held == 2 * 4096);  // blocks 20 and 21
    CHECK(FetchedWhenSettled(**remote, 22 * 4096) == 22 * 4096);
    // The last three blocks read are kept (cached_blocks_per_blob); dropped, one read again is
    // fetched again.
    read_block(18);
    CHECK((*remote)->stats().fetched_block_bytes == 22 * 4096);
    (*file)->DropCachedPages(17 * 4096, 3 * 4096);
    read_block(18);
    CHECK((*remote)->stats().fetched_block_bytes == 23 * 4096);
  }
  read_block(20);
  CHECK((*remote)->stats().read_ahead_bytes_held == 8 * 4096);  // blocks 21-28
  (*remote)->ShareMemoryBudget(nullptr);
  file->reset();
  CHECK((*remote)->stats().read_ahead_bytes_held == 0);
}

TEST_CASE("a blob the read-ahead spans whole fetches its last block once, past the footer check",
          "[s3][tsan]") {
  // Six blocks, eight read ahead: the footer check finds its block fetched ahead. Taken as read,
  // that block was the first pushed out by the blocks read after it, and fetched again at the end.
  rfs::test::S3Server server("rfs-peek");
  std::string bytes(5 * 4096 + 777, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + i / 4096);
  server.Put("repo/small", bytes);
  S3Options options = SmallBlocks(server);
  options.read_ahead_blocks = 8;
  auto remote = S3Repo::Open("s3://rfs-peek/repo", options);
  REQUIRE(remote.ok());
  auto file = (*remote)->OpenBlobOfSize("small", bytes.size());
  REQUIRE(file.ok());
  std::vector<uint8_t> out(1000);
  REQUIRE((*file)->ReadAt(0, std::span(out).first(16)).ok());
  REQUIRE((*file)->ReadAt(bytes.size() - 16, std::span(out).first(16)).ok());
  CHECK(std::string(out.begin(), out.begin() + 16) == bytes.substr(bytes.size() - 16));
  for (uint64_t at = 0; at < bytes.size(); at += out.size()) {
    const auto piece = std::span(out).first(std::min<uint64_t>(out.size(), bytes.size() - at));
    REQUIRE((*file)->ReadAt(at, piece).ok());
    REQUIRE(std::string(piece.begin(), piece.end()) == bytes.substr(at, piece.size()));
  }
  CHECK((*remote)->stats().fetched_block_bytes == bytes.size());
  file->reset();
  CHECK((*remote)->stats().read_ahead_bytes_held == 0);
}

TEST_CASE("two handles of a blob read side by side share its blocks", "[s3][tsan]") {
  // As the worker's decoding threads read a shard's .fdt: each opens it, and they read alternate
  // ranges of it, roughly in step.
  rfs::test::S3Server server("rfs-shared");
  const std::string bytes = PutBlockedBlob(server, 777);
  auto remote = S3Repo::Open("s3://rfs-shared/repo", SmallBlocks(server));
  REQUIRE(remote.ok());
  constexpr size_t kPiece = 1000;
  const size_t pieces = (bytes.size() + kPiece - 1) / kPiece;
  CHECK(ReadInStep(**remote, bytes, kPiece, [&](int which) {
          std::vector<uint64_t> offsets;
          for (size_t piece = 0; piece < pieces; piece += 2)
            offsets.push_back((piece + which) * kPiece);
          return offsets;
        }) == 0);
  // Each block once (a block dropped and fetched again would show here); apart, each handle
  // fetched every block.
  const auto stats = (*remote)->stats();
  CHECK(stats.fetched_block_bytes == bytes.size());
  CHECK((*remote)->stats().read_ahead_bytes_held == 0);
}

TEST_CASE("two handles a block and a half apart keep the blocks the one behind still needs",
          "[s3][tsan]") {
  // The worker's two decoding threads take alternate ranges of documents; a range is about 800 KB
  // of a 4 MiB block, but the thread decoding ahead may be a range or two further on. Each thread
  // holds a block and the one ahead moves into the next: three blocks in use at once. With two
  // kept per blob, the one behind found its next block dropped and fetched it again: a 389 MB
  // shard fetched 1,099 MB of blocks.
  rfs::test::S3Server server("rfs-apart");
  const std::string bytes = PutBlockedBlob(server, 4242);
  S3Options options = SmallBlocks(server);
  options.cached_blocks_per_blob = S3Options{}.cached_blocks_per_blob;
  auto remote = S3Repo::Open("s3://rfs-apart/repo", options);
  REQUIRE(remote.ok());
  constexpr size_t kRange = 6144;  // a block and a half
  constexpr size_t kPiece = 1024;
  const size_t ranges = (bytes.size() + kRange - 1) / kRange;
  CHECK(ReadInStep(**remote, bytes, kPiece, [&](int which) {
          std::vector<uint64_t> offsets;
          for (size_t range = 0; range < ranges; range += 2) {
            for (size_t piece = 0; piece < kRange / kPiece; ++piece) {
              offsets.push_back((range + which) * kRange + piece * kPiece);
            }
          }
          return offsets;
        }) == 0);
  CHECK((*remote)->stats().fetched_block_bytes == bytes.size());
}

TEST_CASE("the first blocks fetched before a shard's files open leave room for read-ahead",
          "[s3]") {
  // Four large files prefetched together (a shard of four segments) may hold at most half the
  // read-ahead budget; before, each took up to 1 + read_ahead_blocks blocks and the file read
  // first had no read-ahead at all.
  rfs::test::S3Server server("rfs-share");
  const auto extents = PutSegments(server, 4, 20);
  S3Options options = SmallBlocks(server);
  options.read_ahead_blocks = 8;
  options.read_ahead_bytes = 16 * 4096;
  auto remote = S3Repo::Open("s3://rfs-share/repo", options);
  REQUIRE(remote.ok());
  (*remote)->Prefetch(extents);
  const uint64_t held = (*remote)->stats().read_ahead_bytes_held;
  CHECK(held == 4 * 2 * 4096);  // two blocks each: half of 16 blocks over 4 files
  // Reading the first file in order now fetches ahead of it, within the budget.
  auto file = (*remote)->OpenBlobOfSize("seg0", 20 * 4096);
  REQUIRE(file.ok());
  std::vector<uint8_t> out(4096);
  for (uint64_t at = 0; at < 4 * 4096; at += 4096) REQUIRE((*file)->ReadAt(at, out).ok());
  CHECK((*remote)->stats().read_ahead_bytes_held > 3 * 2 * 4096);
  CHECK((*remote)->stats().read_ahead_bytes_held <= options.read_ahead_bytes);
}

TEST_CASE("read-ahead at a file's end goes on into the next file of the shard", "[s3][tsan]") {
  // A shard's segments are read one after another: once the read-ahead has no more blocks of one
  // .fdt, it fetches the next one's (the next large blob of the shard's Prefetch), so that the
  // next segment does not start by waiting for its blocks. Each block is still fetched once.
  rfs::test::S3Server server("rfs-next");
  const auto extents = PutSegments(server, 3, 12);
  S3Options options = SmallBlocks(server);
  options.read_ahead_blocks = 4;
  options.read_ahead_bytes = 12 * 4096;
  auto remote = S3Repo::Open("s3://rfs-next/repo", options);
  REQUIRE(remote.ok());
  (*remote)->Prefetch(extents);
  // The first two blocks of each: the three share half the read-ahead budget.
  CHECK(FetchedWhenSettled(**remote, 3 * 2 * 4096) == 3 * 2 * 4096);
  std::vector<uint8_t> out(4096);
  auto read_all = [&](const std::string& name, char fill) {
    auto file = (*remote)->OpenBlobOfSize(name, 12 * 4096);
    REQUIRE(file.ok());
    for (uint64_t at = 0; at < 12 * 4096; at += 4096) {
      REQUIRE((*file)->ReadAt(at, out).ok());
      REQUIRE(std::all_of(out.begin(), out.end(), [&](uint8_t c) { return c == fill; }));
    }
    return file;
  };
  {
    auto first = read_all("seg0", 'a');
    // seg0 whole, and seg1's blocks 2 and 3 as seg0's last blocks were read (the window of 4
    // blocks past seg0's end); seg2 only its first two.
    CHECK(FetchedWhenSettled(**remote, (12 + 4 + 2) * 4096) == (12 + 4 + 2) * 4096);
  }
  REQUIRE(read_all("seg1", 'b').ok());
  REQUIRE(read_all("seg2", 'c').ok());
  CHECK(FetchedWhenSettled(**remote, 3 * 12 * 4096) == 3 * 12 * 4096);
  CHECK((*remote)->stats().read_ahead_bytes_held == 0);
}

TEST_CASE("the benchmarks' proxy answers GETs from a folder as S3 does", "[s3]") {
  auto generated = rfs::test::Generate(
      "--indices 1 --shards 1 --docs 800 --doc-size 300 --deletes 10 --segments 2 --seed 5");
  rfs::test::S3Server server("rfs-local");
  server.Upload(generated->repo(), "repo/");
  auto local = rfs::snapshot::FileSystemRepo::Open(generated->repo().string());
  REQUIRE(local.ok());
  const auto expected = rfs::test::RepositoryDocuments(*local);
  REQUIRE(expected.size() > 700);

  rfs::test::S3ProxyOptions proxy_options = ProxyTo(server, 0);
  proxy_options.local_prefix = "/rfs-local/repo/";
  proxy_options.local_folder = generated->repo();
  S3Proxy proxy(proxy_options);
  S3Options options = Through(proxy);
  options.read_block_bytes = 4096;  // many ranged GETs, some past a blob's end
  auto remote = S3Repo::Open("s3://rfs-local/repo", options);
  REQUIRE(remote.ok());
  CHECK(rfs::test::RepositoryDocuments(*remote) == expected);
  CHECK(proxy.rejected() == 0);
  INFO(proxy.answered_locally() << " of " << proxy.requests() << " answered from the folder");
  CHECK(proxy.answered_locally() > 10);
  CHECK(proxy.forwarded() + proxy.answered_locally() == proxy.requests());
  // A missing key is NoSuchKey, as from S3.
  auto missing = (*remote)->OpenBlobOfSize("no-such-blob", 10);
  if (missing.ok()) {
    std::vector<uint8_t> out(10);
    CHECK_FALSE((*missing)->ReadAt(0, out).ok());
  } else {
    CHECK(absl::IsNotFound(missing.status()));
  }
}
