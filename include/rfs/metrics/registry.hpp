// Registry: the counters, gauges and histograms a process exposes, rendered as the Prometheus
// text format (version 0.0.4) for a scrape endpoint and as an OTLP/HTTP JSON export request for
// an OpenTelemetry collector.
//
// A metric family has a name, help text and label names; each distinct set of label values is
// one series, created on first use and kept for the life of the registry (series are few: a
// worker's causes and outcomes, not documents). Callers keep the reference a family returns and
// update it without further lookups: counters and gauges are single atomics, so hot paths pay one
// relaxed atomic add.
//
// Thread safety: everything may be called concurrently. References stay valid as long as the
// registry lives.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "boost/json/object.hpp"

namespace rfs::metrics {

/// A monotonically increasing count (documents, bytes, requests).
class Counter {
 public:
  void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

/// A value that goes up and down (bulk requests in flight, items held).
class Gauge {
 public:
  void Set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void Add(int64_t n) { value_.fetch_add(n, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

/// Observations counted into buckets with fixed upper bounds (e.g. request latency in seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double value);
  struct Snapshot {
    std::vector<double> upper_bounds;
    /// Per bucket, not cumulative; one more than upper_bounds (the +Inf bucket last).
    std::vector<uint64_t> counts;
    uint64_t count = 0;
    double sum = 0;
  };
  Snapshot Read() const;

 private:
  const std::vector<double> upper_bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // guarded by mu_
  uint64_t count_ = 0;            // guarded by mu_
  double sum_ = 0;                // guarded by mu_
};

/// Bucket bounds for request latencies: 5 ms to 60 s.
std::vector<double> LatencyBucketsSeconds();

enum class MetricType { kCounter, kGauge, kHistogram };

class Registry;

/// The series of one metric, by label values (in the order of the family's label names).
template <typename Metric>
class Family {
 public:
  /// The series for `label_values` (as many as the family has label names), created on first use.
  Metric& With(std::initializer_list<std::string_view> label_values);
  /// The series of a family without labels.
  Metric& Get() { return With({}); }

 private:
  friend class Registry;
  Family(std::vector<std::string> label_names, std::vector<double> buckets)
      : label_names_(std::move(label_names)), buckets_(std::move(buckets)) {}
  const std::vector<std::string> label_names_;
  const std::vector<double> buckets_;  // histograms only
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> series_;  // guarded by mu_
};

class Registry {
 public:
  /// Labels every series carries (e.g. worker id, tool), added to each one's own.
  explicit Registry(std::vector<std::pair<std::string, std::string>> constant_labels = {});
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;
  ~Registry();

  /// Registers a family (names: [a-zA-Z_:][a-zA-Z0-9_:]*, counters ending in _total). Asking
  /// again for the same name returns the same family. Invalid names throw std::invalid_argument
  /// (they are constants in the code, not input).
  Family<Counter>& AddCounter(std::string name, std::string help,
                              std::vector<std::string> label_names = {});
  Family<Gauge>& AddGauge(std::string name, std::string help,
                          std::vector<std::string> label_names = {});
  Family<Histogram>& AddHistogram(std::string name, std::string help, std::vector<double> buckets,
                                  std::vector<std::string> label_names = {});

  /// Every family in the Prometheus text exposition format 0.0.4, families sorted by name.
  std::string RenderPrometheusText() const;

  /// An OTLP ExportMetricsServiceRequest in its JSON encoding (cumulative sums and histograms
  /// since `start`), with `resource_attributes` (e.g. service.name) on the resource.
  boost::json::object ToOtlpJson(
      const std::vector<std::pair<std::string, std::string>>& resource_attributes,
      std::chrono::system_clock::time_point start, std::chrono::system_clock::time_point now) const;

 private:
  struct Entry;
  Entry& Add(std::string name, std::string help, MetricType type, std::vector<std::string> labels,
             std::vector<double> buckets);
  const std::vector<std::pair<std::string, std::string>> constant_labels_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Entry>> families_;  // guarded by mu_
};

/// The media type of RenderPrometheusText's output.
inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace rfs::metrics
