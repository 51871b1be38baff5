// RunWorker: the seed's RFS Worker. One kind of process runs the whole migration; any number of
// copies start together from an empty store, and any of them may die at any moment. Each asks
// "given the records in the store, what should I do now?" and walks the phases:
//
//   1 snapshot   with a source cluster, create the snapshot (a name every worker derives from its
//                configuration unless --snapshot-name is given) and wait for it; without one,
//                check that the snapshot is in the repository
//   2 metadata   the templates, in order (legacy, component, index), those allowed and not on
//                the target already
//   3 indices    one record per index (set up once), each index created if missing, never
//                modified
//   4 documents  the shard work items (DocumentMigrationWorker: leases, successors, cursors)
//   5 verify     per index, the live documents of the snapshot against the target's _count after
//                a refresh, and a sample fetched by _id compared with the snapshot's _source
//
// The records (the seed's coordinating metadata store) are work items of their own, in the same
// backend as the shard items but apart from them (a table, index or console space of their own):
// a record is NOT_STARTED until leased, IN_PROGRESS while leased, COMPLETED when complete. Each
// phase, and each index of phase 3, runs under the lease of its record, renewed by a health
// thread; if the lease is lost the health thread calls `on_lease_lost` (the app ends the
// process). A worker that finds a record leased by another waits a short random time and looks
// again. A record acquired more than `max_attempts` times, or whose work fails for good, makes the
// migration FAILED: the first failure is recorded with its reason, and every worker that looks
// ends with core::kExitPhaseFailed naming it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "rfs/core/exit_codes.hpp"
#include "rfs/migration/metadata_migration.hpp"
#include "rfs/migration/tools.hpp"
#include "rfs/opensearch/snapshots.hpp"

#include "absl/status/status.h"

namespace rfs::migration {

enum class WorkerPhase { kSnapshot, kMetadata, kIndices, kDocuments, kVerify };
/// "snapshot", "metadata", "indices", "documents", "verify".
std::string_view ToString(WorkerPhase phase);

struct RfsWorkerEvent {
  WorkerPhase phase = WorkerPhase::kSnapshot;
  /// "started", "waiting", "progress", "completed", "skipped", "failed".
  std::string kind;
  /// The record or work item concerned, e.g. "index logs-1".
  std::string item;
  std::string message;
};

/// One index in the verification report.
struct IndexVerification {
  std::string index;
  /// Not selected by the allowlist (or a system index): not migrated, by design.
  bool excluded = false;
  /// Live documents the snapshot holds (read from every shard; not read for excluded indices).
  uint64_t expected = 0;
  /// The target's count after a refresh (the embedded target: documents in its bulk files).
  uint64_t migrated = 0;
  /// Documents in the failed-documents folder for this index.
  uint64_t failed = 0;
  /// expected - migrated - failed, when positive.
  uint64_t missing = 0;
  /// Documents fetched by _id and compared with the snapshot's _source.
  uint64_t sampled = 0;
  std::vector<std::string> sample_mismatches;
  /// `--preserve-version`: sampled documents whose `_source` differs because the target holds
  /// them in a higher `_version` than the snapshot's (written there since): not mismatches.
  uint64_t sample_newer = 0;
};

struct VerifyReport {
  std::vector<IndexVerification> indices;
  /// True when no selected index misses documents or differs in the sample.
  bool ok() const;
  std::string ToText() const;
  boost::json::object ToJson() const;
};

struct RfsWorkerOptions {
  /// The repository, target, coordination backend, worker id, document options and snapshot
  /// name (`documents.migration.snapshot_name`) of the run.
  DocumentsToolOptions documents;
  /// Allowlists and the multi-type policy for templates and indices (the mode is migrate).
  MetadataMigrationOptions metadata;
  /// Phase 1 creates the snapshot on this cluster when set.
  std::optional<net::HttpTransportOptions> source;
  std::string source_repository_name = std::string(opensearch::kDefaultSnapshotRepositoryName);
  /// How the source registers the repository (from --snapshot-local-dir or --s3-repo-uri).
  std::optional<opensearch::RepositoryConfig> source_repository;
  /// Acquisitions of one record before the migration is marked FAILED (grants given back after
  /// transient errors or a stop do not count).
  int max_attempts = 3;
  /// Clears the migration's FAILED mark before running (after its cause is fixed): the phases go
  /// on where they stopped, each record and work item with max_attempts more attempts.
  bool reset_failed = false;
  std::chrono::milliseconds record_lease{std::chrono::minutes(5)};
  std::chrono::milliseconds snapshot_poll_interval{std::chrono::seconds(1)};
  /// Documents per index fetched by _id in the verify phase.
  int verify_sample = 20;
  bool skip_verify = false;
  /// Only verify (no records, no leases): the report and its outcome.
  bool verify_only = false;
  std::function<void(const RfsWorkerEvent&)> on_event;
  /// Called from the health thread when the lease of the record being worked on is lost or ran
  /// out; the app ends the process there (the work under it must stop).
  std::function<void(const std::string& reason)> on_lease_lost;
};

struct RfsWorkerResult {
  absl::Status status;
  /// 0 every phase COMPLETED, core::kExitPhaseFailed, 2 stopped by a signal, 5 snapshot unreadable,
  /// 6 documents this worker could not migrate, 1 other failures, 64 usage.
  int exit_code = 0;
  std::string worker_id;
  std::string snapshot_name;
  /// Set when the migration is FAILED: the phase and item and why.
  std::string failure;
  /// This worker's document counts.
  WorkerSummary documents;
  std::string failed_documents_path;
  /// The verification this worker ran (another worker may have run it).
  std::optional<VerifyReport> verify;
};

/// The snapshot name every worker with the same configuration derives: "rfs-" and 12 hex digits
/// of a hash of the source, repository, session and allowlist.
std::string DeriveSnapshotName(const RfsWorkerOptions& options);

RfsWorkerResult RunWorker(RfsWorkerOptions options);

}  // namespace rfs::migration
