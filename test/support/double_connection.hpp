// An OpenSearch double started for one test, and a transport talking to it.
#pragma once

#include <memory>

#include <catch2/catch.hpp>

#include "rfs/net/beast_http_transport.hpp"

#include "support/opensearch_double.hpp"

namespace rfs::test {

struct DoubleConnection {
  explicit DoubleConnection(testing::OpenSearchDoubleOptions options = {}) {
    auto started = testing::OpenSearchDouble::Start(std::move(options));
    REQUIRE(started.ok());
    server = *std::move(started);
    auto opened = net::BeastHttpTransport::Open({.endpoint = server->endpoint()});
    REQUIRE(opened.ok());
    transport = *std::move(opened);
  }
  std::unique_ptr<testing::OpenSearchDouble> server;
  std::unique_ptr<net::BeastHttpTransport> transport;
};

}  // namespace rfs::test
