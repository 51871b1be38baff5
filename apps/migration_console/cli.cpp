#include "migration_console/cli.hpp"

#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include <boost/json.hpp>

#include "rfs/console/console_client.hpp"
#include "rfs/console/console_status.hpp"
#include "rfs/core/exit_codes.hpp"
#include "rfs/core/json_text.hpp"

#include "common/connection.hpp"
#include "common/options.hpp"
#include "common/signals.hpp"

namespace rfs::apps::console {

namespace po = boost::program_options;
namespace json = boost::json;

namespace {
constexpr const char* kProgram = "MigrationConsole";
// The document tools' exit code for documents rejected, not convertible, or failed by a transform.
constexpr int kFindingsExitCode = rfs::core::kExitDocumentsFailed;
}  // namespace

const char* const kUsage =
    "Usage: MigrationConsole serve --port P [--store sqlite:PATH | postgresql://...]\n"
    "       MigrationConsole create-session --url URL --name S\n"
    "       MigrationConsole status --url URL --session S [--json] [--watch SECONDS]\n"
    "\n"
    "serve: the work-coordination service of a migration. Workers started with --console-url\n"
    "URL --session-name S lease shards from it and report progress; open URL/?token=T in a\n"
    "browser for live progress per session, index and shard. Work items live in --store: a\n"
    "SQLite file (default migration-console.db) or a PostgreSQL database that several console\n"
    "instances may share. Sessions are created with the admin token (--admin-token or, better,\n"
    "RFS_CONSOLE_ADMIN_TOKEN; at least 16 characters); each session has its own token, which\n"
    "opens that session only. Stops on SIGTERM/SIGINT.\n"
    "\n"
    "create-session: creates a session and prints its token (the only time it is shown).\n"
    "status: a session's progress in the terminal (or its JSON with --json).\n"
    "\n"
    "Exit codes: 0 done, 1 failure (console unreachable, store failure), 3 no such session,\n"
    "4 the token does not open it, 6 (status) the session completed with findings: documents\n"
    "rejected by the target, not convertible, or failed by a transform, 64 usage. Every option can "
    "also be set through an RFS_\n"
    "environment variable, e.g. RFS_CONSOLE_TOKEN for --token.\n";

po::options_description Options() {
  po::options_description options("Options");
  options.add_options()("help,h", "show this help")(
      "port", po::value<rfs::apps::Port>()->default_value({8080}), "serve: the port to listen on")(
      "bind", po::value<std::string>()->default_value("127.0.0.1"),
      "serve: the address to listen on (0.0.0.0 for every interface; workers on other hosts "
      "then send their tokens over the network: serve HTTPS with --tls-cert/--tls-key)")(
      "max-connections", po::value<rfs::apps::Bounded<uint64_t, 1, 65536>>()->default_value({256}),
      "serve: open connections at most; past it a new one closes the connection that has "
      "waited longest for a request")(
      "check-responses", po::bool_switch(),
      "serve: check every JSON answer against the console's own OpenAPI document "
      "(/openapi.json) and print each departure to stderr; for development and tests (one more "
      "parse per answer)")("store",
                           po::value<std::string>()->default_value("sqlite:migration-console.db"),
                           "serve: where sessions and work items live: sqlite:PATH or "
                           "postgresql://user[:password]@host[:port]/database")(
      "admin-token", po::value<std::string>(),
      "serve: the token that creates and deletes sessions and opens every one; create-session: "
      "that token (RFS_CONSOLE_ADMIN_TOKEN)")("tls-cert", po::value<std::string>(),
                                              "serve: PEM certificate chain: serve HTTPS")(
      "tls-key", po::value<std::string>(), "serve: PEM private key of --tls-cert")(
      "threads", po::value<rfs::apps::Bounded<int, 1, 256>>()->default_value({8}),
      "serve: threads serving requests")(
      "metrics-port", po::value<rfs::apps::Port>(),
      "serve: serve Prometheus metrics (GET /metrics) on this port: API requests, the fleet's "
      "lease actions, each session's progress (default: no metrics endpoint)")(
      "metrics-bind-address", po::value<std::string>()->default_value("127.0.0.1"),
      "serve: the address the metrics endpoint listens on (HTTPS with the same certificate "
      "when --tls-cert is given)")("url", po::value<std::string>(),
                                   "create-session, status: the console's URL")(
      "cacert", po::value<std::string>(),
      "create-session, status: PEM CA certificates to trust for an https:// --url")(
      "name", po::value<std::string>(), "create-session: the session's name")(
      "session", po::value<std::string>(), "status: the session")(
      "token", po::value<std::string>(),
      "status: the session's token (or the admin token); RFS_CONSOLE_TOKEN")(
      "json", po::bool_switch(), "status: print the status document as JSON")(
      "watch", po::value<rfs::apps::Bounded<int, 0, 86400>>()->default_value({0}),
      "status: print again every this many seconds until the session completes");
  // create-session and status send a token: the tools' own option, which their warning names.
  rfs::apps::AddPlainHttpOption(options);
  return options;
}

namespace {

int ExitFor(const absl::Status& status) {
  if (absl::IsNotFound(status)) return rfs::core::kExitConsoleNoSuchSession;
  if (absl::IsPermissionDenied(status)) return rfs::core::kExitConsoleForbidden;
  if (absl::IsInvalidArgument(status)) return rfs::core::kExitUsage;
  return rfs::core::kExitFailure;
}

// The process's policy for tokens over plain http (--refuse-plain-http-credentials).
void ApplyPlainHttp(const po::variables_map& vm) {
  rfs::apps::ApplyPlainHttpOption(vm, [](const std::string& warning) {
    std::cerr << kProgram << ": warning: " << warning << "\n";
  });
}

int Fail(const absl::Status& status) {
  std::cerr << kProgram << ": " << status.message() << "\n";
  return ExitFor(status);
}

std::string FromEnvironment(const po::variables_map& vm, const char* option, const char* variable) {
  std::string value = rfs::apps::Text(vm, option);
  if (value.empty()) {
    if (const char* env = std::getenv(variable); env != nullptr) value = env;
  }
  return value;
}

}  // namespace

int Serve(const po::variables_map& vm) {
  rfs::console::ConsoleServerOptions options;
  options.store.uri = vm["store"].as<std::string>();
  options.service.admin_token = FromEnvironment(vm, "admin-token", "RFS_CONSOLE_ADMIN_TOKEN");
  options.http.port = vm["port"].as<rfs::apps::Port>().value;
  options.http.bind_address = vm["bind"].as<std::string>();
  options.http.threads = vm["threads"].as<rfs::apps::Bounded<int, 1, 256>>().value;
  if (vm.count("metrics-port"))
    options.metrics_port = vm["metrics-port"].as<rfs::apps::Port>().value;
  options.metrics_bind_address = vm["metrics-bind-address"].as<std::string>();
  const std::string cert = rfs::apps::Text(vm, "tls-cert");
  const std::string key = rfs::apps::Text(vm, "tls-key");
  if (cert.empty() != key.empty()) {
    return rfs::apps::UsageError(kProgram, "--tls-cert and --tls-key go together");
  }
  if (!cert.empty()) options.http.tls = rfs::net::HttpServerTls{cert, key};
  options.http.max_connections =
      vm["max-connections"].as<rfs::apps::Bounded<uint64_t, 1, 65536>>().value;
  if (vm["check-responses"].as<bool>()) {
    options.service.on_departure_from_openapi = [](const std::string& departure) {
      std::cerr << kProgram << ": answer departs from /openapi.json: " << departure << "\n";
    };
  }
  if (cert.empty() && !rfs::net::IsLoopbackHost(options.http.bind_address)) {
    std::cerr << kProgram << ": WARNING: serving plain HTTP on " << options.http.bind_address
              << ": every worker's bearer token crosses the network in clear text; serve HTTPS "
                 "(--tls-cert, --tls-key) or bind 127.0.0.1 behind a TLS proxy\n";
  }
  const auto& stop = rfs::apps::InstallStopHandlers();
  absl::Status served = rfs::console::ServeConsole(
      std::move(options), stop, [](const rfs::console::ConsoleServer& server) {
        std::cerr << kProgram << ": serving on " << server.url() << "\n";
        if (const std::string metrics = server.metrics_url(); !metrics.empty()) {
          std::cerr << kProgram << ": metrics (Prometheus) on " << metrics << "\n";
        }
      });
  if (absl::IsInvalidArgument(served)) return rfs::apps::UsageError(kProgram, served.message());
  if (!served.ok()) return Fail(served);
  std::cerr << kProgram << ": stopped\n";
  return 0;
}

int CreateSessionCommand(const po::variables_map& vm) {
  ApplyPlainHttp(vm);
  rfs::console::ConsoleClientOptions client;
  client.url = rfs::apps::Text(vm, "url");
  client.token = FromEnvironment(vm, "admin-token", "RFS_CONSOLE_ADMIN_TOKEN");
  client.ca_cert_file = rfs::apps::Text(vm, "cacert");
  const std::string name = rfs::apps::Text(vm, "name");
  if (client.url.empty() || name.empty()) {
    return rfs::apps::UsageError(kProgram, "create-session needs --url and --name");
  }
  if (client.token.empty()) {
    return rfs::apps::UsageError(kProgram,
                                 "create-session needs the admin token (RFS_CONSOLE_ADMIN_TOKEN)");
  }
  auto token = rfs::console::CreateSession(client, name);
  if (!token.ok()) return Fail(token.status());
  std::cout << *token << "\n";
  return 0;
}

int StatusCommand(const po::variables_map& vm) {
  ApplyPlainHttp(vm);
  rfs::console::ConsoleClientOptions client;
  client.url = rfs::apps::Text(vm, "url");
  client.token = FromEnvironment(vm, "token", "RFS_CONSOLE_TOKEN");
  client.ca_cert_file = rfs::apps::Text(vm, "cacert");
  const std::string session = rfs::apps::Text(vm, "session");
  if (client.url.empty() || session.empty()) {
    return rfs::apps::UsageError(kProgram, "status needs --url and --session");
  }
  if (client.token.empty()) {
    return rfs::apps::UsageError(kProgram, "status needs a token (--token or RFS_CONSOLE_TOKEN)");
  }
  const int watch = vm["watch"].as<rfs::apps::Bounded<int, 0, 86400>>().value;
  if (watch < 0) return rfs::apps::UsageError(kProgram, "--watch must be >= 0");
  const auto& stop = rfs::apps::InstallStopHandlers();
  while (true) {
    auto status = rfs::console::FetchSessionStatus(client, session);
    if (!status.ok()) return Fail(status.status());
    if (vm["json"].as<bool>()) {
      std::cout << rfs::core::JsonText(*status) << std::endl;
    } else {
      std::cout << rfs::console::FormatStatusText(*status) << std::flush;
    }
    const auto& items = status->at("work_items").as_object();
    const bool complete = items.at("pending").to_number<int64_t>() == 0 &&
                          items.at("assigned").to_number<int64_t>() == 0 &&
                          items.at("completed").to_number<int64_t>() > 0;
    // As the workers' own exit code: 6 when documents did not all arrive as they were.
    const json::value* outcome = status->if_contains("outcome");
    const bool findings = complete && outcome != nullptr && outcome->is_string() &&
                          outcome->as_string() == "COMPLETED_WITH_FINDINGS";
    if (watch == 0 || complete || stop.load()) return findings ? kFindingsExitCode : 0;
    for (int i = 0; i < watch * 10 && !stop.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!vm["json"].as<bool>()) std::cout << "\n";
  }
}

}  // namespace rfs::apps::console
