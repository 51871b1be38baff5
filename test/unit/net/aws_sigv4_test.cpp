#include "rfs/net/aws_sigv4.hpp"

#include <cstdlib>

#include <catch2/catch.hpp>

#include "rfs/net/http_transport.hpp"
#include "rfs/opensearch/client.hpp"

#include "support/opensearch_double.hpp"

namespace rfs::net {
using namespace rfs::opensearch;  // NOLINT: the layers this test drives
namespace {

// Vectors from AWS's published Signature Version 4 test suite (aws-sig-v4-test-suite, as
// redistributed in awslabs/aws-c-auth tests/aws-signing-test-suite/v4: get-vanilla,
// get-vanilla-query-order-key-case, post-vanilla, post-x-www-form-urlencoded). They all use the
// example credentials below, region us-east-1, service "service" and 20150830T123600Z.
constexpr char kAccessKey[] = "AKIDEXAMPLE";
constexpr char kSecretKey[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

core::IClock::TimePoint SuiteTime() {
  // 2015-08-30T12:36:00Z
  return core::IClock::TimePoint(std::chrono::seconds(1440938160));
}

SigV4Options SuiteOptions() {
  SigV4Options options;
  options.region = "us-east-1";
  options.service = "service";
  options.credentials = {kAccessKey, kSecretKey, ""};
  options.add_content_sha256_header = false;  // the suite predates this header
  return options;
}

std::string Authorization(net::HttpRequest request) {
  request.headers.emplace_back("Host", "example.amazonaws.com");
  REQUIRE(SignSigV4(request, SuiteOptions(), SuiteTime()).ok());
  return net::FindHeader(request.headers, "authorization").value_or("");
}

TEST_CASE("SigV4 matches the AWS test-suite vectors", "[reindex][sigv4]") {
  const std::string scope =
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/"
      "aws4_request, ";
  SECTION("get-vanilla") {
    net::HttpRequest request;
    request.method = "GET";
    request.target = "/";
    CHECK(Authorization(request) ==
          scope +
              "SignedHeaders=host;x-amz-date, "
              "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  }
  SECTION("get-vanilla-query-order-key-case") {
    net::HttpRequest request;
    request.method = "GET";
    request.target = "/?Param2=value2&Param1=value1";
    CHECK(Authorization(request) ==
          scope +
              "SignedHeaders=host;x-amz-date, "
              "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
  }
  SECTION("post-vanilla") {
    net::HttpRequest request;
    request.method = "POST";
    request.target = "/";
    CHECK(Authorization(request) ==
          scope +
              "SignedHeaders=host;x-amz-date, "
              "Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
  }
  SECTION("post-x-www-form-urlencoded") {
    net::HttpRequest request;
    request.method = "POST";
    request.target = "/";
    request.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
    request.body = "Param1=value1";
    CHECK(Authorization(request) ==
          scope +
              "SignedHeaders=content-type;host;x-amz-date, "
              "Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a");
  }
}

TEST_CASE("SigV4 adds the date, token and payload hash headers", "[reindex][sigv4]") {
  net::HttpRequest request;
  request.method = "POST";
  request.target = "/_bulk";
  request.body = "{}\n";
  request.headers.emplace_back("Host", "search.example.com");
  SigV4Options options = SuiteOptions();
  options.service = "es";
  options.credentials.session_token = "session-token";
  options.add_content_sha256_header = true;
  REQUIRE(SignSigV4(request, options, SuiteTime()).ok());
  CHECK(net::FindHeader(request.headers, "x-amz-date") == "20150830T123600Z");
  CHECK(net::FindHeader(request.headers, "x-amz-security-token") == "session-token");
  CHECK(net::FindHeader(request.headers, "x-amz-content-sha256") == Sha256Hex("{}\n"));
  const std::string authorization = *net::FindHeader(request.headers, "authorization");
  CHECK(authorization.find("/us-east-1/es/aws4_request") != std::string::npos);
  CHECK(authorization.find(
            "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token") !=
        std::string::npos);
  CHECK(authorization.find(kSecretKey) == std::string::npos);
  CHECK(Sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

  net::HttpRequest no_host;
  CHECK(absl::IsInvalidArgument(SignSigV4(no_host, options, SuiteTime())));
}

TEST_CASE("AWS credentials come from the standard environment variables", "[reindex][sigv4]") {
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ::unsetenv("AWS_SESSION_TOKEN");
  CHECK(absl::IsFailedPrecondition(AwsCredentialsFromEnvironment().status()));
  ::setenv("AWS_ACCESS_KEY_ID", kAccessKey, 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", kSecretKey, 1);
  auto credentials = AwsCredentialsFromEnvironment();
  REQUIRE(credentials.ok());
  CHECK(credentials->access_key_id == kAccessKey);
  CHECK(credentials->session_token.empty());
  ::setenv("AWS_SESSION_TOKEN", "tok", 1);
  CHECK(AwsCredentialsFromEnvironment()->session_token == "tok");
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ::unsetenv("AWS_SESSION_TOKEN");
}

TEST_CASE("transport signs every request it sends, compressed bodies included",
          "[reindex][sigv4]") {
  auto server = testing::OpenSearchDouble::Start();
  REQUIRE(server.ok());
  core::FakeClock clock(SuiteTime());
  SigV4Options sigv4 = SuiteOptions();
  sigv4.service = "es";
  sigv4.add_content_sha256_header = true;
  auto transport = BeastHttpTransport::Open(
      {.endpoint = (*server)->endpoint(), .sigv4 = sigv4, .clock = &clock});
  REQUIRE(transport.ok());
  opensearch::OpenSearchClient client(**transport);
  auto bulk = client.Bulk("{\"index\":{\"_index\":\"i\",\"_id\":\"1\"}}\n{\"a\":1}\n", 1);
  REQUIRE(bulk.ok());
  const auto requests = (*server)->requests();
  REQUIRE(requests.size() >= 2);
  for (const auto& r : requests) {
    const auto authorization = net::FindHeader(r.headers, "authorization");
    REQUIRE(authorization.has_value());
    CHECK(authorization->starts_with(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/es/aws4_request"));
    CHECK(net::FindHeader(r.headers, "x-amz-date") == "20150830T123600Z");
  }
  // The bulk body went out gzipped, and the signed hash is that of the bytes on the wire.
  const auto& last = requests.back();
  CHECK(net::FindHeader(last.headers, "content-encoding") == "gzip");
  CHECK(net::FindHeader(last.headers, "x-amz-content-sha256")->size() == 64);
}

}  // namespace
}  // namespace rfs::net
