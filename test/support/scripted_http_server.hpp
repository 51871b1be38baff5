// ScriptedHttpServer: a small HTTP/1.1 server on 127.0.0.1 whose answers a test writes as a
// function of the request, for doubles of simple services (the ECS and EKS credential endpoints,
// EC2's instance metadata service, STS). One connection at a time, closed after each response;
// every request is recorded.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "rfs/net/http_transport.hpp"

namespace rfs::test {

class ScriptedHttpServer {
 public:
  using Handler = std::function<net::HttpResponse(const net::HttpRequest&)>;

  explicit ScriptedHttpServer(Handler handler) : handler_(std::move(handler)) {
    namespace asio = boost::asio;
    acceptor_.open(asio::ip::tcp::v4());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    acceptor_.bind({asio::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedHttpServer() {
    stopping_ = true;
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::socket wake(ioc);
    boost::system::error_code ec;
    wake.connect({boost::asio::ip::make_address("127.0.0.1"), port_}, ec);
    thread_.join();
  }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<net::HttpRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  void Serve() {
    namespace http = boost::beast::http;
    while (true) {
      boost::asio::ip::tcp::socket socket(ioc_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      if (stopping_) return;
      if (ec) continue;
      boost::beast::flat_buffer buffer;
      http::request<http::string_body> req;
      http::read(socket, buffer, req, ec);
      if (ec) continue;
      net::HttpRequest request;
      request.method = std::string(req.method_string());
      request.target = std::string(req.target());
      for (const auto& field : req) {
        request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
      }
      request.body = req.body();
      {
        std::lock_guard lock(mu_);
        requests_.push_back(request);
      }
      const net::HttpResponse response = handler_(request);
      http::response<http::string_body> res{static_cast<http::status>(response.status), 11};
      for (const auto& [name, value] : response.headers) res.set(name, value);
      res.body() = response.body;
      res.keep_alive(false);
      res.prepare_payload();
      http::write(socket, res, ec);
      socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    }
  }

  Handler handler_;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_{ioc_};
  unsigned short port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<net::HttpRequest> requests_;
};

}  // namespace rfs::test
