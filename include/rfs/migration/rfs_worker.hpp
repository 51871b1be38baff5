// RunWorker: the seed's RFS Worker. One kind of process runs the whole migration; any number of
// copies start together from an empty store, and any of them may die at any moment. Each asks
// "given the records in the store, what should I do now?" and walks the phases:
//
//   1 snapshot   with a source cluster, create the snapshot (a name every worker derives from its
//                configuration unless --snapshot-name is given) and wait for it; without one,
//                check that the snapshot is in the repository
//   2 metadata   the templates, in order (legacy, component, index), those allowed and not on
//                the target already
//   3 indices    one record per index (set up once), each index created if missing (an index
//                created here is recorded as created empty: phase 4 may tune it), never
//                modified
//   4 documents  the shard work items (DocumentMigrationWorker: leases, successors, cursors);
//                with target tuning (on unless `documents.tune_target` is false), each index
//                phase 3 created gets 0 replicas and refresh -1 before its first bulk and its
//                original settings back, with a refresh, once its last item is done (a worker
//                that fails or is stopped puts back the settings of every tuned index)
//   5 verify     per index, the live documents of the snapshot against the target's _count after
//                a refresh, and a sample fetched by _id compared with the snapshot's _source;
//                with `verify_all`, every document (below)
//
// Full verification (`verify_all`) is a round of work items of its own: the source shards, split
// as the migration splits them, in a coordination space of the round's own beside the
// migration's ("verify_items_N"), leased and resumable, shared by every worker that takes part.
// Each item is read from the snapshot as the migration reads it (rebuilt, transformed) and sent to
// a verifying sink instead of the target: it fetches the same ids from the target (`_mget` with
// routing; a data stream searched by `ids`) and compares each `_source`. Every document not
// equal is recorded as a failed document (verify_missing, verify_different,
// verify_not_comparable) in the round's own folder, "verify-round-N" below the failed-documents
// folder (or the S3 stream's session "<session>-verify-round-N"), which
// `--redrive-failed-documents` takes as it is. Rounds are records: "verify_round__N" for each
// round begun and "verify_round_done__N" once reported; a worker joins the highest round not yet
// reported, or begins the next (so `--verify-only --verify-all` after a redrive verifies afresh,
// and copies started together share one). The report adds up the round's items (the documents
// each delivered, from the store) and its records (per index, deduplicated by `_id`).
//
// The records (the seed's coordinating metadata store) are work items of their own, in the same
// backend as the shard items but apart from them (a table, index or console space of their own):
// a record is NOT_STARTED until leased, IN_PROGRESS while leased, COMPLETED when complete. Each
// phase, and each index of phase 3, runs under the lease of its record, renewed by a health
// thread; if the lease is lost, the phase's requests are refused from then on (the work under
// it stops writing), `on_lease_lost` is told, and the worker ends with exit 2. A worker that finds
// a record leased by another waits a short random time and looks again. A record acquired more than
// `max_attempts` times, or whose work fails for good, makes the migration FAILED: the first failure
// is recorded with its reason, and every worker that looks ends with core::kExitPhaseFailed naming
// it.
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
  /// Full verification (VerifyReport::round > 0): `expected` counts the documents the round's
  /// items delivered for this index (as the migration would send them), `migrated` the target's
  /// `_count`, `missing` those not on the target, and:
  uint64_t equal = 0;
  uint64_t different = 0;
  /// Its target index keeps no `_source` or leaves fields out of it (or the document could not
  /// be read or transformed): never counted as equal.
  uint64_t not_comparable = 0;
  /// `--preserve-version`: held on the target in a higher `_version` (as the verifying workers
  /// counted them; a worker that died before recording its count leaves them among `equal`).
  uint64_t already_newer = 0;
  /// Documents on the target beyond those found equal, different or newer (`_count` after a
  /// refresh minus them), when positive.
  uint64_t extra = 0;
  /// What was seen about the index as a whole, e.g. that it is not on the target.
  std::string note;
};

struct VerifyReport {
  std::vector<IndexVerification> indices;
  /// The round of a full verification (`verify_all`); 0 for the sample.
  int round = 0;
  /// Full verification: where the round's records of documents not equal are (the folder or
  /// S3 location `--redrive-failed-documents` takes). A folder is made only with its first
  /// record: empty when the round recorded nothing there.
  std::string records;
  /// True when no selected index misses documents or differs in the sample; for a full
  /// verification, when none has documents missing, different, not comparable or extra.
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
  /// Only verify (no records, no leases; with `verify_all`, a round's records and items): the
  /// report and its outcome.
  bool verify_only = false;
  /// Only put back the settings of every index this store's records say is tuned and not yet
  /// restored (a killed worker's; rfs/coordination/target_tuning_records.hpp): exit 0 when every
  /// one is restored.
  bool restore_target_settings = false;
  /// Phase 5 (of a full run, or alone with `verify_only`) checks every document instead of the
  /// sample: a round of work items (see above). Needs a target cluster.
  bool verify_all = false;
  /// With `verify_all`: the round's report also scans every `_id` of each target index and names
  /// the documents the source does not hold (recorded as deletes a redrive sends), instead of
  /// counting them from `_count`. The reporting worker reads the source's ids once more for it
  /// (8 bytes of memory per document).
  bool verify_scan_extra = false;
  std::function<void(const RfsWorkerEvent&)> on_event;
  /// Called from the health thread when the lease of the record being worked on is lost or ran
  /// out, to say so (may be empty). The work under it stops by itself: every later request of
  /// the phase is refused, the record is left alone and RunWorker returns exit code 2.
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
