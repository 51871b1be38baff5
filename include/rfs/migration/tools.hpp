// One entry point per tool: everything a tool does between parsing its options and printing its
// result (opening the repository and the connections, wiring targets, coordinators and sinks,
// running, and mapping the outcome to the Java tools' exit codes), so that the command-line
// mains stay thin and embedders can run a tool in-process.
//
// Exit codes follow the Java tools: see ExitCode(WorkerOutcome) for DocumentsFromSnapshotMigration;
// core::kExitFailure and core::kExitUsage are shared by every tool.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "rfs/cloud/azure_repo.hpp"
#include "rfs/cloud/gcs_repo.hpp"
#include "rfs/core/exit_codes.hpp"
#include "rfs/migration/document_migration_worker.hpp"
#include "rfs/migration/failed_document_stream.hpp"
#include "rfs/migration/metadata_migration.hpp"
#include "rfs/migration/redrive.hpp"
#include "rfs/migration/worker_metrics.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/opensearch/snapshots.hpp"
#include "rfs/s3/s3_repo.hpp"
#include "rfs/snapshot/repository.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::migration {

/// InvalidArgument for a --coordinator-db that is a URL of a database rfs does not speak (which
/// would otherwise be opened as a SQLite file of that name); a path or postgresql:// URL is OK.
absl::Status ValidateCoordinatorDb(std::string_view db);

/// Where a snapshot repository is: a local folder (an `fs` repository or a copy of any other),
/// `file:///path`, or one read in place: `s3://bucket/prefix` with `s3`'s region and endpoint,
/// `gs://bucket/prefix` with `gcs`'s endpoint, `az://container/prefix` with `azure`'s account and
/// endpoint.
struct RepositoryLocation {
  std::string uri;
  s3::S3Options s3;
  cloud::GcsOptions gcs;
  cloud::AzureOptions azure;
  /// A Solr backup location rather than a snapshot repository (--source-version "SOLR N"):
  /// backup `backup_name` is read as a repository holding one snapshot of that name, whose one
  /// index is the collection (rfs/solr/documents.hpp).
  struct SolrBackup {
    std::string backup_name;
    std::optional<std::string> collection;  ///< --solr-collection
    std::optional<int> backup_id;           ///< --solr-backup-id (default: the newest point)
    std::string schema_file;  ///< --solr-schema: a local schema instead of the backup's
  };
  std::optional<SolrBackup> solr;
};

/// The in-place reader of `uri` (s3://, gs://, az://) with the location's options; nullptr for a
/// folder or file:// URI.
absl::StatusOr<std::shared_ptr<snapshot::ISourceRepo>> OpenCloudRepo(
    std::string_view uri, const RepositoryLocation& location);

/// Opens the snapshot repository at `location`, or its Solr backup as one (location.solr).
absl::StatusOr<std::unique_ptr<snapshot::SnapshotRepository>> OpenSnapshotRepository(
    const RepositoryLocation& location);

/// "<host>-<pid>-<random>": unique among concurrent workers.
std::string DefaultWorkerId();

// --- DocumentsFromSnapshotMigration ----------------------------------------------------------

struct DocumentsToolOptions {
  RepositoryLocation repository;
  /// --source-version: compared with what the snapshot says; a mismatch is a warning (the reader
  /// goes by the files).
  std::string source_version;
  /// Exactly one target: the embedded default (bulk NDJSON files under `output_dir`, coordinated
  /// through `output_dir`/.rfs/coordination.sqlite) or a cluster.
  std::string output_dir;
  std::optional<net::HttpTransportOptions> target;
  /// Gzip bulk bodies when the target accepts compressed requests (--disable-compression).
  bool target_compression = true;
  /// Where work items live when `coordinator_db` is empty: this cluster's
  /// `.migrations_working_state[_<session_name>]` index, else the target's.
  std::optional<net::HttpTransportOptions> coordinator;
  /// A SQLite file shared by the workers (default with `output_dir`).
  std::string coordinator_db;
  /// Coordinate through a migration console at this URL instead, in session `session_name`,
  /// with `console_token`; whatever the target.
  std::string console_url;
  std::string console_token;
  /// PEM CA certificates to trust for an https:// console (--console-cacert).
  std::string console_ca_cert_file;
  std::string session_name;
  /// Default: `output_dir`/.rfs/failed-documents, or ./failed-documents with a cluster target.
  std::string failed_documents_dir;
  /// Failed documents to S3 instead (the Java tool's failed-document stream); its worker id is
  /// set from `worker_id`.
  std::optional<FailedDocumentStreamOptions> failed_document_stream;
  /// Default: DefaultWorkerId().
  std::string worker_id;
  DocumentMigrationOptions migration;
  /// --metrics-port and --otel-metrics-collector-endpoint.
  MetricsOptions metrics;
  /// Non-fatal findings, e.g. a --source-version that differs from the snapshot's.
  std::function<void(const std::string&)> on_warning;
  /// --redrive-failed-documents: instead of migrating, send the failed documents recorded here
  /// (a folder or s3://bucket/prefix) again (rfs/migration/redrive.hpp). The repository is then
  /// not read.
  std::string redrive_source;
  /// One line of progress per redriven file.
  std::function<void(const std::string&)> on_redrive_progress;
  /// --tune-target / --no-tune-target (with --target-host; never for a delta): indices the run
  /// created empty get 0 replicas and no refresh during their load, put back when their last item
  /// is done. Unset: the tool's default (RfsWorker tunes; DocumentsFromSnapshotMigration does
  /// not, and with it counts as created empty an index on the target with no document when the
  /// shard setup runs).
  std::optional<bool> tune_target;
  /// An index tuned ("tuned"), restored ("restored") or left untuned ("tuning_failed"), and how.
  std::function<void(const std::string& kind, const std::string& index, const std::string& what)>
      on_tuning;
  /// A test hook: called just before a tuned index's original settings are put back.
  std::function<void(const std::string& index)> before_settings_restore;
};

struct DocumentsToolResult {
  /// OK, or the error that ended the run (the summary still counts the work done before it).
  absl::Status status;
  int exit_code = 0;
  std::string worker_id;
  WorkerSummary summary;
  /// The failed-documents file (written only when a document failed), or the S3 location of
  /// the failed-document stream.
  std::string failed_documents_path;
  /// Set for a redrive.
  std::optional<RedriveSummary> redrive;
};

DocumentsToolResult RunDocumentsFromSnapshotMigration(DocumentsToolOptions options);

// --- CreateSnapshot --------------------------------------------------------------------------

struct CreateSnapshotToolOptions {
  net::HttpTransportOptions source;
  std::string repository_name = std::string(opensearch::kDefaultSnapshotRepositoryName);
  opensearch::RepositoryConfig repository;
  opensearch::SnapshotRequest snapshot;
  /// Start the snapshot and return without waiting for it.
  bool no_wait = false;
  opensearch::WaitOptions wait;
};

struct CreateSnapshotToolResult {
  absl::Status status;
  int exit_code = 0;
  std::string endpoint;
  /// The finished snapshot (when waited for and it succeeded).
  std::optional<opensearch::SnapshotInfo> info;
  std::chrono::duration<double> elapsed{0};
};

/// Checks the options (core::kExitUsage when they are bad), registers the repository, starts the
/// snapshot and, unless `no_wait`, waits for it: exit 0 on SUCCESS, core::kExitFailure otherwise.
CreateSnapshotToolResult RunCreateSnapshot(CreateSnapshotToolOptions options);

// --- MetadataMigration -----------------------------------------------------------------------

struct MetadataToolOptions {
  RepositoryLocation repository;
  /// Empty: the newest snapshot.
  std::string snapshot_name;
  /// A live cluster to read the metadata from instead of a snapshot (`--source-host`, as the
  /// Java tool reads one: migration/cluster_metadata.hpp); `repository` is then not read.
  std::optional<net::HttpTransportOptions> source;
  /// A cluster to migrate to (or to read the version of, for evaluate).
  std::optional<net::HttpTransportOptions> target;
  MetadataMigrationOptions migration;
};

struct MetadataToolResult {
  absl::Status status;
  /// 0 every item fine, core::kExitFailure an item failed or the target failed,
  /// core::kExitSnapshotUnreadable, core::kExitUsage.
  int exit_code = 0;
  std::optional<MetadataReport> report;
};

MetadataToolResult RunMetadataMigration(MetadataToolOptions options);

}  // namespace rfs::migration
