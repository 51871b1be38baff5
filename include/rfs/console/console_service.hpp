// ConsoleService: the migration console's HTTP API (the seed "Backfill Work Coordination System
// Design" API, plus sessions with bearer tokens) as a function from request to response, so
// that it can be served by net::HttpServer and tested without sockets. README "Console API"
// lists every route, model and error.
//
// Work items are leased under the coordination layer's rules (CoordinatorBase, through the
// store's coordinators): the seed's statuses are views of them (pending: no live lease,
// assigned: a live lease, completed), an expired lease makes an item pending again, and the
// IWorkCoordinator extras (lease generations and exponents, successors recorded before they are
// created, release) travel as optional fields the seed's clients may leave out.
//
// Thread safety: Handle may be called concurrently.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "rfs/console/console_status.hpp"
#include "rfs/console/console_store.hpp"
#include "rfs/metrics/registry.hpp"
#include "rfs/net/http_server.hpp"
#include "rfs/net/http_transport.hpp"

namespace rfs::console {

struct ConsoleServiceOptions {
  /// Opens every session and alone may create and delete sessions. Required.
  std::string admin_token;
  /// The lease of the seed's clients, which do not say (lease_duration_seconds: 300).
  std::chrono::milliseconds default_lease{std::chrono::seconds(300)};
  /// When set, the service counts its requests and the fleet's lease actions here, and
  /// SampleProgress records each session's progress (rfs_console_* metrics; see
  /// console_service.cpp). Must outlive the service.
  metrics::Registry* metrics = nullptr;
  /// When set, every JSON answer is checked against the console's OpenAPI document
  /// (GET /openapi.json) and each departure is reported here, one line each (MigrationConsole
  /// --check-responses; the suite sets it on every console it starts). Costs a parse per answer.
  std::function<void(const std::string&)> on_departure_from_openapi;
  /// Answers acquisitions as a console from before `lease_growth` did, the parameter unread (each
  /// grant that runs out doubles the next) and the grant's start as the store's time: for tests
  /// of newer workers against an older console.
  bool ignore_lease_growth = false;
};

class ConsoleService {
 public:
  ConsoleService(ConsoleStore& store, ConsoleServiceOptions options);
  ~ConsoleService();

  net::HttpResponse Handle(const net::HttpRequest& request);

  /// Decides on a request from its head, before its body is read (net::HttpServerOptions::on_head):
  /// a body (of up to kMaxRequestBodyBytes) only with the admin token or the token of the
  /// session in the path (401/403 otherwise, the body never read), and the connection counts as
  /// authenticated when the head carries such a token (the server keeps those over others).
  net::HeadDecision Admit(const net::HttpRequest& head);
  /// The largest request body: a worker's largest call (64 successor ids of at most 512 bytes)
  /// fits many times over, and 256 stalled uploads hold at most 32 MiB.
  static constexpr size_t kMaxRequestBodyBytes = 128 << 10;

  /// Records every session's documents and bytes processed now, for throughput over the last
  /// minute; the server calls it every few seconds (status requests also record a sample).
  void SampleProgress();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The token a new session gets: 32 random bytes, hex.
std::string NewSessionToken();

}  // namespace rfs::console
