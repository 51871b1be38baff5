// The migration console end to end, as users run it: `MigrationConsole serve` as its own process,
// a session created with `create-session`, three DocumentsFromSnapshotMigration workers pointed at
// it with --console-url, `MigrationConsole status` reading the result, and the page in headless
// Chromium showing a running migration and following it live to 100%.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/net/http_transport.hpp"

#include "support/generated_repo.hpp"
#include "support/metrics_text.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

constexpr const char* kAdminToken = "console-e2e-admin-token-0123456789";

// A MigrationConsole process on a free loopback port, and its logs.
class ConsoleProcess {
 public:
  explicit ConsoleProcess(const std::string& store = "", std::vector<std::string> extra = {})
      : dir_("rfs-console-e2e") {
    port_ = rfs::test::FreeLoopbackPort();
    std::vector<std::string> args{
        RFS_CONSOLE_TOOL, "serve",
        "--port",         std::to_string(port_),
        "--bind",         "127.0.0.1",
        "--store",        store.empty() ? "sqlite:" + dir_.File("console.db") : store,
        "--admin-token",  kAdminToken};
    args.insert(args.end(), extra.begin(), extra.end());
    process_ = std::make_unique<rfs::test::ChildProcess>(args, dir_.File("console.out"),
                                                         dir_.File("console.err"));
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const rfs::test::TempDir& dir() const { return dir_; }
  std::string Log() const { return rfs::test::ReadTextFile(dir_.File("console.err")); }

  /// Creates a session with `MigrationConsole create-session`, retrying while the console starts.
  std::string CreateSession(const std::string& name) {
    const auto give_up = std::chrono::steady_clock::now() + 30s;
    while (true) {
      const std::string out = dir_.File("create-" + name + ".out");
      std::filesystem::remove(out);
      const int code = rfs::test::RunProcess({RFS_CONSOLE_TOOL, "create-session", "--url", url(),
                                              "--name", name, "--admin-token", kAdminToken},
                                             out, dir_.File("create.err"));
      if (code == 0) {
        std::string token = rfs::test::ReadTextFile(out);
        while (!token.empty() && token.back() == '\n') token.pop_back();
        return token;
      }
      INFO(Log() << rfs::test::ReadTextFile(dir_.File("create.err")));
      REQUIRE(std::chrono::steady_clock::now() < give_up);
      REQUIRE_FALSE(process_->Exited());
      std::this_thread::sleep_for(100ms);
    }
  }

  /// `MigrationConsole status` with `args`; its exit code and stdout.
  std::pair<int, std::string> Status(const std::string& session, const std::string& token,
                                     std::vector<std::string> args = {}) {
    std::vector<std::string> argv{RFS_CONSOLE_TOOL, "status", "--url",   url(),
                                  "--session",      session,  "--token", token};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string out = dir_.File("status.out");
    std::filesystem::remove(out);
    const int code = rfs::test::RunProcess(argv, out, dir_.File("status.err"));
    return {code, rfs::test::ReadTextFile(out)};
  }

 private:
  rfs::test::TempDir dir_;
  int port_ = 0;
  std::unique_ptr<rfs::test::ChildProcess> process_;
};

size_t CountLines(const fs::path& file) {
  std::ifstream in(file);
  size_t lines = 0;
  for (std::string line; std::getline(in, line);) lines += line.empty() ? 0 : 1;
  return lines;
}

}  // namespace

TEST_CASE("three workers coordinate through the migration console and its status shows 100%",
          "[e2e][generated][console]") {
  auto generated =
      rfs::test::Generate("--indices 2 --shards 3 --docs 2000 --updates 50 --deletes 40 --seed 71");
  if (!generated) return;
  const int metrics_port = rfs::test::FreeLoopbackPort();
  ConsoleProcess console(
      "", {"--metrics-port", std::to_string(metrics_port), "--metrics-bind-address", "127.0.0.1"});
  const std::string token = console.CreateSession("e2e");
  const std::string out = console.dir().File("out");
  std::vector<std::unique_ptr<rfs::test::ChildProcess>> workers;
  for (const char* name : {"a", "b", "c"}) {
    workers.push_back(std::make_unique<rfs::test::ChildProcess>(
        std::vector<std::string>{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir",
                                 generated->repo().string(), "--output-dir", out, "--worker-id",
                                 name, "--console-url", console.url(), "--session-name", "e2e",
                                 "--console-token", token},
        console.dir().File(std::string(name) + ".out"),
        console.dir().File(std::string(name) + ".err")));
  }
  std::multiset<int> codes;
  for (auto& worker : workers) codes.insert(worker->Wait());
  INFO(console.Log() << rfs::test::ReadTextFile(console.dir().File("a.err"))
                     << rfs::test::ReadTextFile(console.dir().File("b.err"))
                     << rfs::test::ReadTextFile(console.dir().File("c.err")));
  CHECK(codes.count(3) >= 1);  // someone found no work left
  for (int code : codes) CHECK((code == 0 || code == 3 || code == 4));
  CHECK_FALSE(fs::exists(out + "/.rfs/coordination.sqlite"));  // the console held the items

  const int check = rfs::test::RunProcess(
      {RFS_CHECK_OUTPUT_TOOL, "--expected-docs", (generated->dir / "expected-docs.ndjson").string(),
       "--output-dir", out},
      console.dir().File("check.out"), console.dir().File("check.err"));
  INFO(rfs::test::ReadTextFile(console.dir().File("check.err")));
  CHECK(check == 0);

  // The console's numbers: every shard done, and the documents the shards hold, all processed.
  const size_t expected_docs = CountLines(generated->dir / "expected-docs.ndjson");
  auto [code, text] = console.Status("e2e", token, {"--json"});
  REQUIRE(code == 0);
  INFO(text);
  const json::object status = json::parse(text).as_object();
  CHECK(status.at("work_items") == json::object{{"pending", 0}, {"assigned", 0}, {"completed", 6}});
  CHECK(status.at("percent_complete").to_number<double>() == 100);
  CHECK(status.at("total_documents").to_number<uint64_t>() == expected_docs);
  CHECK(status.at("total_documents_processed").to_number<uint64_t>() == expected_docs);
  CHECK(status.at("total_size_bytes").to_number<uint64_t>() > 0);
  CHECK(status.at("shard_setup") == "completed");
  CHECK(status.at("indices").as_array().size() == 2);
  CHECK(status.at("active_workers").as_array().empty());

  auto [text_code, summary] = console.Status("e2e", token);
  CHECK(text_code == 0);
  CHECK(summary.find("Session e2e: 100% complete (shards: 0 pending, 0 assigned, 6 completed)") !=
        std::string::npos);

  // The console's metrics: the fleet's lease actions and the session's progress, in a text
  // promtool accepts.
  const std::string metrics =
      rfs::test::ScrapeMetrics("http://127.0.0.1:" + std::to_string(metrics_port) + "/metrics");
  INFO(metrics);
  CHECK(rfs::test::MetricValue(metrics,
                               "rfs_console_work_items_total{tool=\"MigrationConsole\",outcome="
                               "\"completed\"}") >= 6);
  CHECK(rfs::test::MetricValue(metrics,
                               "rfs_console_work_items_total{tool=\"MigrationConsole\",outcome="
                               "\"acquired\"}") >= 6);
  CHECK(rfs::test::MetricValue(metrics,
                               "rfs_console_session_work_items{tool=\"MigrationConsole\",session="
                               "\"e2e\",state=\"completed\"}") == 6);
  CHECK(rfs::test::MetricValue(metrics,
                               "rfs_console_session_documents_processed{tool=\"MigrationConsole\","
                               "session=\"e2e\"}") == static_cast<double>(expected_docs));
  CHECK(rfs::test::MetricValue(metrics,
                               "rfs_console_requests_total{tool=\"MigrationConsole\",route="
                               "\"status\",code=\"200\"}") >= 1);
  CHECK(rfs::test::PromtoolCheck(metrics).first == 0);

  // Tokens and names: a wrong token exits 4, an unknown session 3, missing options 64.
  CHECK(console.Status("e2e", "not-the-token").first == 4);
  CHECK(console.Status("nope", kAdminToken).first == 3);
  CHECK(rfs::test::RunProcess({RFS_CONSOLE_TOOL, "status", "--url", console.url()},
                              console.dir().File("x.out"), console.dir().File("x.err")) == 64);
  // A worker pointed at a session that does not exist fails with a clear message.
  const int lost =
      rfs::test::RunProcess({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(),
                             "--output-dir", console.dir().File("out2"), "--console-url",
                             console.url(), "--session-name", "missing", "--console-token", token},
                            console.dir().File("lost.out"), console.dir().File("lost.err"));
  CHECK(lost == 1);
  CHECK(rfs::test::ReadTextFile(console.dir().File("lost.err")).find("missing") !=
        std::string::npos);
}

TEST_CASE("the console page shows a running migration and follows it live in headless Chromium",
          "[e2e][console][browser]") {
  ConsoleProcess console;
  const std::string token = console.CreateSession("page");
  rfs::net::HttpTransportOptions http;
  http.endpoint = console.url();
  auto opened = rfs::net::BeastHttpTransport::Open(http);
  REQUIRE(opened.ok());
  auto& transport = **opened;
  auto send = [&](const std::string& method, const std::string& target, const std::string& body) {
    rfs::net::HttpRequest request;
    request.method = method;
    request.target = "/sessions/page/backfill/work-items" + target;
    request.headers = {{"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}};
    request.body = body;
    auto response = transport.Send(request);
    REQUIRE(response.ok());
    INFO(request.target << " " << response->body);
    REQUIRE(response->status < 300);
  };
  // A migration under way: logs/0 400 of 1000 documents (worker page-w1), logs/1 done by
  // page-w2, metrics/0 pending. 1,400 of 2,500 documents: 56%.
  for (auto [id, index, shard, docs] :
       {std::tuple{"logs-0", "logs", 0, 1000}, std::tuple{"logs-1", "logs", 1, 1000},
        std::tuple{"metrics-0", "metrics", 0, 500}}) {
    send("POST", "",
         json::serialize(json::object{{"work_item_id", id},
                                      {"index_name", index},
                                      {"shard_number", shard},
                                      {"document_count", docs},
                                      {"total_size_bytes", docs * 1000}}));
  }
  send("POST", "/logs-0/acquire?worker_id=page-w1", "");
  send(
      "PUT", "/logs-0/lease",
      R"({"worker_id": "page-w1", "progress": {"documents_processed": 400, "bytes_processed": 400000, "documents_failed": 2}})");
  send("POST", "/logs-1/acquire?worker_id=page-w2", "");
  send(
      "PUT", "/logs-1/lease",
      R"({"worker_id": "page-w2", "progress": {"documents_processed": 1000, "bytes_processed": 1000000}})");
  send("PUT", "/logs-1/complete", R"("page-w2")");

  const fs::path shots = fs::path(RFS_ARTIFACT_DIR);
  fs::create_directories(shots);
  const std::string out = console.dir().File("page.out");
  const std::string err = console.dir().File("page.err");
  const int code =
      rfs::test::RunProcess({RFS_NODE, std::string(RFS_BROWSER_DIR) + "/console_page_test.mjs",
                             console.url(), "page", token, shots.string()},
                            out, err);
  const std::string seen_text = rfs::test::ReadTextFile(out);
  INFO(seen_text << rfs::test::ReadTextFile(err) << console.Log());
  REQUIRE(code == 0);
  const json::object seen = json::parse(seen_text).as_object();
  CHECK(seen.at("asked_for_token") == true);
  CHECK(seen.at("token_left_in_url") == false);
  const json::object& running = seen.at("running").as_object();
  CHECK(running.at("session_name") == "page");
  CHECK(running.at("overall") == "56%");
  CHECK(running.at("session_percent") == "56%");
  CHECK(running.at("documents_processed") == "1,400");
  CHECK(running.at("documents_total") == "2,500");
  CHECK(running.at("shards_completed") == "1");
  CHECK(running.at("documents_failed") == "2");
  REQUIRE(running.at("workers").as_array().size() == 1);
  CHECK(std::string(running.at("workers").as_array()[0].as_string()).find("page-w1") !=
        std::string::npos);
  CHECK(running.at("indices") == 2);
  CHECK(running.at("shards") == 3);
  CHECK(running.at("progressbars").to_number<int64_t>() >= 1 + 2 * 2 + 3 * 2);
  const json::object& moving = seen.at("moving").as_object();
  CHECK(moving.at("overall") == "68%");  // 1,700 of 2,500
  CHECK(std::string(moving.at("throughput").as_string()).ends_with(" docs/s"));
  CHECK(moving.at("eta") != "unknown");
  // The throughput over time, drawn by the page: documents/s and _source/s.
  CHECK(moving.at("chart_lines") == 2);
  CHECK(moving.at("chart_points").to_number<int64_t>() >= 2);
  // A lease expiry reads as a time to go, the absolute UTC time on hover.
  const std::string expiry(moving.at("expiry").as_string());
  CHECK(expiry.starts_with("in "));
  CHECK((expiry.ends_with(" s") || expiry.ends_with(" min")));
  CHECK(std::string(moving.at("expiry_title").as_string()).ends_with("Z"));
  CHECK(seen.at("completed_rows") == 1);
  CHECK(seen.at("w1_rows") == 1);
  const json::object& done = seen.at("done").as_object();
  CHECK(done.at("overall") == "100%");
  CHECK(done.at("session_percent") == "100%");
  CHECK(done.at("documents_processed") == "2,500");
  CHECK(done.at("shards_completed") == "3");
  CHECK(done.at("eta") == "0 s");
  CHECK(done.at("workers") == 0);
  for (const char* name : {"console-running.png", "console-complete.png"}) {
    std::ifstream png(shots / name, std::ios::binary);
    char magic[8] = {};
    png.read(magic, 8);
    CHECK(std::string(magic + 1, 3) == "PNG");
    CHECK(fs::file_size(shots / name) > 10'000);
  }
}
