// S3Repo: a snapshot repository in an S3 bucket (or any S3-compatible store), read in place.
//
// The ranged-object reader shared with GCS and Azure (cloud::RangedObjectRepo: ranged GETs,
// read-ahead under a memory budget, a metadata cache, shared handles, retries) over S3's
// requests. Folders are listed with ListObjectsV2 (paginated), sizes come from HEAD. Requests are
// signed with SigV4 for service "s3" and resent on 429, 5xx (SlowDown, InternalError) and broken
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

#include "rfs/cloud/ranged_object_repo.hpp"
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

struct S3Options : cloud::RangedReadOptions {
  /// The bucket's region, e.g. "us-east-1" (`--s3-region`); empty: net::ResolveAwsRegion.
  std::string region;
  /// A custom endpoint, e.g. "http://127.0.0.1:4568" (`--s3-endpoint`); empty means AWS.
  std::string endpoint;
  /// Credentials for SigV4: fixed ones, or a provider that refreshes temporary ones; with
  /// neither, Open resolves the AWS chain (net::AwsCredentialsProvider::Resolve).
  std::optional<net::AwsCredentials> credentials;
  std::shared_ptr<net::AwsCredentialsProvider> credentials_provider;
};

/// The reader (cloud::RangedObjectRepo) with S3's requests: ListObjectsV2 pages, ranged GETs,
/// HEAD for sizes, PUT.
class S3Repo final : public cloud::RangedObjectRepo {
 public:
  /// Checks the options and opens a connection pool; no request is sent yet.
  static absl::StatusOr<std::shared_ptr<S3Repo>> Open(std::string_view uri, S3Options options);

 private:
  explicit S3Repo(std::shared_ptr<Impl> impl) : RangedObjectRepo(std::move(impl)) {}
};

}  // namespace rfs::s3
