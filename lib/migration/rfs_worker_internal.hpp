// The all-phase worker (RfsWorker) inside: one run's state and its steps, by phase in
// rfs_worker.cpp (the run, the shared records, a phase run once across workers),
// rfs_worker_phases.cpp (snapshot, metadata, documents) and rfs_worker_verify.cpp (the check of
// the target against the snapshot, and full verification rounds).
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "rfs/coordination/retrying_work_coordinator.hpp"
#include "rfs/coordination/verify_records.hpp"
#include "rfs/core/base64.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/migration/failed_document_stream.hpp"
#include "rfs/migration/rfs_worker.hpp"
#include "rfs/transform/index_filter.hpp"

#include "migration/documents_wiring_internal.hpp"
#include "migration/lease_keeper_internal.hpp"
#include "migration/target_tuning_internal.hpp"
#include "migration/verify_extra_scan_internal.hpp"
#include "migration/verifying_sink_internal.hpp"

namespace rfs::migration::internal {

namespace json = boost::json;
using coordination::IWorkCoordinator;
using coordination::Lease;
using core::StrCat;

inline constexpr std::string_view kFailedRecord = "failed";
inline constexpr std::string_view kRunForRecord = "run_for";
inline constexpr std::string_view kRunSnapshotRecord = "run_for_snapshot";
inline constexpr std::string_view kResetPrefix = "failed_reset_";
inline constexpr std::string_view kFailedPrefix = "FAILED ";
// The creator of the run_for records: what the store is for, in words.
inline constexpr std::string_view kRunForPrefix = "RUN FOR ";
// Full verification's records (rfs/coordination/verify_records.hpp).
using coordination::kVerifyRoundDonePrefix;
using coordination::kVerifyRoundNewerPrefix;
using coordination::kVerifyRoundPrefix;
using coordination::kVerifyRunRoundRecord;

std::string PhaseRecord(WorkerPhase phase);
std::string IndexRecord(std::string_view index);
absl::Status PhaseFailed(std::string reason);
bool IsPhaseFailure(const absl::Status& status);

// Closes every request of the phases' clients once the lease of the record being worked on is
// lost: the work under it must stop writing (another worker may hold the record already), and
// the library stops it itself instead of the process exiting. A request already sent completes.
class LeaseGate {
 public:
  void Close(const std::string& reason) {
    std::lock_guard lock(mu_);
    if (reason_.empty()) reason_ = reason;
    closed_.store(true);
  }
  bool closed() const { return closed_.load(); }
  std::string reason() const {
    std::lock_guard lock(mu_);
    return reason_;
  }

 private:
  mutable std::mutex mu_;
  std::atomic<bool> closed_{false};
  std::string reason_;  // guarded by mu_
};

class GatedTransport final : public net::IHttpTransport {
 public:
  GatedTransport(std::shared_ptr<net::IHttpTransport> inner, const LeaseGate& gate)
      : inner_(std::move(inner)), gate_(gate) {}
  absl::StatusOr<net::HttpResponse> Send(const net::HttpRequest& request) override {
    // Aborted: the coordinators' code for "your lease is gone" (coordination::IsLeaseLost).
    if (gate_.closed()) return absl::AbortedError(gate_.reason());
    return inner_->Send(request);
  }
  std::string endpoint() const override { return inner_->endpoint(); }

 private:
  const std::shared_ptr<net::IHttpTransport> inner_;
  const LeaseGate& gate_;
};

// The expected documents of one index and a sample of them (reservoir), read from the snapshot.
struct SnapshotIndexDocs {
  uint64_t count = 0;
  struct Sampled {
    std::string id;
    std::optional<std::string> routing;
    std::string source;   // JSON
    int64_t version = 0;  // with `read_versions`
  };
  std::vector<Sampled> sample;
};

class AllPhaseWorker {
 public:
  explicit AllPhaseWorker(RfsWorkerOptions options) : options_(std::move(options)) {}

  RfsWorkerResult Run();

 private:
  RfsWorkerResult Finish(absl::Status status, int code) {
    result_.status = std::move(status);
    result_.exit_code = code;
    return std::move(result_);
  }

  absl::Status OpenRecords(int* exit_code);

  void Emit(WorkerPhase phase, std::string kind, std::string item, std::string message) {
    if (options_.on_event)
      options_.on_event({phase, std::move(kind), std::move(item), std::move(message)});
  }

  absl::Status WireTuning(bool always);

  void RestoreTunedAfterFailure();

  RfsWorkerResult RestoreTargetSettings();

  absl::Status OpenRepository();

  std::optional<int> CheckBeforeTheStore();

  absl::Status ReadResetEpoch();

  std::string FailedRecord() const {
    return epoch_ == 0 ? std::string(kFailedRecord) : StrCat(kFailedRecord, ".", epoch_);
  }

  int AttemptLimit() const { return options_.max_attempts * (epoch_ + 1); }

  coordination::CoordinatorRetryPolicy CoordinatorRetries() const {
    return options_.documents.migration.coordinator_retries;
  }

  absl::Status ResetFailed();

  void SleepUnlessStopped(std::chrono::milliseconds duration);

  // Sleeps a short random time (a worker that lost a race looks again soon, but not in step).
  void Backoff(std::chrono::milliseconds at_most = std::chrono::milliseconds(1500)) {
    const auto ms = std::uniform_int_distribution<int64_t>(
        std::min<int64_t>(100, at_most.count()), std::max<int64_t>(100, at_most.count()))(rng_);
    clock_.SleepFor(std::chrono::milliseconds(ms));
  }

  bool StopRequested() const {
    const auto* stop = options_.documents.migration.stop_requested;
    return stop != nullptr && stop->load();
  }

  absl::Status CheckFailed();

  absl::Status MarkFailed(WorkerPhase phase, std::string_view item, std::string_view why);

  enum class Once { kDone, kBusy };

  absl::StatusOr<Once> RunOnce(WorkerPhase phase, const std::string& record,
                               const std::string& item, bool wait,
                               const std::function<absl::Status()>& body);

  absl::Status RunGuarded(WorkerPhase phase, const std::string& item, const Lease& lease,
                          const coordination::ItemProgress& given_back,
                          const std::function<absl::Status()>& body, Lease& current);

  absl::StatusOr<std::optional<Once>> Settle(WorkerPhase phase, const std::string& item,
                                             const absl::Status& status, const Lease& current,
                                             coordination::ItemProgress& given_back,
                                             int& transient_rounds);

  absl::Status RunPhases();

  std::string RunIdentity() const;

  absl::Status CheckRecordsAreForThisRun(std::string_view record_id, const std::string& identity);

  absl::Status SnapshotPhase();

  bool Selected(const std::string& index) const {
    const snapshot::DataStream* stream = snapshot::DataStreamOf(data_streams_, index);
    return transform::SelectIndex(options_.metadata.index_allowlist, index,
                                  stream ? stream->name : "");
  }

  std::vector<std::string> SelectedIndices() const;

  absl::Status SetupIndexRecords();

  absl::Status Metadata(const std::optional<std::string>& index);

  absl::Status OpenRequestClient();

  absl::Status DocumentsPhase();

  // --- Full verification (--verify-all) ---

  static std::string RoundRecord(int round) { return StrCat(kVerifyRoundPrefix, round); }
  static std::string RoundDoneRecord(int round) { return StrCat(kVerifyRoundDonePrefix, round); }

  absl::StatusOr<int> PickRound();

  absl::StatusOr<int> RunRound();

  // Where a round's records of documents not equal go: a folder of its own below the
  // failed-documents folder, or a session of its own in the S3 stream.
  std::string RoundFolder(int round) const {
    return (std::filesystem::path(wiring_.failed_documents_dir) / StrCat("verify-round-", round))
        .string();
  }
  std::optional<FailedDocumentStreamOptions> RoundStream(int round) const;

  absl::StatusOr<std::unique_ptr<reindex::IFailedDocumentSink>> OpenRoundSink(
      int round, std::string* location);

  DocumentMigrationOptions VerifyMigrationOptions() const;

  absl::Status OpenVerifyClient();

  absl::Status VerifyRoundItems(int round);

  absl::Status RecordNewerCounts(int round);
  static std::string NewerRecord(int round, std::string_view index, int slot) {
    return StrCat(kVerifyRoundNewerPrefix, round, "__", core::Base64UrlEncode(index), "__", slot);
  }

  absl::StatusOr<uint64_t> DeliveredBy(IWorkCoordinator& items, const std::string& root);

  absl::StatusOr<std::map<std::pair<std::string, std::string>, std::string>> ReadRoundRecords(
      int round);

  absl::StatusOr<VerifyReport> RoundReport(int round);

  template <typename RowFor>
  absl::Status CountExpected(int round, RowFor& row_for);

  absl::Status CompleteRow(int round, const std::optional<internal::ExtraScanResult>& scanned,
                           IndexVerification& row);

  absl::StatusOr<internal::ExtraScanResult> ScanExtra(int round, const VerifyReport& report);

  absl::Status RecordVerifyRows(const VerifyReport& report);

  RfsWorkerResult VerifyAllOnly();

  absl::Status VerifyAllPhase();

  static std::string MissingReason(const VerifyReport& report);

  absl::StatusOr<VerifyReport> Verify();

  absl::StatusOr<SnapshotIndexDocs> ReadSourceSide(const std::vector<std::string>& indices);

  // The target's copies of the sampled documents, by id (versions only from GETs).
  struct TargetCopies {
    std::map<std::string, std::string> sources;
    std::map<std::string, int64_t> versions;
  };

  absl::StatusOr<TargetCopies> ReadTargetSide(IndexVerification& row, bool data_stream,
                                              const SnapshotIndexDocs& docs);

  void CompareSample(const SnapshotIndexDocs& docs, const TargetCopies& copies,
                     const std::set<std::string>* failed_ids, IndexVerification& row);

  RfsWorkerOptions options_;
  RfsWorkerResult result_;
  internal::DocumentsWiring wiring_;
  std::unique_ptr<IWorkCoordinator> raw_records_;  // the store; records_ retries its calls
  std::unique_ptr<IWorkCoordinator> records_;
  const snapshot::SnapshotEntry* snapshot_ = nullptr;
  std::vector<snapshot::DataStream> data_streams_;  // of snapshot_
  core::SystemClock clock_;
  std::mt19937_64 rng_{std::random_device{}()};
  bool stopped_ = false;
  std::optional<int> exit_code_override_;
  absl::Status precheck_status_;
  // Closed when the lease of the record being worked on is lost (HealthGuard); before the
  // transports that hold it.
  LeaseGate lease_gate_;
  std::shared_ptr<net::IHttpTransport> request_transport_;
  std::unique_ptr<opensearch::OpenSearchClient> request_client_;
  // Full verification: the verifying sinks' client and what they found in this process.
  std::shared_ptr<net::IHttpTransport> verify_transport_;
  std::unique_ptr<opensearch::OpenSearchClient> verify_client_;
  internal::VerifyTally verify_tally_;
  int epoch_ = 0;
  internal::TuningWiring tuning_;  // after records_: it uses them
};

}  // namespace rfs::migration::internal
