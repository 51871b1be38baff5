#include "rfs/console/console_server.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "rfs/core/status_macros.hpp"
#include "rfs/metrics/exporters.hpp"

namespace rfs::console {

struct ConsoleServer::Impl {
  std::unique_ptr<metrics::Registry> registry;
  std::unique_ptr<metrics::PrometheusEndpoint> metrics_endpoint;
  std::unique_ptr<ConsoleStore> store;
  std::unique_ptr<ConsoleService> service;
  std::unique_ptr<net::HttpServer> http;
  metrics::Gauge* open_connections = nullptr;
  std::chrono::milliseconds sample_interval{0};
  std::mutex mu;
  std::condition_variable wake;
  bool stopping = false;
  std::thread sampler;

  void Sample() {
    std::unique_lock lock(mu);
    while (!stopping) {
      wake.wait_for(lock, sample_interval, [&] { return stopping; });
      if (stopping) break;
      lock.unlock();
      if (open_connections != nullptr) {
        open_connections->Set(static_cast<int64_t>(http->open_connections()));
      }
      service->SampleProgress();
      lock.lock();
    }
  }

  void Stop() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    wake.notify_all();
    if (sampler.joinable()) sampler.join();
    if (http) http->Stop();
    if (metrics_endpoint) metrics_endpoint->Stop();
  }
};

ConsoleServer::ConsoleServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ConsoleServer::~ConsoleServer() { Stop(); }

absl::StatusOr<std::unique_ptr<ConsoleServer>> ConsoleServer::Start(ConsoleServerOptions options) {
  if (options.service.admin_token.size() < 16) {
    return absl::InvalidArgumentError(
        "the console needs an admin token of at least 16 characters (--admin-token or "
        "RFS_CONSOLE_ADMIN_TOKEN)");
  }
  auto impl = std::make_unique<Impl>();
  RFS_ASSIGN_OR_RETURN(impl->store, ConsoleStore::Open(options.store));
  if (options.metrics_port) {
    impl->registry = std::make_unique<metrics::Registry>(
        std::vector<std::pair<std::string, std::string>>{{"tool", "MigrationConsole"}});
    options.service.metrics = impl->registry.get();
    RFS_ASSIGN_OR_RETURN(
        impl->metrics_endpoint,
        metrics::PrometheusEndpoint::Start(*impl->registry, *options.metrics_port,
                                           options.metrics_bind_address, options.http.tls));
  }
  if (impl->registry) {
    // Connections refused or closed to make room: a peer holding the console shows here.
    auto& dropped = impl->registry->AddCounter(
        "rfs_console_connections_dropped_total",
        "Connections refused at accept (every one busy) or closed to make room for new ones, by "
        "reason: refused, evicted_unauthenticated, evicted_idle.",
        {"reason"});
    metrics::Counter* refused = &dropped.With({"refused"});
    metrics::Counter* unauthenticated = &dropped.With({"evicted_unauthenticated"});
    metrics::Counter* idle = &dropped.With({"evicted_idle"});
    options.http.on_connection_dropped = [=](net::ConnectionDrop why) {
      switch (why) {
        case net::ConnectionDrop::kRefused:
          refused->Add();
          break;
        case net::ConnectionDrop::kEvictedUnauthenticated:
          unauthenticated->Add();
          break;
        case net::ConnectionDrop::kEvictedIdle:
          idle->Add();
          break;
      }
    };
    impl->open_connections = &impl->registry
                                  ->AddGauge("rfs_console_open_connections",
                                             "Connections open to the console, as last sampled.")
                                  .Get();
  }
  impl->service = std::make_unique<ConsoleService>(*impl->store, options.service);
  ConsoleService* service = impl->service.get();
  options.http.on_head = [service](const net::HttpRequest& head) { return service->Admit(head); };
  options.http.max_request_body_bytes =
      std::min(options.http.max_request_body_bytes, ConsoleService::kMaxRequestBodyBytes);
  RFS_ASSIGN_OR_RETURN(impl->http,
                       net::HttpServer::Start(options.http, [service](const net::HttpRequest& r) {
                         return service->Handle(r);
                       }));
  impl->sample_interval = std::max(options.sample_interval, std::chrono::milliseconds(100));
  Impl* raw = impl.get();
  impl->sampler = std::thread([raw] { raw->Sample(); });
  return std::unique_ptr<ConsoleServer>(new ConsoleServer(std::move(impl)));
}

std::string ConsoleServer::url() const { return impl_->http->url(); }
uint16_t ConsoleServer::port() const { return impl_->http->port(); }
std::string ConsoleServer::metrics_url() const {
  return impl_->metrics_endpoint ? impl_->metrics_endpoint->url() : "";
}
ConsoleStore& ConsoleServer::store() { return *impl_->store; }
ConsoleService& ConsoleServer::service() { return *impl_->service; }
void ConsoleServer::Stop() { impl_->Stop(); }

}  // namespace rfs::console
