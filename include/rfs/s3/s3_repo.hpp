// S3Repo: a snapshot repository in an S3 bucket (or any S3-compatible store), read in place.
//
// Blobs are read with ranged GETs as the readers ask for them (nothing is written to local disk),
// with parallel read-ahead under a memory budget once a blob is read in order; small blobs
// (metadata) are fetched whole and kept for the run. Folders are listed with ListObjectsV2
// (paginated), sizes come from HEAD. Requests are signed
// with SigV4 for service "s3" and resent on 429, 5xx (SlowDown, InternalError) and broken
// connections with backoff. Custom endpoints (MinIO, s3rver, LocalStack) are addressed
// path-style (http://host:port/bucket/key); AWS is addressed virtual-hosted
// (https://bucket.s3.region.amazonaws.com/key).
//
// Thread safety: every method may be called concurrently.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "rfs/net/aws_sigv4.hpp"
#include "rfs/net/http_transport.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "absl/status/statusor.h"

namespace rfs::s3 {

/// "s3://bucket/prefix/" split up; the prefix has no leading and one trailing '/' (or is empty).
struct S3Uri {
  std::string bucket;
  std::string prefix;
  /// InvalidArgument unless `uri` is s3://BUCKET[/PREFIX] with a valid bucket name.
  static absl::StatusOr<S3Uri> Parse(std::string_view uri);
};

struct S3Options {
  /// The bucket's region, e.g. "us-east-1" (`--s3-region`); empty: net::ResolveAwsRegion.
  std::string region;
  /// A custom endpoint, e.g. "http://127.0.0.1:4568" (`--s3-endpoint`); empty means AWS.
  std::string endpoint;
  /// Credentials for SigV4: fixed ones, or a provider that refreshes temporary ones; with
  /// neither, Open resolves the AWS chain (net::AwsCredentialsProvider::Resolve).
  std::optional<net::AwsCredentials> credentials;
  std::shared_ptr<net::AwsCredentialsProvider> credentials_provider;
  /// Keys per ListObjectsV2 page (S3 returns at most 1,000).
  int list_page_keys = 1000;
  /// Sends per request on transient failures (429, 5xx, resets, timeouts).
  int request_attempts = 6;
  /// Blobs up to this size are fetched whole on open (metadata blobs) and kept for the run (up
  /// to `metadata_cache_bytes`); larger ones are read by range as the reader asks.
  uint64_t whole_blob_bytes = 1 << 20;
  uint64_t metadata_cache_bytes = uint64_t{64} << 20;
  /// Ranged reads fetch aligned blocks of this size; each open blob keeps the
  /// `cached_blocks_per_blob` most recently read (three: two decoding threads reading a blob
  /// side by side use up to three blocks at once).
  uint64_t read_block_bytes = uint64_t{4} << 20;
  size_t cached_blocks_per_blob = 3;
  /// Read-ahead: once a blob is read block after block, up to `read_ahead_blocks` following
  /// blocks are fetched in parallel by `fetch_threads` threads, while the blocks fetched ahead
  /// and not read yet (across every blob) stay under `read_ahead_bytes`. 0 blocks: none.
  size_t read_ahead_blocks = 8;
  uint64_t read_ahead_bytes = uint64_t{64} << 20;
  /// The read-ahead's budget while the shared memory budget (ShareMemoryBudget) holds a huge
  /// document: with a 100 MB document decoded and converted beside the blocks fetched ahead, the
  /// full read-ahead would take a worker past 256 MiB.
  uint64_t read_ahead_bytes_beside_large_document = uint64_t{8} << 20;
  int fetch_threads = 16;
  /// Tests: a transport to use instead of opening one for the endpoint.
  std::shared_ptr<net::IHttpTransport> transport;
};

class S3Repo final : public snapshot::ISourceRepo {
 public:
  /// Checks the options and opens a connection pool; no request is sent yet.
  static absl::StatusOr<std::shared_ptr<S3Repo>> Open(std::string_view uri, S3Options options);
  ~S3Repo() override;

  const std::string& description() const override;
  absl::StatusOr<std::vector<std::string>> ListBlobs(std::string_view dir) const override;
  absl::StatusOr<std::vector<std::string>> ListFolders(std::string_view dir) const override;
  /// One listing without a delimiter: every key under the prefix, whatever the store reports as
  /// folders (s3rver names a folder only where it holds an object directly).
  absl::StatusOr<std::vector<std::string>> ListBlobsBelow(std::string_view dir,
                                                          int max_depth = 16) const override;
  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenBlob(
      std::string_view path) const override;
  /// Without the HEAD that OpenBlob sends first: at S3's first-byte latency that halves the
  /// requests that open a shard's files.
  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenBlobOfSize(
      std::string_view path, uint64_t size) const override;
  absl::StatusOr<uint64_t> BlobSize(std::string_view path) const override;
  /// Fetches the small blobs whole (into the metadata cache) and the first block of the large
  /// ones (under the read-ahead budget) on the fetch threads, so that a shard's files open
  /// without a round trip each.
  void Prefetch(std::span<const snapshot::BlobExtent> blobs) const override;
  void ShareMemoryBudget(const core::MemoryBudget* budget) const override;

  /// Writes one object at `key` below the prefix (a single PUT, resent on transient failures:
  /// the same key and body, so a resend is harmless). For the failed-document stream.
  absl::Status PutObject(std::string_view key, std::string body, std::string_view content_type);

  struct Stats {
    /// Bytes fetched by ranged reads of large blobs (read-ahead and lone footers included).
    uint64_t fetched_block_bytes = 0;
    /// Opens served from the metadata cache without a request.
    uint64_t metadata_cache_hits = 0;
    /// Bytes fetched ahead and not read yet.
    uint64_t read_ahead_bytes_held = 0;
  };
  Stats stats() const;

  struct Impl;

 private:
  explicit S3Repo(std::shared_ptr<Impl> impl);
  // Shared with the blobs it opened, which may outlive this object.
  std::shared_ptr<Impl> impl_;
};

}  // namespace rfs::s3
