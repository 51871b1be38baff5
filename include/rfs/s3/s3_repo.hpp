// S3Repo: a snapshot repository in an S3 bucket (or any S3-compatible store), read in place.
//
// Blobs are read with ranged GETs as the readers ask for them (nothing is written to local disk),
// folders are listed with ListObjectsV2 (paginated), sizes come from HEAD. Requests are signed
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
#include "rfs/net/http.hpp"
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
  /// The bucket's region, e.g. "us-east-1" (`--s3-region`).
  std::string region;
  /// A custom endpoint, e.g. "http://127.0.0.1:4568" (`--s3-endpoint`); empty means AWS.
  std::string endpoint;
  /// Credentials for SigV4; nullopt resolves them (net::ResolveAwsCredentials: the environment,
  /// then the shared files).
  std::optional<net::AwsCredentials> credentials;
  /// Keys per ListObjectsV2 page (S3 returns at most 1,000).
  int list_page_keys = 1000;
  /// Sends per request on transient failures (429, 5xx, resets, timeouts).
  int request_attempts = 6;
  /// Blobs up to this size are fetched whole on open (metadata blobs); larger ones are read by
  /// range as the reader asks.
  uint64_t whole_blob_bytes = 1 << 20;
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
  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenBlob(
      std::string_view path) const override;
  absl::StatusOr<uint64_t> BlobSize(std::string_view path) const override;

  struct Impl;

 private:
  explicit S3Repo(std::shared_ptr<Impl> impl);
  // Shared with the blobs it opened, which may outlive this object.
  std::shared_ptr<Impl> impl_;
};

}  // namespace rfs::s3
