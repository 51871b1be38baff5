// net::HttpResponse header lookup.
#include <catch2/catch.hpp>

#include "rfs/net/http_transport.hpp"

TEST_CASE("HTTP headers are found case-insensitively", "[net]") {
  rfs::net::HttpResponse response;
  response.headers = {{"Content-Type", "application/json"}, {"date", "Sun, 22 Nov 2026"}};
  CHECK(response.Header("content-type") == "application/json");
  CHECK(response.Header("DATE") == "Sun, 22 Nov 2026");
  CHECK_FALSE(response.Header("Content-Encoding").has_value());
}
