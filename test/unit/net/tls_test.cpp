#include <catch2/catch.hpp>

#include "rfs/net/beast_http_transport.hpp"

#include "reindex_test_util.hpp"
#include "support/opensearch_double.hpp"
#include "support/opensearch_double_certs.hpp"

namespace rfs::net {
using namespace rfs::reindex;  // NOLINT: the layers this test drives
namespace {

net::HttpRequest Root() {
  net::HttpRequest request;
  request.target = "/";
  return request;
}

struct TlsTarget {
  explicit TlsTarget(std::vector<std::string> sans = {"IP:127.0.0.1", "DNS:localhost"}) {
    auto made = testing::MakeTestCertificates(dir.str(), sans);
    REQUIRE(made.ok());
    certs = *made;
    auto started = testing::OpenSearchDouble::Start(
        {.tls_cert_file = certs.server_cert_file, .tls_key_file = certs.server_key_file});
    REQUIRE(started.ok());
    server = *std::move(started);
  }
  reindex::testutil::TempDir dir;
  testing::TestCertificates certs;
  std::unique_ptr<testing::OpenSearchDouble> server;
};

TEST_CASE("TLS fails against an unknown CA by default", "[reindex][tls]") {
  TlsTarget target;
  CHECK(target.server->endpoint().starts_with("https://127.0.0.1:"));
  auto transport = BeastHttpTransport::Open({.endpoint = target.server->endpoint()});
  REQUIRE(transport.ok());
  auto response = (*transport)->Send(Root());
  REQUIRE(absl::IsUnavailable(response.status()));
  CHECK(response.status().message().find("certificate verification failed") != std::string::npos);
}

TEST_CASE("TLS succeeds with the CA given as --target-cacert", "[reindex][tls]") {
  TlsTarget target;
  auto transport = BeastHttpTransport::Open(
      {.endpoint = target.server->endpoint(), .tls = {.ca_cert_file = target.certs.ca_cert_file}});
  REQUIRE(transport.ok());
  for (int i = 0; i < 3; ++i) {
    auto response = (*transport)->Send(Root());
    REQUIRE(response.ok());
    CHECK(response->status == 200);
  }
  CHECK((*transport)->connections_opened() == 1);

  // The host name is checked too: "localhost" is in the certificate.
  const std::string by_name = "https://localhost:" + std::to_string(target.server->port());
  auto named = BeastHttpTransport::Open(
      {.endpoint = by_name, .tls = {.ca_cert_file = target.certs.ca_cert_file}});
  REQUIRE(named.ok());
  auto response = (*named)->Send(Root());
  REQUIRE(response.ok());
  CHECK(response->status == 200);
}

TEST_CASE("TLS rejects a certificate for another host", "[reindex][tls]") {
  TlsTarget target({"DNS:other.example"});
  auto transport = BeastHttpTransport::Open(
      {.endpoint = target.server->endpoint(), .tls = {.ca_cert_file = target.certs.ca_cert_file}});
  REQUIRE(transport.ok());
  auto response = (*transport)->Send(Root());
  REQUIRE(absl::IsUnavailable(response.status()));
  CHECK(response.status().message().find("mismatch") != std::string::npos);
}

TEST_CASE("TLS skips verification with --target-insecure", "[reindex][tls]") {
  TlsTarget target({"DNS:other.example"});
  auto transport =
      BeastHttpTransport::Open({.endpoint = target.server->endpoint(), .tls = {.insecure = true}});
  REQUIRE(transport.ok());
  auto response = (*transport)->Send(Root());
  REQUIRE(response.ok());
  CHECK(response->status == 200);
}

TEST_CASE("TLS options are validated when the transport opens", "[reindex][tls]") {
  TlsTarget target;
  auto missing_ca = BeastHttpTransport::Open(
      {.endpoint = target.server->endpoint(), .tls = {.ca_cert_file = target.dir.str() + "/no"}});
  CHECK(absl::IsInvalidArgument(missing_ca.status()));
  auto half_pair =
      BeastHttpTransport::Open({.endpoint = target.server->endpoint(),
                                .tls = {.client_cert_file = target.certs.server_cert_file}});
  CHECK(absl::IsInvalidArgument(half_pair.status()));
  // A client certificate and key load (the double does not ask for one, so the call succeeds).
  auto with_client_cert =
      BeastHttpTransport::Open({.endpoint = target.server->endpoint(),
                                .tls = {.ca_cert_file = target.certs.ca_cert_file,
                                        .client_cert_file = target.certs.server_cert_file,
                                        .client_key_file = target.certs.server_key_file}});
  REQUIRE(with_client_cert.ok());
  CHECK((*with_client_cert)->Send(Root()).ok());
  const std::string debug =
      DebugString({.endpoint = "https://h",
                   .tls = {.client_cert_file = "c.pem", .client_key_file = "secret-key.pem"}});
  CHECK(debug.find("secret-key.pem") == std::string::npos);
}

}  // namespace
}  // namespace rfs::net
