// OpenSearchDouble's HTTP server: a blocking Boost.Beast server with one thread per connection
// (a handful of connections in tests, so threads are simpler than an async server), fault
// injection, request decoding (path segments, query parameters, gzip bodies, basic auth) and
// optional TLS. The cluster model lives in opensearch_double_cluster.cpp.
#include "opensearch_double.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <deque>
#include <random>
#include <set>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "rfs/core/base64.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/encoding.hpp"
#include "rfs/net/gzip.hpp"

#include "opensearch_double_internal.hpp"
#include <sys/socket.h>

namespace rfs::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;
using core::StrCat;
namespace json = boost::json;

// The media types OpenSearch's XContentType.fromMediaType accepts (parameters such as charset
// ignored), plus x-ndjson, which the bulk and multi-search APIs take.
bool IsSupportedContentType(std::string_view type) {
  type = type.substr(0, type.find(';'));
  while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
  std::string lower(type);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower == "application/json" || lower == "application/x-ndjson" ||
         lower == "application/smile" || lower == "application/cbor" ||
         lower == "application/yaml" || lower == "application/vnd.opensearch+json";
}

void ParseTarget(std::string_view target, internal::DoubleRequest& out) {
  const size_t question = target.find('?');
  std::string_view path = target.substr(0, question);
  while (!path.empty()) {
    while (path.starts_with('/')) path.remove_prefix(1);
    if (path.empty()) break;
    const size_t slash = path.find('/');
    out.segments.push_back(net::PercentDecode(path.substr(0, slash)));
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash);
  }
  if (question == std::string_view::npos) return;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = part.find('=');
    out.params[net::PercentDecode(part.substr(0, eq))] =
        eq == std::string_view::npos ? "" : net::PercentDecode(part.substr(eq + 1));
  }
}

// An answer to a request a correct client never sends: a method or content type the route does
// not take, a body that does not parse, a parameter it does not know. A 400 a client meets in
// normal work and handles (the index exists, a bad name the user gave, a mapping conflict, a
// snapshot that is running) is no protocol error; neither is a 413 (a size the client chose).
bool IsProtocolError(const internal::DoubleResponse& response) {
  if (response.status == 405 || response.status == 406) return true;
  if (response.status != 400) return false;
  boost::system::error_code ec;
  const json::value body = json::parse(response.body, ec);
  if (ec || !body.is_object()) return true;
  const json::value* error = body.as_object().if_contains("error");
  if (error == nullptr || !error->is_object()) return true;
  const json::value* type = error->as_object().if_contains("type");
  if (type == nullptr || !type->is_string()) return true;
  const std::string_view kind = type->as_string();
  if (kind == "parse_exception" || kind == "json_parse_exception" ||
      kind == "x_content_parse_exception" || kind == "not_x_content_exception" ||
      kind == "json_e_o_f_exception") {
    return true;
  }
  // OpenSearch names an unknown parameter this way (RestController / BaseRestHandler).
  const json::value* reason = error->as_object().if_contains("reason");
  return kind == "illegal_argument_exception" && reason != nullptr && reason->is_string() &&
         std::string_view(reason->as_string()).find("unrecognized parameter") !=
             std::string_view::npos;
}

}  // namespace

// RFC 9110 IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT".
std::string HttpDate(core::IClock::TimePoint t) {
  const std::time_t seconds = static_cast<std::time_t>(
      std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  char text[40];
  std::snprintf(text, sizeof(text), "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[utc.tm_wday],
                utc.tm_mday, kMonths[utc.tm_mon], utc.tm_year + 1900, utc.tm_hour, utc.tm_min,
                utc.tm_sec);
  return text;
}

struct OpenSearchDouble::Impl {
  explicit Impl(const OpenSearchDoubleOptions& o)
      : options(o), cluster(o), faults(o.faults), fault_rng(o.faults.seed) {}

  OpenSearchDoubleOptions options;
  internal::DoubleCluster cluster;
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::optional<ssl::context> tls;
  uint16_t port = 0;
  std::thread accept_thread;

  mutable std::mutex mu;  // guards everything below
  std::vector<std::thread> connection_threads;
  std::set<int> open_fds;
  bool stopping = false;
  FaultOptions faults;
  std::mt19937_64 fault_rng;
  uint64_t eligible_requests = 0;
  DoubleStats counters;
  std::deque<RecordedRequest> recorded;
  std::vector<std::string> protocol_errors;
  bool protocol_errors_allowed = false;

  core::IClock& Clock() const {
    return options.clock != nullptr ? *options.clock : core::SystemClock::Instance();
  }

  void AcceptLoop() {
    while (true) {
      tcp::socket socket(ioc);
      ErrorCode ec;
      acceptor.accept(socket, ec);
      std::lock_guard lock(mu);
      if (stopping) return;
      if (ec) continue;
      ++counters.connections;
      open_fds.insert(socket.native_handle());
      connection_threads.emplace_back(
          [this, s = std::move(socket)]() mutable { ServeConnection(std::move(s)); });
    }
  }

  void ServeConnection(tcp::socket socket) {
    const int fd = socket.native_handle();
    bool reset = false;
    if (tls) {
      ssl::stream<tcp::socket&> stream(socket, *tls);
      ErrorCode ec;
      stream.handshake(ssl::stream_base::server, ec);
      if (!ec) reset = ServeRequests(stream);
    } else {
      reset = ServeRequests(socket);
    }
    {
      std::lock_guard lock(mu);
      open_fds.erase(fd);
    }
    ErrorCode ignored;
    if (reset) {
      // SO_LINGER 0 makes close() send RST: the client sees "connection reset by peer".
      socket.set_option(asio::socket_base::linger(true, 0), ignored);
    }
    socket.close(ignored);
  }

  Fault DrawFault(const std::string& target, double& item_failure) {
    std::lock_guard lock(mu);
    ++counters.requests;
    item_failure = 0;
    if (!faults.path_contains.empty() && target.find(faults.path_contains) == std::string::npos) {
      return Fault::kNone;
    }
    const uint64_t n = ++eligible_requests;
    Fault fault = Fault::kNone;
    if (auto it = faults.schedule.find(n); it != faults.schedule.end()) {
      fault = it->second;
    } else {
      double u = std::uniform_real_distribution<double>(0.0, 1.0)(fault_rng);
      const std::pair<double, Fault> table[] = {
          {faults.reject_429, Fault::kReject429},
          {faults.unavailable_503, Fault::kUnavailable503},
          {faults.reset_before_apply, Fault::kResetBeforeApply},
          {faults.reset_after_apply, Fault::kResetAfterApply},
          {faults.slow, Fault::kSlowResponse}};
      for (const auto& [p, f] : table) {
        if (u < p) {
          fault = f;
          break;
        }
        u -= p;
      }
    }
    if (fault == Fault::kItemFailures) item_failure = std::max(faults.item_failure, 0.5);
    if (fault == Fault::kNone) item_failure = faults.item_failure;
    if (fault != Fault::kNone) ++counters.faults_injected;
    return fault;
  }

  // Answers 413 when `ec` says the body exceeds http.max_content_length (as OpenSearch does),
  // then ends the connection either way. Returns false: no reset.
  template <typename Stream>
  bool RejectTooLarge(Stream& stream, ErrorCode ec) {
    if (ec == http::error::body_limit) {
      http::response<http::string_body> res{http::status::payload_too_large, 11};
      res.keep_alive(false);
      res.prepare_payload();
      http::write(stream, res, ec);
    }
    return false;
  }

  // Serves requests until the client closes, an error, or a reset fault (returns true then).
  template <typename Stream>
  bool ServeRequests(Stream& stream) {
    beast::flat_buffer buffer;
    while (true) {
      // The header first: in discard mode a bulk body is counted as it streams in, never
      // stored, so the benchmark server costs little more than the socket reads.
      http::request_parser<http::empty_body> header_parser;
      header_parser.body_limit(options.max_content_length);
      ErrorCode ec;
      http::read_header(stream, buffer, header_parser, ec);
      if (ec) return RejectTooLarge(stream, ec);
      const bool discard = options.discard_bulk &&
                           header_parser.get().target().find("_bulk") != beast::string_view::npos &&
                           header_parser.get()[http::field::content_encoding].empty();
      http::request<http::string_body> req;
      std::optional<size_t> discarded_actions;
      if (discard) {
        http::request_parser<http::buffer_body> parser{std::move(header_parser)};
        std::vector<char> chunk(1 << 16);
        size_t newlines = 0;
        while (!parser.is_done()) {
          parser.get().body().data = chunk.data();
          parser.get().body().size = chunk.size();
          http::read(stream, buffer, parser, ec);
          if (ec == http::error::need_buffer) ec = {};
          if (ec) return false;
          const size_t filled = chunk.size() - parser.get().body().size;
          newlines += static_cast<size_t>(std::count(chunk.data(), chunk.data() + filled, '\n'));
        }
        req = http::request<http::string_body>(std::move(parser.release().base()));
        discarded_actions = newlines / 2;
      } else {
        http::request_parser<http::string_body> parser{std::move(header_parser)};
        http::read(stream, buffer, parser, ec);
        if (ec) return RejectTooLarge(stream, ec);
        req = parser.release();
      }
      const std::string target(req.target());
      const std::string method(req.method_string());

      RecordedRequest record{method, target, {}, req.body().size()};
      for (const auto& field : req) {
        record.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
      }
      const auto encoding = net::FindHeader(record.headers, "content-encoding");
      {
        std::lock_guard lock(mu);
        if (target.find("_bulk") != std::string::npos) ++counters.bulk_requests;
        if (encoding && *encoding == "gzip") ++counters.gzip_requests;
        recorded.push_back(record);
        if (recorded.size() > 1000) recorded.pop_front();
      }

      double item_failure = 0;
      const Fault fault = DrawFault(target, item_failure);
      if (fault == Fault::kResetBeforeApply) return true;
      if (fault == Fault::kSlowResponse) std::this_thread::sleep_for(faults_slow_delay());

      internal::DoubleResponse response =
          Dispatch(req, record, fault, item_failure, discarded_actions);
      if (response.status == 409) {
        std::lock_guard lock(mu);
        ++counters.conflicts;
      }
      if (IsProtocolError(response)) {
        std::lock_guard lock(mu);
        if (protocol_errors.size() < 100) {
          protocol_errors.push_back(StrCat(method, " ", target, ": ", response.status, " ",
                                           response.body.substr(0, 300)));
        }
      }
      if (fault == Fault::kResetAfterApply) return true;

      http::response<http::string_body> res{static_cast<http::status>(response.status),
                                            req.version()};
      res.set(http::field::content_type, "application/json; charset=UTF-8");
      if (options.send_date_header) res.set(http::field::date, HttpDate(Clock().Now()));
      for (const auto& [name, value] : response.headers) res.set(name, value);
      res.keep_alive(req.keep_alive());
      if (req.method() == http::verb::head) {
        // A HEAD answer carries the length of the body a GET would get, and no body (RFC 9110
        // 9.3.2), faults and errors included.
        res.content_length(response.body.size());
      } else {
        res.body() = std::move(response.body);
        res.prepare_payload();
      }
      http::write(stream, res, ec);
      if (ec || !req.keep_alive()) return false;
    }
  }

  std::chrono::milliseconds faults_slow_delay() {
    std::lock_guard lock(mu);
    return faults.slow_delay;
  }

  internal::DoubleResponse Dispatch(http::request<http::string_body>& req,
                                    const RecordedRequest& record, Fault fault, double item_failure,
                                    std::optional<size_t> discarded_actions) {
    if (options.sigv4) {
      // The signature covers the body as received (compressed for gzip bodies).
      const net::HttpRequest signed_request{
          record.method, record.target, record.headers, req.body(), {}};
      if (auto rejection = rfs::test::VerifySigV4(signed_request, *options.sigv4, Clock().Now())) {
        {
          std::lock_guard lock(mu);
          ++counters.signature_rejections;
        }
        internal::DoubleResponse r;
        r.status = 403;
        boost::json::object body;
        body["message"] = rejection->message;
        r.body = boost::json::serialize(body);
        return r;
      }
    }
    if (options.username) {
      const std::string user_pass = StrCat(*options.username, ":", options.password.value_or(""));
      const std::string expected =
          "Basic " + core::Base64Encode(std::span<const uint8_t>(
                         reinterpret_cast<const uint8_t*>(user_pass.data()), user_pass.size()));
      if (net::FindHeader(record.headers, "authorization") != expected) {
        internal::DoubleResponse r = cluster.Error(
            401, "security_exception",
            StrCat("missing authentication credentials for REST request [", record.target, "]"));
        r.headers.emplace_back("WWW-Authenticate", R"(Basic realm="security" charset="UTF-8")");
        return r;
      }
    }
    if (fault == Fault::kReject429) {
      return cluster.Error(429, cluster.rejected_execution_type(),
                           "rejected execution of coordinating operation "
                           "[coordinating_and_primary_bytes=104857600, replica_bytes=0, "
                           "all_bytes=104857600, coordinating_operation_bytes=1048576, "
                           "max_coordinating_and_primary_bytes=104857600]");
    }
    if (fault == Fault::kUnavailable503) {
      return cluster.Error(503, "unavailable_shards_exception",
                           "[target][0] primary shard is not active Timeout: [1m]");
    }
    internal::DoubleRequest request;
    request.method = record.method;
    request.discarded_actions = discarded_actions;
    ParseTarget(record.target, request);
    const auto encoding = net::FindHeader(record.headers, "content-encoding");
    if (encoding && *encoding == "gzip") {
      auto inflated = net::GzipDecompress(req.body());
      if (!inflated.ok()) {
        return cluster.Error(400, "illegal_argument_exception", "cannot decompress gzip body");
      }
      request.body = *std::move(inflated);
      if (request.body.size() > options.max_content_length) {
        // The aggregator sees the decompressed content: a small gzip body can still be too large.
        return {413, "", {}};
      }
    } else {
      request.body = std::move(req.body());
    }
    if (!request.body.empty() || discarded_actions) {
      // RestController.dispatchRequest: a body needs a Content-Type OpenSearch can parse
      // (json, smile, yaml, cbor; `_bulk` also takes x-ndjson), else 406.
      const auto type = net::FindHeader(record.headers, "content-type");
      if (!type) {
        return {406, R"({"error":"Content-Type header is missing","status":406})", {}};
      }
      if (!IsSupportedContentType(*type)) {
        return {406,
                boost::json::serialize(boost::json::object{
                    {"error", StrCat("Content-Type header [", *type, "] is not supported")},
                    {"status", 406}}),
                {}};
      }
    }
    return cluster.Handle(request, item_failure);
  }

  void Stop() {
    {
      std::lock_guard lock(mu);
      if (stopping) return;
      stopping = true;
      for (int fd : open_fds) ::shutdown(fd, SHUT_RDWR);
    }
    // Wake the blocking accept() with a connection of our own.
    asio::io_context wake_ioc;
    tcp::socket wake(wake_ioc);
    ErrorCode ec;
    wake.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    if (accept_thread.joinable()) accept_thread.join();
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu);
      threads.swap(connection_threads);
    }
    for (auto& t : threads) t.join();
    acceptor.close(ec);
  }
};

absl::StatusOr<std::unique_ptr<OpenSearchDouble>> OpenSearchDouble::Start(
    OpenSearchDoubleOptions options) {
  auto impl = std::make_unique<Impl>(options);
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    impl->tls.emplace(ssl::context::tls_server);
    ErrorCode ec;
    impl->tls->use_certificate_chain_file(options.tls_cert_file, ec);
    if (!ec) impl->tls->use_private_key_file(options.tls_key_file, ssl::context::pem, ec);
    if (!ec && !options.tls_client_ca_file.empty()) {
      impl->tls->load_verify_file(options.tls_client_ca_file, ec);
      impl->tls->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    }
    if (ec) return absl::InvalidArgumentError(StrCat("double TLS set-up: ", ec.message()));
  }
  ErrorCode ec;
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), options.port);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return absl::UnavailableError(StrCat("double cannot listen: ", ec.message()));
  impl->port = impl->acceptor.local_endpoint().port();
  Impl* raw = impl.get();
  impl->accept_thread = std::thread([raw] { raw->AcceptLoop(); });
  return std::unique_ptr<OpenSearchDouble>(new OpenSearchDouble(std::move(impl)));
}

OpenSearchDouble::OpenSearchDouble(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

namespace {
std::function<void(const std::vector<std::string>&)>& ProtocolErrorCheck() {
  static std::function<void(const std::vector<std::string>&)> check;
  return check;
}
}  // namespace

void OpenSearchDouble::SetProtocolErrorCheck(
    std::function<void(const std::vector<std::string>&)> check) {
  ProtocolErrorCheck() = std::move(check);
}

void OpenSearchDouble::AllowProtocolErrors() {
  std::lock_guard lock(impl_->mu);
  impl_->protocol_errors_allowed = true;
}

OpenSearchDouble::~OpenSearchDouble() {
  impl_->Stop();
  bool allowed;
  {
    std::lock_guard lock(impl_->mu);
    allowed = impl_->protocol_errors_allowed;
  }
  if (!allowed && ProtocolErrorCheck()) ProtocolErrorCheck()(protocol_errors());
}

uint16_t OpenSearchDouble::port() const { return impl_->port; }

std::string OpenSearchDouble::endpoint() const {
  return StrCat(impl_->tls ? "https" : "http", "://127.0.0.1:", impl_->port);
}

void OpenSearchDouble::SetFaults(FaultOptions faults) {
  std::lock_guard lock(impl_->mu);
  impl_->fault_rng.seed(faults.seed);
  impl_->faults = std::move(faults);
  impl_->eligible_requests = 0;
}

std::vector<std::string> OpenSearchDouble::protocol_errors() const {
  std::lock_guard lock(impl_->mu);
  return impl_->protocol_errors;
}

DoubleStats OpenSearchDouble::stats() const {
  DoubleStats s;
  {
    std::lock_guard lock(impl_->mu);
    s = impl_->counters;
  }
  s.write_operations = impl_->cluster.write_operations();
  s.bulk_items = impl_->cluster.bulk_items();
  return s;
}

std::optional<StoredDocument> OpenSearchDouble::GetDocument(const std::string& index,
                                                            const std::string& id) const {
  return impl_->cluster.GetDocument(index, id);
}

size_t OpenSearchDouble::DocumentCount(const std::string& index) const {
  return impl_->cluster.DocumentCount(index);
}

std::vector<std::string> OpenSearchDouble::IndexNames() const {
  return impl_->cluster.IndexNames();
}

std::vector<RecordedRequest> OpenSearchDouble::requests() const {
  std::lock_guard lock(impl_->mu);
  return {impl_->recorded.begin(), impl_->recorded.end()};
}

absl::Status OpenSearchDouble::CreateIndex(const std::string& name, const std::string& body_json) {
  internal::DoubleRequest request;
  request.method = "PUT";
  request.segments = {name};
  request.body = body_json;
  internal::DoubleResponse r = impl_->cluster.Handle(request, 0);
  if (r.status != 200) return absl::InvalidArgumentError(StrCat("create index: ", r.body));
  return absl::OkStatus();
}

}  // namespace rfs::testing
