// The snapshot repository options shared by the tools that read snapshots, with the Java tools'
// names:
//   --snapshot-local-dir DIR      a local folder (--file-system-repo-path is an alias)
//   --repo-uri URI                file:///path, a path, or s3://bucket/prefix
//   --s3-repo-uri s3://...        the Java tools' name for an S3 repository
//   --s3-region R, --s3-endpoint URL (alias --endpoint): where the bucket is; a custom endpoint
//                                 (MinIO, LocalStack, ...) is addressed path-style
//   --s3-local-dir, --local-dir   accepted and ignored: S3 repositories are read in place
//   --gcs-repo-uri gs://...       a Google Cloud Storage repository, with --gcs-endpoint URL
//   --azure-repo-uri az://...     an Azure Blob Storage repository, with --azure-account NAME and
//                                 --azure-endpoint URL
#pragma once

#include <string>

#include <boost/program_options.hpp>

#include "rfs/migration/tools.hpp"

#include "absl/status/statusor.h"

namespace rfs::apps {

namespace po = boost::program_options;

void AddRepositoryOptions(po::options_description& options);

/// A folder, file:///path, s3://bucket/prefix (with the S3 region and endpoint options),
/// gs://bucket/prefix (with --gcs-endpoint) or az://container/prefix (with --azure-account and
/// --azure-endpoint).
absl::StatusOr<migration::RepositoryLocation> LocationOf(const std::string& uri,
                                                         const po::variables_map& vm);

inline constexpr const char* kRepositoryOptionNames[] = {
    "snapshot-local-dir", "file-system-repo-path", "repo-uri",
    "s3-repo-uri",        "gcs-repo-uri",          "azure-repo-uri"};

/// True when one of the repository options is given.
bool HasRepositoryOption(const po::variables_map& vm);

/// The repository named by the options; InvalidArgument when none or several are given or the
/// URI scheme is not supported.
absl::StatusOr<migration::RepositoryLocation> RepositoryOption(const po::variables_map& vm);

/// --solr-collection and --solr-backup-id: which collection and point of a Solr backup to read
/// (with --source-version "SOLR N").
void AddSolrBackupOptions(po::options_description& options);

/// With a --source-version naming Solr ("SOLR 9"; 6-9), `location` becomes Solr backup
/// `backup_name` of the location (docs/solr.md). InvalidArgument for a Solr source without a
/// backup name, or Solr's options without it.
absl::Status ApplySolrSource(const po::variables_map& vm, const std::string& source_version,
                             const std::string& backup_name,
                             migration::RepositoryLocation& location);

}  // namespace rfs::apps
