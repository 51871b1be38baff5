// S3Proxy: sits between a client under test and a real S3-compatible server (s3rver), and does
// what s3rver does not: verifies every request's SigV4 signature as S3 does (sigv4_verifier.hpp;
// s3rver only looks at the access key), with a set of keys that may expire, and injects the
// faults S3 has in production on a fraction of requests: 503 SlowDown, 500 InternalError, a
// connection reset before the answer, and a GET answer cut short. Requests that pass are sent on
// re-signed with the server's own key. It can also make loopback look like S3 over a network
// (S3ProxyOptions::first_byte_latency, bytes_per_second), for benchmarks. Keep-alive, one thread
// per connection; every count is kept for the test to assert on.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "rfs/net/beast_http_transport.hpp"

#include "support/sigv4_verifier.hpp"

namespace rfs::test {

struct S3ProxyOptions {
  /// Where requests go on to, and the key they are re-signed with there.
  std::string upstream;
  net::AwsCredentials upstream_credentials;
  /// The keys clients may sign with (service "s3").
  SigV4Expectation expect{.service = "s3"};
  /// Requests are passed on as they came, with their own credentials (GCS's token, Azure's Shared
  /// Key or SAS), without SigV4 checks or re-signing: the same faults, latency and bandwidth in
  /// front of fake-gcs-server or Azurite.
  bool pass_through = false;
  /// Fraction of requests answered with a fault instead of being passed on.
  double fault_rate = 0;
  uint32_t seed = 1;
  /// Added before every answer's first byte: S3's time to first byte is tens of milliseconds.
  std::chrono::microseconds first_byte_latency{0};
  /// Each connection's answers are paced to this many bytes per second (0: as fast as loopback):
  /// one S3 connection carries about 80-100 MB/s.
  double bytes_per_second = 0;
  /// GETs of keys under `local_prefix` (a path-style target such as "/bucket/repo/") are answered
  /// from this folder instead of the upstream; HEAD, LIST and other keys still go upstream. For
  /// benchmarks: s3rver on loopback serves 100-250 MB/s in all, while S3 spreads a bucket's reads
  /// over many servers, so without this the figure would be s3rver's speed, not the client's.
  std::string local_prefix;
  std::filesystem::path local_folder;
};

class S3Proxy {
 public:
  enum class Fault { kSlowDown503, kInternalError500, kReset, kTruncated };

  explicit S3Proxy(S3ProxyOptions options) : options_(std::move(options)), rng_(options_.seed) {
    net::HttpTransportOptions upstream;
    upstream.endpoint = options_.upstream;
    if (!options_.pass_through) {
      upstream.sigv4 = net::SigV4Options{.region = options_.expect.region,
                                         .service = "s3",
                                         .credentials = options_.upstream_credentials};
    }
    auto opened = net::BeastHttpTransport::Open(std::move(upstream));
    if (!opened.ok()) throw std::runtime_error(opened.status().ToString());
    upstream_ = *std::move(opened);
    namespace asio = boost::asio;
    acceptor_.open(asio::ip::tcp::v4());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    acceptor_.bind({asio::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] { Accept(); });
  }
  ~S3Proxy() {
    stopping_ = true;
    boost::system::error_code ec;
    {
      boost::asio::io_context ioc;
      boost::asio::ip::tcp::socket wake(ioc);
      wake.connect({boost::asio::ip::make_address("127.0.0.1"), port_}, ec);
    }
    accept_thread_.join();
    {
      std::lock_guard lock(mu_);
      for (auto& socket : sockets_)
        socket->shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    }
    for (auto& t : connection_threads_) t.join();
  }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  /// Changes which keys are accepted (e.g. to let a key expire mid-run).
  void SetExpectation(SigV4Expectation expect) {
    std::lock_guard lock(mu_);
    options_.expect = std::move(expect);
  }
  void SetFaultRate(double rate) {
    std::lock_guard lock(mu_);
    options_.fault_rate = rate;
  }

  uint64_t requests() const { return requests_; }
  /// HEAD requests among them.
  uint64_t heads() const { return heads_; }
  /// The most requests ever answered at once (each connection carries one at a time).
  uint64_t max_in_flight() const { return max_in_flight_; }
  uint64_t forwarded() const { return forwarded_; }
  /// GETs answered from local_folder.
  uint64_t answered_locally() const { return answered_locally_; }
  uint64_t faults(Fault fault) const { return fault_counts_[static_cast<int>(fault)]; }
  uint64_t faults() const {
    uint64_t n = 0;
    for (const auto& c : fault_counts_) n += c;
    return n;
  }
  /// Requests refused for their signature, with the first few reasons.
  uint64_t rejected() const { return rejected_; }
  std::vector<std::string> rejections() const {
    std::lock_guard lock(mu_);
    return rejections_;
  }
  /// Access keys seen on accepted requests, in order of first use.
  std::vector<std::string> keys_used() const {
    std::lock_guard lock(mu_);
    return keys_used_;
  }

 private:
  void Accept() {
    while (true) {
      auto socket = std::make_shared<boost::asio::ip::tcp::socket>(ioc_);
      boost::system::error_code ec;
      acceptor_.accept(*socket, ec);
      if (stopping_) return;
      if (ec) continue;
      // The header and the paced body slices go out in separate writes: with Nagle's algorithm
      // each small answer's body waited for the client's delayed ACK (40 ms), which S3 does not
      // add.
      socket->set_option(boost::asio::ip::tcp::no_delay(true), ec);
      std::lock_guard lock(mu_);
      sockets_.push_back(socket);
      connection_threads_.emplace_back([this, socket] {
        Serve(*socket);
        // The client sees the end at once, not a silent socket. Under the lock: the destructor
        // shuts every socket down under it, and a socket is not safe to close meanwhile.
        std::lock_guard lock(mu_);
        boost::system::error_code ignored;
        socket->close(ignored);
      });
    }
  }

  void Serve(boost::asio::ip::tcp::socket& socket) {
    namespace http = boost::beast::http;
    boost::beast::flat_buffer buffer;
    // Room for any request head at once. With the buffer's first 512 bytes, a request of 513 (a
    // ranged GET at a 9-digit offset) on a reused connection ended Boost 1.81's synchronous read
    // with need_more before its last byte was read, and the connection was cut (the client saw
    // "Connection reset by peer" on every retry).
    buffer.reserve(16 << 10);
    while (!stopping_) {
      boost::system::error_code ec;
      http::request_parser<http::string_body> parser;
      parser.body_limit(uint64_t{1} << 30);
      http::read(socket, buffer, parser, ec);
      if (ec) {
        if (ec != http::error::end_of_stream && ec != boost::asio::error::eof &&
            ec != boost::asio::error::operation_aborted) {
          std::lock_guard lock(mu_);
          if (rejections_.size() < 10) rejections_.push_back("read error: " + ec.message());
        }
        return;
      }
      auto& req = parser.get();
      net::HttpRequest request;
      request.method = std::string(req.method_string());
      request.target = std::string(req.target());
      for (const auto& field : req) {
        request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
      }
      request.body = req.body();
      ++requests_;
      if (request.method == "HEAD") ++heads_;
      // Counted from the request read until its answer is written (or the connection is cut).
      struct InFlight {
        S3Proxy& proxy;
        explicit InFlight(S3Proxy& p) : proxy(p) {
          const uint64_t now = ++proxy.in_flight_;
          uint64_t seen = proxy.max_in_flight_.load();
          while (now > seen && !proxy.max_in_flight_.compare_exchange_weak(seen, now)) {
          }
        }
        ~InFlight() { --proxy.in_flight_; }
      } in_flight(*this);

      std::optional<Fault> fault;
      SigV4Expectation expect;
      {
        std::lock_guard lock(mu_);
        expect = options_.expect;
        if (std::uniform_real_distribution<double>(0, 1)(rng_) < options_.fault_rate) {
          fault = static_cast<Fault>(std::uniform_int_distribution<int>(0, 3)(rng_));
        }
      }
      net::HttpResponse response;
      std::optional<SigV4Rejection> rejection;
      if (!options_.pass_through) {
        rejection = VerifySigV4(request, expect, std::chrono::system_clock::now());
      }
      if (rejection) {
        ++rejected_;
        {
          std::lock_guard lock(mu_);
          if (rejections_.size() < 10)
            rejections_.push_back(rejection->code + ": " + rejection->message);
        }
        response.status = rejection->code == "ExpiredToken" ||
                                  rejection->code == "InvalidRequest" ||
                                  rejection->code == "AuthorizationHeaderMalformed"
                              ? 400
                              : 403;
        response.body = ErrorXml(rejection->code, rejection->message.substr(0, 200));
      } else {
        RecordKey(request);
        if (fault == Fault::kReset) {
          ++fault_counts_[static_cast<int>(Fault::kReset)];
          return;  // the connection thread closes the socket
        }
        if (fault == Fault::kSlowDown503 || fault == Fault::kInternalError500) {
          ++fault_counts_[static_cast<int>(*fault)];
          const bool slow = fault == Fault::kSlowDown503;
          response.status = slow ? 503 : 500;
          response.body = ErrorXml(slow ? "SlowDown" : "InternalError",
                                   slow ? "Please reduce your request rate."
                                        : "We encountered an internal error. Please try again.");
        } else {
          std::optional<net::HttpResponse> local = FromFolder(request);
          response = local ? *std::move(local) : Forward(request);
          if (fault == Fault::kTruncated && request.method == "GET" && response.status / 100 == 2 &&
              response.body.size() > 1) {
            ++fault_counts_[static_cast<int>(Fault::kTruncated)];
            std::string head = "HTTP/1.1 " + std::to_string(response.status) +
                               " OK\r\nContent-Length: " + std::to_string(response.body.size()) +
                               "\r\n\r\n";
            boost::asio::write(socket, boost::asio::buffer(head), ec);
            boost::asio::write(
                socket, boost::asio::buffer(response.body.data(), response.body.size() / 2), ec);
            return;  // the connection thread closes the socket
          }
        }
      }
      http::response<http::string_body> res{static_cast<http::status>(response.status), 11};
      for (const auto& [name, value] : response.headers) {
        const std::string lower = Lower(name);
        if (lower == "content-length" || lower == "connection" || lower == "transfer-encoding") {
          continue;
        }
        res.set(name, value);
      }
      res.keep_alive(req.keep_alive());
      if (request.method == "HEAD") {
        // The object's length, without its bytes.
        res.content_length(std::stoull(response.Header("Content-Length").value_or("0")));
      } else {
        res.body() = std::move(response.body);
        res.prepare_payload();
      }
      if (options_.first_byte_latency.count() > 0) {
        std::this_thread::sleep_for(options_.first_byte_latency);
      }
      if (options_.bytes_per_second > 0 && request.method != "HEAD") {
        WritePaced(socket, res, ec);
      } else {
        http::write(socket, res, ec);
      }
      if (ec || !req.keep_alive()) return;
    }
  }

  // Writes the header, then the body in slices no faster than bytes_per_second.
  void WritePaced(boost::asio::ip::tcp::socket& socket,
                  boost::beast::http::response<boost::beast::http::string_body>& res,
                  boost::system::error_code& ec) {
    namespace http = boost::beast::http;
    http::response_serializer<http::string_body> serializer{res};
    http::write_header(socket, serializer, ec);
    if (ec) return;
    constexpr size_t kSlice = 64 << 10;
    const std::string& body = res.body();
    const auto start = std::chrono::steady_clock::now();
    for (size_t sent = 0; sent < body.size();) {
      const size_t n = std::min(kSlice, body.size() - sent);
      boost::asio::write(socket, boost::asio::buffer(body.data() + sent, n), ec);
      if (ec) return;
      sent += n;
      // When the bytes so far may leave at the capped rate.
      const auto due = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                   std::chrono::duration<double>(sent / options_.bytes_per_second));
      std::this_thread::sleep_until(due);
    }
  }

  // A GET of an object under local_prefix, answered from local_folder as S3 answers it: 200 with
  // the whole object, or 206 with Content-Range for "Range: bytes=a-b" / "bytes=a-", 416 for a
  // range starting past the end, 404 NoSuchKey for a missing file. Nothing for other requests.
  std::optional<net::HttpResponse> FromFolder(const net::HttpRequest& request) {
    if (options_.local_folder.empty() || request.method != "GET" ||
        request.target.find('?') != std::string::npos ||
        !request.target.starts_with(options_.local_prefix)) {
      return std::nullopt;
    }
    std::string key;
    const std::string encoded = request.target.substr(options_.local_prefix.size());
    for (size_t i = 0; i < encoded.size(); ++i) {
      if (encoded[i] == '%' && i + 2 < encoded.size()) {
        key.push_back(static_cast<char>(std::stoi(encoded.substr(i + 1, 2), nullptr, 16)));
        i += 2;
      } else {
        key.push_back(encoded[i]);
      }
    }
    const std::filesystem::path file = options_.local_folder / key;
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(file, ec);
    if (ec || key.find("..") != std::string::npos) {
      return net::HttpResponse{404, {}, ErrorXml("NoSuchKey", "The specified key does not exist.")};
    }
    uint64_t first = 0, last = size == 0 ? 0 : size - 1;
    const std::optional<std::string> range = net::FindHeader(request.headers, "range");
    if (range && range->starts_with("bytes=")) {
      const size_t dash = range->find('-');
      first = std::stoull(range->substr(6, dash - 6));
      if (dash + 1 < range->size()) {
        last = std::min<uint64_t>(last, std::stoull(range->substr(dash + 1)));
      }
      if (first >= size) {
        return net::HttpResponse{
            416, {}, ErrorXml("InvalidRange", "The requested range is not satisfiable")};
      }
    }
    ++answered_locally_;
    net::HttpResponse response{range ? 206 : 200, {}, {}};
    response.headers.emplace_back("Content-Type", "application/octet-stream");
    if (range) {
      response.headers.emplace_back("Content-Range", "bytes " + std::to_string(first) + "-" +
                                                         std::to_string(last) + "/" +
                                                         std::to_string(size));
    }
    if (size > 0) {
      response.body.resize(last - first + 1);
      std::ifstream in(file, std::ios::binary);
      in.seekg(static_cast<std::streamoff>(first));
      in.read(response.body.data(), static_cast<std::streamsize>(response.body.size()));
    }
    return response;
  }

  net::HttpResponse Forward(const net::HttpRequest& request) {
    net::HttpRequest upstream = request;
    const bool pass_through = options_.pass_through;
    std::erase_if(upstream.headers, [pass_through](const auto& h) {
      const std::string lower = Lower(h.first);
      if (lower == "host" || lower == "content-length" || lower == "connection" ||
          lower == "user-agent") {
        return true;
      }
      return !pass_through && (lower == "authorization" || lower.starts_with("x-amz-"));
    });
    auto response = upstream_->Send(upstream);
    ++forwarded_;
    if (!response.ok()) return net::HttpResponse{502, {}, ErrorXml("BadGateway", "upstream")};
    return *std::move(response);
  }

  void RecordKey(const net::HttpRequest& request) {
    const std::string authorization =
        net::FindHeader(request.headers, "authorization").value_or("");
    const size_t at = authorization.find("Credential=");
    if (at == std::string::npos) return;
    const std::string key = authorization.substr(at + 11, authorization.find('/', at) - at - 11);
    std::lock_guard lock(mu_);
    if (std::find(keys_used_.begin(), keys_used_.end(), key) == keys_used_.end()) {
      keys_used_.push_back(key);
    }
  }

  static std::string Lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }
  static std::string ErrorXml(const std::string& code, const std::string& message) {
    std::string escaped;
    for (char c : message) {
      if (c == '<')
        escaped += "&lt;";
      else if (c == '>')
        escaped += "&gt;";
      else if (c == '&')
        escaped += "&amp;";
      else
        escaped.push_back(c);
    }
    return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code + "</Code><Message>" +
           escaped + "</Message><RequestId>rfs-proxy</RequestId></Error>";
  }

  S3ProxyOptions options_;
  std::mt19937 rng_;
  std::unique_ptr<net::BeastHttpTransport> upstream_;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_{ioc_};
  unsigned short port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<boost::asio::ip::tcp::socket>> sockets_;
  std::vector<std::thread> connection_threads_;
  std::atomic<uint64_t> requests_{0}, forwarded_{0}, rejected_{0}, heads_{0}, answered_locally_{0};
  std::atomic<uint64_t> in_flight_{0}, max_in_flight_{0};
  std::array<std::atomic<uint64_t>, 4> fault_counts_{};
  std::vector<std::string> rejections_;
  std::vector<std::string> keys_used_;
};

}  // namespace rfs::test
