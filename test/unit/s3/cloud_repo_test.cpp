// GCS and Azure Blob repositories: URI parsing, Azure's SharedKey canonicalization and signature,
// the credential chains (with loopback doubles of the token endpoints and the metadata server),
// and the repositories read in place from real emulators (fake-gcs-server, Azurite) started
// through scripts/local-cloud: every blob and document as from the folder, also with faults
// injected by the suite's S3 proxy (passing requests on with their own credentials).
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <ranges>

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "rfs/cloud/azure_repo.hpp"
#include "rfs/cloud/cloud_auth.hpp"
#include "rfs/cloud/gcs_repo.hpp"
#include "rfs/core/base64.hpp"
#include "rfs/net/aws_sigv4.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/net/encoding.hpp"

#include "support/corpus.hpp"
#include "support/generated_repo.hpp"
#include "support/local_cloud.hpp"
#include "support/repository_documents.hpp"
#include "support/repository_walk.hpp"
#include "support/s3_proxy.hpp"
#include "support/scripted_http_server.hpp"
#include "support/temp_dir.hpp"

namespace {

using rfs::cloud::AzureCredentials;
using rfs::cloud::AzureOptions;
using rfs::cloud::AzureRepo;
using rfs::cloud::GcsOptions;
using rfs::cloud::GcsRepo;

// Azurite's published development key (not a secret).
constexpr const char* kDevKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

rfs::cloud::GetEnv Env(std::map<std::string, std::string> vars) {
  auto held = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [held](const char* name) -> const char* {
    auto it = held->find(name);
    return it == held->end() ? nullptr : it->second.c_str();
  };
}

GcsOptions GcsLocal(const rfs::test::LocalCloud& cloud) {
  GcsOptions options;
  options.endpoint = cloud.endpoint();
  options.getenv = Env({});
  return options;
}

AzureOptions AzureLocal(const rfs::test::LocalCloud& cloud) {
  AzureOptions options;
  options.endpoint = cloud.endpoint() + "/devstoreaccount1";
  options.getenv = Env({{"AZURE_STORAGE_ACCOUNT", "devstoreaccount1"},
                        {"AZURE_STORAGE_KEY", cloud.environment().at("AZURE_STORAGE_KEY")}});
  return options;
}

// In front of the proxy: a fraction of requests answered 429 (throttled), never passed on (the
// proxy's own faults are 503, 500, resets and bodies cut short). Counts what it did.
class ThrottlingTransport final : public rfs::net::IHttpTransport {
 public:
  ThrottlingTransport(std::shared_ptr<rfs::net::IHttpTransport> inner, double rate)
      : inner_(std::move(inner)), rate_(rate) {}
  absl::StatusOr<rfs::net::HttpResponse> Send(const rfs::net::HttpRequest& request) override {
    bool throttle = false;
    {
      std::lock_guard lock(mu_);
      throttle = std::uniform_real_distribution<double>(0, 1)(rng_) < rate_;
    }
    if (!throttle) return inner_->Send(request);
    ++throttled;
    return rfs::net::HttpResponse{
        429, {}, "{\"error\":{\"code\":429,\"message\":\"rate limit exceeded\"}}"};
  }
  std::string endpoint() const override { return inner_->endpoint(); }

  std::atomic<int> throttled{0};

 private:
  std::shared_ptr<rfs::net::IHttpTransport> inner_;
  double rate_;
  std::mutex mu_;
  std::mt19937 rng_{7};
};

// A fresh 2048-bit RSA key as PKCS#8 PEM, and its public half.
std::pair<std::string, std::shared_ptr<EVP_PKEY>> RsaKey() {
  std::shared_ptr<EVP_PKEY> key(EVP_RSA_gen(2048), EVP_PKEY_free);
  REQUIRE(key != nullptr);
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  REQUIRE(PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) ==
          1);
  char* data = nullptr;
  const long length = BIO_get_mem_data(bio.get(), &data);
  return {std::string(data, static_cast<size_t>(length)), key};
}

std::string Base64UrlDecode(std::string text) {
  for (char& c : text) c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (text.size() % 4 != 0) text += '=';
  auto bytes = rfs::core::Base64Decode(text);
  REQUIRE(bytes.ok());
  return std::string(bytes->begin(), bytes->end());
}

// Whether the JWT's RS256 signature verifies with `key`.
bool JwtVerifies(const std::string& jwt, EVP_PKEY* key) {
  const size_t dot = jwt.rfind('.');
  const std::string input = jwt.substr(0, dot);
  const std::string signature = Base64UrlDecode(jwt.substr(dot + 1));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  return EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key) == 1 &&
         EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                          signature.size(), reinterpret_cast<const unsigned char*>(input.data()),
                          input.size()) == 1;
}

std::map<std::string, std::string> FormFields(const std::string& body) {
  std::map<std::string, std::string> out;
  size_t at = 0;
  while (at <= body.size()) {
    const size_t amp = std::min(body.find('&', at), body.size());
    const std::string part = body.substr(at, amp - at);
    const size_t equals = part.find('=');
    out[part.substr(0, equals)] = rfs::net::PercentDecode(part.substr(equals + 1));
    at = amp + 1;
  }
  return out;
}

std::vector<std::filesystem::path> CorpusRepositories(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_directory() || !std::filesystem::is_directory(entry.path() / "indices")) continue;
    for (const char* marker : {"index.latest", "index", "index-0"}) {
      if (std::filesystem::exists(entry.path() / marker)) {
        out.push_back(entry.path());
        break;
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("GCS and Azure URIs name a bucket or container and a prefix", "[cloud]") {
  auto gs = rfs::cloud::ParseGcsUri("gs://my-bucket/snapshots/prod/");
  REQUIRE(gs.ok());
  CHECK(gs->bucket == "my-bucket");
  CHECK(gs->prefix == "snapshots/prod/");
  CHECK(rfs::cloud::ParseGcsUri("gs://my_bucket.example.com")->prefix.empty());
  for (const char* bad : {"gs://B", "gs://", "gs:///x", "s3://bucket/x", "gs://-bucket/x"}) {
    INFO(bad);
    CHECK(absl::IsInvalidArgument(rfs::cloud::ParseGcsUri(bad).status()));
  }
  auto az = rfs::cloud::ParseAzureUri("az://snapshots//prod//x/");
  REQUIRE(az.ok());
  CHECK(az->bucket == "snapshots");
  CHECK(az->prefix == "prod//x/");
  for (const char* bad : {"az://Snapshots/x", "az://a--b/x", "az://ab", "gs://bucket/x", "az://"}) {
    INFO(bad);
    CHECK(absl::IsInvalidArgument(rfs::cloud::ParseAzureUri(bad).status()));
  }
  auto endpoint = rfs::cloud::EndpointUrl::Parse("http://127.0.0.1:10000/devstoreaccount1/",
                                                 "--azure-endpoint");
  REQUIRE(endpoint.ok());
  CHECK(endpoint->origin == "http://127.0.0.1:10000");
  CHECK(endpoint->path == "/devstoreaccount1");
  CHECK(endpoint->host == "127.0.0.1");
  CHECK_FALSE(endpoint->tls);
  CHECK(absl::IsInvalidArgument(
      rfs::cloud::EndpointUrl::Parse("https://user:pw@host", "--gcs-endpoint").status()));
  CHECK(absl::IsInvalidArgument(
      rfs::cloud::EndpointUrl::Parse("ftp://host", "--gcs-endpoint").status()));
}

TEST_CASE("Azure SharedKey strings to sign follow the published canonicalization", "[cloud]") {
  // The canonicalized resources of the examples in "Authorize with Shared Key" (Microsoft's
  // Storage REST documentation): parameters by name, several values of one name sorted and
  // comma-joined.
  const std::string metadata = rfs::cloud::AzureSharedKeyStringToSign(
      "GET", "/mycontainer?restype=container&comp=metadata", {}, 0, "myaccount");
  CHECK(metadata.ends_with("\n/myaccount/mycontainer\ncomp:metadata\nrestype:container"));
  const std::string list = rfs::cloud::AzureSharedKeyStringToSign(
      "GET",
      "/mycontainer?restype=container&comp=list&include=snapshots&include=metadata&include="
      "uncommittedblobs",
      {}, 0, "myaccount");
  CHECK(list.ends_with(
      "\n/myaccount/mycontainer\ncomp:list\ninclude:metadata,snapshots,uncommittedblobs\n"
      "restype:container"));

  // A Put Blob, signed with Azurite's published key; the signature was computed independently
  // (Python's hmac over the same string).
  const rfs::net::HttpHeaders headers = {{"x-ms-version", "2021-08-06"},
                                         {"Content-Type", "text/plain"},
                                         {"x-ms-blob-type", "BlockBlob"},
                                         {"x-ms-date", "Wed, 02 Dec 2026 14:00:00 GMT"}};
  const std::string put = rfs::cloud::AzureSharedKeyStringToSign(
      "PUT", "/mycontainer/dir/blob.txt?timeout=30", headers, 11, "myaccount");
  CHECK(put ==
        "PUT\n\n\n11\n\ntext/plain\n\n\n\n\n\n\nx-ms-blob-type:BlockBlob\n"
        "x-ms-date:Wed, 02 Dec 2026 14:00:00 GMT\nx-ms-version:2021-08-06\n"
        "/myaccount/mycontainer/dir/blob.txt\ntimeout:30");
  auto signature = rfs::cloud::AzureSharedKeySignature(put, kDevKey);
  REQUIRE(signature.ok());
  CHECK(*signature == "kpodrujWXQaC+d21MrhURcsB+rfxqiGz8LeqNQ0+4mY=");
  // Decoded query values, and an empty Content-Length for a request without a body.
  const std::string get =
      rfs::cloud::AzureSharedKeyStringToSign("GET", "/devstoreaccount1/c?prefix=a%2Fb%2F&comp=list",
                                             {{"x-ms-range", "bytes=0-9"}}, 0, "devstoreaccount1");
  CHECK(get.starts_with("GET\n\n\n\n"));
  CHECK(get.ends_with(
      "x-ms-range:bytes=0-9\n/devstoreaccount1/devstoreaccount1/c\ncomp:list\nprefix:a/b/"));
  const auto bad_key = rfs::cloud::AzureSharedKeySignature(put, "not base64!");
  CHECK(absl::IsInvalidArgument(bad_key.status()));
  CHECK(bad_key.status().message().find("not base64!") == std::string::npos);
}

TEST_CASE("Azure connection strings give the account, key or SAS, and the endpoint", "[cloud]") {
  auto portal = rfs::cloud::AzureConnectionString::Parse(
      "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;"
      "EndpointSuffix=core.chinacloudapi.cn");
  REQUIRE(portal.ok());
  CHECK(portal->account == "acct");
  CHECK(portal->key == "a2V5");
  CHECK(portal->blob_endpoint == "https://acct.blob.core.chinacloudapi.cn");
  auto sas = rfs::cloud::AzureConnectionString::Parse(
      "BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature=sv=2021-08-06&ss=b&"
      "sig=abc%3D");
  REQUIRE(sas.ok());
  CHECK(sas->sas == "sv=2021-08-06&ss=b&sig=abc%3D");
  CHECK(sas->blob_endpoint == "https://acct.blob.core.windows.net/");
  auto dev = rfs::cloud::AzureConnectionString::Parse("UseDevelopmentStorage=true");
  REQUIRE(dev.ok());
  CHECK(dev->account == "devstoreaccount1");
  CHECK(dev->blob_endpoint == "http://127.0.0.1:10000/devstoreaccount1");
  CHECK(absl::IsInvalidArgument(rfs::cloud::AzureConnectionString::Parse("garbage").status()));
  auto keyless = rfs::cloud::AzureConnectionString::Parse("AccountKey=c2VjcmV0");
  CHECK(absl::IsInvalidArgument(keyless.status()));
  CHECK(keyless.status().message().find("c2VjcmV0") == std::string::npos);
}

TEST_CASE("Azure credentials are found in the SDKs' order", "[cloud]") {
  using Kind = AzureCredentials::Kind;
  auto resolve = [](std::map<std::string, std::string> env, std::string account = "") {
    rfs::cloud::AzureCredentialOptions options;
    options.getenv = Env(std::move(env));
    options.account = std::move(account);
    return rfs::cloud::ResolveAzureCredentials(options);
  };
  auto connection =
      resolve({{"AZURE_STORAGE_CONNECTION_STRING", "AccountName=fromstring;AccountKey=a2V5"},
               {"AZURE_STORAGE_KEY", "b3RoZXI="},
               {"AZURE_STORAGE_ACCOUNT", "fromenv"}});
  REQUIRE(connection.ok());
  CHECK(connection->kind == Kind::kSharedKey);
  CHECK(connection->account == "fromstring");
  CHECK(connection->secret == "a2V5");
  CHECK(connection->source == "account key from AZURE_STORAGE_CONNECTION_STRING");
  CHECK(resolve({{"AZURE_STORAGE_CONNECTION_STRING", "AccountName=fromstring;AccountKey=a2V5"}},
                "flag")
            ->account == "flag");
  auto key = resolve({{"AZURE_STORAGE_ACCOUNT", "acct"},
                      {"AZURE_STORAGE_KEY", "a2V5"},
                      {"AZURE_STORAGE_SAS_TOKEN", "?sv=1&sig=x"}});
  REQUIRE(key.ok());
  CHECK(key->kind == Kind::kSharedKey);
  CHECK(key->source == "account key from AZURE_STORAGE_KEY");
  auto sas =
      resolve({{"AZURE_STORAGE_ACCOUNT", "acct"}, {"AZURE_STORAGE_SAS_TOKEN", "?sv=1&sig=x"}});
  REQUIRE(sas.ok());
  CHECK(sas->kind == Kind::kSas);
  CHECK(sas->secret == "sv=1&sig=x");
  auto anonymous = resolve({{"AZURE_STORAGE_ACCOUNT", "acct"}, {"AZURE_IMDS_DISABLED", "true"}});
  REQUIRE(anonymous.ok());
  CHECK(anonymous->kind == Kind::kNone);

  // Managed identity: the instance metadata service (on loopback here), asked with Metadata:
  // true for Storage's resource, only when nothing else is given and no endpoint either.
  rfs::test::ScriptedHttpServer imds([](const rfs::net::HttpRequest& request) {
    if (rfs::net::FindHeader(request.headers, "Metadata").value_or("") != "true") {
      return rfs::net::HttpResponse{400, {}, ""};
    }
    return rfs::net::HttpResponse{200,
                                  {{"Content-Type", "application/json"}},
                                  "{\"access_token\":\"imds-token\",\"expires_in\":\"3599\"}"};
  });
  auto managed = resolve(
      {{"AZURE_STORAGE_ACCOUNT", "acct"}, {"AZURE_POD_IDENTITY_AUTHORITY_HOST", imds.endpoint()}});
  REQUIRE(managed.ok());
  CHECK(managed->kind == Kind::kBearer);
  CHECK(managed->tokens->Current().value() == "imds-token");
  CHECK(imds.requests().front().target ==
        "/metadata/identity/oauth2/token?api-version=2018-02-01&resource="
        "https%3A%2F%2Fstorage.azure.com%2F");
  rfs::cloud::AzureCredentialOptions with_endpoint;
  with_endpoint.getenv = Env(
      {{"AZURE_STORAGE_ACCOUNT", "acct"}, {"AZURE_POD_IDENTITY_AUTHORITY_HOST", imds.endpoint()}});
  with_endpoint.endpoint_given = true;
  CHECK(rfs::cloud::ResolveAzureCredentials(with_endpoint)->kind == Kind::kNone);
  CHECK(imds.requests().size() == 1);
  auto nobody = resolve(
      {{"AZURE_STORAGE_ACCOUNT", "acct"}, {"AZURE_POD_IDENTITY_AUTHORITY_HOST", "127.0.0.1:1"}});
  REQUIRE(nobody.ok());
  CHECK(nobody->kind == Kind::kNone);
  CHECK(nobody->source.find("no managed identity answered") != std::string::npos);
  CHECK(absl::IsInvalidArgument(resolve({}).status()));  // no account anywhere
  CHECK(absl::IsInvalidArgument(
      resolve({{"AZURE_STORAGE_ACCOUNT", "acct"}, {"AZURE_STORAGE_KEY", "not base64!"}}).status()));

  // A service principal's token from a loopback Entra ID double: the client credentials grant
  // for Storage's scope, fetched once and reused until it nears its expiry.
  std::atomic<int> issued{0};
  rfs::test::ScriptedHttpServer entra([&](const rfs::net::HttpRequest& request) {
    ++issued;
    return rfs::net::HttpResponse{
        200,
        {{"Content-Type", "application/json"}},
        "{\"token_type\":\"Bearer\",\"expires_in\":3600,\"access_token\":\"entra-token-" +
            std::to_string(issued.load()) + "\"}"};
  });
  rfs::core::FakeClock clock;
  rfs::cloud::AzureCredentialOptions sp;
  sp.getenv = Env({{"AZURE_STORAGE_ACCOUNT", "acct"},
                   {"AZURE_CLIENT_ID", "client-1"},
                   {"AZURE_TENANT_ID", "tenant-1"},
                   {"AZURE_CLIENT_SECRET", "s3cr3t"},
                   {"AZURE_AUTHORITY_HOST", entra.endpoint()}});
  sp.clock = &clock;
  auto principal = rfs::cloud::ResolveAzureCredentials(sp);
  REQUIRE(principal.ok());
  CHECK(principal->kind == Kind::kBearer);
  CHECK(principal->source.find("s3cr3t") == std::string::npos);
  CHECK(principal->tokens->Current().value() == "entra-token-1");
  CHECK(principal->tokens->Current().value() == "entra-token-1");
  clock.Advance(std::chrono::minutes(56));  // within five minutes of the expiry
  CHECK(principal->tokens->Current().value() == "entra-token-2");
  const auto requests = entra.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].target == "/tenant-1/oauth2/v2.0/token");
  const auto form = FormFields(requests[0].body);
  CHECK(form.at("grant_type") == "client_credentials");
  CHECK(form.at("client_id") == "client-1");
  CHECK(form.at("client_secret") == "s3cr3t");
  CHECK(form.at("scope") == "https://storage.azure.com/.default");

  // The token endpoint over plain http to another host is refused before anything is sent.
  sp.getenv = Env({{"AZURE_STORAGE_ACCOUNT", "acct"},
                   {"AZURE_CLIENT_ID", "client-1"},
                   {"AZURE_TENANT_ID", "tenant-1"},
                   {"AZURE_CLIENT_SECRET", "s3cr3t"},
                   {"AZURE_AUTHORITY_HOST", "http://login.example.invalid"}});
  auto plain = rfs::cloud::ResolveAzureCredentials(sp);
  REQUIRE(plain.ok());
  const auto refused = plain->tokens->Current();
  CHECK(absl::IsInvalidArgument(refused.status()));
  CHECK(refused.status().message().find("plain http") != std::string::npos);
  CHECK(refused.status().message().find("s3cr3t") == std::string::npos);
}

TEST_CASE(
    "GCS credentials: an emulator, a service-account key, an authorized user, the metadata "
    "server",
    "[cloud]") {
  auto resolve = [](std::map<std::string, std::string> env, bool endpoint_given,
                    const rfs::core::IClock* clock = nullptr) {
    rfs::cloud::GcsCredentialOptions options;
    options.getenv = Env(std::move(env));
    options.endpoint_given = endpoint_given;
    options.clock = clock;
    return rfs::cloud::ResolveGcsCredentials(options);
  };
  rfs::test::TempDir dir("rfs-gcs-credentials");
  // STORAGE_EMULATOR_HOST wins over any file, as in the Google libraries.
  auto emulator = resolve({{"STORAGE_EMULATOR_HOST", "127.0.0.1:4443"},
                           {"GOOGLE_APPLICATION_CREDENTIALS", dir.File("none.json")}},
                          false);
  REQUIRE(emulator.ok());
  CHECK(emulator->tokens == nullptr);
  // With an endpoint given or NO_GCE_CHECK, no metadata server is asked: anonymous.
  for (auto env :
       {std::map<std::string, std::string>{{"HOME", dir.str()}},
        std::map<std::string, std::string>{{"HOME", dir.str()}, {"NO_GCE_CHECK", "True"}}}) {
    auto none = resolve(env, env.size() == 1);
    REQUIRE(none.ok());
    CHECK(none->tokens == nullptr);
  }
  CHECK(absl::IsInvalidArgument(
      resolve({{"GOOGLE_APPLICATION_CREDENTIALS", dir.File("missing.json")}}, true).status()));

  // A service-account key: an RS256 JWT for the key's token_uri (a loopback double), exchanged
  // for a token that is reused until it nears its expiry.
  auto [pem, public_key] = RsaKey();
  std::atomic<int> issued{0};
  rfs::test::ScriptedHttpServer oauth([&](const rfs::net::HttpRequest&) {
    ++issued;
    return rfs::net::HttpResponse{200,
                                  {{"Content-Type", "application/json"}},
                                  "{\"access_token\":\"ya29.token-" +
                                      std::to_string(issued.load()) +
                                      "\",\"expires_in\":3599,\"token_type\":\"Bearer\"}"};
  });
  const std::string token_uri = oauth.endpoint() + "/token";
  boost::json::object key_file{{"type", "service_account"},
                               {"project_id", "p"},
                               {"private_key_id", "kid-1"},
                               {"private_key", pem},
                               {"client_email", "reader@p.iam.gserviceaccount.com"},
                               {"token_uri", token_uri}};
  {
    std::ofstream out(dir.File("key.json"));
    out << boost::json::serialize(key_file);
  }
  rfs::core::FakeClock clock;
  auto service = resolve({{"GOOGLE_APPLICATION_CREDENTIALS", dir.File("key.json")}}, false, &clock);
  REQUIRE(service.ok());
  REQUIRE(service->tokens != nullptr);
  CHECK(service->source.find("reader@p.iam.gserviceaccount.com") != std::string::npos);
  CHECK(service->source.find("PRIVATE KEY") == std::string::npos);
  CHECK(service->tokens->Current().value() == "ya29.token-1");
  CHECK(service->tokens->Current().value() == "ya29.token-1");
  clock.Advance(std::chrono::minutes(55) + std::chrono::seconds(30));
  CHECK(service->tokens->Current().value() == "ya29.token-2");
  auto requests = oauth.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].target == "/token");
  auto form = FormFields(requests[0].body);
  CHECK(form.at("grant_type") == "urn:ietf:params:oauth:grant-type:jwt-bearer");
  const std::string jwt = form.at("assertion");
  CHECK(JwtVerifies(jwt, public_key.get()));
  const size_t first_dot = jwt.find('.');
  const auto header = boost::json::parse(Base64UrlDecode(jwt.substr(0, first_dot))).as_object();
  CHECK(header.at("alg") == "RS256");
  CHECK(header.at("kid") == "kid-1");
  const auto claims =
      boost::json::parse(Base64UrlDecode(jwt.substr(first_dot + 1, jwt.rfind('.') - first_dot - 1)))
          .as_object();
  CHECK(claims.at("iss") == "reader@p.iam.gserviceaccount.com");
  CHECK(claims.at("aud").as_string() == token_uri);
  CHECK(claims.at("scope") == "https://www.googleapis.com/auth/devstorage.read_write");
  CHECK(claims.at("exp").as_int64() - claims.at("iat").as_int64() == 3600);
  // A tampered JWT does not verify (the check above could fail).
  std::string tampered = jwt;
  tampered[first_dot + 2] = tampered[first_dot + 2] == 'A' ? 'B' : 'A';
  CHECK_FALSE(JwtVerifies(tampered, public_key.get()));

  // gcloud's application-default file of an authorized user: its refresh token exchanged.
  std::filesystem::create_directories(dir.path() / "gcloud");
  {
    std::ofstream out(dir.File("gcloud/application_default_credentials.json"));
    out << boost::json::serialize(boost::json::object{{"type", "authorized_user"},
                                                      {"client_id", "cid"},
                                                      {"client_secret", "csecret"},
                                                      {"refresh_token", "1//refresh"},
                                                      {"token_uri", token_uri}});
  }
  auto user = resolve({{"CLOUDSDK_CONFIG", dir.File("gcloud")}}, false, &clock);
  REQUIRE(user.ok());
  CHECK(user->tokens->Current().value() == "ya29.token-3");
  form = FormFields(oauth.requests().back().body);
  CHECK(form.at("grant_type") == "refresh_token");
  CHECK(form.at("refresh_token") == "1//refresh");
  CHECK(user->source.find("csecret") == std::string::npos);

  // A file of a kind rfs does not read names its type.
  {
    std::ofstream out(dir.File("other.json"));
    out << "{\"type\":\"impersonated_service_account\"}";
  }
  auto other = resolve({{"GOOGLE_APPLICATION_CREDENTIALS", dir.File("other.json")}}, false);
  CHECK(absl::IsInvalidArgument(other.status()));
  CHECK(other.status().message().find("impersonated_service_account") != std::string::npos);

  // The metadata server (GCE_METADATA_HOST on loopback here), asked with Metadata-Flavor.
  rfs::test::ScriptedHttpServer metadata([](const rfs::net::HttpRequest& request) {
    if (rfs::net::FindHeader(request.headers, "Metadata-Flavor").value_or("") != "Google") {
      return rfs::net::HttpResponse{403, {}, ""};
    }
    return rfs::net::HttpResponse{200,
                                  {{"Content-Type", "application/json"}},
                                  "{\"access_token\":\"gce-token\",\"expires_in\":1800}"};
  });
  const std::string host = metadata.endpoint().substr(7);  // host:port
  auto gce = resolve({{"HOME", dir.str()}, {"GCE_METADATA_HOST", host}}, false, &clock);
  REQUIRE(gce.ok());
  REQUIRE(gce->tokens != nullptr);
  CHECK(gce->tokens->Current().value() == "gce-token");
  CHECK(metadata.requests().front().target ==
        "/computeMetadata/v1/instance/service-accounts/default/token");
  // Nothing answering there: anonymous, saying so.
  auto nobody = resolve({{"HOME", dir.str()}, {"GCE_METADATA_HOST", "127.0.0.1:1"}}, false);
  REQUIRE(nobody.ok());
  CHECK(nobody->tokens == nullptr);
  CHECK(nobody->source.find("no metadata server") != std::string::npos);
}

TEST_CASE(
    "GCS external-account files: a token from a file, a URL, a command or AWS, exchanged at "
    "STS and for a service account",
    "[cloud]") {
  rfs::test::TempDir dir("rfs-gcs-external");
  std::atomic<int> exchanges{0};
  // One loopback double for Google's STS and IAM Credentials and for the subject-token sources.
  rfs::test::ScriptedHttpServer google([&](const rfs::net::HttpRequest& request) {
    auto json = [](std::string body) {
      return rfs::net::HttpResponse{200, {{"Content-Type", "application/json"}}, std::move(body)};
    };
    if (request.target == "/v1/token") {
      if (FormFields(request.body).at("subject_token") == "rejected") {
        return rfs::net::HttpResponse{
            400, {}, "{\"error\":\"invalid_grant\",\"error_description\":\"bad subject\"}"};
      }
      ++exchanges;
      return json("{\"access_token\":\"federated-" + std::to_string(exchanges.load()) +
                  "\",\"issued_token_type\":\"urn:ietf:params:oauth:token-type:access_token\","
                  "\"token_type\":\"Bearer\",\"expires_in\":3600}");
    }
    if (request.target.ends_with(":generateAccessToken")) {
      const auto bearer = rfs::net::FindHeader(request.headers, "Authorization").value_or("");
      return json("{\"accessToken\":\"sa-for-" + bearer.substr(7) +
                  "\",\"expireTime\":\"2099-01-01T00:00:00Z\"}");
    }
    if (request.target == "/identity") {
      if (rfs::net::FindHeader(request.headers, "Metadata").value_or("") != "True") {
        return rfs::net::HttpResponse{400, {}, ""};
      }
      return json("{\"access_token\":\"azure-jwt\",\"expires_in\":\"3599\"}");
    }
    if (request.target == "/aws/zone") return rfs::net::HttpResponse{200, {}, "us-west-1c"};
    if (request.target == "/aws/creds") return rfs::net::HttpResponse{200, {}, "reader-role"};
    if (request.target == "/aws/creds/reader-role") {
      return json(
          "{\"AccessKeyId\":\"ASIAROLE\",\"SecretAccessKey\":\"role-secret\","
          "\"Token\":\"role-session\"}");
    }
    return rfs::net::HttpResponse{404, {}, ""};
  });
  const std::string audience =
      "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q";
  auto write_file = [&](const std::string& name, boost::json::object source,
                        boost::json::object extra = {}) {
    boost::json::object file{{"type", "external_account"},
                             {"audience", audience},
                             {"subject_token_type", "urn:ietf:params:oauth:token-type:jwt"},
                             {"token_url", google.endpoint() + "/v1/token"},
                             {"credential_source", std::move(source)}};
    for (auto& [key, value] : extra) file[key] = value;
    std::ofstream(dir.File(name)) << boost::json::serialize(file);
    return dir.File(name);
  };
  rfs::core::FakeClock clock;
  auto resolve = [&](const std::string& file, std::map<std::string, std::string> env = {}) {
    env["GOOGLE_APPLICATION_CREDENTIALS"] = file;
    rfs::cloud::GcsCredentialOptions options;
    options.getenv = Env(std::move(env));
    options.endpoint_given = true;
    options.clock = &clock;
    return rfs::cloud::ResolveGcsCredentials(options);
  };
  auto last_exchange = [&] {
    for (auto& request : std::views::reverse(google.requests())) {
      if (request.target == "/v1/token") return FormFields(request.body);
    }
    return std::map<std::string, std::string>{};
  };

  // A token file (Kubernetes' projected token), exchanged at STS, then for a service account.
  std::ofstream(dir.File("token")) << "k8s-jwt-1";
  const std::string impersonate = google.endpoint() +
                                  "/v1/projects/-/serviceAccounts/reader@p.iam.gserviceaccount.com"
                                  ":generateAccessToken";
  auto from_file = resolve(write_file(
      "file.json", {{"file", dir.File("token")}},
      {{"service_account_impersonation_url", impersonate},
       {"service_account_impersonation", boost::json::object{{"token_lifetime_seconds", 1800}}}}));
  REQUIRE(from_file.ok());
  CHECK(from_file->source.find("external account") != std::string::npos);
  CHECK(from_file->source.find("impersonating") != std::string::npos);
  CHECK(from_file->tokens->Current().value() == "sa-for-federated-1");
  auto form = last_exchange();
  CHECK(form.at("grant_type") == "urn:ietf:params:oauth:grant-type:token-exchange");
  CHECK(form.at("audience") == audience);
  CHECK(form.at("subject_token") == "k8s-jwt-1");
  CHECK(form.at("subject_token_type") == "urn:ietf:params:oauth:token-type:jwt");
  CHECK(form.at("requested_token_type") == "urn:ietf:params:oauth:token-type:access_token");
  CHECK(form.at("scope") == "https://www.googleapis.com/auth/cloud-platform");
  const auto generate = google.requests().back();
  const auto generate_body = boost::json::parse(generate.body).as_object();
  CHECK(generate_body.at("lifetime") == "1800s");
  CHECK(generate_body.at("scope").as_array().at(0) ==
        "https://www.googleapis.com/auth/devstorage.read_write");
  // Kept while it lasts (30 minutes, refreshed 5 before), then fetched with the file read again.
  clock.Advance(std::chrono::minutes(20));
  CHECK(from_file->tokens->Current().value() == "sa-for-federated-1");
  std::ofstream(dir.File("token")) << "k8s-jwt-2";
  clock.Advance(std::chrono::minutes(6));
  CHECK(from_file->tokens->Current().value() == "sa-for-federated-2");
  CHECK(last_exchange().at("subject_token") == "k8s-jwt-2");

  // A URL (Azure's IMDS, here on loopback) with headers and a JSON answer; no impersonation:
  // the federated token is the access token, for the storage scope.
  auto from_url = resolve(write_file(
      "url.json", {{"url", google.endpoint() + "/identity"},
                   {"headers", boost::json::object{{"Metadata", "True"}}},
                   {"format", boost::json::object{{"type", "json"},
                                                  {"subject_token_field_name", "access_token"}}}}));
  REQUIRE(from_url.ok());
  CHECK(from_url->tokens->Current().value().starts_with("federated-"));
  CHECK(last_exchange().at("subject_token") == "azure-jwt");
  CHECK(last_exchange().at("scope") == "https://www.googleapis.com/auth/devstorage.read_write");

  // A command, run without a shell, only when the user allows executables.
  {
    std::ofstream script(dir.File("token-helper.sh"));
    script << "#!/bin/sh\n"
              "[ \"$GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE\" = 0 ] || exit 3\n"
              "[ \"$1\" = --fail ] && { echo '{\"version\":1,\"success\":false,\"code\":\"401\","
              "\"message\":\"no session\"}'; exit 0; }\n"
              "printf '{\"version\":1,\"success\":true,\"token_type\":"
              "\"urn:ietf:params:oauth:token-type:id_token\",\"id_token\":\"cmd-%s\","
              "\"expiration_time\":4102444800}' \"$GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE\"\n";
  }
  std::filesystem::permissions(dir.File("token-helper.sh"), std::filesystem::perms::owner_all);
  const std::string command_file = write_file(
      "exe.json", {{"executable", boost::json::object{{"command", dir.File("token-helper.sh")},
                                                      {"timeout_millis", 5000}}}});
  auto not_allowed = resolve(command_file);
  REQUIRE(not_allowed.ok());
  auto refused = not_allowed->tokens->Current();
  CHECK(absl::IsPermissionDenied(refused.status()));
  CHECK(refused.status().message().find("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES") !=
        std::string::npos);
  auto allowed = resolve(command_file, {{"GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES", "1"}});
  REQUIRE(allowed.ok());
  CHECK(allowed->tokens->Current().ok());
  CHECK(last_exchange().at("subject_token") == "cmd-urn:ietf:params:oauth:token-type:jwt");
  auto failing = resolve(
      write_file("exe-fail.json",
                 {{"executable",
                   boost::json::object{{"command", dir.File("token-helper.sh") + " --fail"}}}}),
      {{"GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES", "1"}});
  REQUIRE(failing.ok());
  auto failed = failing->tokens->Current();
  CHECK(absl::IsPermissionDenied(failed.status()));
  CHECK(failed.status().message().find("no session") != std::string::npos);

  // AWS: a signed GetCallerIdentity request, the region and keys from the environment...
  const boost::json::object aws_source{
      {"environment_id", "aws1"},
      {"region_url", google.endpoint() + "/aws/zone"},
      {"url", google.endpoint() + "/aws/creds"},
      {"regional_cred_verification_url",
       "https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15"}};
  const std::string aws_file = write_file("aws.json", aws_source);
  auto from_env = resolve(aws_file, {{"AWS_REGION", "eu-west-3"},
                                     {"AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"},
                                     {"AWS_SECRET_ACCESS_KEY", "env-secret"}});
  REQUIRE(from_env.ok());
  REQUIRE(from_env->tokens->Current().ok());
  auto signed_request =
      boost::json::parse(rfs::net::PercentDecode(last_exchange().at("subject_token"))).as_object();
  CHECK(signed_request.at("url") ==
        "https://sts.eu-west-3.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15");
  CHECK(signed_request.at("method") == "POST");
  std::map<std::string, std::string> headers;
  for (const auto& header : signed_request.at("headers").as_array()) {
    headers[std::string(header.at("key").as_string())] = header.at("value").as_string();
  }
  CHECK(headers.at("host") == "sts.eu-west-3.amazonaws.com");
  CHECK(headers.at("x-goog-cloud-target-resource") == audience);
  CHECK(headers.count("x-amz-security-token") == 0);
  CHECK(headers.at("Authorization").find("Credential=AKIDEXAMPLE/") != std::string::npos);
  CHECK(headers.at("Authorization").find("/eu-west-3/sts/aws4_request") != std::string::npos);
  CHECK(headers.at("Authorization").find("env-secret") == std::string::npos);
  // The signature is SigV4's over that request: signing it again at the same time agrees.
  rfs::net::HttpHeaders resigned{{"host", "sts.eu-west-3.amazonaws.com"},
                                 {"x-goog-cloud-target-resource", audience}};
  rfs::net::SigV4Options sign;
  sign.region = "eu-west-3";
  sign.service = "sts";
  sign.credentials.access_key_id = "AKIDEXAMPLE";
  sign.credentials.secret_access_key = "env-secret";
  sign.add_content_sha256_header = false;
  REQUIRE(rfs::net::SignSigV4("POST", "/?Action=GetCallerIdentity&Version=2011-06-15", "", resigned,
                              sign, clock.Now())
              .ok());
  CHECK(rfs::net::FindHeader(resigned, "Authorization").value() == headers.at("Authorization"));
  // ...or the region from region_url and the role's keys from the metadata url.
  auto from_metadata = resolve(aws_file);
  REQUIRE(from_metadata.ok());
  REQUIRE(from_metadata->tokens->Current().ok());
  signed_request =
      boost::json::parse(rfs::net::PercentDecode(last_exchange().at("subject_token"))).as_object();
  CHECK(signed_request.at("url").as_string().starts_with("https://sts.us-west-1.amazonaws.com"));
  headers.clear();
  for (const auto& header : signed_request.at("headers").as_array()) {
    headers[std::string(header.at("key").as_string())] = header.at("value").as_string();
  }
  CHECK(headers.at("x-amz-security-token") == "role-session");
  CHECK(headers.at("Authorization").find("Credential=ASIAROLE/") != std::string::npos);

  // Bad files and refusals name the problem.
  auto no_audience =
      resolve(write_file("bad.json", {{"file", dir.File("token")}}, {{"audience", ""}}));
  CHECK(absl::IsInvalidArgument(no_audience.status()));
  auto aws2 = resolve(write_file("aws2.json", {{"environment_id", "aws2"}}));
  CHECK(absl::IsInvalidArgument(aws2.status()));
  CHECK(aws2.status().message().find("aws2") != std::string::npos);
  auto plain = resolve(write_file("plain.json", {{"file", dir.File("token")}},
                                  {{"token_url", "http://sts.example.com/v1/token"}}));
  CHECK(absl::IsInvalidArgument(plain.status()));
  CHECK(plain.status().message().find("plain http") != std::string::npos);
  std::ofstream(dir.File("rejected")) << "rejected";
  auto rejected = resolve(write_file("rejected.json", {{"file", dir.File("rejected")}}));
  REQUIRE(rejected.ok());
  auto denied = rejected->tokens->Current();
  CHECK(absl::IsPermissionDenied(denied.status()));
  CHECK(denied.status().message().find("invalid_grant") != std::string::npos);
}

TEST_CASE(
    "a repository in GCS (fake-gcs-server) and in Azure (Azurite) reads exactly as from "
    "its folder",
    "[cloud][generated]") {
  auto generated = rfs::test::Generate(
      "--indices 2 --shards 2 --docs 300 --updates 20 --deletes 10 --segments 2 --seed 95");
  if (!generated) return;
  auto local = rfs::snapshot::FileSystemRepo::Open(generated->repo().string());
  REQUIRE(local.ok());
  std::map<std::string, std::vector<uint8_t>> from_folder;
  rfs::test::Walk(**local, "", from_folder);
  const auto expected = rfs::test::RepositoryDocuments(*local);
  CHECK_FALSE(expected.empty());

  for (const std::string kind : {"gcs", "azure"}) {
    DYNAMIC_SECTION(kind) {
      rfs::test::LocalCloud cloud(kind);
      cloud.Upload(generated->repo(), "snapshots", "one/two");
      std::shared_ptr<rfs::cloud::RangedObjectRepo> remote;
      std::shared_ptr<rfs::cloud::RangedObjectRepo> paged;
      if (kind == "gcs") {
        GcsOptions options = GcsLocal(cloud);
        options.whole_blob_bytes = 2048;  // Lucene files by range through the block cache
        options.read_block_bytes = 16 << 10;
        remote = GcsRepo::Open("gs://snapshots/one/two", options).value();
        options.list_page_keys = 2;
        paged = GcsRepo::Open("gs://snapshots/one/two/", options).value();
      } else {
        AzureOptions options = AzureLocal(cloud);
        options.whole_blob_bytes = 2048;
        options.read_block_bytes = 16 << 10;
        remote = AzureRepo::Open("az://snapshots/one/two", options).value();
        options.list_page_keys = 2;
        paged = AzureRepo::Open("az://snapshots/one/two/", options).value();
      }
      std::map<std::string, std::vector<uint8_t>> from_cloud, from_pages;
      rfs::test::Walk(*remote, "", from_cloud);
      CHECK(from_cloud.size() == from_folder.size());
      CHECK(from_cloud == from_folder);
      // Two keys a page: every listing follows its page tokens.
      rfs::test::Walk(*paged, "", from_pages);
      CHECK(from_pages == from_folder);
      CHECK(paged->ListBlobsBelow("").value().size() == from_folder.size());

      CHECK(rfs::test::RepositoryDocuments(remote) == expected);
      CHECK(remote->stats().fetched_block_bytes > 0);  // large blobs were read by range

      auto biggest = std::max_element(from_folder.begin(), from_folder.end(), [](auto& a, auto& b) {
        return a.second.size() < b.second.size();
      });
      auto file = remote->OpenBlob(biggest->first);
      REQUIRE(file.ok());
      CHECK((*file)->size() == biggest->second.size());
      CHECK(remote->BlobSize(biggest->first).value() == biggest->second.size());
      std::vector<uint8_t> past(2);
      CHECK(absl::IsDataLoss((*file)->ReadAt((*file)->size() - 1, past)));
      CHECK(absl::IsNotFound(remote->BlobSize("no-such-blob").status()));
      CHECK(absl::IsNotFound(remote->OpenBlob("indices/none/0/x").status()));
      CHECK(remote->ListBlobs("no-such-folder")->empty());

      // The failed-document stream's writes.
      REQUIRE(remote->PutObject("failed/one.ndjson", "{\"a\":1}\n", "application/x-ndjson").ok());
      CHECK(remote->ReadBlob("failed/one.ndjson").value() ==
            std::vector<uint8_t>{'{', '"', 'a', '"', ':', '1', '}', '\n'});

      // A container or bucket that is not there.
      std::shared_ptr<rfs::cloud::RangedObjectRepo> missing =
          kind == "gcs" ? std::shared_ptr<rfs::cloud::RangedObjectRepo>(
                              GcsRepo::Open("gs://no-such-bucket/x", GcsLocal(cloud)).value())
                        : AzureRepo::Open("az://no-such-container/x", AzureLocal(cloud)).value();
      const auto listed = missing->ListBlobs("");
      INFO(listed.status().ToString());
      CHECK(absl::IsNotFound(listed.status()));
      CHECK(listed.status().message().find("no-such-") != std::string::npos);
    }
  }
}

TEST_CASE("Azure refuses a wrong key or none, and reads with a connection string", "[cloud]") {
  rfs::test::LocalCloud cloud("azure");
  rfs::test::TempDir dir("rfs-azure-auth");
  std::filesystem::create_directories(dir.path() / "repo" / "indices");
  {
    std::ofstream out(dir.File("repo/index.latest"));
    out << "12345678";
  }
  cloud.Upload(dir.path() / "repo", "auth", "r");

  AzureOptions wrong = AzureLocal(cloud);
  wrong.getenv =
      Env({{"AZURE_STORAGE_ACCOUNT", "devstoreaccount1"},
           {"AZURE_STORAGE_KEY", "d3Jvbmcta2V5LW9mLXRoZS1yaWdodC1zaXplLWZvci1hLXRlc3Q="}});
  auto refused = AzureRepo::Open("az://auth/r", wrong).value()->ListBlobs("");
  INFO(refused.status().ToString());
  CHECK(absl::IsPermissionDenied(refused.status()));
  CHECK(refused.status().message().find("AZURE_STORAGE_KEY") != std::string::npos);
  CHECK(refused.status().message().find("d3Jvbmct") == std::string::npos);

  // The connection string alone: account, key and endpoint.
  AzureOptions by_string;
  by_string.getenv = Env(
      {{"AZURE_STORAGE_CONNECTION_STRING",
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" +
            std::string(kDevKey) + ";BlobEndpoint=" + cloud.endpoint() + "/devstoreaccount1;"}});
  auto repo = AzureRepo::Open("az://auth/r", by_string);
  REQUIRE(repo.ok());
  CHECK((*repo)->ReadBlob("index.latest").value().size() == 8);
  CHECK((*repo)->credential_source() == "account key from AZURE_STORAGE_CONNECTION_STRING");

  // Anonymous requests to a private container are refused, naming the credential source.
  AzureOptions anonymous = AzureLocal(cloud);
  anonymous.getenv = Env({{"AZURE_STORAGE_ACCOUNT", "devstoreaccount1"}});
  const auto denied = AzureRepo::Open("az://auth/r", anonymous).value()->ListBlobs("");
  CHECK((absl::IsPermissionDenied(denied.status()) || absl::IsNotFound(denied.status())));
  CHECK(denied.status().message().find("credentials: none") != std::string::npos);
}

TEST_CASE("GCS and Azure reads survive 503, 429, 500, resets and cut-short bodies",
          "[cloud][generated]") {
  auto generated = rfs::test::Generate(
      "--indices 1 --shards 2 --docs 200 --updates 10 --deletes 5 --segments 2 --seed 96");
  if (!generated) return;
  auto local = rfs::snapshot::FileSystemRepo::Open(generated->repo().string());
  REQUIRE(local.ok());
  const auto expected = rfs::test::RepositoryDocuments(*local);
  for (const std::string kind : {"gcs", "azure"}) {
    DYNAMIC_SECTION(kind) {
      rfs::test::LocalCloud cloud(kind);
      cloud.Upload(generated->repo(), "faults", "repo");
      // The suite's S3 proxy, passing requests on with their own credentials, fails a fifth of
      // them (503, 500, resets, bodies cut short); a tenth are throttled before it.
      rfs::test::S3ProxyOptions proxy_options;
      proxy_options.upstream = cloud.endpoint();
      proxy_options.pass_through = true;
      proxy_options.fault_rate = 0.2;
      rfs::test::S3Proxy proxy(proxy_options);
      rfs::net::HttpTransportOptions http;
      http.endpoint = proxy.endpoint();
      auto opened = rfs::net::BeastHttpTransport::Open(std::move(http));
      REQUIRE(opened.ok());
      auto throttling = std::make_shared<ThrottlingTransport>(
          std::shared_ptr<rfs::net::IHttpTransport>(*std::move(opened)), 0.1);
      std::shared_ptr<rfs::cloud::RangedObjectRepo> remote;
      if (kind == "gcs") {
        GcsOptions options = GcsLocal(cloud);
        options.transport = throttling;
        options.whole_blob_bytes = 256;
        options.read_block_bytes = 1024;  // many ranged GETs
        options.request_attempts = 10;
        remote = GcsRepo::Open("gs://faults/repo", options).value();
      } else {
        AzureOptions options = AzureLocal(cloud);
        options.transport = throttling;
        options.whole_blob_bytes = 256;
        options.read_block_bytes = 1024;  // many ranged GETs
        options.request_attempts = 10;
        remote = AzureRepo::Open("az://faults/repo", options).value();
      }
      CHECK(rfs::test::RepositoryDocuments(remote) == expected);
      INFO(proxy.requests() << " requests");
      CHECK(proxy.faults() >= 5);
      CHECK(proxy.faults(rfs::test::S3Proxy::Fault::kReset) +
                proxy.faults(rfs::test::S3Proxy::Fault::kTruncated) >
            0);
      CHECK(throttling->throttled.load() > 0);
    }
  }
}

TEST_CASE("every corpus repository uploaded to GCS and Azure reads back exactly as from its folder",
          "[cloud][corpus]") {
  auto root = rfs::test::CorpusRoot("corpus repositories in GCS and Azure");  // skips without it
  const auto repositories = CorpusRepositories(*root);
  REQUIRE(repositories.size() >= 10);
  for (const std::string kind : {"gcs", "azure"}) {
    DYNAMIC_SECTION(kind) {
      rfs::test::LocalCloud cloud(kind);
      cloud.Upload(*root, "corpus", "all");
      for (const auto& folder : repositories) {
        const std::string relative = std::filesystem::relative(folder, *root).generic_string();
        INFO(kind << " " << relative);
        auto local = rfs::snapshot::FileSystemRepo::Open(folder.string());
        REQUIRE(local.ok());
        std::shared_ptr<rfs::snapshot::ISourceRepo> remote;
        if (kind == "gcs") {
          GcsOptions options = GcsLocal(cloud);
          options.whole_blob_bytes = 4096;
          remote = GcsRepo::Open("gs://corpus/all/" + relative, options).value();
        } else {
          AzureOptions options = AzureLocal(cloud);
          options.whole_blob_bytes = 4096;
          remote = AzureRepo::Open("az://corpus/all/" + relative, options).value();
        }
        std::map<std::string, std::vector<uint8_t>> from_folder, from_cloud;
        rfs::test::Walk(**local, "", from_folder);
        rfs::test::Walk(*remote, "", from_cloud);
        CHECK(from_cloud == from_folder);
        rfs::test::CompareEveryShard(*local, remote);
      }
    }
  }
}

TEST_CASE("Azure requests carry the version and the SAS token, and credentials stay off plain http",
          "[cloud]") {
  rfs::test::ScriptedHttpServer azure([](const rfs::net::HttpRequest& request) {
    // Two pages: the first names a folder and a marker.
    const bool second = request.target.find("&marker=m%3D1") != std::string::npos;
    std::string body = "<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults><Blobs>" +
                       std::string(second ? "<Blob><Name>r/index-1</Name><Properties/></Blob>"
                                          : "<Blob><Name>r/index.latest</Name></Blob>"
                                            "<BlobPrefix><Name>r/indices/</Name></BlobPrefix>") +
                       "</Blobs><NextMarker>" + (second ? "" : "m=1") +
                       "</NextMarker></EnumerationResults>";
    return rfs::net::HttpResponse{200, {{"Content-Type", "application/xml"}}, body};
  });
  AzureOptions options;
  options.endpoint = azure.endpoint() + "/acct";
  options.getenv =
      Env({{"AZURE_STORAGE_ACCOUNT", "acct"}, {"AZURE_STORAGE_SAS_TOKEN", "?sv=1&sig=x%2B"}});
  auto repo = AzureRepo::Open("az://container/r", options);
  REQUIRE(repo.ok());
  CHECK((*repo)->credential_source() == "SAS token from AZURE_STORAGE_SAS_TOKEN");
  CHECK((*repo)->ListBlobs("").value() == std::vector<std::string>{"index-1", "index.latest"});
  CHECK((*repo)->ListFolders("").value() == std::vector<std::string>{"indices"});
  const auto requests = azure.requests();
  REQUIRE(requests.size() == 4);
  for (const auto& request : requests) {
    INFO(request.target);
    CHECK(request.target.starts_with("/acct/container?restype=container&comp=list&prefix=r%2F"));
    CHECK(request.target.ends_with("&sv=1&sig=x%2B"));
    CHECK(rfs::net::FindHeader(request.headers, "x-ms-version") == "2021-08-06");
    CHECK_FALSE(rfs::net::FindHeader(request.headers, "Authorization").has_value());
  }

  // With --refuse-plain-http-credentials, a key, a SAS or a token never goes to a host that is
  // not loopback over plain http: refused when the repository is opened, before any request.
  rfs::net::SetPlainHttpCredentialsPolicy(rfs::net::PlainHttpCredentials::kRefuse);
  AzureOptions remote;
  remote.endpoint = "http://blobs.example.invalid/acct";
  remote.getenv = Env({{"AZURE_STORAGE_ACCOUNT", "acct"}, {"AZURE_STORAGE_KEY", kDevKey}});
  const auto refused = AzureRepo::Open("az://container/r", remote);
  GcsOptions gcs;
  gcs.endpoint = "http://storage.example.invalid";
  gcs.credentials = rfs::cloud::GcsCredentials{std::make_shared<rfs::cloud::AccessTokenSource>(
                                                   "test",
                                                   []() -> absl::StatusOr<rfs::cloud::AccessToken> {
                                                     return absl::UnavailableError("not asked");
                                                   }),
                                               "test"};
  const auto gcs_refused = GcsRepo::Open("gs://bucket/r", gcs);
  // Without credentials there is nothing to protect: anonymous reads of a public bucket go.
  gcs.credentials = rfs::cloud::GcsCredentials{nullptr, "none"};
  const auto anonymous = GcsRepo::Open("gs://bucket/r", gcs);
  rfs::net::SetPlainHttpCredentialsPolicy(rfs::net::PlainHttpCredentials::kWarn);
  CHECK(absl::IsInvalidArgument(refused.status()));
  CHECK(refused.status().message().find("plain http") != std::string::npos);
  CHECK(absl::IsInvalidArgument(gcs_refused.status()));
  CHECK(anonymous.ok());
}
