// Opening a snapshot repository the way the command-line tools do (a folder, file://, s3://,
// gs:// or az://), and the snapshot and index lookups the module exposes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rfs/snapshot/models.hpp"
#include "rfs/snapshot/repository.hpp"

#include "absl/status/statusor.h"

namespace rfs::python {

struct RepositoryOptions {
  /// S3: the bucket's region (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's region).
  std::optional<std::string> region;
  /// A custom endpoint for s3:// (path-style), gs:// or az:// (e.g. an emulator's).
  std::optional<std::string> endpoint;
  /// S3: the AWS profile of the shared credentials and config files (default: AWS_PROFILE).
  std::optional<std::string> profile;
};

/// An open repository; the snapshots and indices it describes stay valid while it lives.
class OpenRepository {
 public:
  static absl::StatusOr<std::shared_ptr<const OpenRepository>> Open(
      const std::string& path_or_uri, const RepositoryOptions& options);

  const snapshot::SnapshotRepository& repository() const { return *repository_; }
  const std::string& location() const { return location_; }
  /// Snapshot names, oldest first (by start time; listing order where a start time is unknown).
  const std::vector<std::string>& snapshot_names() const { return snapshot_names_; }

 private:
  std::unique_ptr<snapshot::SnapshotRepository> repository_;
  std::string location_;
  std::vector<std::string> snapshot_names_;
};

}  // namespace rfs::python
