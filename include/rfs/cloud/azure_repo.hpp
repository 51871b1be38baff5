// AzureRepo: a snapshot repository in an Azure Blob Storage container (az://CONTAINER/PATH), read
// in place through the Blob service's REST API: List Blobs pages (prefix, delimiter, marker), Get
// Blob with x-ms-range, Get Blob Properties for sizes, Put Blob for the failed-document stream.
// The reader itself (ranged GETs, read-ahead, metadata cache, retries) is
// cloud::RangedObjectRepo.
//
// Endpoint: --azure-endpoint (e.g. Azurite's path-style http://127.0.0.1:10000/devstoreaccount1,
// or a sovereign cloud's https://ACCOUNT.blob.core.chinacloudapi.cn), else the connection
// string's, else https://ACCOUNT.blob.core.windows.net. Credentials:
// cloud::ResolveAzureCredentials (cloud_auth.hpp).
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

/// az://CONTAINER[/PATH] with a valid container name; InvalidArgument otherwise.
absl::StatusOr<BucketUri> ParseAzureUri(std::string_view uri);

/// The x-ms-version every request carries.
inline constexpr const char* kAzureStorageVersion = "2021-08-06";

struct AzureOptions : RangedReadOptions {
  /// --azure-account; empty: the connection string's, else AZURE_STORAGE_ACCOUNT.
  std::string account;
  /// --azure-endpoint; empty: the connection string's, else https://ACCOUNT.blob.core.windows.net.
  std::string endpoint;
  /// Given credentials; unset: ResolveAzureCredentials.
  std::optional<AzureCredentials> credentials;
  GetEnv getenv = ProcessEnvironment();
};

class AzureRepo final : public RangedObjectRepo {
 public:
  /// Checks the URI, endpoint and credentials and opens a connection pool; no request is sent
  /// yet.
  static absl::StatusOr<std::shared_ptr<AzureRepo>> Open(std::string_view uri,
                                                         AzureOptions options);
  const std::string& credential_source() const { return credential_source_; }

 private:
  AzureRepo(std::shared_ptr<Impl> impl, std::string credential_source)
      : RangedObjectRepo(std::move(impl)), credential_source_(std::move(credential_source)) {}
  std::string credential_source_;
};

}  // namespace rfs::cloud
