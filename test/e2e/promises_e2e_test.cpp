// What docs/tools.md and docs/transforms.md promise about the tools' security and stop contract,
// each proven once through the tools as processes: the console over TLS, a target over TLS,
// --refuse-plain-http-credentials, --max-retries, exit 4 on its own, and a transform stopped by
// SIGTERM giving its shard back unfinished.
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/exit_codes.hpp"

#include "e2e_support.hpp"
#include "support/generated_repo.hpp"
#include "support/opensearch_double.hpp"
#include "support/opensearch_double_certs.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include <signal.h>
#include <sys/types.h>

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace std::chrono_literals;
using rfs::e2e::CheckTarget;
using rfs::e2e::ExpectedDocs;
using rfs::e2e::MigrationRun;
using rfs::e2e::ReadExpectedDocs;

namespace {

constexpr int kOneItemDone = 0;
constexpr int kHandoffOrStopped = 2;
using rfs::core::kExitAllLeasedElsewhere;
using rfs::core::kExitNoWorkLeft;
constexpr const char* kPromisesAdminToken = "promises-admin-token-0123456789abcdef";

// Waits until `file` holds `text` (a worker's JSON event on stderr), the process ended, or 60 s.
bool WaitForText(const std::string& file, const std::string& text,
                 rfs::test::ChildProcess& process) {
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < give_up) {
    if (rfs::test::ReadTextFile(file).find(text) != std::string::npos) return true;
    if (process.Exited()) return false;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// A double serving HTTPS with the test certificates' server certificate.
rfs::testing::OpenSearchDoubleOptions TlsDoubleOptions(
    const rfs::testing::TestCertificates& certs) {
  rfs::testing::OpenSearchDoubleOptions options;
  options.tls_cert_file = certs.server_cert_file;
  options.tls_key_file = certs.server_key_file;
  return options;
}

// DocumentsFromSnapshotMigration from `repo` into `target` as worker `name`, with `extra`.
std::vector<std::string> PromisesWorkerArgs(const std::string& repo, const std::string& target,
                                            const std::string& name, const std::string& failed_dir,
                                            std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{RFS_DOCUMENTS_TOOL,
                                "--snapshot-local-dir",
                                repo,
                                "--target-host",
                                target,
                                "--worker-id",
                                name,
                                "--failed-documents-dir",
                                failed_dir};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

}  // namespace

TEST_CASE(
    "the console over TLS: serve --tls-cert, create-session and status with --cacert, "
    "workers with --console-cacert",
    "[e2e][generated][console]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 2 --docs 300 --seed 4401");
  if (!generated) return;
  MigrationRun run;
  auto certs = rfs::testing::MakeTestCertificates(run.dir.path().string());
  REQUIRE(certs.ok());
  const int port = rfs::test::FreeLoopbackPort();
  const std::string url = "https://127.0.0.1:" + std::to_string(port);
  rfs::test::ChildProcess console(
      {RFS_CONSOLE_TOOL, "serve", "--port", std::to_string(port), "--bind", "127.0.0.1", "--store",
       "sqlite:" + run.dir.File("console.db"), "--admin-token", kPromisesAdminToken, "--tls-cert",
       certs->server_cert_file, "--tls-key", certs->server_key_file},
      run.Out("console"), run.Err("console"));

  // create-session over https, trusting the test CA; retried while the console starts.
  std::string token;
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (token.empty()) {
    const int code = rfs::test::RunProcess(
        {RFS_CONSOLE_TOOL, "create-session", "--url", url, "--name", "tls", "--admin-token",
         kPromisesAdminToken, "--cacert", certs->ca_cert_file},
        run.Out("create"), run.Err("create"));
    if (code == 0) {
      token = Trimmed(rfs::test::ReadTextFile(run.Out("create")));
      break;
    }
    INFO(run.Logs("console") << run.Logs("create"));
    REQUIRE(std::chrono::steady_clock::now() < give_up);
    REQUIRE_FALSE(console.Exited());
    std::this_thread::sleep_for(100ms);
  }
  REQUIRE(!token.empty());

  // Without the CA the certificate is not trusted: the client refuses, and says why.
  const int untrusted = rfs::test::RunProcess(
      {RFS_CONSOLE_TOOL, "status", "--url", url, "--session", "tls", "--token", token},
      run.Out("untrusted"), run.Err("untrusted"));
  INFO(run.Logs("untrusted"));
  CHECK(untrusted != 0);
  CHECK(rfs::test::ReadTextFile(run.Err("untrusted")).find("certificate") != std::string::npos);

  // A worker coordinating through the TLS console, trusting it with --console-cacert.
  const std::string out = run.dir.File("out");
  const int worker =
      rfs::test::RunProcess({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(),
                             "--output-dir", out, "--console-url", url, "--session-name", "tls",
                             "--console-token", token, "--console-cacert", certs->ca_cert_file},
                            run.Out("worker"), run.Err("worker"));
  INFO(run.Logs("worker"));
  CHECK((worker == kOneItemDone || worker == kExitNoWorkLeft));
  // Until no work is left (one worker may end after one item).
  for (int i = 0; i < 4; ++i) {
    const std::string name = "worker-" + std::to_string(i);
    const int code = rfs::test::RunProcess(
        {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(), "--output-dir",
         out, "--console-url", url, "--session-name", "tls", "--console-token", token,
         "--console-cacert", certs->ca_cert_file},
        run.Out(name), run.Err(name));
    INFO(run.Logs(name));
    REQUIRE((code == kOneItemDone || code == kExitNoWorkLeft));
    if (code == kExitNoWorkLeft) break;
  }
  const int status =
      rfs::test::RunProcess({RFS_CONSOLE_TOOL, "status", "--url", url, "--session", "tls",
                             "--token", token, "--cacert", certs->ca_cert_file, "--json"},
                            run.Out("status"), run.Err("status"));
  INFO(run.Logs("status"));
  REQUIRE(status == 0);
  const json::object report = json::parse(rfs::test::ReadTextFile(run.Out("status"))).as_object();
  CHECK(report.at("outcome") == "COMPLETED");
  CHECK(report.at("work_items") == json::object{{"pending", 0}, {"assigned", 0}, {"completed", 2}});
  CHECK(report.at("total_documents_processed").to_number<uint64_t>() ==
        report.at("total_documents").to_number<uint64_t>());

  // The console speaks only TLS on that port: a plain-http request gets no API answer.
  const int plain = rfs::test::RunProcess(
      {RFS_CONSOLE_TOOL, "status", "--url", "http://127.0.0.1:" + std::to_string(port), "--session",
       "tls", "--token", token},
      run.Out("plain"), run.Err("plain"));
  CHECK(plain != 0);
  kill(console.pid(), SIGTERM);
  console.Wait();
}

TEST_CASE("a target over TLS: --target-cacert trusts its CA, an unknown CA is refused",
          "[e2e][generated]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 200 --seed 4402");
  if (!generated) return;
  MigrationRun run;
  auto certs = rfs::testing::MakeTestCertificates(run.dir.path().string());
  REQUIRE(certs.ok());
  rfs::testing::OpenSearchDoubleOptions options = TlsDoubleOptions(*certs);
  options.username = "admin";
  options.password = "tls-target-secret-7c1f";
  auto target = rfs::testing::OpenSearchDouble::Start(options);
  REQUIRE(target.ok());
  REQUIRE((*target)->endpoint().starts_with("https://"));
  auto args = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--target-username", "admin"});
    return PromisesWorkerArgs(generated->repo().string(), (*target)->endpoint(), "tls",
                              run.dir.File("failed"), std::move(extra));
  };
  // The password from the environment, as the docs advise (never on the command line).
  setenv("RFS_TARGET_PASSWORD", "tls-target-secret-7c1f", 1);

  const int untrusted = rfs::test::RunProcess(args({}), run.Out("untrusted"), run.Err("untrusted"));
  INFO(run.Logs("untrusted"));
  CHECK(untrusted == 1);
  CHECK(run.Logs("untrusted").find("certificate") != std::string::npos);
  CHECK((*target)->stats().bulk_requests == 0);

  const int trusted = rfs::test::RunProcess(args({"--target-cacert", certs->ca_cert_file}),
                                            run.Out("trusted"), run.Err("trusted"));
  INFO(run.Logs("trusted"));
  CHECK(trusted == kExitNoWorkLeft);
  unsetenv("RFS_TARGET_PASSWORD");
  CheckTarget(**target, ReadExpectedDocs(generated->dir / "expected-docs.ndjson"));
  // No secret in anything the tool printed.
  CHECK(run.Logs("trusted").find("tls-target-secret-7c1f") == std::string::npos);
  CHECK(run.Logs("untrusted").find("tls-target-secret-7c1f") == std::string::npos);
}

TEST_CASE(
    "a target that asks for a client certificate: --target-client-cert and "
    "--target-client-cert-key present one, and without them the handshake fails",
    "[e2e][generated]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 100 --seed 4405");
  REQUIRE(generated);
  MigrationRun run;
  auto certs = rfs::testing::MakeTestCertificates(run.dir.path().string());
  REQUIRE(certs.ok());
  rfs::testing::OpenSearchDoubleOptions options = TlsDoubleOptions(*certs);
  options.tls_client_ca_file = certs->ca_cert_file;
  auto target = rfs::testing::OpenSearchDouble::Start(options);
  REQUIRE(target.ok());
  auto args = [&](std::vector<std::string> extra) {
    return PromisesWorkerArgs(generated->repo().string(), (*target)->endpoint(), "mtls",
                              run.dir.File("failed"), std::move(extra));
  };

  // Refused for its certificate: the worker stops at once, with the reason, rather than retrying
  // for the whole lease (10 minutes by default).
  const auto started = std::chrono::steady_clock::now();
  const int without = rfs::test::RunProcess(
      args({"--target-cacert", certs->ca_cert_file, "--coordinator-db", run.dir.File("a.db")}),
      run.Out("without"), run.Err("without"));
  INFO(run.Logs("without"));
  CHECK(without == 1);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(60));
  CHECK(run.Logs("without").find("requires a client certificate") != std::string::npos);
  CHECK((*target)->stats().bulk_requests == 0);

  // A key without its certificate is a usage error before any connection.
  CHECK(rfs::test::RunProcess(args({"--target-cacert", certs->ca_cert_file,
                                    "--target-client-cert-key", certs->client_key_file}),
                              run.Out("half"), run.Err("half")) == 64);
  CHECK(rfs::test::ReadTextFile(run.Err("half")).find("must be given together") !=
        std::string::npos);

  // The Java tool's camelCase names, as a command line written for it would give them.
  const int with = rfs::test::RunProcess(
      args({"--targetCaCert", certs->ca_cert_file, "--targetClientCert", certs->client_cert_file,
            "--targetClientCertKey", certs->client_key_file}),
      run.Out("with"), run.Err("with"));
  INFO(run.Logs("with"));
  CHECK(with == kExitNoWorkLeft);
  CheckTarget(**target, ReadExpectedDocs(generated->dir / "expected-docs.ndjson"));
}

TEST_CASE(
    "a password for another host over plain http is refused before any connection with "
    "--refuse-plain-http-credentials",
    "[e2e][generated][cli]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 10 --seed 4403");
  if (!generated) return;
  MigrationRun run;
  // 192.0.2.1 is TEST-NET-1 (RFC 5737): never routed. The refusal comes before any connection
  // (BeastHttpTransport::Open), so nothing is sent there.
  const int code = rfs::test::RunProcess(
      {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(), "--target-host",
       "http://192.0.2.1:9200", "--target-username", "admin", "--target-password",
       "plain-secret-5e2d", "--refuse-plain-http-credentials", "--failed-documents-dir",
       run.dir.File("failed")},
      run.Out("refuse"), run.Err("refuse"));
  const std::string logs = run.Logs("refuse");
  INFO(logs);
  CHECK(code != 0);
  CHECK(code != kExitNoWorkLeft);
  CHECK(logs.find("refusing to send a basic-auth password over plain http") != std::string::npos);
  CHECK(logs.find("plain-secret-5e2d") == std::string::npos);
}

TEST_CASE(
    "a target that keeps answering 429 is retried only as --max-retries says: the shard goes "
    "back with its cursor, exit 1, and the next worker takes it at once",
    "[e2e][generated]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 600 --seed 4404");
  if (!generated) return;
  MigrationRun run;
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  rfs::testing::FaultOptions faults;
  faults.reject_429 = 1.0;
  (*target)->SetFaults(faults);
  auto args = [&](const std::string& name, std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--coordinator-db", run.dir.File("items.sqlite")});
    return PromisesWorkerArgs(generated->repo().string(), (*target)->endpoint(), name,
                              run.dir.File("failed"), std::move(extra));
  };
  const auto started = std::chrono::steady_clock::now();
  const int bounded =
      rfs::test::RunProcess(args("bounded", {"--max-retries", "2"}), run.Out("b"), run.Err("b"));
  INFO(run.Logs("b"));
  CHECK(bounded == 1);
  // Three attempts with backoff, not a lease's worth of retries (10 minutes by default).
  CHECK(std::chrono::steady_clock::now() - started < 60s);
  CHECK((*target)->stats().faults_injected >= 3);
  CHECK(run.Logs("b").find("\"event\":\"released\"") != std::string::npos);
  const ExpectedDocs expected = ReadExpectedDocs(generated->dir / "expected-docs.ndjson");
  REQUIRE(expected.size() == 1);
  CHECK((*target)->DocumentCount(expected.begin()->first) == 0);

  // The shard was given back (not left leased for 10 minutes): the next worker takes it now.
  (*target)->SetFaults({});
  const auto next_started = std::chrono::steady_clock::now();
  const int next = rfs::test::RunProcess(args("next", {}), run.Out("n"), run.Err("n"));
  INFO(run.Logs("n"));
  CHECK(next == kExitNoWorkLeft);
  CHECK(std::chrono::steady_clock::now() - next_started < 60s);
  CheckTarget(**target, expected);
}

TEST_CASE("exit 4 on its own: the only shard is leased by a running worker",
          "[e2e][generated][coordination]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 3000 --seed 4405");
  if (!generated) return;
  MigrationRun run;
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  rfs::testing::FaultOptions faults;
  faults.slow = 1.0;
  faults.slow_delay = 100ms;  // the first worker holds the shard for a few seconds
  (*target)->SetFaults(faults);
  auto args = [&](const std::string& name) {
    return PromisesWorkerArgs(generated->repo().string(), (*target)->endpoint(), name,
                              run.dir.File("failed"),
                              {"--documents-per-bulk-request", "100", "--max-connections", "1"});
  };
  rfs::test::ChildProcess holder(args("holder"), run.Out("holder"), run.Err("holder"));
  REQUIRE(WaitForText(run.Err("holder"), "\"event\":\"progress\"", holder));
  const int second = rfs::test::RunProcess(args("second"), run.Out("second"), run.Err("second"));
  INFO(run.Logs("second"));
  CHECK(second == kExitAllLeasedElsewhere);
  CHECK(holder.Wait() == kExitNoWorkLeft);
  CheckTarget(**target, ReadExpectedDocs(generated->dir / "expected-docs.ndjson"));
}

TEST_CASE("a JavaScript transform stopped by SIGTERM gives its shard back unfinished, not failed",
          "[e2e][generated][transform]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 100 --seed 4406");
  if (!generated) return;
  MigrationRun run;
  const std::string out = run.dir.File("out");
  const std::string failed = run.dir.File("failed");
  // A program that never returns; only the stop (not the transform time budget) may end it.
  const std::string endless =
      R"J([{"JsonJSTransformerProvider":{"initializationScript":"(function(){return function(d){var i = 0; while (true) { i = (i + 1) % 7; }};})"}}])J";
  rfs::test::ChildProcess stuck(
      {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(), "--output-dir", out,
       "--failed-documents-dir", failed, "--doc-transformer-config", endless,
       "--transform-time-budget", "PT10M", "--shutdown-timeout", "PT1S"},
      run.Out("stuck"), run.Err("stuck"));
  REQUIRE(WaitForText(run.Err("stuck"), "\"event\":\"acquired\"", stuck));
  // Into the program's loop: the worker burns a core in it, so its CPU time climbs. Signalled
  // once it has spent a quarter second more than at the acquisition.
  const double cpu_at_acquired = rfs::test::CpuSeconds(stuck.pid());
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (rfs::test::CpuSeconds(stuck.pid()) < cpu_at_acquired + 0.25 && !stuck.Exited() &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(20ms);
  }
  REQUIRE_FALSE(stuck.Exited());
  REQUIRE(rfs::test::CpuSeconds(stuck.pid()) >= cpu_at_acquired + 0.25);
  const auto signalled = std::chrono::steady_clock::now();
  kill(stuck.pid(), SIGTERM);
  const int code = stuck.Wait();
  INFO(run.Logs("stuck"));
  CHECK(code == kHandoffOrStopped);
  // Within the shutdown timeout and well before the 10 s overrun exit (143).
  CHECK(std::chrono::steady_clock::now() - signalled < 8s);
  CHECK(run.Logs("stuck").find("\"event\":\"released\"") != std::string::npos);
  // Unfinished, not failed: no failed-document record.
  size_t records = 0;
  if (fs::exists(failed)) {
    for (const auto& entry : fs::recursive_directory_iterator(failed)) {
      if (entry.is_regular_file() && fs::file_size(entry.path()) > 0) ++records;
    }
  }
  CHECK(records == 0);

  // The shard went back: a worker without the transform takes it at once and migrates it all.
  const int next =
      rfs::test::RunProcess({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(),
                             "--output-dir", out, "--failed-documents-dir", failed},
                            run.Out("next"), run.Err("next"));
  INFO(run.Logs("next"));
  CHECK(next == kExitNoWorkLeft);
  const int check = rfs::test::RunProcess(
      {RFS_CHECK_OUTPUT_TOOL, "--expected-docs", (generated->dir / "expected-docs.ndjson").string(),
       "--output-dir", out},
      run.Out("check"), run.Err("check"));
  INFO(run.Logs("check"));
  CHECK(check == 0);
}
