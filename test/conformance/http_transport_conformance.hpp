// The IHttpTransport conformance suite: the contract of rfs/net/http_transport.hpp, run against any
// transport through a factory given a server's endpoint.
//
// Call RunHttpTransportConformance(make_transport) from a Catch2 TEST_CASE. What it checks against
// a scripted server that echoes what it received: the method, target (query and escapes
// included), headers and body arrive as sent, binary and empty bodies included; a response's
// status (an error status too), headers and a large body come back whole, and headers are found
// whatever their case; a server that is not there is an error, not a response; endpoint() names
// the server; requests sent from several threads at once each get their own answer.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/net/http_transport.hpp"

#include "support/process.hpp"
#include "support/scripted_http_server.hpp"

namespace rfs::net::conformance {

/// A transport to `endpoint` ("http://127.0.0.1:port").
using MakeTransport = std::function<std::shared_ptr<IHttpTransport>(const std::string& endpoint)>;

inline void RunHttpTransportConformance(const MakeTransport& make_transport) {
  std::string large(3 << 20, '\0');
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>('a' + i % 26);
  rfs::test::ScriptedHttpServer server([&](const HttpRequest& request) {
    HttpResponse response;
    if (request.target == "/large") {
      response.status = 200;
      response.body = large;
      return response;
    }
    if (request.target.starts_with("/status/")) {
      response.status = std::stoi(request.target.substr(8));
      response.body = R"({"error":"as asked"})";
      return response;
    }
    response.status = 200;
    response.headers.emplace_back("X-Echo-Method", request.method);
    response.headers.emplace_back("X-Echo-Target", request.target);
    if (auto probe = FindHeader(request.headers, "x-probe")) {
      response.headers.emplace_back("X-Echo-Probe", *probe);
    }
    response.body = request.body;
    return response;
  });
  const std::shared_ptr<IHttpTransport> transport = make_transport(server.endpoint());
  REQUIRE(transport != nullptr);
  CHECK(transport->endpoint().find("127.0.0.1") != std::string::npos);

  SECTION("method, target, headers and body arrive as sent") {
    std::string binary;
    for (int i = 0; i < 256; ++i) binary += static_cast<char>(i);
    for (const std::string& method : {"GET", "PUT", "POST", "DELETE"}) {
      INFO(method);
      HttpRequest request;
      request.method = method;
      request.target = "/index%2Fname/_doc/a%20b?routing=x&refresh=false";
      request.headers.emplace_back("X-Probe", "value with spaces");
      if (method == "PUT" || method == "POST") request.body = binary;
      auto response = transport->Send(request);
      INFO(response.status().ToString());
      REQUIRE(response.ok());
      CHECK(response->status == 200);
      CHECK(response->Header("x-echo-method") == method);
      CHECK(response->Header("X-ECHO-TARGET") == request.target);
      CHECK(response->Header("X-Echo-Probe") == "value with spaces");
      CHECK(response->body == request.body);
    }
    const auto seen = server.requests();
    REQUIRE(seen.size() >= 4);
    CHECK(seen[1].method == "PUT");
    CHECK(seen[1].body.size() == 256);
  }

  SECTION("a response's status and large body come back whole") {
    for (int status : {201, 400, 404, 409}) {
      HttpRequest request;
      request.target = "/status/" + std::to_string(status);
      auto response = transport->Send(request);
      REQUIRE(response.ok());
      CHECK(response->status == status);
      CHECK(response->body == R"({"error":"as asked"})");
    }
    HttpRequest request;
    request.target = "/large";
    auto response = transport->Send(request);
    REQUIRE(response.ok());
    CHECK(response->body == large);
  }

  SECTION("requests from several threads each get their own answer") {
    std::vector<std::thread> senders;
    std::vector<int> wrong(4, 0);
    for (size_t t = 0; t < wrong.size(); ++t) {
      senders.emplace_back([&, t] {
        for (int i = 0; i < 10; ++i) {
          HttpRequest request;
          request.method = "POST";
          request.target = "/echo";
          request.body = "thread " + std::to_string(t) + " request " + std::to_string(i);
          auto response = transport->Send(request);
          if (!response.ok() || response->body != request.body) ++wrong[t];
        }
      });
    }
    for (auto& sender : senders) sender.join();
    CHECK(wrong == std::vector<int>(wrong.size(), 0));
  }

  SECTION("a server that is not there is an error, not a response") {
    const std::string nowhere = "http://127.0.0.1:" + std::to_string(rfs::test::FreeLoopbackPort());
    const std::shared_ptr<IHttpTransport> lost = make_transport(nowhere);
    REQUIRE(lost != nullptr);
    HttpRequest request;
    request.timeout = std::chrono::milliseconds(2000);
    auto response = lost->Send(request);
    CHECK_FALSE(response.ok());
    CHECK(absl::IsUnavailable(response.status()));
  }
}

}  // namespace rfs::net::conformance
