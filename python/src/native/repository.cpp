#include "repository.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include "rfs/cloud/azure_repo.hpp"
#include "rfs/cloud/gcs_repo.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/aws_credentials.hpp"
#include "rfs/s3/s3_repo.hpp"
#include "rfs/snapshot/source_repo.hpp"

namespace rfs::python {
namespace {

using core::StrCat;

// The AWS chain as the tools resolve it, except that `profile`, when given, stands for
// AWS_PROFILE.
net::AwsCredentialSources SourcesWithProfile(const std::optional<std::string>& profile) {
  net::AwsCredentialSources sources;
  if (!profile) return sources;
  auto name = std::make_shared<const std::string>(*profile);
  sources.getenv = [name](const char* variable) -> const char* {
    if (std::string_view(variable) == "AWS_PROFILE") return name->c_str();
    return std::getenv(variable);
  };
  return sources;
}

absl::StatusOr<std::shared_ptr<snapshot::ISourceRepo>> OpenSource(
    const std::string& uri, const RepositoryOptions& options) {
  if (uri.starts_with("s3://")) {
    s3::S3Options s3;
    const net::AwsCredentialSources sources = SourcesWithProfile(options.profile);
    s3.region = net::ResolveAwsRegion(options.region.value_or(""), sources);
    s3.endpoint = options.endpoint.value_or("");
    if (s3.region.empty() && s3.endpoint.empty()) {
      return absl::InvalidArgumentError(
          StrCat(uri,
                 " needs region= (or AWS_REGION, AWS_DEFAULT_REGION, a region in the AWS profile, "
                 "or endpoint= for a custom store)"));
    }
    if (options.profile) {
      net::AwsCredentialsProvider::Options provider;
      provider.sources = sources;
      RFS_ASSIGN_OR_RETURN(s3.credentials_provider, net::AwsCredentialsProvider::Resolve(provider));
    }
    RFS_ASSIGN_OR_RETURN(auto repo, s3::S3Repo::Open(uri, std::move(s3)));
    return std::shared_ptr<snapshot::ISourceRepo>(std::move(repo));
  }
  if (options.region || options.profile) {
    return absl::InvalidArgumentError(
        StrCat("region= and profile= apply to s3:// repositories only, not to ", uri));
  }
  if (uri.starts_with("gs://")) {
    cloud::GcsOptions gcs;
    gcs.endpoint = options.endpoint.value_or("");
    RFS_ASSIGN_OR_RETURN(auto repo, cloud::GcsRepo::Open(uri, std::move(gcs)));
    return std::shared_ptr<snapshot::ISourceRepo>(std::move(repo));
  }
  if (uri.starts_with("az://")) {
    cloud::AzureOptions azure;
    azure.endpoint = options.endpoint.value_or("");
    RFS_ASSIGN_OR_RETURN(auto repo, cloud::AzureRepo::Open(uri, std::move(azure)));
    return std::shared_ptr<snapshot::ISourceRepo>(std::move(repo));
  }
  if (options.endpoint) {
    return absl::InvalidArgumentError(
        StrCat("endpoint= applies to s3://, gs:// and az:// repositories only, not to ", uri));
  }
  std::string folder = uri;
  if (folder.starts_with("file://")) {
    folder = folder.substr(7);
  } else if (folder.find("://") != std::string::npos) {
    return absl::InvalidArgumentError(
        StrCat("repository URI '", uri,
               "' is not supported: use a path, file:///path, s3://bucket/prefix, "
               "gs://bucket/prefix or az://container/prefix"));
  }
  if (folder.empty()) return absl::InvalidArgumentError("the repository folder is empty");
  RFS_ASSIGN_OR_RETURN(auto repo, snapshot::FileSystemRepo::Open(folder));
  return std::shared_ptr<snapshot::ISourceRepo>(std::move(repo));
}

}  // namespace

absl::StatusOr<std::shared_ptr<const OpenRepository>> OpenRepository::Open(
    const std::string& path_or_uri, const RepositoryOptions& options) {
  RFS_ASSIGN_OR_RETURN(auto source, OpenSource(path_or_uri, options));
  auto opened = std::shared_ptr<OpenRepository>(new OpenRepository());
  opened->location_ = path_or_uri;
  RFS_ASSIGN_OR_RETURN(opened->repository_, snapshot::SnapshotRepository::Open(std::move(source)));

  // The listing order says nothing (OpenSearch lists newest first, Elasticsearch oldest first):
  // order by start time, from the repository index or else the snapshot's own blob.
  const auto& snapshots = opened->repository_->snapshots();
  std::vector<std::pair<int64_t, std::string>> by_start;
  by_start.reserve(snapshots.size());
  for (const auto& entry : snapshots) {
    int64_t start = entry.start_time_millis;
    if (start <= 0) {
      auto info = opened->repository_->ReadSnapshotInfo(entry);
      if (info.ok()) start = info->start_time;
    }
    // Unknown start times keep their listing order, after the known ones.
    by_start.emplace_back(start > 0 ? start : std::numeric_limits<int64_t>::max(), entry.name);
  }
  std::stable_sort(by_start.begin(), by_start.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [start, name] : by_start) opened->snapshot_names_.push_back(std::move(name));
  return std::shared_ptr<const OpenRepository>(std::move(opened));
}

}  // namespace rfs::python
