#include "rfs/console/console_client.hpp"

#include <thread>

#include <boost/json.hpp>

#include "rfs/core/json_text.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/net/encoding.hpp"
#include "rfs/net/http_status.hpp"
#include "rfs/net/retrying_transport.hpp"

namespace rfs::console {
namespace {

namespace json = boost::json;
using core::StrCat;

// One request with the bearer token; 2xx bodies parsed as JSON, other codes as errors.
absl::StatusOr<json::value> Call(const ConsoleClientOptions& options, std::string method,
                                 std::string target, std::string body) {
  net::HttpTransportOptions http;
  http.endpoint = options.url;
  http.sends_bearer_token = true;
  http.tls.ca_cert_file = options.ca_cert_file;
  http.response_timeout = options.timeout;
  RFS_ASSIGN_OR_RETURN(auto transport, net::BeastHttpTransport::Open(std::move(http)));
  net::RetryingHttpTransport retrying(std::move(transport), core::SystemClock::Instance());
  net::HttpRequest request;
  request.method = std::move(method);
  request.target = std::move(target);
  request.headers = {{"Authorization", StrCat("Bearer ", options.token)},
                     {"Accept", "application/json"}};
  if (!body.empty()) request.headers.emplace_back("Content-Type", "application/json");
  request.body = std::move(body);
  RFS_ASSIGN_OR_RETURN(net::HttpResponse response, retrying.Send(request));
  boost::system::error_code ec;
  json::value parsed = json::parse(response.body, ec);
  if (response.status >= 200 && response.status < 300) {
    if (ec) return absl::DataLossError(StrCat("the console's answer is not JSON: ", ec.message()));
    return parsed;
  }
  std::string detail = !ec && parsed.is_object() && parsed.as_object().contains("detail") &&
                               parsed.at("detail").is_string()
                           ? std::string(parsed.at("detail").as_string())
                           : response.body.substr(0, 300);
  const std::string message =
      StrCat("console ", options.url, ": HTTP ", response.status, ": ", detail);
  return net::StatusFromHttp(response.status, message,
                             {{401, absl::StatusCode::kPermissionDenied}});
}

// A path segment (session names and work item ids), every byte outside unreserved escaped.
std::string Escape(std::string_view segment) { return net::PercentEncode(segment, false); }

}  // namespace

absl::StatusOr<std::string> CreateSession(const ConsoleClientOptions& options,
                                          std::string_view name) {
  RFS_RETURN_IF_ERROR(ValidateSessionName(name));
  RFS_ASSIGN_OR_RETURN(json::value reply, Call(options, "POST", "/sessions",
                                               core::JsonText(json::object{{"name", name}})));
  if (!reply.is_object() || !reply.as_object().contains("token") ||
      !reply.at("token").is_string()) {
    return absl::DataLossError("the console's answer holds no token");
  }
  return std::string(reply.at("token").as_string());
}

absl::StatusOr<json::object> FetchSessionStatus(const ConsoleClientOptions& options,
                                                std::string_view session) {
  RFS_RETURN_IF_ERROR(ValidateSessionName(session));
  RFS_ASSIGN_OR_RETURN(
      json::value reply,
      Call(options, "GET", StrCat("/sessions/", Escape(session), "/backfill/work-items/status"),
           ""));
  if (!reply.is_object()) return absl::DataLossError("the console's status is not an object");
  return std::move(reply.as_object());
}

absl::Status ServeConsole(ConsoleServerOptions options, const std::atomic<bool>& stop,
                          const std::function<void(const ConsoleServer& server)>& on_ready) {
  RFS_ASSIGN_OR_RETURN(auto server, ConsoleServer::Start(std::move(options)));
  if (on_ready) on_ready(*server);
  while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server->Stop();
  return absl::OkStatus();
}

}  // namespace rfs::console
