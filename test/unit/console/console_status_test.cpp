// The status report for an operator: a throughput that follows the real rate when workers report
// progress in steps (with their lease renewals) and falls to 0 once the run ends, the run's start,
// elapsed and finish times, each worker's last report, and work items named by index and shard.
#include "rfs/console/console_status.hpp"

#include <chrono>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

using namespace std::chrono_literals;
namespace json = boost::json;
using rfs::console::ProgressSample;
using rfs::coordination::ItemProgress;
using rfs::coordination::WorkItemId;
using rfs::coordination::WorkItemState;

namespace {

const auto t0 = rfs::console::TimePoint(std::chrono::seconds(1'800'000'000));

// Documents a worker at 7,000 docs/s has reported by `t`: it reports every 30 s.
uint64_t Reported(std::chrono::seconds t) { return 7000 * 30 * static_cast<uint64_t>(t / 30s); }

}  // namespace

TEST_CASE("throughput follows the rate when progress arrives in steps and is 0 after the run",
          "[console]") {
  const rfs::console::SessionRecord session{"s", "", "t", t0 - 1h};
  const std::string id = WorkItemId{"logs", 0, 0}.ToString();
  std::vector<WorkItemState> items(1);
  items[0].id = id;
  items[0].lease_holder = "w1";
  items[0].lease_expires_at = t0 + 3600s;
  std::vector<rfs::console::WorkItemInfo> infos{{id, "logs", 0, 10'000'000, 1'000'000'000, 0, t0}};
  // The console samples every 5 s for 10 minutes; the worker reports every 30 s.
  std::vector<ProgressSample> history;
  for (auto t = 0s; t < 600s; t += 5s) {
    history.emplace_back(t0 + t, Reported(t), Reported(t) * 100);
  }
  const auto now = t0 + 600s;
  items[0].progress = ItemProgress{Reported(600s), Reported(600s), Reported(600s) * 100};
  items[0].progress_at = now - 12s;
  json::object status = rfs::console::ComputeStatus(session, items, infos, history, now);

  // Every charted rate past the first report is the worker's 7,000 docs/s (within 20%), not
  // spikes of 42,000 between zeros.
  const auto& series = status.at("throughput_history").as_array();
  REQUIRE(series.size() > 50);
  size_t checked = 0;
  for (const auto& point : series) {
    if (point.at("at").as_string() < rfs::console::FormatTime(t0 + 60s)) continue;
    INFO(json::serialize(point));
    const double rate = point.at("documents_per_second").to_number<double>();
    CHECK(rate > 0.8 * 7000);
    CHECK(rate < 1.2 * 7000);
    ++checked;
  }
  CHECK(checked > 45);
  const double now_rate = status.at("throughput").at("documents_per_second").to_number<double>();
  CHECK(now_rate == Approx(7000).epsilon(0.2));
  CHECK(status.at("throughput").at("bytes_per_second").to_number<double>() ==
        Approx(700000).epsilon(0.2));
  // The run's times and the worker's last report.
  CHECK(status.at("run_started_at") == rfs::console::FormatTime(t0).c_str());
  CHECK(status.at("finished_at").is_null());
  CHECK(status.at("elapsed_seconds").to_number<double>() == 600);
  const auto& workers = status.at("active_workers").as_array();
  REQUIRE(workers.size() == 1);
  CHECK(workers[0].at("last_report_seconds_ago").to_number<double>() == 12);
  CHECK(workers[0].at("last_report_at") == rfs::console::FormatTime(now - 12s).c_str());
  // The text names the item by index and shard, with the worker's last report.
  const std::string text = rfs::console::FormatStatusText(status);
  INFO(text);
  CHECK(text.find("w1 on logs shard 0 (last report 12 s ago, lease until") != std::string::npos);
  CHECK(text.find(id) == std::string::npos);
  CHECK(text.find("Started: " + rfs::console::FormatTime(t0) + "   Elapsed: 10 min 0 s") !=
        std::string::npos);

  // A stall: no report for 3 minutes. The rate falls instead of holding at 7,000.
  for (auto t = 600s; t < 780s; t += 5s) {
    history.emplace_back(t0 + t, Reported(600s), Reported(600s) * 100);
  }
  status = rfs::console::ComputeStatus(session, items, infos, history, t0 + 780s);
  CHECK(status.at("throughput").at("documents_per_second").to_number<double>() < 0.5 * 7000);

  // The run ends at 600 s: from then on the rate is 0, and the times say so.
  items[0].completed_at = t0 + 600s;
  items[0].lease_holder.clear();
  status = rfs::console::ComputeStatus(session, items, infos, history, t0 + 780s);
  CHECK(status.at("throughput").at("documents_per_second").to_number<double>() == 0);
  CHECK(status.at("throughput").at("bytes_per_second").to_number<double>() == 0);
  CHECK(status.at("finished_at") == rfs::console::FormatTime(t0 + 600s).c_str());
  CHECK(status.at("elapsed_seconds").to_number<double>() == 600);
  for (const auto& point : status.at("throughput_history").as_array()) {
    if (point.at("at").as_string() > rfs::console::FormatTime(t0 + 600s)) {
      CHECK(point.at("documents_per_second").to_number<double>() == 0);
    }
  }
  CHECK(rfs::console::FormatStatusText(status).find(
            "Finished: " + rfs::console::FormatTime(t0 + 600s)) != std::string::npos);
}
