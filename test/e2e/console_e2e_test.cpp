// The migration console end to end, as users run it: `MigrationConsole serve` as its own process,
// a session created with `create-session`, three DocumentsFromSnapshotMigration workers pointed at
// it with --console-url, `MigrationConsole status` reading the result, and the page in headless
// Chromium showing a running migration and following it live to 100%.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/net/beast_http_transport.hpp"

#include "support/corpus.hpp"
#include "support/generated_repo.hpp"
#include "support/metrics_text.hpp"
#include "support/opensearch_double.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

constexpr const char* kAdminToken = "console-e2e-admin-token-0123456789";

// A MigrationConsole process on a free loopback port, and its logs.
class ConsoleProcess {
 public:
  explicit ConsoleProcess(const std::string& store = "", std::vector<std::string> extra = {},
                          std::vector<std::string> wrapper = {})
      : dir_("rfs-console-e2e") {
    port_ = rfs::test::FreeLoopbackPort();
    std::vector<std::string> args{
        RFS_CONSOLE_TOOL,   "serve",
        "--port",           std::to_string(port_),
        "--bind",           "127.0.0.1",
        "--store",          store.empty() ? "sqlite:" + dir_.File("console.db") : store,
        "--admin-token",    kAdminToken,
        "--check-responses"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.begin(), wrapper.begin(), wrapper.end());
    process_ = std::make_unique<rfs::test::ChildProcess>(args, dir_.File("console.out"),
                                                         dir_.File("console.err"));
  }

  // Every answer the test saw held to the console's OpenAPI document.
  ~ConsoleProcess() {
    const std::string log = Log();
    INFO(log);
    CHECK(log.find("departs from /openapi.json") == std::string::npos);
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  pid_t pid() const { return process_->pid(); }
  bool exited() { return process_->Exited(); }
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

// A field of /proc/PID/status in kB ("VmRSS").
uint64_t StatusKb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1));
  }
  return 0;
}

// A raw loopback connection that sends `bytes` and then holds the socket open.
int Hold(int port, const std::string& bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  if (!bytes.empty()) {
    const int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    [[maybe_unused]] ssize_t sent = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
  return fd;
}

// What the server sent on `fd` within `wait` (the socket is non-blocking or made so).
std::string ReadWithin(int fd, std::chrono::milliseconds wait) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::string out;
  const auto until = std::chrono::steady_clock::now() + wait;
  char buffer[4096];
  while (std::chrono::steady_clock::now() < until) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n > 0) {
      out.append(buffer, static_cast<size_t>(n));
      if (out.find("\r\n\r\n") != std::string::npos) break;
    } else if (n == 0) {
      break;
    } else {
      std::this_thread::sleep_for(10ms);
    }
  }
  return out;
}

// GET /health on a fresh connection: its status, or 0 when no answer came within 5 s.
int Health(const std::string& url) {
  rfs::net::HttpTransportOptions options;
  options.endpoint = url;
  options.connect_timeout = 5s;
  options.response_timeout = 5s;
  auto transport = rfs::net::BeastHttpTransport::Open(options);
  REQUIRE(transport.ok());
  rfs::net::HttpRequest get;
  get.target = "/health";
  auto response = (*transport)->Send(get);
  return response.ok() ? response->status : 0;
}

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
  CHECK(status.at("outcome") == "COMPLETED");
  CHECK(status.at("findings").as_array().empty());
  CHECK(status.at("trial").is_null());
  CHECK(status.at("indices").as_array().size() == 2);
  CHECK(status.at("active_workers").as_array().empty());
  // Each worker that held an item reported its back-pressure (none from a folder target).
  const json::array& pressure = status.at("workers_back_pressure").as_array();
  CHECK(!pressure.empty());
  for (const auto& worker : pressure) {
    CHECK(std::set<std::string>{"a", "b", "c"}.contains(
        std::string(worker.at("worker_id").as_string())));
    CHECK(worker.at("rejected_429") == 0);
    CHECK(worker.at("retries") == 0);
  }

  auto [text_code, summary] = console.Status("e2e", token);
  CHECK(text_code == 0);
  CHECK(summary.find("Back-pressure per worker (429s, retries):") != std::string::npos);
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

TEST_CASE(
    "a trial run whose transform fails documents shows in the console as a trial with findings",
    "[e2e][generated][console][transform]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 2 --docs 200 --seed 73");
  if (!generated) return;
  ConsoleProcess console;
  const std::string token = console.CreateSession("trial");
  // The transform fails the documents whose id ends in an even digit.
  const std::string failing = R"([{"JqTransformerProvider": {"script":
      "if (.operation._id | test(\"[02468]$\")) then error(\"even\") else . end"}}])";
  const int code = rfs::test::RunProcess(
      {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(), "--output-dir",
       console.dir().File("out"), "--worker-id", "trial-worker", "--console-url", console.url(),
       "--session-name", "trial", "--console-token", token, "--max-docs-per-shard", "40",
       "--doc-transformer-config", failing},
      console.dir().File("worker.out"), console.dir().File("worker.err"));
  const std::string worker_out = rfs::test::ReadTextFile(console.dir().File("worker.out"));
  INFO(worker_out << rfs::test::ReadTextFile(console.dir().File("worker.err")) << console.Log());
  REQUIRE(code == 6);
  CHECK(worker_out.find("TRIAL run") != std::string::npos);
  // What the worker's summary says failed in its transform, per index.
  const size_t at = worker_out.find(" transform failures");
  REQUIRE(at != std::string::npos);
  const size_t from = worker_out.rfind(", ", at) + 2;
  const int64_t transform_failed = std::stoll(worker_out.substr(from, at - from));
  REQUIRE(transform_failed > 0);

  auto [status_code, text] = console.Status("trial", token, {"--json"});
  INFO(text);
  CHECK(status_code == 6);  // completed with findings
  const json::object status = json::parse(text).as_object();
  CHECK(status.at("trial").at("max_docs_per_shard") == 40);
  CHECK(status.at("outcome") == "COMPLETED_WITH_FINDINGS");
  REQUIRE(status.at("indices").as_array().size() == 1);
  const json::object& index = status.at("indices").as_array()[0].as_object();
  CHECK(index.at("outcomes").at("transform_failed").to_number<int64_t>() == transform_failed);
  CHECK(index.at("documents").at("failed").to_number<int64_t>() == transform_failed);
  REQUIRE(status.at("findings").as_array().size() == 1);
  CHECK(status.at("findings").as_array()[0].at("outcome") == "transform_failed");
  auto [text_code, human] = console.Status("trial", token);
  CHECK(text_code == 6);
  CHECK(human.find("TRIAL: at most 40 documents of each shard") != std::string::npos);
  CHECK(human.find("Outcome: COMPLETED_WITH_FINDINGS") != std::string::npos);
}

TEST_CASE("documents the target holds in a newer version show per index in the console",
          "[e2e][corpus][console][preserve-version]") {
  // simple_index of the corpus's OpenSearch 2 snapshot: _id 1 and 2, each at version 1. The
  // target holds _id 2 already, at an external version above the source's.
  auto root = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3");
  if (!root) return;
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  auto opened = rfs::net::BeastHttpTransport::Open({.endpoint = (*target)->endpoint()});
  REQUIRE(opened.ok());
  rfs::net::HttpRequest put;
  put.method = "PUT";
  put.target = "/simple_index/_doc/2?version=5&version_type=external";
  put.headers = {{"Content-Type", "application/json"}};
  put.body = R"({"value":1000})";
  auto written = (*opened)->Send(put);
  REQUIRE(written.ok());
  REQUIRE(written->status == 201);

  ConsoleProcess console;
  const std::string token = console.CreateSession("newer");
  const int code = rfs::test::RunProcess(
      {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", (*root / "os2_nocomp").string(),
       "--snapshot-name", "snapshot_v2", "--target-host", (*target)->endpoint(),
       "--preserve-version", "--console-url", console.url(), "--session-name", "newer",
       "--console-token", token, "--failed-documents-dir", console.dir().File("failed")},
      console.dir().File("worker.out"), console.dir().File("worker.err"));
  INFO(rfs::test::ReadTextFile(console.dir().File("worker.out"))
       << rfs::test::ReadTextFile(console.dir().File("worker.err")) << console.Log());
  REQUIRE(code == 3);  // no work left: a clean run
  REQUIRE((*target)->GetDocument("simple_index", "2").has_value());
  CHECK((*target)->GetDocument("simple_index", "2")->version == 5);
  CHECK((*target)->GetDocument("simple_index", "1")->version == 1);

  auto [status_code, text] = console.Status("newer", token, {"--json"});
  INFO(text);
  CHECK(status_code == 0);  // already newer is no finding
  const json::object status = json::parse(text).as_object();
  CHECK(status.at("outcome") == "COMPLETED");
  CHECK(status.at("outcomes").at("already_newer") == 1);
  REQUIRE(status.at("indices").as_array().size() == 1);
  const json::object& index = status.at("indices").as_array()[0].as_object();
  CHECK(index.at("index_name") == "simple_index");
  CHECK(index.at("outcomes").at("already_newer") == 1);
  CHECK(index.at("outcomes").at("rejected") == 0);
  CHECK(index.at("documents").at("failed") == 0);
  auto [text_code, human] = console.Status("newer", token);
  INFO(human);
  CHECK(text_code == 0);
  CHECK(human.find("Rebuilt    Newer\n") != std::string::npos);
  const size_t row = human.find("\nsimple_index ");
  REQUIRE(row != std::string::npos);
  const std::string line = human.substr(row + 1, human.find('\n', row + 1) - row - 1);
  CHECK(line.ends_with(" 0        1"));  // Rebuilt 0, Newer 1
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
  // The per-index account and chart.
  CHECK(moving.at("outcome") == "in progress");
  CHECK(moving.at("logs_rejected") == "2");
  CHECK(moving.at("logs_dropped") == "1");
  CHECK(moving.at("logs_already_newer") == "3");
  const json::array& chart_indices = moving.at("chart_indices").as_array();
  CHECK(std::find(chart_indices.begin(), chart_indices.end(), json::value("logs")) !=
        chart_indices.end());
  CHECK(moving.at("logs_chart_lines") == 2);
  CHECK(moving.at("logs_chart_points").to_number<int64_t>() >= 2);
  // The chart's time axis, each worker's last report, the run's start and elapsed time.
  CHECK(std::string(moving.at("time_axis").as_string()).ends_with("UTC"));
  CHECK(std::string(moving.at("last_report").as_string()).ends_with(" ago"));
  CHECK(moving.at("run_started") != "-");
  CHECK(moving.at("elapsed") != "-");
  CHECK(moving.at("finished") == "-");
  // The back-pressure a worker sent with its renewal, in the page's per-worker table.
  REQUIRE(moving.at("back_pressure").as_array().size() == 1);
  CHECK(std::string(moving.at("back_pressure").as_array()[0].as_string()).find("1,234") !=
        std::string::npos);
  CHECK(seen.at("completed_rows") == 1);
  CHECK(seen.at("w1_rows") == 1);
  const json::object& done = seen.at("done").as_object();
  CHECK(done.at("overall") == "100%");
  CHECK(done.at("session_percent") == "100%");
  CHECK(done.at("documents_processed") == "2,500");
  CHECK(done.at("shards_completed") == "3");
  CHECK(done.at("eta") == "0 s");
  CHECK(done.at("workers") == 0);
  // Once the run has ended, its rate is 0 and its finish time shows.
  CHECK(done.at("throughput") == "0 docs/s");
  CHECK(done.at("finished") != "-");
  // Two documents of logs were refused: the session completed with findings.
  CHECK(done.at("outcome") == "completed with findings");
  REQUIRE(done.at("findings").as_array().size() == 1);
  CHECK(done.at("findings").as_array()[0] == "logs: 2 rejected");
  for (const char* name : {"console-running.png", "console-complete.png"}) {
    std::ifstream png(shots / name, std::ios::binary);
    char magic[8] = {};
    png.read(magic, 8);
    CHECK(std::string(magic + 1, 3) == "PNG");
    CHECK(fs::file_size(shots / name) > 10'000);
  }
}

TEST_CASE("create-session and status take --refuse-plain-http-credentials and refuse once",
          "[e2e][console][security]") {
  ConsoleProcess console;
  const std::string token = console.CreateSession("plain");
  // To this host the token may go over plain http: the option changes nothing.
  auto [code, out] = console.Status("plain", token, {"--json", "--refuse-plain-http-credentials"});
  CHECK(code == 0);
  CHECK(out.find("\"session_name\":\"plain\"") != std::string::npos);
  // Beyond it (192.0.2.1: RFC 5737's documentation network, never reached): refused before any
  // connection, exit 64, the reason said once.
  const std::vector<std::vector<std::string>> commands = {
      {RFS_CONSOLE_TOOL, "create-session", "--url", "http://192.0.2.1:9", "--name", "x",
       "--admin-token", kAdminToken, "--refuse-plain-http-credentials"},
      {RFS_CONSOLE_TOOL, "status", "--url", "http://192.0.2.1:9", "--session", "x", "--token",
       token, "--refuse-plain-http-credentials"}};
  for (const auto& argv : commands) {
    const std::string err = console.dir().File("refused-" + argv[1] + ".err");
    const int refused =
        rfs::test::RunProcess(argv, console.dir().File("refused-" + argv[1] + ".out"), err);
    const std::string text = rfs::test::ReadTextFile(err);
    INFO(argv[1] << ": " << text);
    CHECK(refused == 64);
    const size_t first = text.find("refusing to send a bearer token over plain http");
    CHECK(first != std::string::npos);
    CHECK(text.find("refusing to send", first + 1) == std::string::npos);
  }
}

TEST_CASE("idle, stalled and unauthenticated connections do not take the console down",
          "[e2e][console][security]") {
  ConsoleProcess console;
  console.CreateSession("held");
  const uint64_t rss_before = StatusKb(console.pid(), "VmRSS");
  REQUIRE(rss_before > 0);
  std::vector<int> held;
  // 300 connections with half a request head, 100 that send nothing.
  for (int i = 0; i < 300; ++i) held.push_back(Hold(console.port(), "GET /health HTTP/1.1\r\nHo"));
  for (int i = 0; i < 100; ++i) held.push_back(Hold(console.port(), ""));
  // 40 uploads of a large body without a token, stalled after 64 KiB.
  std::vector<int> uploads;
  for (int i = 0; i < 40; ++i) {
    uploads.push_back(Hold(console.port(),
                           "POST /sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                           "\r\nContent-Length: 8000000\r\n\r\n" +
                               std::string(64 << 10, 'x')));
  }
  // The console still answers, at once.
  for (int i = 0; i < 5; ++i) {
    const auto started = std::chrono::steady_clock::now();
    CHECK(Health(console.url()) == 200);
    CHECK(std::chrono::steady_clock::now() - started < 3s);
  }
  // An upload without a token is refused from its head; its body is never read. (An upload
  // closed to make room for newer connections gets no answer at all.)
  int refused = 0;
  for (int fd : uploads) {
    const std::string answer = ReadWithin(fd, 200ms);
    if (answer.rfind("HTTP/1.1 401", 0) == 0) ++refused;
  }
  CHECK(refused > 0);
  // Memory stays flat: no body was buffered.
  const uint64_t rss_after = StatusKb(console.pid(), "VmRSS");
  INFO("RSS before " << rss_before << " kB, after " << rss_after << " kB");
  CHECK(rss_after < rss_before + 40 * 1024);
  // A session's work still goes on with a token.
  auto [code, out] = console.Status("held", kAdminToken, {"--json"});
  CHECK(code == 0);
  for (int fd : held) close(fd);
  for (int fd : uploads) close(fd);
  CHECK_FALSE(console.exited());
}

TEST_CASE("a console out of file descriptors backs off instead of spinning, and recovers",
          "[e2e][console][security]") {
  // 64 descriptors: the connections below run it out, so accept() fails with EMFILE.
  ConsoleProcess console("", {"--max-connections", "1000"}, {"/usr/bin/prlimit", "--nofile=64"});
  console.CreateSession("fds");
  std::vector<int> held;
  for (int i = 0; i < 120; ++i) held.push_back(Hold(console.port(), "GET /health HTTP/1.1\r\n"));
  std::this_thread::sleep_for(500ms);
  const double cpu_before = rfs::test::CpuSeconds(console.pid());
  std::this_thread::sleep_for(3s);
  const double cpu_used = rfs::test::CpuSeconds(console.pid()) - cpu_before;
  INFO("CPU seconds in 3 s while out of descriptors: " << cpu_used);
  CHECK(cpu_used < 1.0);
  // Room is made by closing connections that wait for a request: /health answers again.
  int status = 0;
  for (int attempt = 0; attempt < 10 && status != 200; ++attempt) status = Health(console.url());
  CHECK(status == 200);
  for (int fd : held) close(fd);
  CHECK(Health(console.url()) == 200);
  CHECK_FALSE(console.exited());
}

TEST_CASE("the console serves its OpenAPI document and holds to it under schemathesis fuzzing",
          "[e2e][console][openapi]") {
  ConsoleProcess console;
  console.CreateSession("fuzzed");
  // The document itself: OpenAPI 3.0, every route the console serves.
  {
    rfs::net::HttpTransportOptions options;
    options.endpoint = console.url();
    auto transport = rfs::net::BeastHttpTransport::Open(options);
    REQUIRE(transport.ok());
    rfs::net::HttpRequest get;
    get.target = "/openapi.json";
    auto response = (*transport)->Send(get);
    REQUIRE(response.ok());
    REQUIRE(response->status == 200);
    const json::value spec = json::parse(response->body);
    CHECK(spec.at("openapi") == "3.0.3");
    const json::object& paths = spec.at("paths").as_object();
    for (const char* path :
         {"/health", "/sessions", "/sessions/{name}", "/sessions/{name}/{space}/work-items",
          "/sessions/{name}/{space}/work-items/acquire",
          "/sessions/{name}/{space}/work-items/status",
          "/sessions/{name}/{space}/work-items/{id}/lease",
          "/sessions/{name}/{space}/work-items/{id}/successors"}) {
      INFO(path);
      CHECK(paths.contains(path));
    }
  }
  // Fuzzed: a bounded number of generated requests per operation, with the admin token; no
  // answer may be a 5xx, have a status, content type or body outside the document. A first pass
  // with made-up names (sessions created and deleted), then one inside an existing session.
  REQUIRE(std::filesystem::exists(RFS_SCHEMATHESIS));  // scripts/install-deps installs it
  for (const bool inside : {false, true}) {
    std::vector<std::string> argv{
        RFS_SCHEMATHESIS,
        "run",
        console.url() + "/openapi.json",
        "--checks",
        "not_a_server_error,status_code_conformance,content_type_conformance,"
        "response_schema_conformance",
        "--hypothesis-max-examples",
        "25",
        "--hypothesis-seed",
        "20261127",
        "--hypothesis-derandomize",
        "-H",
        std::string("Authorization: Bearer ") + kAdminToken,
        "--no-color",
        "--request-timeout",
        "10000"};
    if (inside) {
      for (const char* arg :
           {"--set-path", "name=fuzzed", "--exclude-operation-id", "deleteSession"}) {
        argv.push_back(arg);
      }
    }
    const std::string pass = inside ? "inside" : "names";
    const std::string out = console.dir().File("schemathesis-" + pass + ".out");
    const int code = rfs::test::RunProcess(argv, out, console.dir().File("schemathesis.err"));
    const std::string report = rfs::test::ReadTextFile(out);
    INFO(pass << "\n"
              << report << rfs::test::ReadTextFile(console.dir().File("schemathesis.err"))
              << console.Log());
    CHECK(code == 0);
    CHECK(report.find("response_schema_conformance") != std::string::npos);
    CHECK(report.find("FAILED") == std::string::npos);
  }
  CHECK_FALSE(console.exited());
}
