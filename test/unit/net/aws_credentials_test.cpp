#include "rfs/net/aws_credentials.hpp"

#include <atomic>
#include <ctime>
#include <fstream>
#include <map>

#include <catch2/catch.hpp>

#include "rfs/core/clock.hpp"
#include "rfs/net/beast_http_transport.hpp"

#include "support/iso8601.hpp"
#include "support/scripted_http_server.hpp"
#include "support/temp_dir.hpp"

namespace {

using rfs::net::AwsCredentialSources;
using rfs::net::ResolveAwsCredentials;

// A fake environment; the instance metadata service is off unless a test points it somewhere.
AwsCredentialSources Environment(std::map<std::string, std::string> variables) {
  variables.emplace("AWS_EC2_METADATA_DISABLED", "true");
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(variables));
  return AwsCredentialSources{[shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  }};
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_CASE("the environment comes first in the AWS credentials chain", "[net][aws]") {
  rfs::test::TempDir dir("rfs-aws");
  Write(dir.File("credentials"),
        "[default]\naws_access_key_id = FILE\naws_secret_access_key = f\n");
  auto found = ResolveAwsCredentials(
      Environment({{"AWS_ACCESS_KEY_ID", "ENV"},
                   {"AWS_SECRET_ACCESS_KEY", "secret"},
                   {"AWS_SESSION_TOKEN", "token"},
                   {"AWS_SHARED_CREDENTIALS_FILE", dir.File("credentials")}}));
  REQUIRE(found.ok());
  CHECK(found->access_key_id == "ENV");
  CHECK(found->session_token == "token");
  auto half = ResolveAwsCredentials(Environment({{"AWS_ACCESS_KEY_ID", "ENV"}}));
  CHECK(absl::IsFailedPrecondition(half.status()));
}

TEST_CASE("shared credentials and config files, by profile", "[net][aws]") {
  rfs::test::TempDir dir("rfs-aws");
  Write(dir.File("credentials"),
        "# comment\n[default]\naws_access_key_id = DEFAULTKEY\naws_secret_access_key = "
        "default-secret\n\n[migration]\naws_access_key_id=MIGKEY\naws_secret_access_key=mig\n"
        "aws_session_token = mig-token\n");
  Write(dir.File("config"),
        "[default]\nregion = us-east-1\n[profile ops]\naws_access_key_id = OPSKEY\n"
        "aws_secret_access_key = ops\ns3 =\n  max_concurrent_requests = 20\n");
  const std::map<std::string, std::string> files = {
      {"AWS_SHARED_CREDENTIALS_FILE", dir.File("credentials")},
      {"AWS_CONFIG_FILE", dir.File("config")}};
  auto with = [&](std::map<std::string, std::string> extra) {
    extra.insert(files.begin(), files.end());
    return Environment(extra);
  };
  auto default_profile = ResolveAwsCredentials(with({}));
  REQUIRE(default_profile.ok());
  CHECK(default_profile->access_key_id == "DEFAULTKEY");
  auto migration = ResolveAwsCredentials(with({{"AWS_PROFILE", "migration"}}));
  REQUIRE(migration.ok());
  CHECK(migration->session_token == "mig-token");
  auto ops = ResolveAwsCredentials(with({{"AWS_PROFILE", "ops"}}));  // from the config file
  REQUIRE(ops.ok());
  CHECK(ops->access_key_id == "OPSKEY");
  auto missing = ResolveAwsCredentials(with({{"AWS_PROFILE", "nobody"}}));
  CHECK(absl::IsFailedPrecondition(missing.status()));
  CHECK(missing.status().message().find("[nobody]") != std::string::npos);
  CHECK(missing.status().message().find("secret") == std::string::npos);

  Write(dir.File("broken"), "[default\naws_access_key_id = X\n");
  CHECK(absl::IsDataLoss(
      rfs::net::AwsCredentialsFromProfileFile(dir.File("broken"), "default", false).status()));
  Write(dir.File("keyless"), "[default]\nregion = eu-west-1\n");
  CHECK(absl::IsFailedPrecondition(
      rfs::net::AwsCredentialsFromProfileFile(dir.File("keyless"), "default", false).status()));
}

TEST_CASE("web identity credentials come from STS AssumeRoleWithWebIdentity", "[net][aws]") {
  rfs::test::TempDir dir("rfs-aws");
  Write(dir.File("token"), "eyJ.projected.token\n");
  rfs::test::ScriptedHttpServer sts([](const rfs::net::HttpRequest& r) {
    rfs::net::HttpResponse response;
    response.status = 200;
    response.body =
        "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
        "<AccessKeyId>ASIASTS</AccessKeyId><SecretAccessKey>sts-secret</SecretAccessKey>"
        "<SessionToken>sts&amp;token</SessionToken><Expiration>2030-01-01T00:00:00Z"
        "</Expiration></Credentials></AssumeRoleWithWebIdentityResult>"
        "</AssumeRoleWithWebIdentityResponse>";
    return response;
  });
  auto found =
      ResolveAwsCredentials(Environment({{"AWS_WEB_IDENTITY_TOKEN_FILE", dir.File("token")},
                                         {"AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/rfs"},
                                         {"AWS_ENDPOINT_URL_STS", sts.endpoint()},
                                         {"HOME", dir.str()}}));
  INFO(found.status().ToString());
  REQUIRE(found.ok());
  CHECK(found->access_key_id == "ASIASTS");
  CHECK(found->session_token == "sts&token");
  const auto requests = sts.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].method == "POST");
  CHECK(requests[0].body.find("Action=AssumeRoleWithWebIdentity") != std::string::npos);
  CHECK(requests[0].body.find("RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Frfs") !=
        std::string::npos);
  INFO(requests[0].body);
  CHECK(requests[0].body.find("WebIdentityToken=eyJ.projected.token") != std::string::npos);
}

TEST_CASE("container credentials (ECS, EKS Pod Identity) with an authorization token",
          "[net][aws]") {
  rfs::test::TempDir dir("rfs-aws");
  Write(dir.File("auth"), "pod-identity-token\n");
  rfs::test::ScriptedHttpServer agent([](const rfs::net::HttpRequest& r) {
    rfs::net::HttpResponse response;
    const bool authorized = rfs::net::FindHeader(r.headers, "authorization") ==
                            std::optional<std::string>("pod-identity-token");
    response.status = authorized && r.target == "/v1/credentials" ? 200 : 401;
    response.body = R"({"AccessKeyId":"ASIAPOD","SecretAccessKey":"pod-secret",)"
                    R"("Token":"pod-token","Expiration":"2030-01-01T00:00:00Z"})";
    return response;
  });
  auto found = ResolveAwsCredentials(
      Environment({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", agent.endpoint() + "/v1/credentials"},
                   {"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", dir.File("auth")},
                   {"HOME", dir.str()}}));
  INFO(found.status().ToString() << " requests seen: " << agent.requests().size());
  REQUIRE(found.ok());
  CHECK(found->access_key_id == "ASIAPOD");
  CHECK(found->session_token == "pod-token");
}

TEST_CASE("container credentials over plain http only from loopback and the ECS/EKS hosts",
          "[net][aws]") {
  using rfs::net::ContainerCredentialsUrlAllowed;
  for (const char* url :
       {"http://127.0.0.1:8080/creds", "http://localhost/v1", "http://[::1]:9/x",
        "http://169.254.170.2/v2/credentials/abc", "http://169.254.170.23/v1/credentials",
        "http://[fd00:ec2::23]/v1/credentials", "https://creds.example.com/v1",
        "http://127.5.6.7/x"}) {
    INFO(url);
    CHECK(ContainerCredentialsUrlAllowed(url));
  }
  for (const char* url : {"http://creds.example.com/v1", "http://10.0.0.5/creds",
                          "http://127.0.0.1.evil.com/", "http://169.254.170.2.evil.com/",
                          "http://user@evil.com/", "ftp://127.0.0.1/", "http://[fd00:ec2::24]/"}) {
    INFO(url);
    CHECK_FALSE(ContainerCredentialsUrlAllowed(url));
  }
  // The resolver refuses such a URL without sending the token anywhere.
  rfs::test::TempDir dir("rfs-aws");
  auto refused = ResolveAwsCredentials(
      Environment({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://creds.example.com/v1"},
                   {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "secret-token"},
                   {"HOME", dir.str()}}));
  REQUIRE_FALSE(refused.ok());
  CHECK(absl::IsPermissionDenied(refused.status()));
  CHECK(std::string(refused.status().message()).find("secret-token") == std::string::npos);
}

TEST_CASE("instance credentials from IMDSv2: a session token, the role, its credentials",
          "[net][aws]") {
  rfs::test::TempDir dir("rfs-aws");
  rfs::test::ScriptedHttpServer imds([](const rfs::net::HttpRequest& r) {
    rfs::net::HttpResponse response;
    const auto token = rfs::net::FindHeader(r.headers, "x-aws-ec2-metadata-token");
    if (r.method == "PUT" && r.target == "/latest/api/token" &&
        rfs::net::FindHeader(r.headers, "x-aws-ec2-metadata-token-ttl-seconds")) {
      response.status = 200;
      response.body = "imds-session";
    } else if (token != std::optional<std::string>("imds-session")) {
      response.status = 401;  // IMDSv2 only: no token, no answer.
    } else if (r.target == "/latest/meta-data/iam/security-credentials/") {
      response.status = 200;
      response.body = "rfs-instance-role";
    } else if (r.target == "/latest/meta-data/iam/security-credentials/rfs-instance-role") {
      response.status = 200;
      response.body = R"({"Code":"Success","AccessKeyId":"ASIAEC2",)"
                      R"("SecretAccessKey":"ec2-secret","Token":"ec2-token"})";
    } else {
      response.status = 404;
    }
    return response;
  });
  std::map<std::string, std::string> env = {{"AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.endpoint()},
                                            {"HOME", dir.str()}};
  auto shared = std::make_shared<std::map<std::string, std::string>>(env);
  AwsCredentialSources sources{[shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  }};
  auto found = ResolveAwsCredentials(sources);
  REQUIRE(found.ok());
  CHECK(found->access_key_id == "ASIAEC2");
  CHECK(found->session_token == "ec2-token");
  CHECK(imds.requests().size() == 3);
}

TEST_CASE("the transport refuses header values with line breaks", "[net]") {
  rfs::test::ScriptedHttpServer server([](const rfs::net::HttpRequest&) {
    return rfs::net::HttpResponse{200, {}, ""};
  });
  auto transport = rfs::net::BeastHttpTransport::Open({.endpoint = server.endpoint()});
  REQUIRE(transport.ok());
  rfs::net::HttpRequest request;
  request.headers.emplace_back("Authorization", "token\r\nX-Injected: 1");
  auto sent = (*transport)->Send(request);
  CHECK(absl::IsInvalidArgument(sent.status()));
  CHECK(sent.status().message().find("X-Injected") == std::string::npos);
  CHECK(server.requests().empty());
}

namespace {

// A container-credentials endpoint that hands out a new key on every call ("ASIA1", "ASIA2",
// ...), each valid for `lifetime` from the clock's now.
struct RotatingCredentialsEndpoint {
  RotatingCredentialsEndpoint(const rfs::core::IClock& clock, std::chrono::seconds lifetime)
      : server([this, &clock, lifetime](const rfs::net::HttpRequest&) {
          const int n = ++issued;
          rfs::net::HttpResponse response;
          response.status = fail ? 500 : 200;
          response.body = R"({"AccessKeyId":"ASIA)" + std::to_string(n) +
                          R"(","SecretAccessKey":"secret","Token":"token","Expiration":")" +
                          rfs::test::Iso8601Utc(clock.Now() + lifetime) + R"("})";
          return response;
        }) {}
  std::atomic<int> issued{0};
  std::atomic<bool> fail{false};
  rfs::test::ScriptedHttpServer server;
};

}  // namespace

TEST_CASE("web identity comes before the shared files", "[net][aws]") {
  rfs::test::TempDir dir("rfs-aws");
  Write(dir.File("token"), "jwt\n");
  Write(dir.File("credentials"),
        "[default]\naws_access_key_id = FILE\naws_secret_access_key = f\n");
  rfs::test::ScriptedHttpServer sts([](const rfs::net::HttpRequest&) {
    return rfs::net::HttpResponse{
        200,
        {},
        "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
        "<AccessKeyId>ASIASTS</AccessKeyId><SecretAccessKey>s</SecretAccessKey>"
        "<SessionToken>t</SessionToken><Expiration>2030-01-01T00:00:00.000Z</Expiration>"
        "</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"};
  });
  auto found = ResolveAwsCredentials(
      Environment({{"AWS_WEB_IDENTITY_TOKEN_FILE", dir.File("token")},
                   {"AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/rfs"},
                   {"AWS_ENDPOINT_URL_STS", sts.endpoint()},
                   {"AWS_SHARED_CREDENTIALS_FILE", dir.File("credentials")}}));
  REQUIRE(found.ok());
  CHECK(found->access_key_id == "ASIASTS");
  REQUIRE(found->expiration.has_value());
  CHECK(rfs::test::Iso8601Utc(*found->expiration) == "2030-01-01T00:00:00Z");
}

TEST_CASE("the region: the flag, AWS_REGION, AWS_DEFAULT_REGION, then the profile", "[net][aws]") {
  rfs::test::TempDir dir("rfs-aws");
  Write(dir.File("config"), "[default]\nregion = eu-west-1\n[profile ops]\nregion=ap-south-1\n");
  const std::string config = dir.File("config");
  using rfs::net::ResolveAwsRegion;
  CHECK(ResolveAwsRegion("us-west-2", Environment({{"AWS_REGION", "eu-central-1"}})) ==
        "us-west-2");
  CHECK(ResolveAwsRegion("", Environment({{"AWS_REGION", "eu-central-1"},
                                          {"AWS_DEFAULT_REGION", "us-east-2"}})) == "eu-central-1");
  CHECK(ResolveAwsRegion("", Environment({{"AWS_DEFAULT_REGION", "us-east-2"},
                                          {"AWS_CONFIG_FILE", config}})) == "us-east-2");
  CHECK(ResolveAwsRegion("", Environment({{"AWS_CONFIG_FILE", config}})) == "eu-west-1");
  CHECK(ResolveAwsRegion("", Environment({{"AWS_CONFIG_FILE", config}, {"AWS_PROFILE", "ops"}})) ==
        "ap-south-1");
  CHECK(ResolveAwsRegion("", Environment({{"HOME", dir.str()}})).empty());
}

TEST_CASE("temporary credentials are refreshed before they expire", "[net][aws]") {
  rfs::core::FakeClock clock(std::chrono::system_clock::from_time_t(1'900'000'000));
  RotatingCredentialsEndpoint endpoint(clock, std::chrono::hours(1));
  auto provider = rfs::net::AwsCredentialsProvider::Resolve(
      {.sources = Environment(
           {{"AWS_CONTAINER_CREDENTIALS_FULL_URI", endpoint.server.endpoint() + "/creds"}}),
       .clock = &clock});
  REQUIRE(provider.ok());
  auto current = [&] {
    auto c = (*provider)->Current();
    REQUIRE(c.ok());
    return c->access_key_id;
  };
  CHECK(current() == "ASIA1");
  clock.Advance(std::chrono::minutes(54));  // 6 minutes left: still fine
  CHECK(current() == "ASIA1");
  clock.Advance(std::chrono::minutes(2));  // 4 minutes left: inside the refresh window
  CHECK(current() == "ASIA2");
  CHECK((*provider)->refreshes() == 1);

  // A failed refresh keeps the old credentials while they last, then reports why.
  endpoint.fail = true;
  clock.Advance(std::chrono::minutes(57));
  CHECK(current() == "ASIA2");
  const int calls = endpoint.issued;
  CHECK(current() == "ASIA2");  // no new attempt within retry_after
  CHECK(endpoint.issued == calls);
  clock.Advance(std::chrono::minutes(4));
  auto expired = (*provider)->Current();
  CHECK(absl::IsUnavailable(expired.status()));
  CHECK(expired.status().message().find("secret") == std::string::npos);
  endpoint.fail = false;
  const std::string renewed = current();
  CHECK(renewed == "ASIA" + std::to_string(endpoint.issued.load()));
}

TEST_CASE("the transport signs with refreshed credentials in the middle of a run", "[net][aws]") {
  rfs::core::FakeClock clock(std::chrono::system_clock::from_time_t(1'900'000'000));
  RotatingCredentialsEndpoint endpoint(clock, std::chrono::minutes(20));
  auto provider = rfs::net::AwsCredentialsProvider::Resolve(
      {.sources = Environment(
           {{"AWS_CONTAINER_CREDENTIALS_FULL_URI", endpoint.server.endpoint() + "/creds"}}),
       .clock = &clock});
  REQUIRE(provider.ok());
  rfs::test::ScriptedHttpServer target([](const rfs::net::HttpRequest&) {
    return rfs::net::HttpResponse{200, {}, "{}"};
  });
  rfs::net::HttpTransportOptions options{.endpoint = target.endpoint()};
  options.sigv4 = rfs::net::SigV4Options{
      .region = "us-east-1", .service = "es", .credentials = {}, .credentials_provider = *provider};
  options.clock = &clock;
  auto transport = rfs::net::BeastHttpTransport::Open(std::move(options));
  REQUIRE(transport.ok());
  for (int i = 0; i < 6; ++i) {
    REQUIRE((*transport)->Send(rfs::net::HttpRequest{}).ok());
    clock.Advance(std::chrono::minutes(5));
  }
  std::vector<std::string> keys;
  for (const auto& request : target.requests()) {
    const std::string authorization =
        rfs::net::FindHeader(request.headers, "authorization").value_or("");
    const size_t at = authorization.find("Credential=");
    REQUIRE(at != std::string::npos);
    keys.push_back(authorization.substr(at + 11, authorization.find('/', at) - at - 11));
  }
  // Minutes 0, 5, 10 with the first key; 15 is within 5 minutes of its expiry (20).
  CHECK(keys == std::vector<std::string>{"ASIA1", "ASIA1", "ASIA1", "ASIA2", "ASIA2", "ASIA2"});
}
