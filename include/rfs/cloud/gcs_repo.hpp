// GcsRepo: a snapshot repository in a Google Cloud Storage bucket (gs://BUCKET/PATH), read in
// place through the JSON API: objects.list pages (prefix, delimiter, pageToken), media downloads
// with Range, objects.get for sizes, media uploads for the failed-document stream. The reader
// itself (ranged GETs, read-ahead, metadata cache, retries) is cloud::RangedObjectRepo.
//
// Endpoint: --gcs-endpoint, else STORAGE_EMULATOR_HOST (an emulator such as fake-gcs-server, as
// the Google libraries take it: "host:port" or a URL), else https://storage.googleapis.com.
// Credentials: cloud::ResolveGcsCredentials (cloud_auth.hpp).
//
// Thread safety: every method may be called concurrently.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "rfs/cloud/cloud_auth.hpp"
#include "rfs/cloud/ranged_object_repo.hpp"

#include "absl/status/statusor.h"

namespace rfs::cloud {

/// gs://BUCKET[/PATH] with a valid bucket name; InvalidArgument otherwise.
absl::StatusOr<BucketUri> ParseGcsUri(std::string_view uri);

struct GcsOptions : RangedReadOptions {
  /// --gcs-endpoint, e.g. "http://127.0.0.1:4443"; empty: STORAGE_EMULATOR_HOST, else Google's.
  std::string endpoint;
  /// Given credentials; unset: ResolveGcsCredentials.
  std::optional<GcsCredentials> credentials;
  GetEnv getenv = ProcessEnvironment();
};

class GcsRepo final : public RangedObjectRepo {
 public:
  /// Checks the URI, endpoint and credentials and opens a connection pool; no request is sent
  /// yet (except the metadata server's probe when the chain gets that far).
  static absl::StatusOr<std::shared_ptr<GcsRepo>> Open(std::string_view uri, GcsOptions options);
  /// Where the credentials came from (cloud_auth.hpp), for messages.
  const std::string& credential_source() const { return credential_source_; }

 private:
  GcsRepo(std::shared_ptr<Impl> impl, std::string credential_source)
      : RangedObjectRepo(std::move(impl)), credential_source_(std::move(credential_source)) {}
  std::string credential_source_;
};

}  // namespace rfs::cloud
