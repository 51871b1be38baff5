#include "rfs/console/console_status.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <tuple>

#include <boost/json.hpp>

#include "rfs/core/str_cat.hpp"

#include "console/console_status_internal.hpp"

namespace rfs::console {
namespace {

namespace json = boost::json;
using coordination::WorkItemState;
using core::StrCat;

constexpr auto kThroughputWindow = std::chrono::seconds(60);
// Long enough for the page's throughput chart; a sample per status request (the page asks every
// few seconds), at most kChartPoints of them charted.
constexpr auto kHistoryKept = std::chrono::minutes(30);
constexpr size_t kChartPoints = 120;
// Per-index series on the chart: the indices that moved most.
constexpr size_t kChartedIndices = 8;

struct Counts {
  int64_t pending = 0;
  int64_t assigned = 0;
  int64_t completed = 0;
  int64_t total() const { return pending + assigned + completed; }
};

struct Progress {
  uint64_t documents_processed = 0;
  /// Of the shard files (the unit of bytes_total): all of a completed shard's, else its share
  /// of the documents processed. Never more than the total.
  uint64_t bytes_processed = 0;
  std::optional<uint64_t> documents_total;
  std::optional<uint64_t> bytes_total;
  uint64_t documents_failed = 0;
  /// `_source` bytes the workers sent: the throughput's unit, not the total's.
  uint64_t source_bytes = 0;
  /// What became of the documents besides acceptance, as rfs workers report it.
  coordination::ItemOutcomes outcomes;
};

struct Shard {
  std::optional<std::string> index_name;
  std::optional<int64_t> shard_number;
  std::string key_id;  // The first item's id, for shards known by their item only.
  Counts items;
  Progress progress;
  std::string worker_id;
  TimePoint lease_expiry{};
  std::string status() const {
    if (items.total() > 0 && items.completed == items.total()) return "completed";
    return items.assigned > 0 ? "assigned" : "pending";
  }
};

double Percent(uint64_t done, std::optional<uint64_t> total) {
  if (!total) return -1;
  if (*total == 0) return 100;
  return std::min(100.0, 100.0 * static_cast<double>(done) / static_cast<double>(*total));
}

// Percent complete: by documents when the totals are known, else by bytes, else by shards.
double PercentComplete(const Progress& p, const Counts& shards) {
  if (shards.total() > 0 && shards.completed == shards.total()) return 100;
  if (p.documents_total && *p.documents_total > 0) {
    return std::min(99.9, Percent(p.documents_processed, p.documents_total));
  }
  if (p.bytes_total && *p.bytes_total > 0)
    return std::min(99.9, Percent(p.bytes_processed, p.bytes_total));
  if (shards.total() == 0) return 0;
  return 100.0 * static_cast<double>(shards.completed) / static_cast<double>(shards.total());
}

json::value OptionalNumber(std::optional<uint64_t> v) {
  return v ? json::value(*v) : json::value(nullptr);
}

double Round1(double v) { return std::round(v * 10) / 10; }

json::object CountsJson(const Counts& c) {
  return {{"pending", c.pending}, {"assigned", c.assigned}, {"completed", c.completed}};
}

json::object ProgressJson(const Progress& p) {
  json::object documents{{"processed", p.documents_processed},
                         {"total", OptionalNumber(p.documents_total)},
                         {"failed", p.documents_failed}};
  const double doc_percent = Percent(p.documents_processed, p.documents_total);
  documents["percent"] = doc_percent < 0 ? json::value(nullptr) : json::value(Round1(doc_percent));
  json::object bytes{{"processed", p.bytes_processed}, {"total", OptionalNumber(p.bytes_total)}};
  const double byte_percent = Percent(p.bytes_processed, p.bytes_total);
  bytes["percent"] = byte_percent < 0 ? json::value(nullptr) : json::value(Round1(byte_percent));
  bytes["source_bytes_sent"] = p.source_bytes;
  json::object outcomes;
  for (const auto& [name, field] : coordination::kItemOutcomeFields) {
    outcomes[name] = p.outcomes.*field;
  }
  return {{"documents", std::move(documents)},
          {"bytes", std::move(bytes)},
          {"outcomes", std::move(outcomes)}};
}

void AddTotal(std::optional<uint64_t>& into, std::optional<uint64_t> v) {
  if (v) into = into.value_or(0) + *v;
}

using Counter = std::pair<uint64_t, uint64_t>;  // documents, source bytes

// Rates of a counter sampled over time (`points`, oldest first), smoothed for counters that move
// in steps: workers report progress every so often (with their lease renewals), and the console
// samples more often than that, so the rate between successive samples is a sawtooth of zeros and
// spikes. Rates are taken between the samples where the counter changed (where a report
// arrived), over at least kThroughputWindow: the true average rate between two reports. When
// reports stop coming (a stall, or the end of the run), the rate falls once the time since the
// last one exceeds the usual interval between reports.
class SteppedRates {
 public:
  SteppedRates(const std::vector<const ProgressSample*>& points,
               std::function<Counter(const ProgressSample&)> counter)
      : points_(points), counter_(std::move(counter)) {
    for (size_t i = 0; i < points_.size(); ++i) {
      if (i == 0 || counter_(*points_[i]) != counter_(*points_[i - 1])) changes_.push_back(i);
    }
    std::vector<double> gaps;
    for (size_t c = 1; c < changes_.size(); ++c) {
      gaps.push_back(Seconds(points_[changes_[c]]->at - points_[changes_[c - 1]]->at));
    }
    if (!gaps.empty()) {
      std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
      report_interval_ = gaps[gaps.size() / 2];
    }
  }

  struct Rate {
    double documents = 0;
    double bytes = 0;
    double seconds = 0;  // the span measured
  };

  // The rate at points[i].
  Rate At(size_t i) const {
    if (changes_.empty() || i >= points_.size()) return {};
    const size_t last = *std::prev(std::upper_bound(changes_.begin(), changes_.end(), i));
    if (last == changes_.front()) return {};  // nothing moved yet
    // The latest report at least a window before the last one (else the first sample).
    size_t base = changes_.front();
    for (const size_t c : changes_) {
      if (c >= last || points_[c]->at > points_[last]->at - kThroughputWindow) break;
      base = c;
    }
    const TimePoint end = std::max(
        points_[last]->at, points_[i]->at - std::chrono::duration_cast<TimePoint::duration>(
                                                std::chrono::duration<double>(report_interval_)));
    const double seconds = Seconds(end - points_[base]->at);
    if (seconds <= 0) return {};
    const Counter from = counter_(*points_[base]), to = counter_(*points_[last]);
    auto rate = [&](uint64_t a, uint64_t b) {
      return std::max(0.0, static_cast<double>(b) - static_cast<double>(a)) / seconds;
    };
    return {rate(from.first, to.first), rate(from.second, to.second), seconds};
  }

 private:
  static double Seconds(TimePoint::duration d) { return std::chrono::duration<double>(d).count(); }

  const std::vector<const ProgressSample*>& points_;
  std::function<Counter(const ProgressSample&)> counter_;
  std::vector<size_t> changes_;
  double report_interval_ = 0;
};

void Accumulate(Progress& into, const Progress& p) {
  into.documents_processed += p.documents_processed;
  into.bytes_processed += p.bytes_processed;
  into.source_bytes += p.source_bytes;
  into.documents_failed += p.documents_failed;
  into.outcomes += p.outcomes;
  AddTotal(into.documents_total, p.documents_total);
  AddTotal(into.bytes_total, p.bytes_total);
}

}  // namespace

void ProgressHistory::Add(const std::string& session, const ProgressSample& sample) {
  std::lock_guard lock(mu_);
  auto& samples = samples_[session];
  if (!samples.empty() && sample.at <= samples.back().at) return;
  samples.push_back(sample);
  while (samples.size() > 2 && samples.front().at < sample.at - kHistoryKept) samples.pop_front();
}

std::vector<ProgressSample> ProgressHistory::Get(const std::string& session) const {
  std::lock_guard lock(mu_);
  auto it = samples_.find(session);
  if (it == samples_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

void ProgressHistory::Forget(const std::string& session) {
  std::lock_guard lock(mu_);
  samples_.erase(session);
}

void WorkerReports::Add(const std::string& session, const WorkerBackPressureReport& report) {
  std::lock_guard lock(mu_);
  auto& workers = reports_[session];
  workers[report.worker_id] = report;
  if (workers.size() <= kMaxWorkers) return;
  auto oldest = workers.begin();
  for (auto it = workers.begin(); it != workers.end(); ++it) {
    if (it->second.reported_at < oldest->second.reported_at) oldest = it;
  }
  workers.erase(oldest);
}

std::vector<WorkerBackPressureReport> WorkerReports::Get(const std::string& session) const {
  std::lock_guard lock(mu_);
  std::vector<WorkerBackPressureReport> out;
  if (auto it = reports_.find(session); it != reports_.end()) {
    for (const auto& [id, report] : it->second) out.push_back(report);
  }
  return out;
}

void WorkerReports::Forget(const std::string& session) {
  std::lock_guard lock(mu_);
  reports_.erase(session);
}

void AddBackPressure(json::object& status, const std::vector<WorkerBackPressureReport>& reports,
                     TimePoint now) {
  json::array rows;
  std::map<std::string_view, json::object> by_worker;
  for (const auto& report : reports) {
    json::object counts{{"rejected_429", report.rejected_429}, {"retries", report.retries}};
    by_worker[report.worker_id] = counts;
    counts["worker_id"] = report.worker_id;
    counts["reported_at"] = FormatTime(report.reported_at);
    counts["reported_seconds_ago"] =
        Round1(std::max(0.0, std::chrono::duration<double>(now - report.reported_at).count()));
    rows.push_back(std::move(counts));
  }
  if (json::value* active = status.if_contains("active_workers"); active && active->is_array()) {
    for (json::value& w : active->as_array()) {
      const auto it = by_worker.find(w.as_object().at("worker_id").as_string());
      if (it != by_worker.end()) w.as_object()["back_pressure"] = it->second;
    }
  }
  status["workers_back_pressure"] = std::move(rows);
}

std::string FormatTime(TimePoint t) {
  const int64_t millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(millis / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(millis % 1000));
  return buffer;
}

internal::ItemShard internal::ShardOfItem(const WorkItemState& item, const WorkItemInfo* info) {
  ItemShard shard;
  if (info != nullptr) shard = {info->index_name, info->shard_number};
  if (!shard.index_name || !shard.shard_number) {
    if (auto parsed = coordination::WorkItemId::ParseForJson(item.id)) {
      if (!shard.index_name) shard.index_name = parsed->index_name;
      if (!shard.shard_number) shard.shard_number = parsed->shard;
    }
  }
  return shard;
}

std::string ItemStatus(const WorkItemState& item, TimePoint now) {
  if (item.completed()) return "completed";
  if (!item.lease_holder.empty() && item.lease_expires_at > now) return "assigned";
  return "pending";
}

namespace {

using ShardKey = std::tuple<std::string, int64_t, std::string>;

// What one pass over the session's work items finds: the items grouped into shards (chains) by
// their declared or encoded (index, shard), and the session-wide facts read on the way.
struct ItemScan {
  std::map<ShardKey, Shard> shards;
  bool setup_exists = false;
  bool setup_completed = false;
  TimePoint last_update{};
  json::array workers;
  int64_t incomplete_items = 0;
  json::value trial = nullptr;
  // When the workers set the shards up (their items' creation) and when the last shard finished.
  std::optional<TimePoint> run_started;
  TimePoint last_completion{};
};

// A trial run's item (--max-docs-per-shard): its limit, or null when the id's number is not one.
json::value TrialOf(std::string_view item_id) {
  uint64_t max_docs = 0;
  const std::string_view digits = item_id.substr(coordination::kSetupTrialPrefix.size());
  const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), max_docs);
  if (parsed.ec == std::errc() && parsed.ptr == digits.data() + digits.size()) {
    return json::object{{"max_docs_per_shard", max_docs}};
  }
  return nullptr;
}

// A leased item's row of active_workers, with its liveness: when the worker last reported
// progress on it.
json::object ActiveWorkerJson(const WorkItemState& item, const Shard& shard, TimePoint now) {
  const bool reported = item.progress.has_value() && item.progress_at != TimePoint{};
  return {{"worker_id", item.lease_holder},
          {"work_item_id", item.id},
          {"index_name", shard.index_name ? json::value(*shard.index_name) : nullptr},
          {"shard_number", shard.shard_number ? json::value(*shard.shard_number) : nullptr},
          {"lease_expiry", FormatTime(item.lease_expires_at)},
          {"last_report_at", reported ? json::value(FormatTime(item.progress_at)) : nullptr},
          {"last_report_seconds_ago",
           reported ? json::value(Round1(std::max(
                          0.0, std::chrono::duration<double>(now - item.progress_at).count())))
                    : nullptr}};
}

// The shard an item belongs to: by its declared (index, shard), else the one its id encodes, else
// a shard of its own.
Shard& ShardOf(ItemScan& scan, const WorkItemState& item, const WorkItemInfo* info) {
  auto [index_name, shard_number] = internal::ShardOfItem(item, info);
  const bool known = index_name && shard_number;
  auto& shard = scan.shards[{index_name.value_or(""), shard_number.value_or(-1),
                             known ? std::string() : item.id}];
  shard.index_name = index_name;
  shard.shard_number = shard_number;
  if (shard.key_id.empty()) shard.key_id = item.id;
  return shard;
}

// The item's documents, failures, outcomes and totals, added to its shard's.
void AddItemProgress(Shard& shard, const WorkItemState& item, const WorkItemInfo* info) {
  if (item.progress) {
    shard.progress.documents_processed += item.progress->docs;
    shard.progress.source_bytes += item.progress->bytes;
  }
  if (info == nullptr) return;
  shard.progress.documents_failed +=
      static_cast<uint64_t>(std::max<int64_t>(0, info->documents_failed));
  if (info->outcomes) shard.progress.outcomes += *info->outcomes;
  // Totals are the shard's: the largest any item of the chain declared.
  if (info->document_count) {
    shard.progress.documents_total = std::max<uint64_t>(
        shard.progress.documents_total.value_or(0), static_cast<uint64_t>(*info->document_count));
  }
  if (info->total_size_bytes) {
    shard.progress.bytes_total = std::max<uint64_t>(shard.progress.bytes_total.value_or(0),
                                                    static_cast<uint64_t>(*info->total_size_bytes));
  }
}

// A document item: counted in its shard by status (a leased one listed among the active
// workers), its progress added, and the session's times moved by it.
void AddDocumentItem(ItemScan& scan, const WorkItemState& item, const WorkItemInfo* info,
                     TimePoint now) {
  Shard& shard = ShardOf(scan, item, info);
  const std::string status = ItemStatus(item, now);
  if (status == "completed") {
    ++shard.items.completed;
  } else if (status == "assigned") {
    ++shard.items.assigned;
    shard.worker_id = item.lease_holder;
    shard.lease_expiry = item.lease_expires_at;
    scan.workers.push_back(ActiveWorkerJson(item, shard, now));
  } else {
    ++shard.items.pending;
  }
  AddItemProgress(shard, item, info);
  if (item.progress) scan.last_update = std::max(scan.last_update, item.progress_at);
  if (item.completed_at) {
    scan.last_update = std::max(scan.last_update, *item.completed_at);
    scan.last_completion = std::max(scan.last_completion, *item.completed_at);
  }
  if (info != nullptr && info->created_at != TimePoint{}) {
    scan.run_started = std::min(scan.run_started.value_or(info->created_at), info->created_at);
  }
}

ItemScan ScanItems(const SessionRecord& session, const std::vector<WorkItemState>& items,
                   const std::vector<WorkItemInfo>& infos, TimePoint now) {
  std::map<std::string, const WorkItemInfo*> info_by_id;
  for (const auto& info : infos) info_by_id[info.id] = &info;
  ItemScan scan;
  scan.last_update = session.created_at;
  for (const auto& item : items) {
    if (!item.completed()) ++scan.incomplete_items;
    if (item.id.starts_with(coordination::kSetupTrialPrefix)) {
      if (json::value trial = TrialOf(item.id); !trial.is_null()) scan.trial = std::move(trial);
      continue;
    }
    if (item.id == coordination::kShardSetupWorkItemId) {
      scan.setup_exists = true;
      scan.setup_completed = item.completed();
      continue;
    }
    if (coordination::IsBookkeepingItem(item.id)) continue;
    const auto found = info_by_id.find(item.id);
    AddDocumentItem(scan, item, found == info_by_id.end() ? nullptr : found->second, now);
  }
  return scan;
}

struct IndexTotals {
  Counts shards;
  Progress progress{0, 0, 0, 0, 0, 0, {}};
  bool documents_known = true;
  bool bytes_known = true;
};

// The shards summed: for the session, per index, and a row per shard.
struct Totals {
  Counts shards;
  Progress progress;
  std::map<std::string, IndexTotals> indices;
  json::array shard_rows;
};

// A shard's progress with its bytes in the total's unit (shard files): the share of the shard
// done.
Progress ShardProgress(const Shard& shard, const std::string& status) {
  Progress p = shard.progress;
  if (!p.bytes_total) {
    p.bytes_processed = 0;
  } else if (status == "completed") {
    p.bytes_processed = *p.bytes_total;
  } else if (p.documents_total && *p.documents_total > 0) {
    const double done = std::min(
        1.0, static_cast<double>(p.documents_processed) / static_cast<double>(*p.documents_total));
    p.bytes_processed = static_cast<uint64_t>(done * static_cast<double>(*p.bytes_total));
  } else {
    p.bytes_processed = 0;
  }
  return p;
}

json::object ShardRow(const Shard& shard, const Progress& p, const std::string& status,
                      const Counts& one) {
  json::object row = ProgressJson(p);
  row["index_name"] = shard.index_name ? json::value(*shard.index_name) : nullptr;
  row["shard_number"] = shard.shard_number ? json::value(*shard.shard_number) : nullptr;
  if (!shard.index_name) row["work_item_id"] = shard.key_id;
  row["status"] = status;
  row["work_items"] = shard.items.total();
  row["percent_complete"] = Round1(PercentComplete(p, one));
  row["worker_id"] = shard.worker_id.empty() ? json::value(nullptr) : json::value(shard.worker_id);
  row["lease_expiry"] =
      shard.worker_id.empty() ? json::value(nullptr) : json::value(FormatTime(shard.lease_expiry));
  return row;
}

void AddCounts(Counts& into, const Counts& c) {
  into.pending += c.pending;
  into.assigned += c.assigned;
  into.completed += c.completed;
}

// Totals are known only when every shard's is.
Totals SumShards(const std::map<ShardKey, Shard>& shards) {
  Totals totals;
  totals.progress.documents_total = 0;
  totals.progress.bytes_total = 0;
  bool all_documents_known = true, all_bytes_known = true;
  for (const auto& [key, shard] : shards) {
    const std::string status = shard.status();
    Counts one;
    (status == "completed" ? one.completed : status == "assigned" ? one.assigned : one.pending) = 1;
    AddCounts(totals.shards, one);
    const Progress p = ShardProgress(shard, status);
    all_documents_known = all_documents_known && p.documents_total.has_value();
    all_bytes_known = all_bytes_known && p.bytes_total.has_value();
    Accumulate(totals.progress, p);
    auto& index = totals.indices[shard.index_name.value_or("")];
    AddCounts(index.shards, one);
    Accumulate(index.progress, p);
    index.documents_known = index.documents_known && p.documents_total.has_value();
    index.bytes_known = index.bytes_known && p.bytes_total.has_value();
    totals.shard_rows.push_back(ShardRow(shard, p, status, one));
  }
  if (!all_documents_known) totals.progress.documents_total.reset();
  if (!all_bytes_known) totals.progress.bytes_total.reset();
  for (auto& [name, entry] : totals.indices) {
    if (!entry.documents_known) entry.progress.documents_total.reset();
    if (!entry.bytes_known) entry.progress.bytes_total.reset();
  }
  return totals;
}

json::array IndexRows(const std::map<std::string, IndexTotals>& indices) {
  json::array rows;
  for (const auto& [name, entry] : indices) {
    json::object row = ProgressJson(entry.progress);
    row["index_name"] = name;
    row["shards"] = entry.shards.total();
    row["work_items"] = CountsJson(entry.shards);
    row["percent_complete"] = Round1(PercentComplete(entry.progress, entry.shards));
    rows.push_back(std::move(row));
  }
  return rows;
}

// The samples to chart and to measure throughput by: the history before now, then now (`current`,
// which must outlive them).
std::vector<const ProgressSample*> ThroughputPoints(const std::vector<ProgressSample>& history,
                                                    const ProgressSample& current) {
  std::vector<const ProgressSample*> points;
  for (const auto& sample : history) {
    if (sample.at < current.at) points.push_back(&sample);
  }
  points.push_back(&current);
  return points;
}

struct Throughput {
  json::value rate = nullptr;
  json::value eta_seconds = nullptr;
};

// Throughput now (smoothed by SteppedRates), 0 once the run has ended, and the ETA it gives.
Throughput CurrentThroughput(const std::vector<const ProgressSample*>& points,
                             const SteppedRates& session_rates, const Progress& total,
                             bool finished, TimePoint now) {
  Throughput out;
  if (points.size() < 2 || now - points.front()->at < std::chrono::seconds(1)) {
    if (finished) out.eta_seconds = 0;
    return out;
  }
  SteppedRates::Rate rate = session_rates.At(points.size() - 1);
  if (rate.seconds <= 0) {
    rate.seconds = std::chrono::duration<double>(now - points.front()->at).count();
  }
  if (finished) rate.documents = rate.bytes = 0;
  out.rate = json::object{{"documents_per_second", Round1(rate.documents)},
                          {"bytes_per_second", Round1(rate.bytes)},
                          {"window_seconds", Round1(rate.seconds)}};
  if (finished) {
    out.eta_seconds = 0;
  } else if (total.documents_total && rate.documents > 0) {
    out.eta_seconds = std::ceil(std::max(0.0, static_cast<double>(*total.documents_total) -
                                                  static_cast<double>(total.documents_processed)) /
                                rate.documents);
  }
  return out;
}

// Throughput over time, for the page's chart: the smoothed rate (SteppedRates) at up to
// kChartPoints samples evenly spread over the kept history, ending now, 0 after the run ended.
json::array ThroughputSeries(const std::vector<const ProgressSample*>& points,
                             const SteppedRates& rates, std::optional<TimePoint> finished_at) {
  const size_t step = std::max<size_t>(1, (points.size() + kChartPoints - 1) / kChartPoints);
  json::array series;
  for (size_t i = step; i < points.size() + step - 1; i += step) {
    const size_t at = std::min(i, points.size() - 1);
    SteppedRates::Rate rate = rates.At(at);
    if (finished_at && points[at]->at > *finished_at) rate = {};
    series.push_back(json::object{{"at", FormatTime(points[at]->at)},
                                  {"documents_per_second", Round1(rate.documents)},
                                  {"bytes_per_second", Round1(rate.bytes)}});
    if (at == points.size() - 1) break;
  }
  return series;
}

// The chart's series of the indices that moved most documents over the charted history (the
// last point is now).
json::object ThroughputByIndex(const std::vector<const ProgressSample*>& points,
                               std::optional<TimePoint> finished_at) {
  std::vector<std::pair<uint64_t, std::string>> moved;
  for (const auto& [name, counter] : points.back()->indices) {
    const auto& first = points.front()->indices;
    const auto at_first = first.find(name);
    const uint64_t base_docs = at_first == first.end() ? 0 : at_first->second.first;
    if (counter.first > base_docs) moved.emplace_back(counter.first - base_docs, name);
  }
  std::sort(moved.begin(), moved.end(), std::greater<>());
  if (moved.size() > kChartedIndices) moved.resize(kChartedIndices);
  json::object by_index;
  for (const auto& mover : moved) {
    const std::string& name = mover.second;
    const SteppedRates rates(points, [&name](const ProgressSample& s) {
      const auto it = s.indices.find(name);
      return it == s.indices.end() ? Counter{0, 0} : it->second;
    });
    by_index[name] = ThroughputSeries(points, rates, finished_at);
  }
  return by_index;
}

// Documents rejected, not convertible, or failed by a transform, per index: the findings that end
// a finished session COMPLETED_WITH_FINDINGS, as the tools exit 6 for those. Documents a transform
// dropped as configured are counted per index, not a finding (the tools exit 0).
json::array Findings(const std::map<std::string, IndexTotals>& indices) {
  json::array findings;
  for (const auto& [index_name, entry] : indices) {
    const std::string& name = index_name;  // lambdas capture no structured binding in clang 14
    const coordination::ItemOutcomes& o = entry.progress.outcomes;
    auto finding = [&](const char* outcome, uint64_t documents) {
      if (documents > 0) {
        findings.push_back(
            json::object{{"index_name", name}, {"outcome", outcome}, {"documents", documents}});
      }
    };
    finding("rejected", o.rejected);
    finding("not_convertible", o.not_convertible);
    finding("transform_failed", o.transform_failed);
    // Failures reported by clients that send no outcomes (the seed's documents_failed).
    finding("failed", entry.progress.documents_failed -
                          std::min(entry.progress.documents_failed, o.failed()));
  }
  return findings;
}

const char* Outcome(const Totals& totals, bool finished, bool any_findings) {
  if (finished) return any_findings ? "COMPLETED_WITH_FINDINGS" : "COMPLETED";
  return totals.shards.assigned > 0 || totals.shards.completed > 0 ||
                 totals.progress.documents_processed > 0
             ? "IN_PROGRESS"
             : "NOT_STARTED";
}

// The seed's StatusResponse fields, and the run's times: from the shards' setup to the last
// shard's completion (or now).
void AddSeedFieldsAndTimes(json::object& status, const SessionRecord& session, const Totals& totals,
                           const ItemScan& scan, std::optional<TimePoint> finished_at,
                           TimePoint now) {
  status["session_name"] = session.name;
  status["total_work_items"] = totals.shards.total();
  status["pending_work_items"] = totals.shards.pending;
  status["assigned_work_items"] = totals.shards.assigned;
  status["completed_work_items"] = totals.shards.completed;
  status["total_documents"] = OptionalNumber(totals.progress.documents_total);
  status["total_documents_processed"] = totals.progress.documents_processed;
  status["total_size_bytes"] = OptionalNumber(totals.progress.bytes_total);
  status["total_bytes_processed"] = totals.progress.bytes_processed;
  status["source_bytes_sent"] = totals.progress.source_bytes;
  status["started_at"] = FormatTime(session.created_at);
  status["last_update"] = FormatTime(scan.last_update);
  const std::optional<TimePoint>& started = scan.run_started;
  status["run_started_at"] = started ? json::value(FormatTime(*started)) : nullptr;
  status["finished_at"] = finished_at ? json::value(FormatTime(*finished_at)) : nullptr;
  status["elapsed_seconds"] =
      started
          ? json::value(Round1(std::max(
                0.0, std::chrono::duration<double>(finished_at.value_or(now) - *started).count())))
          : nullptr;
}

}  // namespace

json::object ComputeStatus(const SessionRecord& session, const std::vector<WorkItemState>& items,
                           const std::vector<WorkItemInfo>& infos,
                           const std::vector<ProgressSample>& history, TimePoint now) {
  ItemScan scan = ScanItems(session, items, infos, now);
  Totals totals = SumShards(scan.shards);
  const Counts& shard_counts = totals.shards;
  const bool finished = shard_counts.total() > 0 && shard_counts.completed == shard_counts.total();
  const std::optional<TimePoint> finished_at = finished && scan.last_completion != TimePoint{}
                                                   ? std::optional(scan.last_completion)
                                                   : std::nullopt;
  ProgressSample current{now, totals.progress.documents_processed, totals.progress.source_bytes};
  for (const auto& [name, entry] : totals.indices) {
    current.indices[name] = {entry.progress.documents_processed, entry.progress.source_bytes};
  }
  const std::vector<const ProgressSample*> points = ThroughputPoints(history, current);
  const SteppedRates session_rates(points, [](const ProgressSample& s) {
    return Counter{s.documents, s.bytes};
  });
  Throughput throughput = CurrentThroughput(points, session_rates, totals.progress, finished, now);

  json::object status = ProgressJson(totals.progress);
  AddSeedFieldsAndTimes(status, session, totals, scan, finished_at, now);
  // Ours.
  status["work_items"] = CountsJson(shard_counts);
  // Every item not yet complete, successors and the shard-setup item included (what
  // IWorkCoordinator::CountIncompleteWorkItems counts).
  status["incomplete_items"] = scan.incomplete_items;
  status["percent_complete"] = Round1(PercentComplete(totals.progress, shard_counts));
  status["shard_setup"] = !scan.setup_exists     ? "none"
                          : scan.setup_completed ? "completed"
                                                 : "pending";
  status["throughput"] = std::move(throughput.rate);
  status["throughput_history"] = ThroughputSeries(points, session_rates, finished_at);
  status["throughput_history_by_index"] = ThroughputByIndex(points, finished_at);
  json::array findings = Findings(totals.indices);
  status["outcome"] = Outcome(totals, finished, !findings.empty());
  status["findings"] = std::move(findings);
  // A trial run's session (--max-docs-per-shard): never resumed into a full run.
  status["trial"] = std::move(scan.trial);
  status["eta_seconds"] = std::move(throughput.eta_seconds);
  status["active_workers"] = std::move(scan.workers);
  status["indices"] = IndexRows(totals.indices);
  status["shards"] = std::move(totals.shard_rows);
  status["server_time"] = FormatTime(now);
  return status;
}

namespace {

std::string Grouped(uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string Bytes(double n) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int unit = 0;
  while (n >= 1000 && unit < 4) {
    n /= 1000;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, unit == 0 ? "%.0f %s" : "%.1f %s", n, units[unit]);
  return buffer;
}

uint64_t U(const json::value& v) {
  if (v.is_uint64()) return v.as_uint64();
  if (v.is_int64()) return static_cast<uint64_t>(std::max<int64_t>(0, v.as_int64()));
  if (v.is_double()) return static_cast<uint64_t>(std::max(0.0, v.as_double()));
  return 0;
}
double D(const json::value& v) {
  if (v.is_double()) return v.as_double();
  if (v.is_int64()) return static_cast<double>(v.as_int64());
  if (v.is_uint64()) return static_cast<double>(v.as_uint64());
  return 0;
}

std::string OfTotal(const json::object& part, bool bytes) {
  const uint64_t done = U(part.at("processed"));
  const json::value& total = part.at("total");
  std::string text = bytes ? Bytes(static_cast<double>(done)) : Grouped(done);
  if (!total.is_null()) {
    text += StrCat(" of ", bytes ? Bytes(static_cast<double>(U(total))) : Grouped(U(total)));
  }
  return text;
}

std::string Percent(const json::value& v) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%.0f%%", std::floor(D(v)));
  return buffer;
}

std::string Duration(double seconds) {
  const auto s = static_cast<int64_t>(seconds);
  if (s < 60) return StrCat(s, " s");
  if (s < 3600) return StrCat(s / 60, " min ", s % 60, " s");
  return StrCat(s / 3600, " h ", (s % 3600) / 60, " min");
}

// The session line: its percent complete, shard counts, trial, outcome and findings.
void AppendSummary(std::string& out, const json::object& status) {
  const json::object& items = status.at("work_items").as_object();
  out += StrCat("Session ", json::value_to<std::string>(status.at("session_name")), ": ",
                Percent(status.at("percent_complete")),
                " complete (shards: ", U(items.at("pending")), " pending, ",
                U(items.at("assigned")), " assigned, ", U(items.at("completed")), " completed)\n");
  if (const json::value* trial = status.if_contains("trial"); trial && trial->is_object()) {
    out +=
        StrCat("TRIAL: at most ", U(trial->at("max_docs_per_shard")), " documents of each shard\n");
  }
  if (const json::value* outcome = status.if_contains("outcome"); outcome && outcome->is_string()) {
    out += StrCat("Outcome: ", json::value_to<std::string>(*outcome), "\n");
  }
  if (const json::value* findings = status.if_contains("findings");
      findings && findings->is_array()) {
    for (const auto& f : findings->as_array()) {
      const json::object& finding = f.as_object();
      out += StrCat("  finding: ", json::value_to<std::string>(finding.at("index_name")), ": ",
                    Grouped(U(finding.at("documents"))), " ",
                    json::value_to<std::string>(finding.at("outcome")), "\n");
    }
  }
}

// Documents and shard files, throughput and ETA, and the run's times.
void AppendProgress(std::string& out, const json::object& status) {
  const json::object& documents = status.at("documents").as_object();
  out += StrCat("Documents: ", OfTotal(documents, false),
                "   Shard files: ", OfTotal(status.at("bytes").as_object(), true),
                "   Failed: ", Grouped(U(documents.at("failed"))), "\n");
  if (const json::value& t = status.at("throughput"); t.is_object()) {
    out += StrCat("Throughput: ", Grouped(U(t.at("documents_per_second"))), " docs/s, ",
                  Bytes(D(t.at("bytes_per_second"))), "/s of _source over the last ",
                  Duration(D(t.at("window_seconds"))));
  } else {
    out += "Throughput: not yet measured";
  }
  if (const json::value& eta = status.at("eta_seconds"); !eta.is_null()) {
    out += StrCat("   ETA: ", Duration(D(eta)));
  }
  out += "\n";
  if (const json::value* started = status.if_contains("run_started_at");
      started != nullptr && started->is_string()) {
    out += StrCat("Started: ", json::value_to<std::string>(*started));
    if (const json::value* elapsed = status.if_contains("elapsed_seconds");
        elapsed != nullptr && elapsed->is_number()) {
      out += StrCat("   Elapsed: ", Duration(D(*elapsed)));
    }
    if (const json::value* finished = status.if_contains("finished_at");
        finished != nullptr && finished->is_string()) {
      out += StrCat("   Finished: ", json::value_to<std::string>(*finished));
    }
    out += "\n";
  }
}

// The active workers with their liveness, and the back-pressure each reported.
void AppendWorkers(std::string& out, const json::object& status) {
  const json::array& workers = status.at("active_workers").as_array();
  out += StrCat("Active workers: ", workers.size(), "\n");
  for (const auto& w : workers) {
    const json::object& worker = w.as_object();
    // The item by its index and shard (its id is an opaque encoding), when known.
    const json::value* index = worker.if_contains("index_name");
    const json::value* shard = worker.if_contains("shard_number");
    const std::string item =
        index != nullptr && index->is_string() && shard != nullptr && shard->is_number()
            ? StrCat(json::value_to<std::string>(*index), " shard ", U(*shard))
            : StrCat("item ", json::value_to<std::string>(worker.at("work_item_id")));
    out += StrCat("  ", json::value_to<std::string>(worker.at("worker_id")), " on ", item, " (");
    if (const json::value* ago = worker.if_contains("last_report_seconds_ago");
        ago != nullptr && ago->is_number()) {
      out += StrCat("last report ", Duration(D(*ago)), " ago, ");
    } else {
      out += "no report yet, ";
    }
    out += StrCat("lease until ", json::value_to<std::string>(worker.at("lease_expiry")), ")\n");
  }
  // What the targets answered each worker: 429s and resent requests or items.
  if (const json::value* pressure = status.if_contains("workers_back_pressure");
      pressure != nullptr && pressure->is_array() && !pressure->as_array().empty()) {
    out += "Back-pressure per worker (429s, retries):\n";
    for (const auto& w : pressure->as_array()) {
      const json::object& worker = w.as_object();
      out +=
          StrCat("  ", json::value_to<std::string>(worker.at("worker_id")), ": ",
                 Grouped(U(worker.at("rejected_429"))), " 429s, ", Grouped(U(worker.at("retries"))),
                 " retries (reported ", Duration(D(worker.at("reported_seconds_ago"))), " ago)\n");
    }
  }
}

// RfsWorker's phases and the indices its target tuning holds.
void AppendWorkflow(std::string& out, const json::object& status) {
  // RfsWorker's phases, when its workers keep their records in this session.
  if (const json::value* workflow = status.if_contains("workflow");
      workflow != nullptr && workflow->is_array() && !workflow->as_array().empty()) {
    out += "Phases:";
    for (const auto& r : workflow->as_array()) {
      const json::object& record = r.as_object();
      const std::string id = json::value_to<std::string>(record.at("record"));
      if (!id.starts_with("phase_") && id != "failed" && !id.starts_with("failed.")) continue;
      out += StrCat(" ", id, "=", json::value_to<std::string>(record.at("status")));
      if (const json::value* reason = record.if_contains("reason"); reason != nullptr) {
        out += StrCat(" (", json::value_to<std::string>(*reason), ")");
      }
    }
    out += "\n";
  }
  // Indices at 0 replicas and refresh -1 for their load (RfsWorker --tune-target).
  if (const json::value* tuned = status.if_contains("tuned_indices");
      tuned != nullptr && tuned->is_array()) {
    for (const auto& t : tuned->as_array()) {
      const json::object& index = t.as_object();
      out += StrCat("Index ", json::value_to<std::string>(index.at("index")), ": ",
                    json::value_to<std::string>(index.at("state")),
                    " (number_of_replicas 0, refresh_interval -1)\n");
    }
  }
  // RfsWorker --verify-all: the newest round, per index.
  if (const json::value* v = status.if_contains("verification"); v != nullptr && v->is_object()) {
    const json::object& verification = v->as_object();
    out += StrCat("Verification round ", U(verification.at("round")), " (",
                  json::value_to<std::string>(verification.at("state")), "):\n");
    for (const auto& i : verification.at("indices").as_array()) {
      const json::object& index = i.as_object();
      const std::string state = json::value_to<std::string>(index.at("state"));
      out += StrCat("  ", json::value_to<std::string>(index.at("index")), ": ", state);
      if (state == "verifying") {
        out += StrCat(", ", Grouped(U(index.at("items_completed"))), " of ",
                      Grouped(U(index.at("items"))), " items done\n");
        continue;
      }
      out += StrCat(", ", Grouped(U(index.at("expected"))), " expected, ",
                    Grouped(U(index.at("equal"))), " equal, ", Grouped(U(index.at("missing"))),
                    " missing, ", Grouped(U(index.at("different"))), " different, ",
                    Grouped(U(index.at("not_comparable"))), " not comparable, ",
                    Grouped(U(index.at("already_newer"))), " already newer, ",
                    Grouped(U(index.at("extra"))), " extra");
      if (const json::value* note = index.if_contains("note")) {
        out += StrCat(" (", json::value_to<std::string>(*note), ")");
      }
      out += "\n";
    }
  }
}

// A row per index: shards, documents, percent and what became of the documents.
void AppendIndexTable(std::string& out, const json::object& status) {
  out +=
      "Index                            Shards  Done  Documents                 Percent  Rejected  "
      "Unconv.  T.failed  T.dropped  Rebuilt    Newer\n";
  for (const auto& i : status.at("indices").as_array()) {
    const json::object& index = i.as_object();
    auto outcome = [&](const char* name) -> unsigned long long {
      const json::value* outcomes = index.if_contains("outcomes");
      if (outcomes == nullptr || !outcomes->is_object()) return 0;
      const json::value* v = outcomes->as_object().if_contains(name);
      return v != nullptr ? U(*v) : 0;
    };
    char line[384];
    std::snprintf(
        line, sizeof line, "%-32s %6llu %5llu  %-25s %7s %9llu %8llu %9llu %10llu %8llu %8llu\n",
        json::value_to<std::string>(index.at("index_name")).c_str(),
        static_cast<unsigned long long>(U(index.at("shards"))),
        static_cast<unsigned long long>(U(index.at("work_items").as_object().at("completed"))),
        OfTotal(index.at("documents").as_object(), false).c_str(),
        Percent(index.at("percent_complete")).c_str(), outcome("rejected"),
        outcome("not_convertible"), outcome("transform_failed"), outcome("transform_dropped"),
        outcome("rebuilt"), outcome("already_newer"));
    out += line;
  }
}

}  // namespace

std::string FormatStatusText(const json::object& status) {
  std::string out;
  AppendSummary(out, status);
  AppendProgress(out, status);
  AppendWorkers(out, status);
  AppendWorkflow(out, status);
  AppendIndexTable(out, status);
  return out;
}

}  // namespace rfs::console
