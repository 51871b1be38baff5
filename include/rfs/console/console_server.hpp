// ConsoleServer: the migration console as a running service - a ConsoleStore, the
// ConsoleService API and page on a net::HttpServer, and a sampler that records every session's
// progress every few seconds so that throughput and ETA are there when someone looks.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "rfs/console/console_service.hpp"
#include "rfs/console/console_store.hpp"
#include "rfs/net/http_server.hpp"

#include "absl/status/statusor.h"

namespace rfs::console {

struct ConsoleServerOptions {
  ConsoleStoreOptions store;
  ConsoleServiceOptions service;
  net::HttpServerOptions http;
  std::chrono::milliseconds sample_interval{std::chrono::seconds(5)};
  /// Serve the console's metrics (Prometheus text, GET /metrics) on this port (0: any free
  /// port) and `metrics_bind_address`; unset: no metrics endpoint.
  std::optional<uint16_t> metrics_port;
  std::string metrics_bind_address = "0.0.0.0";
};

class ConsoleServer {
 public:
  /// Opens the store and starts serving. InvalidArgument for bad options (no admin token, a bad
  /// store URI), Unavailable when the store or the port cannot be opened.
  static absl::StatusOr<std::unique_ptr<ConsoleServer>> Start(ConsoleServerOptions options);
  ~ConsoleServer();

  std::string url() const;
  uint16_t port() const;
  /// The metrics endpoint's URL ("http://host:port/metrics"), "" without one.
  std::string metrics_url() const;
  ConsoleStore& store();
  ConsoleService& service();
  /// Stops serving and sampling. Idempotent.
  void Stop();

 private:
  struct Impl;
  explicit ConsoleServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rfs::console
