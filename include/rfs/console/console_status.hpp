// The console's progress report for one session: the seed's status totals, then per index and
// per shard, with throughput over the last minute, an ETA and the active workers.
//
// A shard's work items form a chain (the first item, then the successors each checkpoint hands
// on); a chain counts once, as the Java console counts it: completed when every item of it is,
// assigned while any item is under a live lease, pending otherwise. Its document and byte totals
// are the ones its creator declared; processed counts are the sums its holders recorded.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/json/value.hpp>

#include "rfs/console/console_store.hpp"
#include "rfs/coordination/work_coordinator.hpp"

namespace rfs::console {

/// Documents and bytes processed in a session at one time (for throughput).
struct ProgressSample {
  ProgressSample() = default;
  ProgressSample(TimePoint at, uint64_t documents, uint64_t bytes)
      : at(at), documents(documents), bytes(bytes) {}

  TimePoint at{};
  uint64_t documents = 0;
  uint64_t bytes = 0;
  /// The same per index: documents and `_source` bytes.
  std::map<std::string, std::pair<uint64_t, uint64_t>> indices;
};

/// The last few minutes of samples per session, for rates over the last minute. Thread-safe.
class ProgressHistory {
 public:
  void Add(const std::string& session, const ProgressSample& sample);
  std::vector<ProgressSample> Get(const std::string& session) const;
  void Forget(const std::string& session);

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::deque<ProgressSample>> samples_;
};

/// The back-pressure a worker reported with its lease calls (429s, resent requests or items).
struct WorkerBackPressureReport {
  std::string worker_id;
  uint64_t rejected_429 = 0;
  uint64_t retries = 0;
  TimePoint reported_at{};
};

/// Each session's workers' latest back-pressure reports, kept in memory (at most kMaxWorkers per
/// session: the oldest report goes first). Thread-safe.
class WorkerReports {
 public:
  static constexpr size_t kMaxWorkers = 4096;
  void Add(const std::string& session, const WorkerBackPressureReport& report);
  /// In worker id order.
  std::vector<WorkerBackPressureReport> Get(const std::string& session) const;
  void Forget(const std::string& session);

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, WorkerBackPressureReport>> reports_;
};

/// Adds the workers' back-pressure to a status document: "workers_back_pressure" (every worker
/// that reported, in worker id order) and "back_pressure" on each of `status`'s active workers.
void AddBackPressure(boost::json::object& status,
                     const std::vector<WorkerBackPressureReport>& reports, TimePoint now);

/// The status document (see the file comment and README "Console API"). `history` holds earlier
/// samples of this session, oldest first; `now` is the store's time.
boost::json::object ComputeStatus(const SessionRecord& session,
                                  const std::vector<coordination::WorkItemState>& items,
                                  const std::vector<WorkItemInfo>& infos,
                                  const std::vector<ProgressSample>& history, TimePoint now);

/// The seed's status of one item: "completed", "assigned" (a live lease) or "pending".
std::string ItemStatus(const coordination::WorkItemState& item, TimePoint now);

/// ISO 8601 UTC with milliseconds, e.g. "2026-11-24T09:30:00.250Z".
std::string FormatTime(TimePoint t);

/// The status document as a person reads it in a terminal.
std::string FormatStatusText(const boost::json::object& status);

}  // namespace rfs::console
