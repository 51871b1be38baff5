#include "repository.hpp"

#include <cstdlib>

#include "rfs/cloud/azure_repo.hpp"
#include "rfs/cloud/gcs_repo.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/migration/solr_migration.hpp"
#include "rfs/net/aws_credentials.hpp"

#include "common/options.hpp"

namespace rfs::apps {

void AddRepositoryOptions(po::options_description& options) {
  options.add_options()("snapshot-local-dir", po::value<std::string>(),
                        "folder of the snapshot repository (an `fs` repository, or a local copy "
                        "of any other)")("file-system-repo-path", po::value<std::string>(),
                                         "alias of --snapshot-local-dir")(
      "repo-uri", po::value<std::string>(),
      "the repository as file:///path, a path, s3://bucket/prefix, gs://bucket/prefix or "
      "az://container/prefix (the last three read in place)")(
      "s3-repo-uri", po::value<std::string>(), "an S3 repository: s3://bucket/prefix")(
      "s3-region", po::value<std::string>(),
      "the S3 bucket's region, e.g. us-east-1 (default: AWS_REGION, AWS_DEFAULT_REGION, "
      "the AWS profile's region)")(
      "s3-endpoint", po::value<std::string>(),
      "a custom S3 endpoint, e.g. http://minio:9000 (path-style addressing)")(
      "endpoint", po::value<std::string>(), "alias of --s3-endpoint")(
      "gcs-repo-uri", po::value<std::string>(),
      "a Google Cloud Storage repository: gs://bucket/prefix (read in place)")(
      "gcs-endpoint", po::value<std::string>(),
      "a custom GCS endpoint, e.g. http://127.0.0.1:4443 (default: STORAGE_EMULATOR_HOST, "
      "else https://storage.googleapis.com)")(
      "azure-repo-uri", po::value<std::string>(),
      "an Azure Blob Storage repository: az://container/prefix (read in place)")(
      "azure-account", po::value<std::string>(),
      "the Azure storage account (default: the one of AZURE_STORAGE_CONNECTION_STRING, "
      "else AZURE_STORAGE_ACCOUNT)")(
      "azure-endpoint", po::value<std::string>(),
      "a custom Azure Blob endpoint, e.g. Azurite's http://127.0.0.1:10000/devstoreaccount1 or "
      "a sovereign cloud's (default: https://ACCOUNT.blob.core.windows.net)")(
      "s3-local-dir", po::value<std::string>(),
      "accepted for compatibility and ignored: S3 repositories are read in place, nothing is "
      "downloaded")("local-dir", po::value<std::string>(), "alias of --s3-local-dir (ignored)")(
      "gcs-local-dir", po::value<std::string>(), "alias of --s3-local-dir (ignored)");
}

absl::StatusOr<migration::RepositoryLocation> LocationOf(const std::string& uri,
                                                         const po::variables_map& vm) {
  migration::RepositoryLocation location;
  location.uri = uri;
  if (location.uri.starts_with("s3://")) {
    auto parsed = s3::S3Uri::Parse(location.uri);
    if (!parsed.ok()) return parsed.status();
    location.s3.region =
        net::ResolveAwsRegion(vm.count("s3-region") ? vm["s3-region"].as<std::string>() : "");
    for (const char* name : {"s3-endpoint", "endpoint"}) {
      if (vm.count(name)) location.s3.endpoint = vm[name].as<std::string>();
    }
    if (location.s3.region.empty() && location.s3.endpoint.empty()) {
      return absl::InvalidArgumentError(
          core::StrCat(location.uri,
                       " needs --s3-region (or AWS_REGION, AWS_DEFAULT_REGION, a region in the AWS "
                       "profile, or --s3-endpoint for a custom store)"));
    }
  } else if (location.uri.starts_with("gs://")) {
    auto parsed = cloud::ParseGcsUri(location.uri);
    if (!parsed.ok()) return parsed.status();
    if (vm.count("gcs-endpoint")) {
      location.gcs.endpoint = vm["gcs-endpoint"].as<std::string>();
      auto endpoint = cloud::EndpointUrl::Parse(location.gcs.endpoint, "--gcs-endpoint");
      if (!endpoint.ok()) return endpoint.status();
    }
  } else if (location.uri.starts_with("az://")) {
    auto parsed = cloud::ParseAzureUri(location.uri);
    if (!parsed.ok()) return parsed.status();
    if (vm.count("azure-account")) location.azure.account = vm["azure-account"].as<std::string>();
    if (vm.count("azure-endpoint")) {
      location.azure.endpoint = vm["azure-endpoint"].as<std::string>();
      auto endpoint = cloud::EndpointUrl::Parse(location.azure.endpoint, "--azure-endpoint");
      if (!endpoint.ok()) return endpoint.status();
    }
    const char* account = std::getenv("AZURE_STORAGE_ACCOUNT");
    const char* connection = std::getenv("AZURE_STORAGE_CONNECTION_STRING");
    if (location.azure.account.empty() && location.azure.endpoint.empty() &&
        (account == nullptr || *account == '\0') &&
        (connection == nullptr || *connection == '\0')) {
      return absl::InvalidArgumentError(core::StrCat(
          location.uri,
          " needs --azure-account (or AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_CONNECTION_STRING, or "
          "--azure-endpoint)"));
    }
  } else if (location.uri.find("://") != std::string::npos &&
             !location.uri.starts_with("file://")) {
    return absl::InvalidArgumentError(
        core::StrCat("repository URI '", location.uri,
                     "' is not supported: use a path, file:///path, s3://bucket/prefix, "
                     "gs://bucket/prefix or az://container/prefix"));
  }
  if (location.uri.empty() || location.uri == "file://") {
    return absl::InvalidArgumentError("the repository folder is empty");
  }
  return location;
}

bool HasRepositoryOption(const po::variables_map& vm) {
  for (const char* name : kRepositoryOptionNames) {
    if (vm.count(name)) return true;
  }
  return false;
}

absl::StatusOr<migration::RepositoryLocation> RepositoryOption(const po::variables_map& vm) {
  std::string uri;
  int given = 0;
  for (const char* name : kRepositoryOptionNames) {
    if (!vm.count(name)) continue;
    ++given;
    uri = vm[name].as<std::string>();
  }
  if (given == 0) {
    return absl::InvalidArgumentError(
        "the snapshot repository is missing: give --snapshot-local-dir DIR or --repo-uri URI "
        "(file:///path, s3://bucket/prefix, gs://bucket/prefix or az://container/prefix)");
  }
  if (given > 1) {
    return absl::InvalidArgumentError(
        "give only one of --snapshot-local-dir, --file-system-repo-path, --repo-uri, "
        "--s3-repo-uri, --gcs-repo-uri, --azure-repo-uri");
  }
  if (vm.count("s3-repo-uri") && !uri.starts_with("s3://")) {
    return absl::InvalidArgumentError("--s3-repo-uri takes s3://bucket/prefix");
  }
  if (vm.count("gcs-repo-uri") && !uri.starts_with("gs://")) {
    return absl::InvalidArgumentError("--gcs-repo-uri takes gs://bucket/prefix");
  }
  if (vm.count("azure-repo-uri") && !uri.starts_with("az://")) {
    return absl::InvalidArgumentError("--azure-repo-uri takes az://container/prefix");
  }
  return LocationOf(uri, vm);
}

void AddSolrBackupOptions(po::options_description& options) {
  options.add_options()("solr-collection", po::value<std::string>(),
                        "Solr: the collection of a backup name that holds several")(
      "solr-backup-id", po::value<Bounded<int, 0, 1000000000>>(),
      "Solr: the point of an incremental backup (default: the newest)")(
      "solr-schema", po::value<std::string>(),
      "Solr: the schema file (managed-schema or schema.xml) to read the backup with instead of "
      "its own; needed for a standalone core backup, which keeps none");
}

absl::Status ApplySolrSource(const po::variables_map& vm, const std::string& source_version,
                             const std::string& backup_name,
                             migration::RepositoryLocation& location) {
  std::optional<int> major;
  if (!source_version.empty()) {
    RFS_ASSIGN_OR_RETURN(major, migration::ParseSolrSourceVersion(source_version));
  }
  if (!major) {
    if (vm.count("solr-collection") || vm.count("solr-backup-id") || vm.count("solr-schema")) {
      return absl::InvalidArgumentError(
          "--solr-collection, --solr-backup-id and --solr-schema need --source-version "
          "\"SOLR <major>\"");
    }
    return absl::OkStatus();
  }
  if (backup_name.empty()) {
    return absl::InvalidArgumentError(
        "a Solr source needs --snapshot-name: the name of the backup to read");
  }
  migration::RepositoryLocation::SolrBackup& solr = location.solr.emplace();
  solr.backup_name = backup_name;
  if (vm.count("solr-collection")) solr.collection = vm["solr-collection"].as<std::string>();
  if (vm.count("solr-backup-id")) {
    solr.backup_id = vm["solr-backup-id"].as<Bounded<int, 0, 1000000000>>().value;
  }
  if (vm.count("solr-schema")) solr.schema_file = vm["solr-schema"].as<std::string>();
  return absl::OkStatus();
}

}  // namespace rfs::apps
