#include "rfs/metrics/registry.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <variant>

#include "rfs/core/str_cat.hpp"

#include "boost/json/array.hpp"

namespace rfs::metrics {

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)), counts_(upper_bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) - upper_bounds_.begin());
  std::lock_guard lock(mu_);
  ++counts_[bucket];
  ++count_;
  sum_ += value;
}

Histogram::Snapshot Histogram::Read() const {
  std::lock_guard lock(mu_);
  return Snapshot{upper_bounds_, counts_, count_, sum_};
}

std::vector<double> LatencyBucketsSeconds() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

namespace {

template <typename Metric>
std::unique_ptr<Metric> MakeMetric(const std::vector<double>& buckets) {
  if constexpr (std::is_same_v<Metric, Histogram>) {
    return std::make_unique<Histogram>(buckets);
  } else {
    return std::make_unique<Metric>();
  }
}

bool ValidName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// Label values may hold anything; the text format escapes backslash, quote and newline.
void AppendEscaped(std::string& out, std::string_view value) {
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

// HELP text escapes backslash and newline only.
void AppendHelp(std::string& out, std::string_view help) {
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

std::string FormatDouble(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  // Shortest text that reads back as the same double (0.1, not 0.10000000000000001).
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, end);
}

uint64_t UnixNanos(std::chrono::system_clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

}  // namespace

template <typename Metric>
Metric& Family<Metric>::With(std::initializer_list<std::string_view> label_values) {
  if (label_values.size() != label_names_.size()) {
    throw std::invalid_argument(core::StrCat("metric series needs ", label_names_.size(),
                                             " label values, got ", label_values.size()));
  }
  std::vector<std::string> key(label_values.begin(), label_values.end());
  std::lock_guard lock(mu_);
  auto& slot = series_[std::move(key)];
  if (!slot) slot = MakeMetric<Metric>(buckets_);
  return *slot;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

struct Registry::Entry {
  std::string name;
  std::string help;
  MetricType type;
  std::variant<std::unique_ptr<Family<Counter>>, std::unique_ptr<Family<Gauge>>,
               std::unique_ptr<Family<Histogram>>>
      family;
};

Registry::Registry(std::vector<std::pair<std::string, std::string>> constant_labels)
    : constant_labels_(std::move(constant_labels)) {}

Registry::~Registry() = default;

Registry::Entry& Registry::Add(std::string name, std::string help, MetricType type,
                               std::vector<std::string> labels, std::vector<double> buckets) {
  if (!ValidName(name)) throw std::invalid_argument("invalid metric name: " + name);
  if (type == MetricType::kCounter && !name.ends_with("_total")) {
    throw std::invalid_argument("counter names end in _total: " + name);
  }
  for (const auto& label : labels) {
    if (!ValidName(label) || label.find(':') != std::string::npos || label == "le") {
      throw std::invalid_argument("invalid label name: " + label);
    }
  }
  std::lock_guard lock(mu_);
  auto& slot = families_[name];
  if (slot) {
    if (slot->type != type) throw std::invalid_argument("metric registered twice: " + name);
    return *slot;
  }
  slot = std::make_unique<Entry>();
  slot->name = std::move(name);
  slot->help = std::move(help);
  slot->type = type;
  switch (type) {
    case MetricType::kCounter:
      slot->family.emplace<0>(new Family<Counter>(std::move(labels), {}));
      break;
    case MetricType::kGauge:
      slot->family.emplace<1>(new Family<Gauge>(std::move(labels), {}));
      break;
    case MetricType::kHistogram:
      std::sort(buckets.begin(), buckets.end());
      slot->family.emplace<2>(new Family<Histogram>(std::move(labels), std::move(buckets)));
      break;
  }
  return *slot;
}

Family<Counter>& Registry::AddCounter(std::string name, std::string help,
                                      std::vector<std::string> label_names) {
  return *std::get<0>(
      Add(std::move(name), std::move(help), MetricType::kCounter, std::move(label_names), {})
          .family);
}

Family<Gauge>& Registry::AddGauge(std::string name, std::string help,
                                  std::vector<std::string> label_names) {
  return *std::get<1>(
      Add(std::move(name), std::move(help), MetricType::kGauge, std::move(label_names), {}).family);
}

Family<Histogram>& Registry::AddHistogram(std::string name, std::string help,
                                          std::vector<double> buckets,
                                          std::vector<std::string> label_names) {
  return *std::get<2>(Add(std::move(name), std::move(help), MetricType::kHistogram,
                          std::move(label_names), std::move(buckets))
                          .family);
}

namespace {

// Visits each series of `family` with its full label set (constant labels first).
template <typename Metric, typename Visit>
void ForEachSeries(const Family<Metric>& family, const std::vector<std::string>& names,
                   const std::vector<std::pair<std::string, std::string>>& constant,
                   const std::map<std::vector<std::string>, std::unique_ptr<Metric>>& series,
                   Visit&& visit) {
  for (const auto& [values, metric] : series) {
    std::vector<std::pair<std::string, std::string>> labels = constant;
    for (size_t i = 0; i < names.size(); ++i) labels.emplace_back(names[i], values[i]);
    visit(labels, *metric);
  }
}

std::string LabelText(const std::vector<std::pair<std::string, std::string>>& labels,
                      const std::string* le = nullptr) {
  if (labels.empty() && le == nullptr) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [name, value] : labels) {
    if (!first) out += ',';
    first = false;
    out += name;
    out += "=\"";
    AppendEscaped(out, value);
    out += '"';
  }
  if (le != nullptr) {
    if (!first) out += ',';
    out += "le=\"";
    out += *le;
    out += '"';
  }
  out += '}';
  return out;
}

boost::json::array OtlpAttributes(const std::vector<std::pair<std::string, std::string>>& labels) {
  boost::json::array out;
  for (const auto& [key, value] : labels) {
    out.push_back(
        boost::json::object{{"key", key}, {"value", boost::json::object{{"stringValue", value}}}});
  }
  return out;
}

}  // namespace

std::string Registry::RenderPrometheusText() const {
  std::string out;
  std::lock_guard lock(mu_);
  for (const auto& [family_name, entry] : families_) {
    // A plain reference: lambdas cannot capture structured bindings before clang 16.
    const std::string& name = family_name;
    out += "# HELP " + name + " ";
    AppendHelp(out, entry->help);
    out += "\n# TYPE " + name + " ";
    out += entry->type == MetricType::kCounter ? "counter"
           : entry->type == MetricType::kGauge ? "gauge"
                                               : "histogram";
    out += '\n';
    std::visit(
        [&](const auto& family) {
          std::lock_guard family_lock(family->mu_);
          ForEachSeries(
              *family, family->label_names_, constant_labels_, family->series_,
              [&](const auto& labels, const auto& metric) {
                using M = std::decay_t<decltype(metric)>;
                if constexpr (std::is_same_v<M, Histogram>) {
                  const Histogram::Snapshot s = metric.Read();
                  uint64_t cumulative = 0;
                  for (size_t i = 0; i < s.counts.size(); ++i) {
                    cumulative += s.counts[i];
                    const std::string le = i < s.upper_bounds.size()
                                               ? FormatDouble(s.upper_bounds[i])
                                               : std::string("+Inf");
                    out += name + "_bucket" + LabelText(labels, &le) + " " +
                           std::to_string(cumulative) + "\n";
                  }
                  out += name + "_sum" + LabelText(labels) + " " + FormatDouble(s.sum) + "\n";
                  out += name + "_count" + LabelText(labels) + " " + std::to_string(s.count) + "\n";
                } else {
                  out += name + LabelText(labels) + " " + std::to_string(metric.value()) + "\n";
                }
              });
        },
        entry->family);
  }
  return out;
}

boost::json::object Registry::ToOtlpJson(
    const std::vector<std::pair<std::string, std::string>>& resource_attributes,
    std::chrono::system_clock::time_point start, std::chrono::system_clock::time_point now) const {
  const std::string start_nanos = std::to_string(UnixNanos(start));
  const std::string now_nanos = std::to_string(UnixNanos(now));
  boost::json::array metrics;
  std::lock_guard lock(mu_);
  for (const auto& [name, entry] : families_) {
    boost::json::array points;
    std::visit(
        [&](const auto& family) {
          std::lock_guard family_lock(family->mu_);
          ForEachSeries(*family, family->label_names_, constant_labels_, family->series_,
                        [&](const auto& labels, const auto& metric) {
                          using M = std::decay_t<decltype(metric)>;
                          boost::json::object point{{"attributes", OtlpAttributes(labels)},
                                                    {"startTimeUnixNano", start_nanos},
                                                    {"timeUnixNano", now_nanos}};
                          if constexpr (std::is_same_v<M, Histogram>) {
                            const Histogram::Snapshot s = metric.Read();
                            point["count"] = std::to_string(s.count);
                            point["sum"] = s.sum;
                            boost::json::array counts;
                            for (uint64_t c : s.counts)
                              counts.push_back(boost::json::value(std::to_string(c)));
                            point["bucketCounts"] = std::move(counts);
                            boost::json::array bounds;
                            for (double b : s.upper_bounds) bounds.push_back(b);
                            point["explicitBounds"] = std::move(bounds);
                          } else {
                            // int64 fields are strings in OTLP's JSON encoding.
                            point["asInt"] = std::to_string(metric.value());
                          }
                          points.push_back(std::move(point));
                        });
        },
        entry->family);
    boost::json::object metric{{"name", name}, {"description", entry->help}};
    switch (entry->type) {
      case MetricType::kCounter:
        // AGGREGATION_TEMPORALITY_CUMULATIVE = 2.
        metric["sum"] = boost::json::object{{"dataPoints", std::move(points)},
                                            {"aggregationTemporality", 2},
                                            {"isMonotonic", true}};
        break;
      case MetricType::kGauge:
        metric["gauge"] = boost::json::object{{"dataPoints", std::move(points)}};
        break;
      case MetricType::kHistogram:
        metric["histogram"] =
            boost::json::object{{"dataPoints", std::move(points)}, {"aggregationTemporality", 2}};
        break;
    }
    metrics.push_back(std::move(metric));
  }
  boost::json::object scope{{"scope", boost::json::object{{"name", "rfs"}}},
                            {"metrics", std::move(metrics)}};
  boost::json::object resource{
      {"resource", boost::json::object{{"attributes", OtlpAttributes(resource_attributes)}}},
      {"scopeMetrics", boost::json::array{std::move(scope)}}};
  return boost::json::object{{"resourceMetrics", boost::json::array{std::move(resource)}}};
}

}  // namespace rfs::metrics
