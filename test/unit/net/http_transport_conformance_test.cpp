// The IHttpTransport conformance suite on BeastHttpTransport, and on RetryingHttpTransport
// around it (on a fake clock: its backoff never sleeps for real).
#include "conformance/http_transport_conformance.hpp"

#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "rfs/core/clock.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/net/retrying_transport.hpp"

namespace {

std::shared_ptr<rfs::net::IHttpTransport> Beast(const std::string& endpoint) {
  auto opened = rfs::net::BeastHttpTransport::Open(
      {.endpoint = endpoint, .connect_timeout = std::chrono::milliseconds(2000)});
  REQUIRE(opened.ok());
  return std::shared_ptr<rfs::net::IHttpTransport>(*std::move(opened));
}

}  // namespace

TEST_CASE("BeastHttpTransport keeps the IHttpTransport contract", "[net][conformance]") {
  rfs::net::conformance::RunHttpTransportConformance(Beast);
}

TEST_CASE("RetryingHttpTransport keeps the IHttpTransport contract", "[net][conformance]") {
  rfs::core::FakeClock clock;
  rfs::net::conformance::RunHttpTransportConformance([&](const std::string& endpoint) {
    return std::make_shared<rfs::net::RetryingHttpTransport>(Beast(endpoint), clock);
  });
}
