#include "rfs/migration/rfs_worker.hpp"

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <boost/json.hpp>
#include <zlib.h>

#include "rfs/content/source_json.hpp"
#include "rfs/coordination/retrying_work_coordinator.hpp"
#include "rfs/coordination/verify_records.hpp"
#include "rfs/core/backoff.hpp"
#include "rfs/core/base64.hpp"
#include "rfs/core/checked_path.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/status_payloads.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/migration/failed_document_stream.hpp"
#include "rfs/migration/redrive.hpp"
#include "rfs/net/aws_sigv4.hpp"
#include "rfs/net/retrying_transport.hpp"
#include "rfs/reindex/document_sink.hpp"
#include "rfs/s3/s3_repo.hpp"
#include "rfs/snapshot/source_repo.hpp"
#include "rfs/transform/index_filter.hpp"

#include "absl/strings/str_join.h"
#include "migration/document_migration_worker_internal.hpp"
#include "migration/document_pipeline_internal.hpp"
#include "migration/documents_wiring_internal.hpp"
#include "migration/target_tuning_internal.hpp"
#include "migration/verify_extra_scan_internal.hpp"
#include "migration/verifying_sink_internal.hpp"
#include <unistd.h>

namespace rfs::migration {
namespace {

namespace json = boost::json;
using coordination::IWorkCoordinator;
using coordination::Lease;
using core::StrCat;

constexpr std::string_view kFailedRecord = "failed";
constexpr std::string_view kRunForRecord = "run_for";
constexpr std::string_view kRunSnapshotRecord = "run_for_snapshot";
constexpr std::string_view kResetPrefix = "failed_reset_";
constexpr std::string_view kFailedPrefix = "FAILED ";
// The creator of the run_for records: what the store is for, in words.
constexpr std::string_view kRunForPrefix = "RUN FOR ";
// Full verification's records (rfs/coordination/verify_records.hpp).
using coordination::kVerifyRoundDonePrefix;
using coordination::kVerifyRoundNewerPrefix;
using coordination::kVerifyRoundPrefix;
using coordination::kVerifyRunRoundRecord;

std::string PhaseRecord(WorkerPhase phase) {
  return StrCat("phase_", static_cast<int>(phase) + 1, "_", ToString(phase));
}

std::string IndexRecord(std::string_view index) {
  return StrCat("index__", core::Base64UrlEncode(index));
}

absl::Status PhaseFailed(std::string reason) {
  absl::Status status = absl::FailedPreconditionError(reason);
  status.SetPayload(core::payload::kPhaseFailed, absl::Cord("1"));
  return status;
}

bool IsPhaseFailure(const absl::Status& status) {
  return !status.ok() && status.GetPayload(core::payload::kPhaseFailed).has_value();
}

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

// Renews a record's lease while its work runs; reports a lost or expired lease once.
class HealthGuard {
 public:
  HealthGuard(IWorkCoordinator& records, core::IClock& clock, Lease lease,
              std::function<void(const std::string&)> on_lost, coordination::ItemProgress progress)
      : records_(records),
        clock_(clock),
        lease_(std::move(lease)),
        on_lost_(std::move(on_lost)),
        progress_(progress) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~HealthGuard() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  Lease lease() const {
    std::lock_guard lock(mu_);
    return lease_;
  }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    while (!done_) {
      const auto interval =
          std::chrono::duration_cast<std::chrono::milliseconds>(lease_.duration / 4);
      wake_.wait_for(lock, std::max(interval, std::chrono::milliseconds(10)),
                     [&] { return done_; });
      if (done_) return;
      Lease current = lease_;
      lock.unlock();
      auto renewed = records_.RenewLease(current, progress_);
      lock.lock();
      if (renewed.ok()) {
        lease_ = *std::move(renewed);
        continue;
      }
      if (coordination::IsLeaseLost(renewed.status()) || clock_.Now() >= current.local_deadline()) {
        const std::string reason = StrCat("the lease on record ", current.work_item_id,
                                          " is lost: ", renewed.status().message());
        done_ = true;
        lock.unlock();
        if (on_lost_) on_lost_(reason);
        return;
      }
    }
  }

  IWorkCoordinator& records_;
  core::IClock& clock_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  Lease lease_;
  bool done_ = false;
  std::function<void(const std::string&)> on_lost_;
  const coordination::ItemProgress progress_;
  std::thread thread_;
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

absl::StatusOr<SnapshotIndexDocs> ReadIndexDocs(const snapshot::SnapshotRepository& repository,
                                                const snapshot::SnapshotEntry& snapshot,
                                                std::string_view index, size_t sample_size,
                                                std::mt19937_64& rng,
                                                uint64_t max_per_shard = UINT64_MAX,
                                                bool read_versions = false,
                                                bool enable_sourceless = false) {
  SnapshotIndexDocs out;
  auto metadata = repository.ReadIndexMetadata(snapshot, index);
  if (!metadata.ok()) return metadata.status();
  // Read as the migration read them: rebuilt where it rebuilt them (a Solr collection always).
  RFS_ASSIGN_OR_RETURN(
      lucene::ShardReaderOptions reader_options,
      internal::ShardReaderOptionsFor(*metadata, enable_sourceless, read_versions));
  for (int shard = 0; shard < metadata->number_of_shards; ++shard) {
    uint64_t in_shard = 0;
    auto reader = lucene::OpenSnapshotShard(repository, snapshot, index, shard, reader_options);
    if (absl::IsNotFound(reader.status())) continue;  // an empty or failed shard
    if (!reader.ok()) return reader.status();
    auto cursor = (*reader)->OpenAt(0);
    if (!cursor.ok()) return cursor.status();
    lucene::Document doc;
    while (true) {
      auto more = (*cursor)->Next(doc);
      if (!more.ok()) return more.status();
      if (!*more || in_shard++ >= max_per_shard) break;  // a trial sends the first N
      ++out.count;
      // Reservoir sampling over documents with a source (fetched by _id and routing).
      if (!doc.has_source) continue;
      size_t slot = out.sample.size();
      if (out.sample.size() >= sample_size) {
        slot = std::uniform_int_distribution<uint64_t>(0, out.count - 1)(rng);
        if (slot >= sample_size) continue;
      }
      std::string source;
      if (!content::AppendSourceAsJson(doc.source, doc.source_format, source).ok()) continue;
      SnapshotIndexDocs::Sampled sampled{doc.id, doc.routing, std::move(source), doc.version};
      if (slot == out.sample.size()) {
        out.sample.push_back(std::move(sampled));
      } else {
        out.sample[slot] = std::move(sampled);
      }
    }
  }
  return out;
}

// Failed documents per index in the gzip NDJSON files of a failed-documents folder: how many,
// and their ids (a sampled document that failed is accounted for, not missing).
struct FailedDocuments {
  std::map<std::string, uint64_t> counts;
  std::map<std::string, std::set<std::string>> ids;
};
FailedDocuments CountFailedDocuments(const std::string& dir) {
  FailedDocuments out;
  auto& counts = out.counts;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (!entry.is_regular_file()) continue;
    gzFile file = gzopen(entry.path().c_str(), "rb");
    if (file == nullptr) continue;
    std::string line;
    char buffer[65536];
    while (gzgets(file, buffer, sizeof buffer) != nullptr) {
      line += buffer;
      if (line.empty() || line.back() != '\n') continue;
      boost::system::error_code ec;
      json::value record = json::parse(line, ec);
      line.clear();
      if (ec || !record.is_object()) continue;
      const json::value* index = record.as_object().if_contains("index");
      if (index == nullptr) index = record.as_object().if_contains("_index");
      if (index != nullptr && index->is_string()) {
        const std::string name(index->as_string());
        ++counts[name];
        if (const json::value* id = record.as_object().if_contains("id"); id && id->is_string()) {
          out.ids[name].emplace(id->as_string());
        }
      }
    }
    gzclose(file);
  }
  return out;
}

// The embedded target: documents per index in its bulk files, and the sources of `wanted` ids.
struct DirectoryIndex {
  uint64_t count = 0;
  std::map<std::string, std::string> sources;
};

DirectoryIndex ReadDirectoryIndex(const std::string& output_dir, std::string_view index,
                                  const std::set<std::string>& wanted) {
  DirectoryIndex out;
  // A name the sink would not write (an absolute path, "..", ".rfs") names no folder of it.
  if (reindex::InvalidIndexName(index)) return out;
  auto relative = core::CheckedPath({index}, "the snapshot's index names");
  if (!relative.ok()) return out;
  std::error_code error;
  const auto root = std::filesystem::path(output_dir) / *relative;
  for (auto it = std::filesystem::recursive_directory_iterator(root, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (!it->is_regular_file() || it->path().extension() != ".ndjson") continue;
    std::ifstream in(it->path());
    std::string action, source;
    while (std::getline(in, action) && std::getline(in, source)) {
      boost::system::error_code ec;
      json::value parsed = json::parse(action, ec);
      if (ec || !parsed.is_object() || parsed.as_object().empty()) continue;
      const json::value& meta = parsed.as_object().begin()->value();
      ++out.count;
      if (const json::value* id = meta.is_object() ? meta.as_object().if_contains("_id") : nullptr;
          id != nullptr && id->is_string() && wanted.contains(std::string(id->as_string()))) {
        out.sources[std::string(id->as_string())] = source;
      }
    }
  }
  return out;
}

bool SameJson(const std::string& a, const std::string& b) {
  boost::system::error_code ea, eb;
  const json::value va = json::parse(a, ea);
  const json::value vb = json::parse(b, eb);
  return !ea && !eb && va == vb;
}

class Worker {
 public:
  explicit Worker(RfsWorkerOptions options) : options_(std::move(options)) {}

  RfsWorkerResult Run() {
    DocumentsToolOptions& docs = options_.documents;
    result_.worker_id = docs.worker_id.empty() ? DefaultWorkerId() : docs.worker_id;
    docs.worker_id = result_.worker_id;
    result_.snapshot_name = docs.migration.snapshot_name;
    if (result_.snapshot_name.empty() && options_.source) {
      result_.snapshot_name = DeriveSnapshotName(options_);
    }
    docs.migration.snapshot_name = result_.snapshot_name;
    if (options_.max_attempts < 1) {
      return Finish(absl::InvalidArgumentError("--max-attempts must be at least 1"),
                    core::kExitUsage);
    }
    if (options_.source && !options_.source_repository) {
      return Finish(absl::InvalidArgumentError(
                        "--source-host needs the repository to register on the source: "
                        "--snapshot-local-dir (as the source's path.repo sees it) or "
                        "--s3-repo-uri"),
                    core::kExitUsage);
    }
    if (auto error =
            internal::WireTransformsAndMetrics(docs, "RfsWorker", result_.worker_id, wiring_)) {
      return Finish(error->status, error->exit_code);
    }
    if (auto error = internal::WireTarget(docs, result_.worker_id, wiring_)) {
      return Finish(error->status, error->exit_code);
    }
    result_.failed_documents_path = wiring_.failed_documents_path;
    if (options_.verify_all && !wiring_.client) {
      return Finish(absl::InvalidArgumentError(
                        "--verify-all fetches every document from a target cluster "
                        "(--target-host); the embedded target (--output-dir) is verified by "
                        "its count and sample (--verify-sample)"),
                    core::kExitUsage);
    }

    if (options_.verify_only) {
      if (auto status = OpenRepository(); !status.ok())
        return Finish(status, core::kExitSnapshotUnreadable);
      if (options_.verify_all) return VerifyAllOnly();
      auto report = Verify();
      if (!report.ok()) return Finish(report.status(), core::kExitFailure);
      result_.verify = *report;
      if (!report->ok()) return Finish(PhaseFailed(MissingReason(*report)), core::kExitPhaseFailed);
      return Finish(absl::OkStatus(), 0);
    }

    if (options_.restore_target_settings) return RestoreTargetSettings();

    // What can be checked without the store is checked first, so that a mistyped option is a
    // usage error (64) and never a FAILED record every later worker would meet.
    if (auto code = CheckBeforeTheStore()) return Finish(precheck_status_, *code);

    int exit_code = core::kExitFailure;
    if (auto status = OpenRecords(&exit_code); !status.ok()) return Finish(status, exit_code);
    if (auto status = ReadResetEpoch(); !status.ok()) return Finish(status, core::kExitFailure);
    if (options_.reset_failed) {
      if (auto status = ResetFailed(); !status.ok()) return Finish(status, core::kExitFailure);
    }
    if (auto status = WireTuning(/*always=*/false); !status.ok()) {
      return Finish(status, core::kExitFailure);
    }

    absl::Status status = RunPhases();
    if ((stopped_ || !status.ok()) && exit_code_override_ != core::kExitUsage) {
      RestoreTunedAfterFailure();
    }
    if (stopped_) return Finish(absl::OkStatus(), core::kExitHandoffOrStopped);
    if (IsPhaseFailure(status)) {
      result_.failure = std::string(status.message());
      return Finish(status, core::kExitPhaseFailed);
    }
    if (!status.ok()) return Finish(status, exit_code_override_.value_or(core::kExitFailure));
    return Finish(absl::OkStatus(),
                  result_.documents.docs_failed > 0 ? core::kExitDocumentsFailed : 0);
  }

 private:
  RfsWorkerResult Finish(absl::Status status, int code) {
    result_.status = std::move(status);
    result_.exit_code = code;
    return std::move(result_);
  }

  absl::Status OpenRecords(int* exit_code) {
    auto records = internal::OpenCoordinator(options_.documents, wiring_, result_.worker_id,
                                             internal::ItemSpace::kWorkerRecords, exit_code);
    if (!records.ok()) return records.status();
    *exit_code = core::kExitFailure;
    raw_records_ = *std::move(records);
    // Every call on the records meets the target's passing faults (429, 5xx, resets) the way the
    // document workers' calls do: retried with backoff. A lost lease (another worker won) is not.
    records_ = std::make_unique<coordination::RetryingWorkCoordinator>(*raw_records_, clock_,
                                                                       CoordinatorRetries());
    return records_->Setup();
  }

  void Emit(WorkerPhase phase, std::string kind, std::string item, std::string message) {
    if (options_.on_event)
      options_.on_event({phase, std::move(kind), std::move(item), std::move(message)});
  }

  // Target tuning (target_tuning_internal.hpp) over this worker's records; `always` for
  // --restore-target-settings, whatever --no-tune-target or a delta says.
  absl::Status WireTuning(bool always) {
    DocumentsToolOptions options = options_.documents;
    if (always) {
      options.tune_target = true;
      options.migration.previous_snapshot_name.clear();
    }
    options.on_tuning = [this](const std::string& kind, const std::string& index,
                               const std::string& what) {
      Emit(WorkerPhase::kDocuments, kind, StrCat("index ", index), what);
    };
    return internal::WireTargetTuning(options, wiring_, result_.worker_id, clock_, records_.get(),
                                      /*tune_by_default=*/true, tuning_);
  }

  // A worker that fails or is stopped leaves no index tuned (a load still under way in other
  // workers goes on untuned); a killed one leaves that to the next worker of the session or to
  // --restore-target-settings.
  void RestoreTunedAfterFailure() {
    if (!tuning_.tuning) return;
    auto restored =
        tuning_.tuning->RestoreAll({}, [&](const std::string& index, const absl::Status& status) {
          Emit(WorkerPhase::kDocuments, "failed", StrCat("index ", index),
               StrCat("still tuned (its settings could not be put back: ", status.message(),
                      "); run RfsWorker --restore-target-settings"));
        });
    if (!restored.ok()) {
      Emit(WorkerPhase::kDocuments, "failed", "tuned indices",
           StrCat("their settings could not be put back: ", restored.status().message(),
                  "; run RfsWorker --restore-target-settings"));
    }
  }

  // --restore-target-settings: only the restore of every tuned index of this store.
  RfsWorkerResult RestoreTargetSettings() {
    if (!options_.documents.target) {
      return Finish(absl::InvalidArgumentError("--restore-target-settings needs --target-host"),
                    core::kExitUsage);
    }
    int exit_code = core::kExitFailure;
    auto records = internal::OpenCoordinator(options_.documents, wiring_, result_.worker_id,
                                             internal::ItemSpace::kWorkerRecords, &exit_code);
    if (!records.ok()) return Finish(records.status(), exit_code);
    raw_records_ = *std::move(records);
    records_ = std::make_unique<coordination::RetryingWorkCoordinator>(*raw_records_, clock_,
                                                                       CoordinatorRetries());
    if (auto status = records_->Setup(); !status.ok()) return Finish(status, core::kExitFailure);
    if (auto status = WireTuning(/*always=*/true); !status.ok()) {
      return Finish(status, core::kExitFailure);
    }
    std::string failures;
    auto restored =
        tuning_.tuning->RestoreAll({}, [&](const std::string& index, const absl::Status& status) {
          failures += StrCat(failures.empty() ? "" : "; ", index, ": ", status.message());
        });
    if (!restored.ok()) return Finish(restored.status(), core::kExitFailure);
    Emit(WorkerPhase::kDocuments, "completed", "restore target settings",
         restored->empty() ? std::string("no index was left tuned")
                           : StrCat(restored->size(), " indices restored"));
    if (!failures.empty()) {
      return Finish(absl::UnavailableError(StrCat("not restored: ", failures)), core::kExitFailure);
    }
    return Finish(absl::OkStatus(), 0);
  }

  absl::Status OpenRepository() {
    auto repository = OpenSnapshotRepository(options_.documents.repository);
    if (!repository.ok()) return repository.status();
    wiring_.repository = *std::move(repository);
    auto snapshot = result_.snapshot_name.empty()
                        ? wiring_.repository->LatestSnapshot()
                        : wiring_.repository->FindSnapshot(result_.snapshot_name);
    if (!snapshot.ok()) return snapshot.status();
    snapshot_ = *snapshot;
    result_.snapshot_name = snapshot_->name;
    options_.documents.migration.snapshot_name = snapshot_->name;
    auto streams = wiring_.repository->ReadDataStreams(*snapshot_);
    if (!streams.ok()) return streams.status();
    data_streams_ = *std::move(streams);
    return absl::OkStatus();
  }

  // nullopt when the run may touch the store; else the exit code (precheck_status_ says why).
  std::optional<int> CheckBeforeTheStore() {
    // A malformed URL is a usage error; a cluster that does not answer within the patient
    // transport's half minute is named, with nothing recorded.
    auto check_cluster = [&](const net::HttpTransportOptions& cluster, const char* role,
                             const char* option) -> std::optional<int> {
      auto transport = internal::OpenPatientTransport(cluster, 2);
      if (!transport.ok()) {
        precheck_status_ = core::WithContext(transport.status(), option);
        return core::kExitUsage;
      }
      opensearch::OpenSearchClient client(**transport);
      if (auto version = client.GetVersion(); !version.ok()) {
        precheck_status_ = core::WithContext(version.status(),
                                             StrCat("the ", role, " cluster at ", cluster.endpoint,
                                                    " does not answer (check ", option, ")"));
        return core::IsRetryable(version.status()) ? core::kExitFailure : core::kExitUsage;
      }
      return std::nullopt;
    };
    if (options_.source) {
      if (auto code = check_cluster(*options_.source, "source", "--source-host")) return code;
    }
    if (options_.documents.target) {
      if (auto code = check_cluster(*options_.documents.target, "target", "--target-host")) {
        return code;
      }
    }
    if (options_.source) return std::nullopt;
    // No source: the snapshot must be in the repository already.
    absl::Status status = OpenRepository();
    if (status.ok()) {
      // A delta from this snapshot or a newer one is refused before the store is touched (a
      // previous snapshot not found is reported by the documents phase, as before).
      const std::string& previous = options_.documents.migration.previous_snapshot_name;
      if (previous.empty()) return std::nullopt;
      auto found = wiring_.repository->FindSnapshot(previous);
      if (!found.ok()) return std::nullopt;
      absl::Status order = CheckDeltaSnapshots(*wiring_.repository, *snapshot_, **found);
      if (!IsDeltaOrderRefusal(order)) return std::nullopt;
      precheck_status_ = order;
      return core::kExitUsage;
    }
    if (absl::IsNotFound(status) && !result_.snapshot_name.empty()) {
      precheck_status_ = core::WithContext(status, "--snapshot-name");
      return core::kExitUsage;
    }
    precheck_status_ = status;
    return core::kExitSnapshotUnreadable;
  }

  // Resets (--reset-failed) are records failed_reset_1, _2, ...; after N of them the FAILED
  // record is failed.N and each record and work item has N x --max-attempts attempts.
  absl::Status ReadResetEpoch() {
    while (true) {
      auto reset = records_->GetWorkItem(StrCat(kResetPrefix, epoch_ + 1));
      if (!reset.ok()) return reset.status();
      if (!*reset) return absl::OkStatus();
      ++epoch_;
    }
  }

  std::string FailedRecord() const {
    return epoch_ == 0 ? std::string(kFailedRecord) : StrCat(kFailedRecord, ".", epoch_);
  }

  int AttemptLimit() const { return options_.max_attempts * (epoch_ + 1); }

  coordination::CoordinatorRetryPolicy CoordinatorRetries() const {
    return {.max_attempts = std::max(1, options_.documents.migration.coordinator_attempts)};
  }

  absl::Status ResetFailed() {
    auto failed = records_->GetWorkItem(FailedRecord());
    if (!failed.ok()) return failed.status();
    if (!*failed) {
      Emit(WorkerPhase::kSnapshot, "reset", "", "the migration is not FAILED: nothing to reset");
      return absl::OkStatus();
    }
    RFS_RETURN_IF_ERROR(coordination::RecordCompletedItem(
        *records_, clock_, StrCat(kResetPrefix, epoch_ + 1), options_.record_lease));
    RFS_RETURN_IF_ERROR(ReadResetEpoch());
    Emit(WorkerPhase::kSnapshot, "reset", "",
         StrCat("the FAILED mark is cleared (reset ", epoch_,
                "); phases go on where they stopped, each record with ", options_.max_attempts,
                " more attempts"));
    return absl::OkStatus();
  }

  // Sleeps `duration`, waking early when a stop is requested.
  void SleepUnlessStopped(std::chrono::milliseconds duration) {
    const auto until = clock_.Now() + duration;
    while (!StopRequested() && clock_.Now() < until) {
      clock_.SleepFor(std::min<std::chrono::milliseconds>(
          std::chrono::milliseconds(100),
          std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_.Now()) +
              std::chrono::milliseconds(1)));
    }
  }

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

  // The migration's FAILED record, if any: its reason.
  absl::Status CheckFailed() {
    auto failed = records_->GetWorkItem(FailedRecord());
    if (!failed.ok()) return failed.status();
    if (!*failed) return absl::OkStatus();
    std::string reason = (*failed)->creator_id;
    if (reason.starts_with(kFailedPrefix)) reason = reason.substr(kFailedPrefix.size());
    return PhaseFailed(StrCat("the migration FAILED: ", reason,
                              " (after fixing the cause, run once with --reset-failed)"));
  }

  // Records the failure (the first one stands) and returns it as every worker will see it. The
  // reason travels as the creator of the FAILED record, which every store keeps.
  absl::Status MarkFailed(WorkerPhase phase, std::string_view item, std::string_view why) {
    std::string reason = StrCat(kFailedPrefix, "phase ", ToString(phase), " (", item, "): ", why);
    for (char& c : reason) {
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    }
    if (reason.size() > 240) reason = reason.substr(0, 237) + "...";
    int exit_code = core::kExitFailure;
    auto marker = internal::OpenCoordinator(options_.documents, wiring_, reason,
                                            internal::ItemSpace::kWorkerRecords, &exit_code);
    if (marker.ok()) {
      coordination::RetryingWorkCoordinator retrying(**marker, clock_, CoordinatorRetries());
      auto created = retrying.CreateUnassignedWorkItem(FailedRecord(), 0);
      if (!created.ok()) return created.status();
    } else {
      return marker.status();
    }
    Emit(phase, "failed", std::string(item), std::string(why));
    absl::Status recorded = CheckFailed();
    return recorded.ok() ? PhaseFailed(reason) : recorded;
  }

  enum class Once { kDone, kBusy };

  // Runs `body` once across all workers under the lease of `record`. kDone once the record is
  // complete (whoever ran it); kBusy when another worker holds it and `wait` is false.
  absl::StatusOr<Once> RunOnce(WorkerPhase phase, const std::string& record,
                               const std::string& item, bool wait,
                               const std::function<absl::Status()>& body) {
    int transient_rounds = 0;
    while (true) {
      RFS_RETURN_IF_ERROR(CheckFailed());
      if (StopRequested()) {
        stopped_ = true;
        return absl::CancelledError("stopped by a signal");
      }
      auto outcome = records_->AcquireWorkItem(record, options_.record_lease);
      if (!outcome.ok()) {
        if (!core::IsRetryable(outcome.status())) return outcome.status();
        Backoff();
        continue;
      }
      if (std::holds_alternative<coordination::AlreadyCompleted>(*outcome)) return Once::kDone;
      if (auto* busy = std::get_if<coordination::AllLeasedElsewhere>(&*outcome)) {
        if (!wait) return Once::kBusy;
        Emit(phase, "waiting", item, "held by another worker");
        Backoff(std::min<std::chrono::milliseconds>(
            std::chrono::duration_cast<std::chrono::milliseconds>(busy->retry_after) +
                std::chrono::milliseconds(100),
            std::chrono::milliseconds(1500)));
        continue;
      }
      const Lease lease = std::get<coordination::Acquired>(*outcome).lease;
      // A record's progress counts the grants given back after a transient error or a stop:
      // those are not failed attempts, only grants that died or failed for good are.
      coordination::ItemProgress given_back =
          lease.recorded_progress.value_or(coordination::ItemProgress{});
      const int64_t attempts = lease.generation - static_cast<int64_t>(given_back.docs);
      if (attempts > AttemptLimit()) {
        return MarkFailed(phase, item,
                          StrCat("not completed in ", AttemptLimit(),
                                 " attempts (the workers holding it died or failed)"));
      }
      Emit(phase, "started", item, StrCat("attempt ", attempts));
      Lease current = lease;
      absl::Status status = RunGuarded(phase, item, lease, given_back, body, current);
      RFS_ASSIGN_OR_RETURN(std::optional<Once> settled,
                           Settle(phase, item, status, current, given_back, transient_rounds));
      if (settled) return *settled;
    }
  }

  // `body` run under `lease`, which a guard renews meanwhile (a lost lease closes the gate), its
  // transient errors (a source or target not up yet, 429, 5xx, resets) retried for up to one
  // lease duration; `current` is the lease as last renewed.
  absl::Status RunGuarded(WorkerPhase phase, const std::string& item, const Lease& lease,
                          const coordination::ItemProgress& given_back,
                          const std::function<absl::Status()>& body, Lease& current) {
    // Renewals go to the store directly: a failed one is tried again at the next interval.
    HealthGuard guard(
        *raw_records_, clock_, lease,
        [this](const std::string& reason) {
          lease_gate_.Close(reason);
          if (options_.on_lease_lost) options_.on_lease_lost(reason);
        },
        given_back);
    absl::Status status = body();
    // Transient errors (a source or target not up yet, 429, 5xx, resets) are retried under
    // this lease, which the guard keeps renewing, for up to one lease duration.
    const auto retry_until = clock_.Now() + options_.record_lease;
    for (int attempt = 1;
         core::IsRetryable(status) && !StopRequested() && clock_.Now() < retry_until; ++attempt) {
      Emit(phase, "waiting", item, StrCat("retrying after: ", status.message()));
      SleepUnlessStopped(std::chrono::duration_cast<std::chrono::milliseconds>(core::BackoffWait(
          std::chrono::milliseconds(250), std::chrono::seconds(15), attempt, rng_)));
      if (StopRequested()) break;
      status = body();
    }
    current = guard.lease();
    return status;
  }

  // The record after an attempt: completed (kDone), given back or failed (an error), or to be
  // acquired again (nullopt: lost to another worker, or given back after a backoff).
  // `given_back` counts the grants given back.
  absl::StatusOr<std::optional<Once>> Settle(WorkerPhase phase, const std::string& item,
                                             const absl::Status& status, const Lease& current,
                                             coordination::ItemProgress& given_back,
                                             int& transient_rounds) {
    if (lease_gate_.closed()) {
      // The record may be another worker's now: neither completed nor given back from here.
      exit_code_override_ = core::kExitHandoffOrStopped;
      return absl::AbortedError(lease_gate_.reason());
    }
    ++given_back.docs;
    if (status.ok()) {
      absl::Status completed = records_->CompleteWorkItem(current);
      if (coordination::IsLeaseLost(completed)) return std::nullopt;  // another will, or did
      RFS_RETURN_IF_ERROR(completed);
      Emit(phase, "completed", item, "");
      return std::optional<Once>(Once::kDone);
    }
    if (IsPhaseFailure(status)) {
      records_->ReleaseWorkItem(current).IgnoreError();
      return status;
    }
    if (absl::IsCancelled(status) || (StopRequested() && core::IsRetryable(status))) {
      records_->ReleaseWorkItem(current, given_back).IgnoreError();
      stopped_ = true;
      return absl::CancelledError("stopped by a signal");
    }
    if (IsSnapshotReadFailure(status)) {
      // Not FAILED: once the repository is readable again, the next worker goes on.
      records_->ReleaseWorkItem(current, given_back).IgnoreError();
      exit_code_override_ = core::kExitSnapshotUnreadable;
      return status;
    }
    if (!core::IsRetryable(status)) {
      // An attempt that failed for good: given back (counted), so that after --reset-failed
      // the next worker takes the record at once instead of waiting out this lease.
      records_->ReleaseWorkItem(current).IgnoreError();
      return MarkFailed(phase, item, std::string(status.message()));
    }
    // Still transient after a whole lease of retries: give the record back (not an attempt).
    // After three such leases the worker ends (exit 1, nothing FAILED): a target or source
    // that never answers is more likely a wrong option than a passing fault.
    records_->ReleaseWorkItem(current, given_back).IgnoreError();
    if (++transient_rounds >= 3) {
      return core::WithContext(status, StrCat(item,
                                              ": still failing after three leases of "
                                              "retries"));
    }
    Backoff();
    return std::nullopt;
  }

  absl::Status RunPhases() {
    // The records in this store must be this migration's: a store set up for another snapshot
    // or other allowlists would report phases COMPLETED that never ran for this one. First by
    // the snapshot's name and the options, then, once the snapshot exists, by its uuid (a later
    // snapshot of the same name is another migration).
    RFS_RETURN_IF_ERROR(CheckRecordsAreForThisRun(kRunForRecord, RunIdentity()));
    // 1: the snapshot.
    RFS_RETURN_IF_ERROR(
        RunOnce(WorkerPhase::kSnapshot, PhaseRecord(WorkerPhase::kSnapshot), "snapshot", true, [&] {
          return SnapshotPhase();
        }).status());
    if (auto status = OpenRepository(); !status.ok()) {
      exit_code_override_ = core::kExitSnapshotUnreadable;
      return core::WithContext(status, "the snapshot cannot be read");
    }
    RFS_RETURN_IF_ERROR(CheckRecordsAreForThisRun(
        kRunSnapshotRecord,
        StrCat("snapshot '", snapshot_->name, "' with uuid ", snapshot_->uuid)));
    // 2: templates.
    RFS_RETURN_IF_ERROR(RunOnce(WorkerPhase::kMetadata, PhaseRecord(WorkerPhase::kMetadata),
                                "templates", true, [&] { return Metadata(std::nullopt); })
                            .status());
    // 3: the index records, then each index; busy ones are left for a later round.
    RFS_RETURN_IF_ERROR(
        RunOnce(WorkerPhase::kIndices, "phase_3_index_setup", "index setup", true, [&] {
          return SetupIndexRecords();
        }).status());
    std::vector<std::string> indices = SelectedIndices();
    while (!indices.empty()) {
      std::vector<std::string> busy;
      for (const std::string& index : indices) {
        RFS_ASSIGN_OR_RETURN(
            Once once, RunOnce(WorkerPhase::kIndices, IndexRecord(index), StrCat("index ", index),
                               false, [&] { return Metadata(index); }));
        if (once == Once::kBusy) busy.push_back(index);
      }
      if (!busy.empty()) {
        Emit(WorkerPhase::kIndices, "waiting", "",
             StrCat(busy.size(), " indices held by other workers"));
        Backoff();
      }
      indices = std::move(busy);
    }
    RFS_RETURN_IF_ERROR(
        RunOnce(WorkerPhase::kIndices, PhaseRecord(WorkerPhase::kIndices), "indices", true, [] {
          return absl::OkStatus();
        }).status());
    // 4: documents, until every shard item is complete.
    RFS_RETURN_IF_ERROR(DocumentsPhase());
    // 5: verify.
    if (options_.skip_verify) return absl::OkStatus();
    if (options_.verify_all) return VerifyAllPhase();
    return RunOnce(WorkerPhase::kVerify, PhaseRecord(WorkerPhase::kVerify), "verify", true,
                   [&]() -> absl::Status {
                     auto report = Verify();
                     if (!report.ok()) return report.status();
                     result_.verify = *report;
                     if (!report->ok()) {
                       return MarkFailed(WorkerPhase::kVerify, "verify", MissingReason(*report));
                     }
                     return absl::OkStatus();
                   })
        .status();
  }

  // What decides the phases' work: the snapshot (by name, known before phase 1 creates it; the
  // documents' store also checks its uuid) and every selection and placement option.
  std::string RunIdentity() const {
    auto list = [](const transform::Allowlist& allowlist) {
      std::string out;
      for (const auto& entry : allowlist.entries()) out += StrCat(out.empty() ? "" : ",", entry);
      return out.empty() ? std::string("(default)") : out;
    };
    return StrCat(
        "snapshot '", result_.snapshot_name, "', --index-allowlist ",
        list(options_.metadata.index_allowlist), ", --index-template-allowlist ",
        list(options_.metadata.index_template_allowlist), ", --component-template-allowlist ",
        list(options_.metadata.component_template_allowlist), ", --multi-type-behavior ",
        options_.metadata.multi_type_policy == transform::MultiTypePolicy::kSplit ? "split"
                                                                                  : "union",
        options_.documents.migration.previous_snapshot_name.empty()
            ? std::string()
            : StrCat(", delta from snapshot '", options_.documents.migration.previous_snapshot_name,
                     "' ", lucene::DeltaModeName(options_.documents.migration.delta_mode)));
  }

  // The first worker records the run's identity (a hash in `record_id`); a store whose records
  // were made for another run is refused.
  absl::Status CheckRecordsAreForThisRun(std::string_view record_id, const std::string& identity) {
    const uint64_t mine = coordination::SettingsHash(identity);
    auto record = records_->GetWorkItem(record_id);
    if (!record.ok()) return record.status();
    if (!*record || !(*record)->completed() || !(*record)->progress) {
      // A fresh store, or one an rfs without this record made: adopted for this run. Created by
      // a marker whose worker id is the identity in words: every store keeps an item's creator,
      // so a run refused later can be told what the store is for (as MarkFailed). Leased and
      // completed under this worker's own id (the marker's is the same in every worker).
      std::string words = StrCat(kRunForPrefix, identity);
      for (char& c : words) {
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
      }
      if (words.size() > 240) words = words.substr(0, 237) + "...";
      int exit_code = core::kExitFailure;
      auto marker = internal::OpenCoordinator(options_.documents, wiring_, words,
                                              internal::ItemSpace::kWorkerRecords, &exit_code);
      if (!marker.ok()) return marker.status();
      coordination::RetryingWorkCoordinator retrying(**marker, clock_, CoordinatorRetries());
      RFS_RETURN_IF_ERROR(retrying.CreateUnassignedWorkItem(record_id, 0).status());
      RFS_RETURN_IF_ERROR(coordination::RecordCompletedItem(*records_, clock_, record_id,
                                                            options_.record_lease, mine));
      record = records_->GetWorkItem(record_id);
      if (!record.ok()) return record.status();
    }
    if (*record && (*record)->progress && (*record)->progress->next_cursor == mine) {
      return absl::OkStatus();
    }
    const std::string creator = *record ? (*record)->creator_id : std::string();
    exit_code_override_ = core::kExitUsage;
    return absl::FailedPreconditionError(StrCat(
        "this store's migration records were made for another snapshot or other allowlists than "
        "this run's (",
        identity, "): they were made for ",
        creator.starts_with(kRunForPrefix)
            ? creator.substr(kRunForPrefix.size())
            : std::string("a run they do not name (recorded by an older rfs)"),
        ". Use a store of its own (--session-name NAME, another --output-dir or "
        "--coordinator-db), or the options it was set up with"));
  }

  absl::Status SnapshotPhase() {
    if (!options_.source) {
      // No source cluster: the snapshot must be in the repository already.
      absl::Status status = OpenRepository();
      if (absl::IsNotFound(status)) {
        return absl::FailedPreconditionError(
            StrCat("snapshot ", result_.snapshot_name.empty() ? "(newest)" : result_.snapshot_name,
                   " is not in the repository: ", status.message()));
      }
      return core::IsRetryable(status) ? status : MarkSnapshotReadFailure(status);
    }
    // Each request resent on a passing fault: a snapshot start applied but unanswered comes back
    // "already exists", which is taken below as started.
    auto transport = internal::OpenPatientTransport(*options_.source, 2);
    if (!transport.ok()) return transport.status();
    GatedTransport gated(std::shared_ptr<net::IHttpTransport>(*std::move(transport)), lease_gate_);
    opensearch::OpenSearchClient client(gated);
    opensearch::SnapshotCreator creator(client, options_.source_repository_name);
    // Registered first, every time: a repository of this name left registered elsewhere by an
    // earlier migration would otherwise answer for its own snapshot of this name. The same
    // settings again change nothing on the source, even while a snapshot runs.
    RFS_RETURN_IF_ERROR(creator.RegisterRepository(*options_.source_repository));
    auto existing = creator.GetSnapshot(result_.snapshot_name);
    if (absl::IsNotFound(existing.status())) {
      opensearch::SnapshotRequest request;
      request.name = result_.snapshot_name;
      request.indices = options_.metadata.index_allowlist.entries();
      absl::Status started = creator.StartSnapshot(request);
      // Another worker (now dead) may have started it between our look and our request.
      if (!started.ok() && !absl::IsAlreadyExists(started)) return started;
    } else if (!existing.ok()) {
      return existing.status();
    }
    opensearch::WaitOptions wait;
    wait.poll_interval = options_.snapshot_poll_interval;
    wait.on_progress = [&](const opensearch::SnapshotProgress& progress) {
      Emit(WorkerPhase::kSnapshot, "progress", result_.snapshot_name,
           StrCat(progress.raw_state, " ", progress.shards_done, "/", progress.shards_total,
                  " shards"));
    };
    auto info = creator.WaitForSnapshot(result_.snapshot_name, clock_, wait);
    if (!info.ok()) {
      if (absl::IsFailedPrecondition(info.status())) {
        return absl::FailedPreconditionError(
            StrCat("snapshot ", result_.snapshot_name, " failed: ", info.status().message()));
      }
      return info.status();
    }
    return absl::OkStatus();
  }

  bool Selected(const std::string& index) const {
    const snapshot::DataStream* stream = snapshot::DataStreamOf(data_streams_, index);
    return transform::SelectIndex(options_.metadata.index_allowlist, index,
                                  stream ? stream->name : "");
  }

  std::vector<std::string> SelectedIndices() const {
    std::vector<std::string> out;
    for (const std::string& index : wiring_.repository->IndicesIn(*snapshot_)) {
      if (Selected(index)) out.push_back(index);
    }
    return out;
  }

  absl::Status SetupIndexRecords() {
    for (const std::string& index : SelectedIndices()) {
      auto created = records_->CreateUnassignedWorkItem(IndexRecord(index), 0);
      if (!created.ok()) return created.status();
    }
    return absl::OkStatus();
  }

  // Templates (no index), or one index.
  absl::Status Metadata(const std::optional<std::string>& index) {
    MetadataMigrationOptions metadata = options_.metadata;
    metadata.mode = MetadataMode::kMigrate;
    metadata.include_templates = !index.has_value();
    metadata.include_indices = index.has_value();
    metadata.only_index = index;
    if (!wiring_.client) metadata.output_dir = options_.documents.output_dir;
    RFS_RETURN_IF_ERROR(OpenRequestClient());
    MetadataMigrator migrator(*wiring_.repository, *snapshot_, request_client_.get(), metadata);
    auto report = migrator.Run();
    if (!report.ok()) {
      if (migrator.failure_source() == MetadataFailureSource::kTarget &&
          core::IsRetryable(report.status())) {
        return report.status();
      }
      if (migrator.failure_source() == MetadataFailureSource::kSnapshot) {
        return MarkSnapshotReadFailure(report.status());
      }
      return absl::FailedPreconditionError(std::string(report.status().message()));
    }
    std::string failed;
    bool all_transient = true;
    for (const auto& item : report->items) {
      // An index created here is empty: phase 4 may tune it for its load.
      if (tuning_.tuning && item.kind == MetadataItemKind::kIndex &&
          item.outcome == MetadataOutcome::kCreated) {
        RFS_RETURN_IF_ERROR(tuning_.tuning->MarkCreatedEmpty(item.name));
      }
      if (item.outcome == MetadataOutcome::kFailed) {
        all_transient = all_transient && item.transient;
        failed += StrCat(failed.empty() ? "" : "; ", ToString(item.kind), " ", item.name, ": ",
                         item.error);
      } else {
        Emit(index ? WorkerPhase::kIndices : WorkerPhase::kMetadata, "progress",
             StrCat(ToString(item.kind), " ", item.name), std::string(ToString(item.outcome)));
      }
    }
    if (!failed.empty() && all_transient) {
      // The target's passing faults outlasted the migrator's own retries: retried under the
      // lease (RunOnce), never a FAILED migration.
      return absl::UnavailableError(StrCat("the target did not answer: ", failed));
    }
    if (!failed.empty()) return absl::FailedPreconditionError(StrCat("rejected: ", failed));
    return absl::OkStatus();
  }

  // The client of the metadata and verify phases: each of their requests is safe to send twice,
  // so a fault is resent a few times at once (the bulk client is not); longer outages are
  // retried by RunOnce, which a stop interrupts.
  absl::Status OpenRequestClient() {
    if (!wiring_.client || request_client_) return absl::OkStatus();
    auto transport = internal::OpenTransport(*options_.documents.target, 4);
    if (!transport.ok()) return transport.status();
    request_transport_ = std::make_shared<GatedTransport>(
        std::make_shared<net::RetryingHttpTransport>(*std::move(transport), clock_), lease_gate_);
    request_client_ = std::make_unique<opensearch::OpenSearchClient>(*request_transport_);
    return absl::OkStatus();
  }

  absl::Status DocumentsPhase() {
    const std::string record = PhaseRecord(WorkerPhase::kDocuments);
    Emit(WorkerPhase::kDocuments, "started", "documents", "");
    int exit_code = core::kExitFailure;
    auto items = internal::OpenCoordinator(options_.documents, wiring_, result_.worker_id,
                                           internal::ItemSpace::kWorkItems, &exit_code);
    if (!items.ok()) return items.status();
    while (true) {
      RFS_RETURN_IF_ERROR(CheckFailed());
      auto state = records_->GetWorkItem(record);
      if (!state.ok()) return state.status();
      if (*state && (*state)->completed()) return absl::OkStatus();
      DocumentMigrationOptions migration = options_.documents.migration;
      migration.single_work_item = false;
      migration.max_item_attempts = AttemptLimit();
      migration.target_indices = wiring_.target_indices.get();
      migration.target_tuning = tuning_.tuning.get();
      DocumentMigrationWorker worker(*wiring_.repository, **items, wiring_.sinks,
                                     wiring_.failed_sink.get(), clock_, migration);
      auto run = worker.Run();
      const WorkerSummary summary = worker.summary();
      result_.documents.items_completed += summary.items_completed;
      result_.documents.items_checkpointed += summary.items_checkpointed;
      result_.documents.docs_written += summary.docs_written;
      result_.documents.docs_already_newer += summary.docs_already_newer;
      result_.documents.docs_failed += summary.docs_failed;
      if (summary.docs_already_newer > 0) {
        Emit(WorkerPhase::kDocuments, "already_newer", "",
             StrCat(summary.docs_already_newer,
                    " documents already newer on the target (--preserve-version: it holds them "
                    "in an equal or higher version; left as they are, not failures)"));
      }
      for (const std::string& stream : summary.data_streams_without_versions) {
        auto& warned = result_.documents.data_streams_without_versions;
        if (std::find(warned.begin(), warned.end(), stream) != warned.end()) continue;
        warned.push_back(stream);
        Emit(WorkerPhase::kDocuments, "warning", stream,
             StrCat("--preserve-version does not apply to data stream ", stream,
                    ", which takes only create with internal versions: its documents go without "
                    "their source versions"));
      }
      result_.documents.source_bytes += summary.source_bytes;
      if (!run.ok()) {
        if (IsItemOverAttempts(run.status())) {
          return MarkFailed(WorkerPhase::kDocuments, "documents",
                            std::string(run.status().message()));
        }
        if (IsSnapshotReadFailure(run.status())) {
          exit_code_override_ = core::kExitSnapshotUnreadable;
          return run.status();
        }
        if (IsStoreMismatch(run.status()) || IsSourcelessIndex(run.status()) ||
            IsDeltaOrderRefusal(run.status()) || IsPreserveVersionRefusal(run.status())) {
          exit_code_override_ = core::kExitUsage;
          return run.status();
        }
        if (core::IsRetryable(run.status())) {
          Backoff();
          continue;
        }
        return run.status();
      }
      switch (run->outcome) {
        case WorkerOutcome::kStopped:
          stopped_ = true;
          return absl::OkStatus();
        case WorkerOutcome::kNoWorkLeft: {
          RFS_ASSIGN_OR_RETURN(Once once, RunOnce(WorkerPhase::kDocuments, record, "documents",
                                                  true, [] { return absl::OkStatus(); }));
          (void)once;
          return absl::OkStatus();
        }
        default:
          Emit(WorkerPhase::kDocuments, "waiting", "",
               "remaining shards are held by other workers");
          Backoff(std::chrono::milliseconds(3000));
      }
    }
  }

  // --- Full verification (--verify-all) ---

  static std::string RoundRecord(int round) { return StrCat(kVerifyRoundPrefix, round); }
  static std::string RoundDoneRecord(int round) { return StrCat(kVerifyRoundDonePrefix, round); }

  // The highest round begun, joined unless it is reported; else the next one, begun here.
  absl::StatusOr<int> PickRound() {
    int highest = 0;
    while (true) {
      RFS_ASSIGN_OR_RETURN(auto begun, records_->GetWorkItem(RoundRecord(highest + 1)));
      if (!begun) break;
      ++highest;
    }
    if (highest > 0) {
      RFS_ASSIGN_OR_RETURN(auto done, records_->GetWorkItem(RoundDoneRecord(highest)));
      if (!done || !done->completed()) return highest;
    }
    // Created, never leased: two workers beginning it at once both join it.
    RFS_RETURN_IF_ERROR(records_->CreateUnassignedWorkItem(RoundRecord(highest + 1), 0).status());
    return highest + 1;
  }

  // A full run's phase 5 verifies in one round, the first of its workers to get here decides which.
  absl::StatusOr<int> RunRound() {
    for (int attempt = 0; attempt < 2; ++attempt) {
      RFS_ASSIGN_OR_RETURN(auto recorded, records_->GetWorkItem(kVerifyRunRoundRecord));
      if (recorded && recorded->completed() && recorded->progress &&
          recorded->progress->next_cursor > 0) {
        return static_cast<int>(recorded->progress->next_cursor);
      }
      if (attempt > 0) break;
      RFS_ASSIGN_OR_RETURN(int round, PickRound());
      RFS_RETURN_IF_ERROR(
          coordination::RecordCompletedItem(*records_, clock_, kVerifyRunRoundRecord,
                                            options_.record_lease, static_cast<uint64_t>(round)));
    }
    return absl::InternalError(StrCat("record ", kVerifyRunRoundRecord, " holds no round"));
  }

  // Where a round's records of documents not equal go: a folder of its own below the
  // failed-documents folder, or a session of its own in the S3 stream.
  std::string RoundFolder(int round) const {
    return (std::filesystem::path(wiring_.failed_documents_dir) / StrCat("verify-round-", round))
        .string();
  }
  std::optional<FailedDocumentStreamOptions> RoundStream(int round) const {
    if (!options_.documents.failed_document_stream) return std::nullopt;
    FailedDocumentStreamOptions stream = *options_.documents.failed_document_stream;
    const std::string base = !stream.session_id.empty() ? stream.session_id
                             : !options_.documents.session_name.empty()
                                 ? options_.documents.session_name
                                 : std::string("rfs");
    stream.session_id = StrCat(base, "-verify-round-", round);
    stream.worker_id = result_.worker_id;
    return stream;
  }

  absl::StatusOr<std::unique_ptr<reindex::IFailedDocumentSink>> OpenRoundSink(
      int round, std::string* location) {
    if (auto stream = RoundStream(round)) {
      auto opened = S3FailedDocumentStream::Open(*std::move(stream));
      if (!opened.ok()) return opened.status();
      *location = (*opened)->location();
      return std::unique_ptr<reindex::IFailedDocumentSink>(*std::move(opened));
    }
    *location = RoundFolder(round);
    auto opened = reindex::GzipFailedDocumentSink::Open(
        *location, StrCat("verify-round-", round, "-", result_.worker_id));
    if (!opened.ok()) return opened.status();
    return std::unique_ptr<reindex::IFailedDocumentSink>(*std::move(opened));
  }

  // The options of a round's items: the migration's own (rebuild, transforms, splitting, trial
  // limits), over every document of the snapshot (a delta's too), nothing asked of the target
  // but the documents.
  DocumentMigrationOptions VerifyMigrationOptions() const {
    DocumentMigrationOptions migration = options_.documents.migration;
    migration.previous_snapshot_name.clear();
    migration.single_work_item = false;
    migration.max_item_attempts = AttemptLimit();
    migration.target_indices = nullptr;
    migration.target_tuning = nullptr;  // a verification changes no setting of the target
    migration.no_auto_create_indices = false;
    migration.counters = nullptr;
    return migration;
  }

  // The client of the verifying sinks: `_mget` and searches are safe to send twice, so passing
  // faults are resent at once; as many connections as batches in flight.
  absl::Status OpenVerifyClient() {
    if (verify_client_) return absl::OkStatus();
    auto transport = internal::OpenPatientTransport(
        *options_.documents.target,
        options_.documents.migration.reindexer.max_concurrent_batches + 2);
    if (!transport.ok()) return transport.status();
    verify_transport_ = *std::move(transport);
    verify_client_ = std::make_unique<opensearch::OpenSearchClient>(*verify_transport_);
    return absl::OkStatus();
  }

  // Takes the round's items until every one is complete (by this worker or others).
  absl::Status VerifyRoundItems(int round) {
    const std::string item = StrCat("verify round ", round);
    Emit(WorkerPhase::kVerify, "started", item, "every document against the target");
    int exit_code = core::kExitFailure;
    auto items = internal::OpenCoordinator(options_.documents, wiring_, result_.worker_id,
                                           internal::ItemSpace::kVerify, &exit_code, round);
    if (!items.ok()) {
      exit_code_override_ = exit_code;
      return items.status();
    }
    std::string location;
    RFS_ASSIGN_OR_RETURN(auto failed_sink, OpenRoundSink(round, &location));
    RFS_RETURN_IF_ERROR(OpenVerifyClient());
    internal::VerifyingSinkOptions sink_options;
    sink_options.round = round;
    sink_options.preserve_version = options_.documents.migration.preserve_version;
    sink_options.action_options = wiring_.cluster_sink->action_options();
    auto sink = std::make_shared<internal::VerifyingSink>(*verify_client_, verify_tally_,
                                                          std::move(sink_options));
    SinkFactory sinks = [sink](std::string_view, std::string_view)
        -> absl::StatusOr<std::shared_ptr<reindex::IDocumentSink>> { return sink; };
    while (true) {
      if (!options_.verify_only) RFS_RETURN_IF_ERROR(CheckFailed());
      DocumentMigrationWorker worker(*wiring_.repository, **items, sinks, failed_sink.get(), clock_,
                                     VerifyMigrationOptions());
      auto run = worker.Run();
      if (!run.ok()) {
        if (IsItemOverAttempts(run.status())) {
          if (options_.verify_only) return run.status();
          return MarkFailed(WorkerPhase::kVerify, item, std::string(run.status().message()));
        }
        if (IsSnapshotReadFailure(run.status())) {
          exit_code_override_ = core::kExitSnapshotUnreadable;
          return run.status();
        }
        if (IsStoreMismatch(run.status()) || IsSourcelessIndex(run.status()) ||
            IsPreserveVersionRefusal(run.status())) {
          exit_code_override_ = core::kExitUsage;
          return run.status();
        }
        if (core::IsRetryable(run.status()) && !StopRequested()) {
          Backoff();
          continue;
        }
        return run.status();
      }
      if (run->outcome == WorkerOutcome::kStopped) {
        stopped_ = true;
        return absl::OkStatus();
      }
      if (run->outcome == WorkerOutcome::kNoWorkLeft) break;
      Emit(WorkerPhase::kVerify, "waiting", item, "remaining shards are held by other workers");
      Backoff(std::chrono::milliseconds(3000));
    }
    if (options_.documents.migration.preserve_version) {
      RFS_RETURN_IF_ERROR(RecordNewerCounts(round));
    }
    return absl::OkStatus();
  }

  // --preserve-version: this worker's already-newer counts per index, each in a slot record of
  // its own ("verify_round_newer__N__<index>__K", the count as its value): the first free K.
  absl::Status RecordNewerCounts(int round) {
    std::vector<std::pair<std::string, uint64_t>> counts;
    {
      std::lock_guard lock(verify_tally_.mu);
      for (const auto& [index, tally] : verify_tally_.by_index) {
        const uint64_t newer = tally->already_newer.exchange(0);
        if (newer > 0) counts.emplace_back(index, newer);
      }
    }
    for (const auto& [index, newer] : counts) {
      for (int slot = 1;; ++slot) {
        const std::string id = NewerRecord(round, index, slot);
        RFS_ASSIGN_OR_RETURN(bool created, records_->CreateUnassignedWorkItem(id, 0));
        if (!created) continue;
        RFS_RETURN_IF_ERROR(
            coordination::RecordCompletedItem(*records_, clock_, id, options_.record_lease, newer));
        break;
      }
    }
    return absl::OkStatus();
  }
  static std::string NewerRecord(int round, std::string_view index, int slot) {
    return StrCat(kVerifyRoundNewerPrefix, round, "__", core::Base64UrlEncode(index), "__", slot);
  }

  // The documents the round's items delivered: each item's recorded count and its successors'.
  absl::StatusOr<uint64_t> DeliveredBy(IWorkCoordinator& items, const std::string& root) {
    uint64_t docs = 0;
    std::vector<std::string> pending{root};
    while (!pending.empty()) {
      const std::string id = std::move(pending.back());
      pending.pop_back();
      RFS_ASSIGN_OR_RETURN(auto state, items.GetWorkItem(id));
      if (!state) {
        return absl::FailedPreconditionError(
            StrCat("the verification's work item ", id, " is not in its store"));
      }
      if (!state->completed()) {
        return absl::UnavailableError(
            StrCat("the verification's work item ", id, " is not complete yet"));
      }
      if (state->progress) docs += state->progress->docs;
      for (const std::string& successor : state->successor_ids) pending.push_back(successor);
    }
    return docs;
  }

  // The round's records, by (index, id): the last error type seen (a document verified twice,
  // by a worker that died and its successor, counts once).
  absl::StatusOr<std::map<std::pair<std::string, std::string>, std::string>> ReadRoundRecords(
      int round) {
    std::map<std::pair<std::string, std::string>, std::string> out;
    std::shared_ptr<snapshot::ISourceRepo> source;
    if (auto stream = RoundStream(round)) {
      auto opened = OpenFailedDocumentStore(*stream, StrCat("session=", stream->session_id, "/"));
      if (!opened.ok()) return opened.status();
      source = *std::move(opened);
    } else {
      std::error_code error;
      if (!std::filesystem::is_directory(RoundFolder(round), error)) return out;
      auto opened = snapshot::FileSystemRepo::Open(RoundFolder(round));
      if (!opened.ok()) return opened.status();
      source = *std::move(opened);
    }
    auto blobs = source->ListBlobsBelow("");
    if (absl::IsNotFound(blobs.status())) return out;
    if (!blobs.ok()) return blobs.status();
    for (const std::string& path : *blobs) {
      if (!path.ends_with(".ndjson.gz")) continue;
      auto bytes = source->ReadBlob(path);
      if (!bytes.ok()) return bytes.status();
      if (bytes->empty()) continue;  // a worker killed before its first record
      auto records = ParseFailedDocumentRecords(
          std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()), path);
      if (!records.ok()) {
        // A file cut by a worker killed mid-record: its batch was never acknowledged, so the
        // item was verified again and recorded anew elsewhere.
        Emit(WorkerPhase::kVerify, "warning", path,
             StrCat("skipped: ", records.status().message()));
        continue;
      }
      for (RedriveRecord& record : *records) {
        out[{record.doc.index, record.doc.id}] = std::move(record.error_type);
      }
    }
    return out;
  }

  // The round's report: per index, what its items delivered, what its records say was not
  // equal, and the target's count after a refresh.
  absl::StatusOr<VerifyReport> RoundReport(int round) {
    VerifyReport report;
    report.round = round;
    report.records = RoundStream(round) ? std::string() : RoundFolder(round);
    if (auto stream = RoundStream(round)) {
      std::string prefix = stream->prefix;
      if (!prefix.empty() && prefix.back() != '/') prefix += '/';
      report.records = StrCat(stream->scheme, "://", stream->bucket, "/", prefix,
                              "session=", stream->session_id, "/");
    }
    RFS_RETURN_IF_ERROR(OpenRequestClient());
    RFS_RETURN_IF_ERROR(request_client_->Refresh());
    std::map<std::string, size_t> row_of;
    auto row_for = [&](const std::string& name) -> IndexVerification& {
      auto [it, added] = row_of.emplace(name, report.indices.size());
      if (added) {
        report.indices.emplace_back();
        report.indices.back().index = name;
      }
      return report.indices[it->second];
    };
    RFS_RETURN_IF_ERROR(CountExpected(round, row_for));
    RFS_ASSIGN_OR_RETURN(auto records, ReadRoundRecords(round));
    for (const auto& [key, type] : records) {
      // An earlier report's scan (its writer died before the round was marked reported): the
      // scan below counts them again.
      if (type == internal::kVerifyExtra) continue;
      IndexVerification& row = row_for(key.first);
      if (type == internal::kVerifyMissing) {
        ++row.missing;
      } else if (type == internal::kVerifyDifferent) {
        ++row.different;
      } else if (type == internal::kVerifyNotComparable) {
        ++row.not_comparable;
      } else {
        // Not delivered to the verifying sink (no `_source`, a transform failed on it): read
        // but never compared.
        ++row.not_comparable;
        ++row.expected;
      }
    }
    std::optional<internal::ExtraScanResult> scanned;
    if (options_.verify_scan_extra) {
      RFS_ASSIGN_OR_RETURN(scanned, ScanExtra(round, report));
    }
    for (IndexVerification& row : report.indices) {
      if (!row.excluded) RFS_RETURN_IF_ERROR(CompleteRow(round, scanned, row));
    }
    RFS_RETURN_IF_ERROR(RecordVerifyRows(report));
    return report;
  }

  // The documents each selected index of the snapshot delivered in round `round`'s work items,
  // into its row (`row_for` finds or adds the row of a target name).
  template <typename RowFor>
  absl::Status CountExpected(int round, RowFor& row_for) {
    int exit_code = core::kExitFailure;
    auto items = internal::OpenCoordinator(options_.documents, wiring_, result_.worker_id,
                                           internal::ItemSpace::kVerify, &exit_code, round);
    if (!items.ok()) return items.status();
    coordination::RetryingWorkCoordinator retrying(**items, clock_, CoordinatorRetries());
    const DocumentMigrationOptions migration = VerifyMigrationOptions();
    for (const std::string& index : wiring_.repository->IndicesIn(*snapshot_)) {
      const snapshot::DataStream* stream = snapshot::DataStreamOf(data_streams_, index);
      IndexVerification& row =
          row_for(migration.target_index_prefix + (stream != nullptr ? stream->name : index));
      row.excluded = !Selected(index);
      if (row.excluded) continue;
      auto metadata = wiring_.repository->ReadIndexMetadata(*snapshot_, index);
      if (!metadata.ok()) return MarkSnapshotReadFailure(metadata.status());
      for (int shard = 0; shard < metadata->number_of_shards; ++shard) {
        auto roots = internal::ShardWorkItems(*wiring_.repository, *snapshot_, migration, false,
                                              index, shard);
        if (!roots.ok()) return roots.status();
        for (const coordination::WorkItemId& root : *roots) {
          RFS_ASSIGN_OR_RETURN(uint64_t docs, DeliveredBy(retrying, root.ToString()));
          row.expected += docs;
        }
      }
    }
    return absl::OkStatus();
  }

  // A selected index's row finished: documents already newer on the target, equal ones, the
  // target's count and what it holds beyond the source; reported as progress.
  absl::Status CompleteRow(int round, const std::optional<internal::ExtraScanResult>& scanned,
                           IndexVerification& row) {
    if (options_.documents.migration.preserve_version) {
      for (int slot = 1;; ++slot) {
        RFS_ASSIGN_OR_RETURN(auto counted,
                             records_->GetWorkItem(NewerRecord(round, row.index, slot)));
        if (!counted) break;
        if (counted->completed() && counted->progress) {
          row.already_newer += counted->progress->next_cursor;
        }
      }
    }
    const uint64_t not_equal = row.missing + row.different + row.not_comparable + row.already_newer;
    row.equal = row.expected > not_equal ? row.expected - not_equal : 0;
    auto count = request_client_->Count(row.index);
    if (absl::IsNotFound(count.status())) {
      row.migrated = 0;
      row.note = "not on the target";
    } else if (!count.ok()) {
      return count.status();
    } else {
      row.migrated = *count;
    }
    // Documents that could not be compared may well be there: not counted as extra.
    const uint64_t accounted = row.equal + row.different + row.already_newer + row.not_comparable;
    row.extra = row.migrated > accounted ? row.migrated - accounted : 0;
    if (scanned) {
      // Named one by one rather than counted.
      row.extra = scanned->extra.contains(row.index) ? scanned->extra.at(row.index) : 0;
      if (auto named = scanned->named.find(row.index); named != scanned->named.end()) {
        Emit(WorkerPhase::kVerify, "progress", StrCat("index ", row.index),
             StrCat("extra on the target, not in the source: ", absl::StrJoin(named->second, ", "),
                    row.extra > named->second.size() ? ", ..." : ""));
      }
    }
    Emit(WorkerPhase::kVerify, "progress", StrCat("index ", row.index),
         StrCat(row.expected, " expected, ", row.equal, " equal, ", row.missing, " missing, ",
                row.different, " different, ", row.not_comparable, " not comparable, ",
                row.already_newer, " already newer, ", row.extra, " extra (round ", round, ")"));
    return absl::OkStatus();
  }

  // --verify-scan-extra: the target's ids of every reported index against the source's.
  absl::StatusOr<internal::ExtraScanResult> ScanExtra(int round, const VerifyReport& report) {
    internal::ExtraScanOptions scan;
    scan.round = round;
    scan.migration = VerifyMigrationOptions();
    for (const IndexVerification& row : report.indices) {
      if (!row.excluded) scan.indices.push_back(row.index);
    }
    scan.scratch_store =
        (std::filesystem::temp_directory_path() /
         StrCat("rfs-verify-scan-", round, "-", ::getpid(), "-", result_.worker_id, ".sqlite"))
            .string();
    Emit(
        WorkerPhase::kVerify, "started", StrCat("verify round ", round),
        StrCat("scanning the ids of ", scan.indices.size(), " target indices for extra documents"));
    std::string location;
    RFS_ASSIGN_OR_RETURN(auto records, OpenRoundSink(round, &location));
    RFS_RETURN_IF_ERROR(OpenVerifyClient());
    return internal::ScanExtraDocuments(*wiring_.repository, *verify_client_, *records, clock_,
                                        scan);
  }

  // Each index's result, in a record of the workers' space whose creator carries it (as the
  // FAILED record's reason), so that the console's status shows it per index.
  absl::Status RecordVerifyRows(const VerifyReport& report) {
    for (const IndexVerification& index : report.indices) {
      if (index.excluded) continue;
      coordination::VerifyIndexRow row;
      row.round = report.round;
      row.index = index.index;
      row.expected = index.expected;
      row.equal = index.equal;
      row.missing = index.missing;
      row.different = index.different;
      row.not_comparable = index.not_comparable;
      row.already_newer = index.already_newer;
      row.extra = index.extra;
      row.target_count = index.migrated;
      row.note = index.note;
      int exit_code = core::kExitFailure;
      auto writer = internal::OpenCoordinator(options_.documents, wiring_, row.ToText(),
                                              internal::ItemSpace::kWorkerRecords, &exit_code);
      if (!writer.ok()) return writer.status();
      coordination::RetryingWorkCoordinator retrying(**writer, clock_, CoordinatorRetries());
      // A report written again (its first writer died before the round was marked reported)
      // finds the record there: the same round's figures.
      RFS_RETURN_IF_ERROR(retrying.CreateUnassignedWorkItem(row.RecordId(), 0).status());
    }
    return absl::OkStatus();
  }

  // --verify-only --verify-all: one round, joined or begun, then its report.
  RfsWorkerResult VerifyAllOnly() {
    int exit_code = core::kExitFailure;
    if (auto status = OpenRecords(&exit_code); !status.ok()) return Finish(status, exit_code);
    auto round = PickRound();
    if (!round.ok()) return Finish(round.status(), core::kExitFailure);
    absl::Status items = VerifyRoundItems(*round);
    if (stopped_) return Finish(absl::OkStatus(), core::kExitHandoffOrStopped);
    if (!items.ok()) return Finish(items, exit_code_override_.value_or(core::kExitFailure));
    auto report = RoundReport(*round);
    if (!report.ok()) {
      return Finish(report.status(), IsSnapshotReadFailure(report.status())
                                         ? core::kExitSnapshotUnreadable
                                         : core::kExitFailure);
    }
    result_.verify = *report;
    if (auto done = coordination::RecordCompletedItem(*records_, clock_, RoundDoneRecord(*round),
                                                      options_.record_lease);
        !done.ok()) {
      return Finish(done, core::kExitFailure);
    }
    if (!report->ok()) return Finish(PhaseFailed(MissingReason(*report)), core::kExitPhaseFailed);
    return Finish(absl::OkStatus(), 0);
  }

  // A full run's phase 5 with --verify-all: every worker that gets here takes the round's items
  // (no record is held meanwhile), then one of them reports under the phase's record.
  absl::Status VerifyAllPhase() {
    const std::string record = PhaseRecord(WorkerPhase::kVerify);
    RFS_ASSIGN_OR_RETURN(auto state, records_->GetWorkItem(record));
    if (state && state->completed()) return absl::OkStatus();
    RFS_ASSIGN_OR_RETURN(int round, RunRound());
    RFS_RETURN_IF_ERROR(VerifyRoundItems(round));
    if (stopped_) return absl::OkStatus();
    return RunOnce(WorkerPhase::kVerify, record, "verify", true,
                   [&]() -> absl::Status {
                     auto report = RoundReport(round);
                     if (!report.ok()) {
                       return IsSnapshotReadFailure(report.status())
                                  ? report.status()
                                  : core::WithContext(report.status(), "the verification's report");
                     }
                     result_.verify = *report;
                     RFS_RETURN_IF_ERROR(coordination::RecordCompletedItem(
                         *records_, clock_, RoundDoneRecord(round), options_.record_lease));
                     if (!report->ok()) {
                       return MarkFailed(WorkerPhase::kVerify, "verify", MissingReason(*report));
                     }
                     return absl::OkStatus();
                   })
        .status();
  }

  static std::string MissingReason(const VerifyReport& report) {
    std::string reason;
    for (const auto& index : report.indices) {
      if (index.excluded) continue;
      if (index.missing > 0) {
        reason += StrCat(reason.empty() ? "" : "; ", "index ", index.index, ": ", index.missing,
                         " of ", index.expected, " documents missing");
      }
      if (report.round > 0) {
        for (auto [count, words] : {std::pair{index.different, "different"},
                                    {index.not_comparable, "not comparable"},
                                    {index.extra, "extra on the target"}}) {
          if (count == 0) continue;
          reason += StrCat(reason.empty() ? "" : "; ", "index ", index.index, ": ", count,
                           " documents ", words);
        }
      }
      if (!index.sample_mismatches.empty()) {
        reason += StrCat(reason.empty() ? "" : "; ", "index ", index.index, ": ",
                         index.sample_mismatches.size(), " sampled documents differ (",
                         index.sample_mismatches[0], ")");
      }
    }
    return reason;
  }

  absl::StatusOr<VerifyReport> Verify() {
    VerifyReport report;
    const FailedDocuments failed = CountFailedDocuments(wiring_.failed_documents_dir);
    RFS_RETURN_IF_ERROR(OpenRequestClient());
    if (request_client_) {
      if (auto refreshed = request_client_->Refresh(); !refreshed.ok()) return refreshed;
    }
    const std::vector<std::string> in_snapshot = wiring_.repository->IndicesIn(*snapshot_);
    std::set<std::string> streams_done;
    for (const std::string& index : in_snapshot) {
      // A data stream is checked as one: its backing indices' documents against the stream's.
      const snapshot::DataStream* stream = snapshot::DataStreamOf(data_streams_, index);
      if (stream != nullptr && !streams_done.insert(stream->name).second) continue;
      IndexVerification row;
      // A trial's documents are in its prefixed indices.
      row.index = options_.documents.migration.target_index_prefix +
                  (stream != nullptr ? stream->name : index);
      row.excluded = !Selected(index);
      if (row.excluded) {
        // Not read: an excluded (often system) index may not even be readable.
        report.indices.push_back(std::move(row));
        continue;
      }
      std::vector<std::string> sources{index};
      if (stream != nullptr) {
        sources.clear();
        for (const std::string& backing : stream->backing_indices) {
          if (std::binary_search(in_snapshot.begin(), in_snapshot.end(), backing)) {
            sources.push_back(backing);
          }
        }
      }
      RFS_ASSIGN_OR_RETURN(SnapshotIndexDocs docs, ReadSourceSide(sources));
      row.expected = docs.count;
      Emit(WorkerPhase::kVerify, "progress", StrCat("index ", row.index),
           StrCat(row.expected, " documents in the snapshot"));
      if (auto it = failed.counts.find(row.index); it != failed.counts.end()) {
        row.failed = it->second;
      }
      RFS_ASSIGN_OR_RETURN(TargetCopies copies, ReadTargetSide(row, stream != nullptr, docs));
      const uint64_t accounted = row.migrated + row.failed;
      row.missing = row.expected > accounted ? row.expected - accounted : 0;
      const auto failed_ids = failed.ids.find(row.index);
      CompareSample(docs, copies, failed_ids != failed.ids.end() ? &failed_ids->second : nullptr,
                    row);
      report.indices.push_back(std::move(row));
    }
    return report;
  }

  // The documents of `indices` in the snapshot: their count and a random sample.
  absl::StatusOr<SnapshotIndexDocs> ReadSourceSide(const std::vector<std::string>& indices) {
    SnapshotIndexDocs docs;
    for (const std::string& source_index : indices) {
      const uint64_t limit = options_.documents.migration.max_docs_per_shard;
      auto read = ReadIndexDocs(*wiring_.repository, *snapshot_, source_index,
                                static_cast<size_t>(options_.verify_sample), rng_,
                                limit > 0 ? limit : UINT64_MAX,
                                options_.documents.migration.preserve_version,
                                options_.documents.migration.enable_sourceless_migrations);
      if (!read.ok()) {
        return core::IsRetryable(read.status()) ? read.status()
                                                : MarkSnapshotReadFailure(read.status());
      }
      docs.count += read->count;
      for (auto& sampled : read->sample) docs.sample.push_back(std::move(sampled));
    }
    return docs;
  }

  // The target's copies of the sampled documents, by id (versions only from GETs).
  struct TargetCopies {
    std::map<std::string, std::string> sources;
    std::map<std::string, int64_t> versions;
  };

  // The target's document count into row.migrated, and its copies of the sample: by GET, by an
  // ids search for a data stream (it serves no GET by _id: its documents are in backing
  // indices), or from the output directory of the embedded default.
  absl::StatusOr<TargetCopies> ReadTargetSide(IndexVerification& row, bool data_stream,
                                              const SnapshotIndexDocs& docs) {
    TargetCopies copies;
    if (!request_client_) {
      std::set<std::string> wanted;
      for (const auto& [id, routing, source, version] : docs.sample) wanted.insert(id);
      DirectoryIndex directory =
          ReadDirectoryIndex(options_.documents.output_dir, row.index, wanted);
      row.migrated = directory.count;
      copies.sources = std::move(directory.sources);
      return copies;
    }
    auto count = request_client_->Count(row.index);
    if (absl::IsNotFound(count.status())) {
      row.migrated = 0;
    } else if (!count.ok()) {
      return count.status();
    } else {
      row.migrated = *count;
    }
    if (data_stream) {
      if (docs.sample.empty()) return copies;
      json::array ids;
      for (const auto& sampled : docs.sample) ids.emplace_back(sampled.id);
      const size_t wanted = ids.size();
      auto found = request_client_->Search(
          row.index,
          json::object{{"size", wanted},
                       {"query", json::object{{"ids", json::object{{"values", std::move(ids)}}}}}});
      if (!found.ok()) return found.status();
      for (auto& hit : found->hits) copies.sources[hit.id] = std::move(hit.source);
      return copies;
    }
    for (const auto& [id, routing, source, version] : docs.sample) {
      auto stored = request_client_->GetDocument(row.index, id, routing);
      if (!stored.ok()) return stored.status();
      if (*stored) {
        copies.sources[id] = (*stored)->source;
        copies.versions[id] = (*stored)->version.version;
      }
    }
    return copies;
  }

  // Each sampled document against the target's copy (`failed_ids`: the index's documents
  // recorded as failed, accounted for already).
  void CompareSample(const SnapshotIndexDocs& docs, const TargetCopies& copies,
                     const std::set<std::string>* failed_ids, IndexVerification& row) {
    for (const auto& [id, routing, source, version] : docs.sample) {
      ++row.sampled;
      auto it = copies.sources.find(id);
      if (it == copies.sources.end() && failed_ids != nullptr && failed_ids->contains(id)) {
        continue;  // recorded as failed: accounted for (and counted in row.failed)
      }
      if (it == copies.sources.end()) {
        row.sample_mismatches.push_back(StrCat(id, ": not on the target"));
      } else if (!SameJson(it->second, source)) {
        const auto target_version = copies.versions.find(id);
        if (options_.documents.migration.preserve_version &&
            target_version != copies.versions.end() && target_version->second > version) {
          ++row.sample_newer;  // written on the target since, in a higher version: kept
          continue;
        }
        row.sample_mismatches.push_back(StrCat(id, ": _source differs"));
      }
    }
  }

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

}  // namespace

std::string_view ToString(WorkerPhase phase) {
  switch (phase) {
    case WorkerPhase::kSnapshot:
      return "snapshot";
    case WorkerPhase::kMetadata:
      return "metadata";
    case WorkerPhase::kIndices:
      return "indices";
    case WorkerPhase::kDocuments:
      return "documents";
    case WorkerPhase::kVerify:
      return "verify";
  }
  return "unknown";
}

bool VerifyReport::ok() const {
  for (const auto& index : indices) {
    if (index.excluded) continue;
    if (index.missing > 0 || !index.sample_mismatches.empty()) return false;
    if (index.different > 0 || index.not_comparable > 0 || index.extra > 0) return false;
  }
  return true;
}

std::string VerifyReport::ToText() const {
  if (round > 0) {
    std::string out = StrCat("Verification of every document (round ", round,
                             "): index, expected, equal, missing, different, not comparable, "
                             "already newer, extra, target count\n");
    for (const auto& index : indices) {
      if (index.excluded) {
        out += StrCat("  ", index.index, ": excluded by the allowlist (or a system index)\n");
        continue;
      }
      out +=
          StrCat("  ", index.index, ": expected ", index.expected, ", equal ", index.equal,
                 ", missing ", index.missing, ", different ", index.different, ", not comparable ",
                 index.not_comparable, ", already newer ", index.already_newer, ", extra ",
                 index.extra, ", target count ", index.migrated, index.note.empty() ? "" : " (",
                 index.note, index.note.empty() ? "" : ")", "\n");
    }
    out += ok() ? "Verification: every document is on the target as the migration sends it\n"
                : StrCat(
                      "Verification: documents are MISSING or differ; their records (for "
                      "--redrive-failed-documents): ",
                      records, "\n");
    return out;
  }
  std::string out = "Verification: index, expected, migrated, failed, missing, sample\n";
  for (const auto& index : indices) {
    if (index.excluded) {
      out += StrCat("  ", index.index, ": excluded by the allowlist (or a system index)\n");
      continue;
    }
    out += StrCat("  ", index.index, ": expected ", index.expected, ", migrated ", index.migrated,
                  ", failed ", index.failed, ", missing ", index.missing, ", sample ",
                  index.sampled - index.sample_mismatches.size() - index.sample_newer, "/",
                  index.sampled, " identical",
                  index.sample_newer > 0 ? StrCat(", ", index.sample_newer,
                                                  " newer on the target (--preserve-version)")
                                         : std::string(),
                  "\n");
    for (const auto& mismatch : index.sample_mismatches) out += StrCat("    ", mismatch, "\n");
  }
  out += ok() ? "Verification: every document is accounted for\n"
              : "Verification: documents are MISSING or differ\n";
  return out;
}

json::object VerifyReport::ToJson() const {
  json::array rows;
  for (const auto& index : indices) {
    json::array mismatches;
    for (const auto& m : index.sample_mismatches) mismatches.emplace_back(m);
    rows.push_back(json::object{{"index", index.index},
                                {"excluded", index.excluded},
                                {"expected", index.expected},
                                {"migrated", index.migrated},
                                {"failed", index.failed},
                                {"missing", index.missing},
                                {"sampled", index.sampled},
                                {"sample_mismatches", std::move(mismatches)},
                                {"sample_newer", index.sample_newer}});
    if (round > 0) {
      json::object& row = rows.back().as_object();
      row["equal"] = index.equal;
      row["different"] = index.different;
      row["not_comparable"] = index.not_comparable;
      row["already_newer"] = index.already_newer;
      row["extra"] = index.extra;
      if (!index.note.empty()) row["note"] = index.note;
    }
  }
  json::object out{{"ok", ok()}, {"indices", std::move(rows)}};
  if (round > 0) {
    out["round"] = round;
    out["records"] = records;
  }
  return out;
}

std::string DeriveSnapshotName(const RfsWorkerOptions& options) {
  std::string key =
      StrCat(options.source ? options.source->endpoint : "", "|", options.documents.repository.uri,
             "|", options.documents.session_name, "|");
  for (const auto& entry : options.metadata.index_allowlist.entries()) key += entry + ",";
  return StrCat("rfs-", net::Sha256Hex(key).substr(0, 12));
}

RfsWorkerResult RunWorker(RfsWorkerOptions options) { return Worker(std::move(options)).Run(); }

}  // namespace rfs::migration
