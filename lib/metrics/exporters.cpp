#include "rfs/metrics/exporters.hpp"

#include "rfs/core/errors.hpp"
#include "rfs/core/json_text.hpp"
#include "rfs/core/str_cat.hpp"

#include "boost/json/serialize.hpp"

namespace rfs::metrics {

absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> PrometheusEndpoint::Start(
    const Registry& registry, uint16_t port, std::string bind_address,
    std::optional<net::HttpServerTls> tls) {
  net::HttpServerOptions options;
  options.tls = std::move(tls);
  options.bind_address = std::move(bind_address);
  options.port = port;
  options.threads = 1;  // scrapes are rare and cheap
  options.max_request_body_bytes = 64 << 10;
  auto server = net::HttpServer::Start(options, [&registry](const net::HttpRequest& request) {
    net::HttpResponse response;
    const std::string_view path =
        std::string_view(request.target)
            .substr(0, std::min(request.target.size(), request.target.find('?')));
    if (path != "/metrics") {
      response.status = 404;
      response.headers.emplace_back("Content-Type", "text/plain");
      response.body = "not found: the metrics are at /metrics\n";
      return response;
    }
    if (request.method != "GET" && request.method != "HEAD") {
      response.status = 405;
      response.headers.emplace_back("Allow", "GET, HEAD");
      return response;
    }
    response.status = 200;
    response.headers.emplace_back("Content-Type", kPrometheusContentType);
    if (request.method == "GET") response.body = registry.RenderPrometheusText();
    return response;
  });
  if (!server.ok()) {
    return core::WithContext(server.status(), core::StrCat("metrics endpoint on port ", port));
  }
  return std::unique_ptr<PrometheusEndpoint>(new PrometheusEndpoint(*std::move(server)));
}

OtlpExporter::OtlpExporter(const Registry& registry, std::shared_ptr<net::IHttpTransport> transport,
                           OtlpExporterOptions options)
    : registry_(registry),
      transport_(std::move(transport)),
      options_(std::move(options)),
      start_(std::chrono::system_clock::now()) {
  thread_ = std::thread([this] { Loop(); });
}

OtlpExporter::~OtlpExporter() { Stop(); }

absl::Status OtlpExporter::ExportOnce() {
  net::HttpRequest request;
  request.method = "POST";
  request.target = options_.path;
  request.headers.emplace_back("Content-Type", "application/json");
  request.body = core::JsonText(
      registry_.ToOtlpJson(options_.resource_attributes, start_, std::chrono::system_clock::now()));
  request.timeout = std::chrono::seconds(10);
  absl::Status status;
  auto response = transport_->Send(request);
  if (!response.ok()) {
    status = response.status();
  } else if (response->status < 200 || response->status >= 300) {
    status = absl::UnavailableError(core::StrCat("OTLP collector ", transport_->endpoint(),
                                                 " answered HTTP ", response->status, ": ",
                                                 response->body.substr(0, 200)));
  }
  std::lock_guard lock(mu_);
  if (status.ok()) ++exports_;
  last_error_ = status;
  return status;
}

void OtlpExporter::Loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (cv_.wait_for(lock, options_.interval, [&] { return stopping_; })) break;
    lock.unlock();
    (void)ExportOnce();  // an error is kept in last_error_ and retried next time
    lock.lock();
  }
}

void OtlpExporter::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  (void)ExportOnce();
}

uint64_t OtlpExporter::exports() const {
  std::lock_guard lock(mu_);
  return exports_;
}

absl::Status OtlpExporter::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

}  // namespace rfs::metrics
