// SnapshotCreator: takes the snapshot that rfs then migrates from, on the SOURCE cluster.
//
// rfs reads a snapshot repository instead of the source cluster, so a migration starts by
// snapshotting the source into a repository rfs can read: a shared file system (`fs`) or S3
// (`s3`). This is the library behind the `CreateSnapshot` tool (the opensearch-migrations Java
// tool of the same name): register the repository (PUT /_snapshot/<repo>), start the snapshot
// (PUT /_snapshot/<repo>/<snap>?wait_for_completion=false) and poll it
// (GET /_snapshot/<repo>/<snap>/_status for shard and byte progress, then
// GET /_snapshot/<repo>/<snap> for the final state and shard failures) until it finishes.
//
// Errors follow the rfs error model (see OpenSearchClient's StatusFromResponse): bad repository
// settings (OpenSearch's 500 repository_exception, whose `caused_by` says what is wrong) are
// InvalidArgument, a snapshot name in use is AlreadyExists, other bad names InvalidArgument, a
// missing repository, snapshot or concrete index NotFound; 5xx/transport failures Unavailable.
// A snapshot that ends FAILED or PARTIAL is FailedPrecondition naming its failed shards (fix the
// source cluster or repository and take a new snapshot); a wait that runs out of time is
// DeadlineExceeded. Messages carry the request and OpenSearch's error, never credentials.
//
// Thread safety: the methods may be called concurrently; the client must outlive the creator.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <boost/json/object.hpp>

#include "rfs/core/clock.hpp"
#include "rfs/net/http_transport.hpp"
#include "rfs/opensearch/client.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::opensearch {

/// The Java tool's default repository name.
inline constexpr std::string_view kDefaultSnapshotRepositoryName = "migration_assistant_repo";

/// An `fs` repository: `location` must be listed in the source nodes' `path.repo`.
struct FileSystemRepositoryConfig {
  std::string location;
};

/// An `s3` repository (the source needs the repository-s3 plugin).
struct S3RepositoryConfig {
  /// "s3://bucket" or "s3://bucket/base/path".
  std::string uri;
  /// AWS region of the bucket (required).
  std::string region;
  /// Custom S3 endpoint, e.g. "http://localhost:9000" (optional).
  std::string endpoint;
  /// IAM role the cluster assumes to reach the bucket (optional).
  std::string role_arn;
  /// Upload with plain bodies instead of aws-chunked ones, for S3-compatible servers that store
  /// the chunk signatures as data (s3rver); the repository setting disable_chunked_encoding.
  bool disable_chunked_encoding = false;
};

/// A `gcs` repository (the source needs the repository-gcs plugin). The plugin takes its
/// credentials and any custom endpoint from the source's gcs.client.<client>.* settings, not
/// from the repository.
struct GcsRepositoryConfig {
  std::string bucket;
  /// Without leading or trailing '/'; empty for the bucket's root.
  std::string base_path;
};

struct RepositoryConfig {
  std::variant<FileSystemRepositoryConfig, S3RepositoryConfig, GcsRepositoryConfig> storage;
  /// Per-node snapshot throttle (`max_snapshot_bytes_per_sec` = "<n>mb"); unset = the
  /// cluster's default. Must be positive when set.
  std::optional<int64_t> max_snapshot_rate_mb_per_node;
  /// Repository `compress` setting (metadata compression).
  bool compress = false;
};

struct S3Location {
  std::string bucket;
  /// Without leading or trailing '/'; empty for the bucket's root.
  std::string base_path;
};

/// Splits "s3://bucket/base/path". InvalidArgument naming the URI when it does not start with
/// "s3://", has no bucket or the bucket name is not a valid S3 bucket name.
absl::StatusOr<S3Location> ParseS3Uri(std::string_view uri);

/// The body of PUT /_snapshot/<repo> for `config` ({"type":..., "settings":{...}}).
/// InvalidArgument for an empty location, a bad S3 URI, a missing region or a non-positive rate.
absl::StatusOr<boost::json::object> RepositoryBody(const RepositoryConfig& config);

struct SnapshotRequest {
  std::string name;
  /// Indices to include; entries may be comma lists and wildcards ("logs-*"). Empty = every
  /// index. A missing concrete index fails the request unless `ignore_unavailable`.
  std::vector<std::string> indices;
  /// Include templates, persistent settings and other cluster metadata (rfs migrates templates
  /// from it).
  bool include_global_state = true;
  bool ignore_unavailable = false;
};

enum class SnapshotState { kInProgress, kSuccess, kPartial, kFailed };

/// "IN_PROGRESS", "SUCCESS", "PARTIAL", "FAILED".
std::string_view SnapshotStateName(SnapshotState state);

/// One observation of a running snapshot (from its `_status`).
struct SnapshotProgress {
  SnapshotState state = SnapshotState::kInProgress;
  /// As the cluster reported it, e.g. "STARTED" (the `_status` API's names).
  std::string raw_state;
  int64_t shards_total = 0;
  int64_t shards_done = 0;
  int64_t shards_failed = 0;
  uint64_t bytes_total = 0;
  uint64_t bytes_processed = 0;
  uint64_t files_total = 0;
  uint64_t files_processed = 0;
  /// GetProgress: the cluster's `stats.time_in_millis`. WaitForSnapshot: time since the wait
  /// began, on its clock.
  std::chrono::milliseconds elapsed{0};
  /// 1-based poll number within WaitForSnapshot (0 from GetProgress).
  int poll = 0;
  /// Processed share of the bytes, 0..1 (shards when the byte total is not known yet).
  double fraction() const;
};

struct SnapshotShardFailure {
  std::string index;
  int64_t shard_id = -1;
  std::string reason;
};

/// A snapshot as GET /_snapshot/<repo>/<snap> describes it.
struct SnapshotInfo {
  std::string name;
  std::string uuid;
  SnapshotState state = SnapshotState::kInProgress;
  std::vector<std::string> indices;
  bool include_global_state = false;
  int64_t shards_total = 0;
  int64_t shards_successful = 0;
  int64_t shards_failed = 0;
  std::vector<SnapshotShardFailure> failures;
  /// Why a FAILED snapshot failed (empty otherwise).
  std::string reason;
  int64_t start_time_ms = 0;
  int64_t end_time_ms = 0;
};

struct WaitOptions {
  std::chrono::milliseconds poll_interval{1000};
  /// Zero waits without a limit.
  std::chrono::milliseconds timeout{0};
  /// Called after every poll, including the last (which carries the final state).
  std::function<void(const SnapshotProgress&)> on_progress;
  /// Transient poll failures (Unavailable, ResourceExhausted, DeadlineExceeded) tolerated in a
  /// row before the wait gives up with the last one.
  int max_consecutive_poll_errors = 3;
};

class SnapshotCreator {
 public:
  explicit SnapshotCreator(OpenSearchClient& client, std::string repository_name = std::string(
                                                         kDefaultSnapshotRepositoryName));

  const std::string& repository_name() const { return repository_name_; }

  /// PUT /_snapshot/<repo> (creates or updates the registration; OpenSearch verifies it).
  absl::Status RegisterRepository(const RepositoryConfig& config);
  /// PUT /_snapshot/<repo>/<name>?wait_for_completion=false; returns once the cluster accepted
  /// the snapshot.
  absl::Status StartSnapshot(const SnapshotRequest& request);
  /// GET /_snapshot/<repo>/<name>/_status.
  absl::StatusOr<SnapshotProgress> GetProgress(std::string_view snapshot);
  /// GET /_snapshot/<repo>/<name>.
  absl::StatusOr<SnapshotInfo> GetSnapshot(std::string_view snapshot);
  /// Polls until the snapshot finishes (sleeping on `clock` between polls). Returns its info
  /// when it ends SUCCESS; FailedPrecondition naming the failed shards when it ends FAILED or
  /// PARTIAL; DeadlineExceeded when `options.timeout` passes first.
  absl::StatusOr<SnapshotInfo> WaitForSnapshot(std::string_view snapshot, core::IClock& clock,
                                               const WaitOptions& options = {});

 private:
  absl::StatusOr<net::HttpResponse> Send(std::string method, std::string target,
                                         std::string body = "");
  std::string SnapshotPath(std::string_view snapshot) const;

  OpenSearchClient& client_;
  std::string repository_name_;
};

}  // namespace rfs::opensearch
