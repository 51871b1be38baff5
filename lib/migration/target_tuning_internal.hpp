// Target tuning for the load (--tune-target / --no-tune-target): the ITargetTuning the tools give
// their DocumentMigrationWorker, over the target cluster and the workers' record space of the
// coordination store (rfs/coordination/target_tuning_records.hpp says what is kept there).
//
// Only an index this run created empty is tuned (RfsWorker's phase 3 records it as it creates it;
// DocumentsFromSnapshotMigration records the selected indices that exist with no document when
// its shard setup runs), never during a delta, and never an index that existed before. Before its
// first bulk: the original `number_of_replicas` and `refresh_interval` (or "not set") are kept in
// the store, then `number_of_replicas: 0` and `refresh_interval: -1` set (the replicas only when
// `auto_expand_replicas` does not decide them). When its last item is complete, whichever worker
// completes it puts the originals back (a setting that was not set goes back to the default)
// and refreshes the index. Each tuning and restore of an index runs under a lease on the index's
// lock record, so that a restore never crosses a tuning.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "rfs/coordination/work_coordinator.hpp"
#include "rfs/core/clock.hpp"
#include "rfs/migration/document_migration_worker.hpp"
#include "rfs/migration/tools.hpp"
#include "rfs/net/http_transport.hpp"
#include "rfs/opensearch/client.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "migration/documents_wiring_internal.hpp"

namespace rfs::migration::internal {

inline constexpr coordination::Duration kDefaultTuningLockLease = std::chrono::seconds(30);

struct TargetTuningOptions {
  /// DocumentsFromSnapshotMigration: at the shard setup, the selected indices that exist on the
  /// target with no document (and no tuning record) count as created empty by this run.
  bool empty_at_shard_setup = false;
  /// "tuned" and "restored" with the index and what was changed, for the tool's output.
  std::function<void(const std::string& kind, const std::string& index, const std::string& what)>
      on_event;
  /// A test hook: called just before an index's original settings are put back.
  std::function<void(const std::string& index)> before_restore;
  /// A test hook: called under the lock just before an index is tuned (its originals kept).
  std::function<void(const std::string& index)> before_tuning;
  /// The lease on an index's lock record while it is tuned or restored (a few requests),
  /// renewed while they run: what a worker killed meanwhile costs the others.
  coordination::Duration lock_lease = kDefaultTuningLockLease;
  /// The store the lock's renewals go to directly (a failed one is tried again at the next
  /// interval, never retried for longer than the lease); the records given when null.
  coordination::IWorkCoordinator* lock_renewals = nullptr;
};

/// The original settings of a tuned index: a value, or nullopt for "not set" (the default).
struct TunedOriginals {
  /// Unset when the replicas were left alone (auto_expand_replicas decides them).
  bool replicas_changed = true;
  std::optional<std::string> number_of_replicas;
  std::optional<std::string> refresh_interval;
};

class TargetTuning : public ITargetTuning {
 public:
  /// `records` is the workers' record space (retrying its calls); both it and `transport` (the
  /// target's, resending passing faults) must outlive this object.
  TargetTuning(std::shared_ptr<net::IHttpTransport> transport,
               coordination::IWorkCoordinator& records, core::IClock& clock,
               TargetTuningOptions options);

  absl::Status AtShardSetup(const std::vector<std::string>& target_indices) override;
  absl::Status BeforeBulk(const std::string& target_index) override;
  absl::StatusOr<bool> NeedsRestore(const std::string& target_index) override;
  absl::Status Restore(const std::string& target_index) override;

  /// Records that the run created `target_index` empty (RfsWorker's phase 3).
  absl::Status MarkCreatedEmpty(const std::string& target_index);
  /// Restores every index that needs it among `candidates` and the target's indices whose
  /// settings look tuned (0 replicas or refresh -1): the names restored. With `on_failure`, an
  /// index that cannot be restored is reported there and the others are still restored.
  absl::StatusOr<std::vector<std::string>> RestoreAll(
      const std::vector<std::string>& candidates,
      const std::function<void(const std::string&, const absl::Status&)>& on_failure = {});

 private:
  absl::StatusOr<bool> IsComplete(std::string_view id);
  absl::StatusOr<std::optional<TunedOriginals>> ReadOriginals(const std::string& index);
  /// Runs `body` under the lease of the index's lock record.
  /// Unavailable when the lock ran out while `body` ran (then `lost_lock`, when given, is set).
  absl::Status UnderLock(const std::string& index, const std::function<absl::Status()>& body,
                         bool* lost_lock = nullptr);
  absl::Status TuneLocked(const std::string& index);
  /// Puts the originals back and records the restore; with `again`, only for an index restored
  /// already (a tuning that lost the lock may have changed it after that restore).
  absl::Status RestoreLocked(const std::string& index, bool again = false);

  std::shared_ptr<net::IHttpTransport> transport_;
  opensearch::OpenSearchClient client_;
  coordination::IWorkCoordinator& records_;
  core::IClock& clock_;
  TargetTuningOptions options_;
  std::mutex mu_;
  // Indices whose tuning this worker has settled (tuned, left alone, or found restored).
  std::map<std::string, bool> settled_;
};

/// What a tool holds for the tuning: the record space's coordinator (when opened here) and the
/// tuning itself.
struct TuningWiring {
  std::unique_ptr<coordination::IWorkCoordinator> raw_records;
  std::unique_ptr<coordination::IWorkCoordinator> records;
  std::unique_ptr<TargetTuning> tuning;
};

/// The workers' record space a tool holds already: `records` retries its calls, `raw` is the
/// store itself.
struct HeldRecords {
  coordination::IWorkCoordinator* records = nullptr;
  coordination::IWorkCoordinator* raw = nullptr;
};

/// Sets `out.tuning` up when the options ask for tuning (`tune_by_default` when they say
/// nothing), the target is a cluster and the run is no delta; else leaves it null. `held`: the
/// workers' record space to use, or none to open it here (a DocumentsFromSnapshotMigration's).
absl::Status WireTargetTuning(const DocumentsToolOptions& options, DocumentsWiring& wiring,
                              const std::string& worker_id, core::IClock& clock, HeldRecords held,
                              bool tune_by_default, TuningWiring& out,
                              coordination::Duration lock_lease = kDefaultTuningLockLease);

/// The originals as kept in the store (compact JSON) and back; nullopt for text not written so.
std::string TunedOriginalsJson(const TunedOriginals& originals);
std::optional<TunedOriginals> ParseTunedOriginals(std::string_view text);

}  // namespace rfs::migration::internal
