// GCS and Azure credentials (see cloud_auth.hpp). Signatures come from OpenSSL's libcrypto.
#include "rfs/cloud/cloud_auth.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <boost/json.hpp>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include "rfs/core/base64.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/net/encoding.hpp"

#include "auth_support.hpp"

namespace rfs::cloud {

using core::StrCat;

using internal::ClockOr;
using internal::EnvOr;
using internal::JsonObject;
using internal::Lower;
using internal::ReadTextFile;
using internal::SendToUrl;
using internal::StringField;
using internal::TokenFromAnswer;

namespace {

std::string FormValue(std::string_view value) { return net::PercentEncode(value, false); }

}  // namespace

// --- Shared helpers (auth_support.hpp) ------------------------------------------------------

namespace internal {

const core::IClock& ClockOr(const core::IClock* clock) {
  return clock != nullptr ? *clock : core::SystemClock::Instance();
}

std::string EnvOr(const GetEnv& getenv, const char* name, std::string fallback) {
  const char* value = getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(StrCat("cannot open ", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError(StrCat("cannot read ", path));
  return text.str();
}

// A JSON object from a credentials file or a token answer; InvalidArgument naming `what`.
absl::StatusOr<boost::json::object> JsonObject(std::string_view text, std::string_view what) {
  auto parsed = net::ParseJson(text);
  if (!parsed || !parsed->is_object()) {
    return absl::InvalidArgumentError(StrCat(what, " is not a JSON object"));
  }
  return parsed->as_object();
}

std::string StringField(const boost::json::object& object, std::string_view key) {
  const auto* value = object.if_contains(key);
  return value != nullptr && value->is_string() ? std::string(value->as_string()) : "";
}

// A GET or POST to a full URL (for token endpoints and the metadata server).
absl::StatusOr<net::HttpResponse> SendToUrl(std::string_view url, net::HttpRequest request,
                                            std::chrono::milliseconds connect_timeout) {
  RFS_ASSIGN_OR_RETURN(EndpointUrl endpoint, EndpointUrl::Parse(url, "token URL"));
  // The path and query stay in the target; the origin is the transport's endpoint.
  const size_t path_start = url.find('/', url.find("://") + 3);
  request.target = path_start == std::string_view::npos ? "/" : std::string(url.substr(path_start));
  net::HttpTransportOptions http;
  http.endpoint = endpoint.origin;
  http.connect_timeout = connect_timeout;
  http.response_timeout = std::chrono::milliseconds(30'000);
  RFS_ASSIGN_OR_RETURN(auto transport, net::BeastHttpTransport::Open(std::move(http)));
  return transport->Send(request);
}

absl::StatusOr<AccessToken> TokenFromAnswer(const net::HttpResponse& response,
                                            std::string_view what, const core::IClock* clock) {
  if (response.status != 200) {
    // The error fields of an OAuth answer name the problem (invalid_grant, ...) without secrets.
    std::string reason;
    if (auto body = JsonObject(response.body, what); body.ok()) {
      reason = StringField(*body, "error");
      const std::string description = StringField(*body, "error_description");
      if (!description.empty()) reason += StrCat(reason.empty() ? "" : ": ", description);
    }
    const std::string text =
        StrCat(what, ": HTTP ", response.status, reason.empty() ? "" : " ", reason);
    if (response.status == 400 || response.status == 401 || response.status == 403) {
      return absl::PermissionDeniedError(text);
    }
    return absl::UnavailableError(text);
  }
  RFS_ASSIGN_OR_RETURN(boost::json::object body, JsonObject(response.body, what));
  AccessToken token;
  token.token = StringField(body, "access_token");
  if (token.token.empty()) {
    return absl::DataLossError(StrCat(what, ": the answer has no access_token"));
  }
  int64_t expires_in = 3600;
  if (const auto* value = body.if_contains("expires_in")) {
    if (value->is_int64()) {
      expires_in = value->as_int64();
    } else if (value->is_string()) {
      expires_in = std::atoll(value->as_string().c_str());
    }
  }
  token.expires = ClockOr(clock).Now() + std::chrono::seconds(std::max<int64_t>(expires_in, 0));
  return token;
}

absl::StatusOr<EndpointUrl> SecureTokenUrl(std::string_view url, std::string_view what) {
  RFS_ASSIGN_OR_RETURN(EndpointUrl endpoint, EndpointUrl::Parse(url, "token URL"));
  if (!endpoint.tls && !net::IsLoopbackHost(endpoint.host)) {
    return absl::InvalidArgumentError(StrCat("refusing to send ", what, " to ", endpoint.origin,
                                             " over plain http: the token endpoint must be "
                                             "https:// (or a loopback address)"));
  }
  return endpoint;
}

}  // namespace internal

// --- Endpoint URLs ---------------------------------------------------------------------------

absl::StatusOr<EndpointUrl> EndpointUrl::Parse(std::string_view url, std::string_view option) {
  EndpointUrl out;
  std::string_view rest;
  if (url.starts_with("https://")) {
    out.tls = true;
    rest = url.substr(8);
  } else if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else {
    return absl::InvalidArgumentError(
        StrCat(option, " '", url, "' is not an http:// or https:// URL"));
  }
  const size_t end = rest.find_first_of("/?#");
  const std::string_view authority = rest.substr(0, end);
  if (authority.empty() || authority.find('@') != std::string_view::npos) {
    return absl::InvalidArgumentError(
        StrCat(option, " must be scheme://host[:port][/path] without user info"));
  }
  if (end != std::string_view::npos && rest[end] != '/' && option != "token URL") {
    return absl::InvalidArgumentError(StrCat(option, " takes no query or fragment"));
  }
  out.origin = StrCat(out.tls ? "https://" : "http://", authority);
  if (authority.starts_with('[')) {
    out.host = std::string(authority.substr(1, authority.find(']') - 1));
  } else {
    out.host = std::string(authority.substr(0, authority.find(':')));
  }
  if (end != std::string_view::npos && rest[end] == '/') {
    std::string_view path = rest.substr(end);
    path = path.substr(0, path.find_first_of("?#"));
    while (path.ends_with('/')) path.remove_suffix(1);
    out.path = std::string(path);
  }
  return out;
}

// --- Access tokens ---------------------------------------------------------------------------

AccessTokenSource::AccessTokenSource(std::string description, Fetch fetch,
                                     const core::IClock* clock, std::chrono::seconds refresh_before)
    : description_(std::move(description)),
      fetch_(std::move(fetch)),
      clock_(clock),
      refresh_before_(refresh_before) {}

absl::StatusOr<std::string> AccessTokenSource::Current() {
  std::lock_guard lock(mu_);
  const auto now = ClockOr(clock_).Now();
  if (current_ && now + refresh_before_ < current_->expires) return current_->token;
  auto fetched = fetch_();
  if (!fetched.ok()) {
    // A token that has not expired yet still serves while the endpoint is failing.
    if (current_ && now < current_->expires) return current_->token;
    return core::WithContext(fetched.status(), StrCat("credentials (", description_, ")"));
  }
  ++fetches_;
  current_ = *std::move(fetched);
  return current_->token;
}

uint64_t AccessTokenSource::fetches() const {
  std::lock_guard lock(mu_);
  return fetches_;
}

absl::StatusOr<AccessToken> FetchOAuthToken(std::string_view url, std::string_view form,
                                            std::string_view what, const core::IClock* clock) {
  RFS_ASSIGN_OR_RETURN(EndpointUrl endpoint, internal::SecureTokenUrl(url, what));
  net::HttpRequest request;
  request.method = "POST";
  request.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
  request.body = std::string(form);
  auto response = SendToUrl(url, std::move(request), std::chrono::milliseconds(10'000));
  if (!response.ok()) {
    return absl::UnavailableError(
        StrCat(what, " at ", endpoint.origin, endpoint.path, ": ", response.status().message()));
  }
  return TokenFromAnswer(*response, StrCat(what, " at ", endpoint.origin, endpoint.path), clock);
}

// --- GCS -------------------------------------------------------------------------------------

absl::StatusOr<std::string> SignServiceAccountJwt(std::string_view client_email,
                                                  std::string_view private_key_pem,
                                                  std::string_view key_id, std::string_view scope,
                                                  std::string_view audience, int64_t issued_at) {
  boost::json::object header{{"alg", "RS256"}, {"typ", "JWT"}};
  if (!key_id.empty()) header["kid"] = key_id;
  boost::json::object claims{{"iss", client_email},
                             {"scope", scope},
                             {"aud", audience},
                             {"iat", issued_at},
                             {"exp", issued_at + 3600}};
  const std::string signing_input =
      StrCat(core::Base64UrlEncode(boost::json::serialize(header)), ".",
             core::Base64UrlEncode(boost::json::serialize(claims)));
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(private_key_pem.data(), static_cast<int>(private_key_pem.size())), BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr, EVP_PKEY_free);
  if (key == nullptr || EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA) {
    return absl::InvalidArgumentError(
        StrCat("the private key of service account ", client_email, " is not a PEM RSA key"));
  }
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  size_t length = 0;
  if (ctx == nullptr ||
      EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &length,
                     reinterpret_cast<const unsigned char*>(signing_input.data()),
                     signing_input.size()) != 1) {
    return absl::InternalError("RS256 signing failed");
  }
  std::vector<uint8_t> signature(length);
  if (EVP_DigestSign(ctx.get(), signature.data(), &length,
                     reinterpret_cast<const unsigned char*>(signing_input.data()),
                     signing_input.size()) != 1) {
    return absl::InternalError("RS256 signing failed");
  }
  signature.resize(length);
  return StrCat(signing_input, ".", core::Base64UrlEncode(signature));
}

absl::StatusOr<std::shared_ptr<AccessTokenSource>> GcsTokenSourceFromFile(
    const std::string& path, std::string_view origin, const GcsCredentialOptions& options) {
  auto text = ReadTextFile(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError(StrCat("cannot read the GCS credentials file ", path, " (",
                                             origin, "): ", text.status().message()));
  }
  RFS_ASSIGN_OR_RETURN(boost::json::object file,
                       JsonObject(*text, StrCat("the GCS credentials file ", path)));
  const std::string type = StringField(file, "type");
  const core::IClock* clock = options.clock;
  if (type == "service_account") {
    const std::string email = StringField(file, "client_email");
    const std::string key = StringField(file, "private_key");
    const std::string key_id = StringField(file, "private_key_id");
    const std::string token_uri = StringField(file, "token_uri").empty()
                                      ? "https://oauth2.googleapis.com/token"
                                      : StringField(file, "token_uri");
    if (email.empty() || key.empty()) {
      return absl::InvalidArgumentError(StrCat("the service-account file ", path, " (", origin,
                                               ") lacks client_email or private_key"));
    }
    RFS_RETURN_IF_ERROR(
        SignServiceAccountJwt(email, key, key_id, options.scope, token_uri, 0).status());
    const std::string scope = options.scope;
    const std::string what = StrCat("the OAuth token of service account ", email);
    return std::make_shared<AccessTokenSource>(
        StrCat("service account ", email, " from ", origin, " (", path, ")"),
        [=]() -> absl::StatusOr<AccessToken> {
          const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                                  ClockOr(clock).Now().time_since_epoch())
                                  .count();
          RFS_ASSIGN_OR_RETURN(std::string jwt,
                               SignServiceAccountJwt(email, key, key_id, scope, token_uri, now));
          return FetchOAuthToken(
              token_uri,
              StrCat("grant_type=", FormValue("urn:ietf:params:oauth:grant-type:jwt-bearer"),
                     "&assertion=", FormValue(jwt)),
              what, clock);
        },
        clock);
  }
  if (type == "authorized_user") {
    const std::string client_id = StringField(file, "client_id");
    const std::string client_secret = StringField(file, "client_secret");
    const std::string refresh_token = StringField(file, "refresh_token");
    const std::string token_uri = StringField(file, "token_uri").empty()
                                      ? "https://oauth2.googleapis.com/token"
                                      : StringField(file, "token_uri");
    if (client_id.empty() || refresh_token.empty()) {
      return absl::InvalidArgumentError(StrCat("the authorized-user file ", path, " (", origin,
                                               ") lacks client_id or refresh_token"));
    }
    return std::make_shared<AccessTokenSource>(
        StrCat("authorized user (client ", client_id, ") from ", origin, " (", path, ")"),
        [=]() -> absl::StatusOr<AccessToken> {
          return FetchOAuthToken(token_uri,
                                 StrCat("grant_type=refresh_token&client_id=", FormValue(client_id),
                                        "&client_secret=", FormValue(client_secret),
                                        "&refresh_token=", FormValue(refresh_token)),
                                 "the OAuth token of an authorized user", clock);
        },
        clock);
  }
  if (type == "external_account") {
    return internal::GcsExternalAccountTokenSource(file, path, origin, options);
  }
  return absl::InvalidArgumentError(
      StrCat("the GCS credentials file ", path, " (", origin, ") is of type '", type,
             "': rfs reads service_account, authorized_user and external_account files"));
}

absl::StatusOr<GcsCredentials> ResolveGcsCredentials(const GcsCredentialOptions& options) {
  const GetEnv& getenv = options.getenv;
  if (!EnvOr(getenv, "STORAGE_EMULATOR_HOST").empty()) {
    return GcsCredentials{nullptr, "none (STORAGE_EMULATOR_HOST: an emulator)"};
  }
  if (const std::string file = EnvOr(getenv, "GOOGLE_APPLICATION_CREDENTIALS"); !file.empty()) {
    RFS_ASSIGN_OR_RETURN(auto tokens,
                         GcsTokenSourceFromFile(file, "GOOGLE_APPLICATION_CREDENTIALS", options));
    return GcsCredentials{tokens, tokens->description()};
  }
  std::string gcloud = EnvOr(getenv, "CLOUDSDK_CONFIG");
  if (gcloud.empty() && !EnvOr(getenv, "HOME").empty()) {
    gcloud = StrCat(EnvOr(getenv, "HOME"), "/.config/gcloud");
  }
  if (!gcloud.empty()) {
    const std::string file = StrCat(gcloud, "/application_default_credentials.json");
    std::error_code error;
    if (std::filesystem::is_regular_file(file, error)) {
      RFS_ASSIGN_OR_RETURN(
          auto tokens, GcsTokenSourceFromFile(file, "gcloud's application-default file", options));
      return GcsCredentials{tokens, tokens->description()};
    }
  }
  if (options.endpoint_given) {
    return GcsCredentials{nullptr, "none (an endpoint was given and no credentials file)"};
  }
  if (Lower(EnvOr(getenv, "NO_GCE_CHECK")) == "true") {
    return GcsCredentials{nullptr, "none (NO_GCE_CHECK=true and no credentials file)"};
  }
  // The metadata server of GCE/GKE (workload identity): a plain-http, link-local address that
  // never leaves the host's network; a short connect timeout where there is none.
  const std::string host = EnvOr(getenv, "GCE_METADATA_HOST", "169.254.169.254");
  const std::string url =
      StrCat("http://", host, "/computeMetadata/v1/instance/service-accounts/default/token");
  const core::IClock* clock = options.clock;
  auto fetch = [url, clock]() -> absl::StatusOr<AccessToken> {
    net::HttpRequest request;
    request.headers.emplace_back("Metadata-Flavor", "Google");
    auto response = SendToUrl(url, std::move(request), std::chrono::milliseconds(1'000));
    if (!response.ok()) return response.status();
    return TokenFromAnswer(*response, "the GCE metadata server's token", clock);
  };
  auto tokens = std::make_shared<AccessTokenSource>(StrCat("the GCE metadata server at ", host),
                                                    fetch, clock);
  if (auto first = tokens->Current(); first.ok())
    return GcsCredentials{tokens, tokens->description()};
  return GcsCredentials{
      nullptr, StrCat("none (no credentials file, and no metadata server answered at ", host, ")")};
}

// --- Azure -----------------------------------------------------------------------------------

absl::StatusOr<AzureConnectionString> AzureConnectionString::Parse(std::string_view text) {
  std::map<std::string, std::string> fields;  // lower-case key
  while (!text.empty()) {
    const size_t end = text.find(';');
    std::string_view part = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.front()))) {
      part.remove_prefix(1);
    }
    if (part.empty()) continue;
    const size_t equals = part.find('=');
    if (equals == std::string_view::npos || equals == 0) {
      return absl::InvalidArgumentError(
          StrCat("the Azure connection string has a part without Key=Value (the ",
                 fields.size() + 1, "th)"));
    }
    // A SAS or key value may itself hold '=': only the first one separates.
    fields[Lower(part.substr(0, equals))] = std::string(part.substr(equals + 1));
  }
  auto get = [&](const char* key) {
    auto it = fields.find(key);
    return it == fields.end() ? std::string() : it->second;
  };
  AzureConnectionString out;
  if (Lower(get("usedevelopmentstorage")) == "true") {
    // Azurite's well-known development account (published with the emulator, not a secret).
    out.account = "devstoreaccount1";
    out.key =
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
        "K1SZFPTOtr/KBHBeksoGMGw==";
    const std::string proxy = get("developmentstorageproxyuri");
    out.blob_endpoint =
        StrCat(proxy.empty() ? "http://127.0.0.1" : proxy, ":10000/devstoreaccount1");
    return out;
  }
  out.account = get("accountname");
  out.key = get("accountkey");
  out.sas = get("sharedaccesssignature");
  while (out.sas.starts_with('?')) out.sas.erase(0, 1);
  out.blob_endpoint = get("blobendpoint");
  if (out.blob_endpoint.empty() && !out.account.empty()) {
    const std::string protocol =
        get("defaultendpointsprotocol").empty() ? "https" : Lower(get("defaultendpointsprotocol"));
    const std::string suffix =
        get("endpointsuffix").empty() ? "core.windows.net" : get("endpointsuffix");
    out.blob_endpoint = StrCat(protocol, "://", out.account, ".blob.", suffix);
  }
  if (out.account.empty() && out.blob_endpoint.empty()) {
    return absl::InvalidArgumentError(
        "the Azure connection string names neither AccountName nor BlobEndpoint");
  }
  if (!out.key.empty() && out.account.empty()) {
    return absl::InvalidArgumentError(
        "the Azure connection string has AccountKey without "
        "AccountName");
  }
  return out;
}

std::string AzureSharedKeyStringToSign(std::string_view method, std::string_view path_and_query,
                                       const net::HttpHeaders& headers, size_t content_length,
                                       std::string_view account) {
  auto header = [&](std::string_view name) { return net::FindHeader(headers, name).value_or(""); };
  // x-ms-* headers: lower-case names in order, values with runs of white space folded.
  std::map<std::string, std::string> ms_headers;
  for (const auto& [name, value] : headers) {
    std::string lower = Lower(name);
    if (!lower.starts_with("x-ms-")) continue;
    std::string folded;
    for (char c : value) {
      if (c == ' ' || c == '\t') {
        if (!folded.empty() && folded.back() != ' ') folded += ' ';
      } else {
        folded += c;
      }
    }
    while (folded.ends_with(' ')) folded.pop_back();
    ms_headers[lower] = folded;
  }
  std::string out =
      StrCat(method, "\n", header("Content-Encoding"), "\n", header("Content-Language"), "\n",
             // 2015-02-21 on: an empty length for a request without a body.
             content_length == 0 ? std::string() : std::to_string(content_length), "\n",
             header("Content-MD5"), "\n", header("Content-Type"), "\n",
             ms_headers.contains("x-ms-date") ? "" : header("Date"), "\n",
             header("If-Modified-Since"), "\n", header("If-Match"), "\n", header("If-None-Match"),
             "\n", header("If-Unmodified-Since"), "\n", header("Range"), "\n");
  for (const auto& [name, value] : ms_headers) out += StrCat(name, ":", value, "\n");
  const size_t question = path_and_query.find('?');
  out += StrCat("/", account, path_and_query.substr(0, question));
  if (question != std::string_view::npos) {
    // Parameters by lower-case name, values decoded, several values of one name comma-joined.
    std::map<std::string, std::vector<std::string>> parameters;
    std::string_view query = path_and_query.substr(question + 1);
    while (!query.empty()) {
      const size_t amp = query.find('&');
      const std::string_view part = query.substr(0, amp);
      query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
      if (part.empty()) continue;
      const size_t equals = part.find('=');
      parameters[Lower(net::PercentDecode(part.substr(0, equals)))].push_back(
          equals == std::string_view::npos ? "" : net::PercentDecode(part.substr(equals + 1)));
    }
    for (auto& [name, values] : parameters) {
      std::sort(values.begin(), values.end());
      out += StrCat("\n", name, ":");
      for (size_t i = 0; i < values.size(); ++i) out += StrCat(i == 0 ? "" : ",", values[i]);
    }
  }
  return out;
}

absl::StatusOr<std::string> AzureSharedKeySignature(std::string_view string_to_sign,
                                                    std::string_view account_key) {
  auto key = core::Base64Decode(account_key);
  if (!key.ok() || key->empty()) {
    return absl::InvalidArgumentError("the Azure account key is not base64");
  }
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_length = 0;
  HMAC(EVP_sha256(), key->data(), static_cast<int>(key->size()),
       reinterpret_cast<const unsigned char*>(string_to_sign.data()), string_to_sign.size(), mac,
       &mac_length);
  return core::Base64Encode(std::span<const uint8_t>(mac, mac_length));
}

namespace {

// AZURE_STORAGE_CONNECTION_STRING: the account, its endpoint, and a key or SAS token.
absl::StatusOr<AzureCredentials> FromConnectionString(const std::string& connection,
                                                      AzureCredentials out, const GetEnv& getenv) {
  auto parsed = AzureConnectionString::Parse(connection);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        StrCat("AZURE_STORAGE_CONNECTION_STRING: ", parsed.status().message()));
  }
  if (out.account.empty()) out.account = parsed->account;
  out.blob_endpoint = parsed->blob_endpoint;
  if (!parsed->key.empty()) {
    out.kind = AzureCredentials::Kind::kSharedKey;
    out.secret = parsed->key;
    out.source = "account key from AZURE_STORAGE_CONNECTION_STRING";
  } else if (!parsed->sas.empty()) {
    out.kind = AzureCredentials::Kind::kSas;
    out.secret = parsed->sas;
    out.source = "SAS token from AZURE_STORAGE_CONNECTION_STRING";
  } else {
    out.source = "none (AZURE_STORAGE_CONNECTION_STRING has no key or SAS)";
  }
  if (out.account.empty()) out.account = EnvOr(getenv, "AZURE_STORAGE_ACCOUNT");
  if (out.account.empty()) {
    return absl::InvalidArgumentError(
        "no Azure storage account: give --azure-account, AccountName in "
        "AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT");
  }
  return out;
}

// A service principal (AZURE_CLIENT_SECRET) or workload identity (AZURE_FEDERATED_TOKEN_FILE)
// of Microsoft Entra ID: bearer tokens from the tenant's OAuth endpoint.
AzureCredentials EntraCredentials(AzureCredentials out, const AzureCredentialOptions& options,
                                  const std::string& client_id, const std::string& tenant_id,
                                  const std::string& secret, const std::string& token_file) {
  const GetEnv& getenv = options.getenv;
  std::string authority =
      EnvOr(getenv, "AZURE_AUTHORITY_HOST", "https://login.microsoftonline.com");
  while (authority.ends_with('/')) authority.pop_back();
  const std::string url =
      StrCat(authority, "/", net::PercentEncode(tenant_id, false), "/oauth2/v2.0/token");
  const core::IClock* clock = options.clock;
  const std::string scope = "https://storage.azure.com/.default";
  AccessTokenSource::Fetch fetch;
  if (!secret.empty()) {
    out.source = StrCat("service principal ", client_id, " (AZURE_CLIENT_SECRET)");
    fetch = [=]() {
      return FetchOAuthToken(
          url,
          StrCat("grant_type=client_credentials&client_id=", FormValue(client_id),
                 "&client_secret=", FormValue(secret), "&scope=", FormValue(scope)),
          StrCat("the token of service principal ", client_id), clock);
    };
  } else {
    out.source = StrCat("workload identity ", client_id, " (AZURE_FEDERATED_TOKEN_FILE)");
    fetch = [=]() -> absl::StatusOr<AccessToken> {
      // Read at each fetch: the platform rotates the file.
      auto assertion = ReadTextFile(token_file);
      if (!assertion.ok()) {
        return absl::PermissionDeniedError(
            StrCat("cannot read AZURE_FEDERATED_TOKEN_FILE ", token_file));
      }
      std::string jwt = *assertion;
      while (!jwt.empty() && std::isspace(static_cast<unsigned char>(jwt.back()))) jwt.pop_back();
      return FetchOAuthToken(
          url,
          StrCat("grant_type=client_credentials&client_id=", FormValue(client_id),
                 "&client_assertion_type=",
                 FormValue("urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
                 "&client_assertion=", FormValue(jwt), "&scope=", FormValue(scope)),
          StrCat("the token of workload identity ", client_id), clock);
    };
  }
  out.kind = AzureCredentials::Kind::kBearer;
  out.tokens = std::make_shared<AccessTokenSource>(out.source, std::move(fetch), clock);
  return out;
}

// Managed identity, or no credentials when none answers.
AzureCredentials ManagedIdentityCredentials(AzureCredentials out,
                                            const AzureCredentialOptions& options,
                                            const std::string& client_id) {
  const GetEnv& getenv = options.getenv;
  // Managed identity: the instance metadata service of an Azure VM, a plain-http, link-local
  // address (AZURE_POD_IDENTITY_AUTHORITY_HOST points elsewhere), asked with a short connect
  // timeout where there is none. A user-assigned identity is named by AZURE_CLIENT_ID.
  std::string host = EnvOr(getenv, "AZURE_POD_IDENTITY_AUTHORITY_HOST", "http://169.254.169.254");
  while (host.ends_with('/')) host.pop_back();
  if (host.find("://") == std::string::npos) host = StrCat("http://", host);
  std::string url = StrCat(host, "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=",
                           FormValue("https://storage.azure.com/"));
  if (!client_id.empty()) url += StrCat("&client_id=", FormValue(client_id));
  const core::IClock* clock = options.clock;
  auto fetch = [url, clock]() -> absl::StatusOr<AccessToken> {
    net::HttpRequest request;
    request.headers.emplace_back("Metadata", "true");
    auto response = SendToUrl(url, std::move(request), std::chrono::milliseconds(1'000));
    if (!response.ok()) return response.status();
    return TokenFromAnswer(*response, "the managed identity's token (IMDS)", clock);
  };
  auto tokens = std::make_shared<AccessTokenSource>(StrCat("managed identity (IMDS at ", host, ")"),
                                                    fetch, clock);
  if (tokens->Current().ok()) {
    out.kind = AzureCredentials::Kind::kBearer;
    out.tokens = tokens;
    out.source = tokens->description();
    return out;
  }
  out.source = StrCat(
      "none (no key, SAS token, connection string or service principal, and no "
      "managed identity answered at ",
      host, ")");
  return out;
}

}  // namespace

absl::StatusOr<AzureCredentials> ResolveAzureCredentials(const AzureCredentialOptions& options) {
  const GetEnv& getenv = options.getenv;
  AzureCredentials out;
  out.account = options.account;
  const std::string connection = EnvOr(getenv, "AZURE_STORAGE_CONNECTION_STRING");
  if (!connection.empty()) {
    return FromConnectionString(connection, std::move(out), getenv);
  }
  if (out.account.empty()) out.account = EnvOr(getenv, "AZURE_STORAGE_ACCOUNT");
  if (out.account.empty()) {
    return absl::InvalidArgumentError(
        "no Azure storage account: give --azure-account, AZURE_STORAGE_ACCOUNT, or "
        "AZURE_STORAGE_CONNECTION_STRING");
  }
  if (const std::string key = EnvOr(getenv, "AZURE_STORAGE_KEY"); !key.empty()) {
    if (auto decoded = core::Base64Decode(key); !decoded.ok() || decoded->empty()) {
      return absl::InvalidArgumentError("AZURE_STORAGE_KEY is not a base64 account key");
    }
    out.kind = AzureCredentials::Kind::kSharedKey;
    out.secret = key;
    out.source = "account key from AZURE_STORAGE_KEY";
    return out;
  }
  if (std::string sas = EnvOr(getenv, "AZURE_STORAGE_SAS_TOKEN"); !sas.empty()) {
    while (sas.starts_with('?')) sas.erase(0, 1);
    out.kind = AzureCredentials::Kind::kSas;
    out.secret = sas;
    out.source = "SAS token from AZURE_STORAGE_SAS_TOKEN";
    return out;
  }
  const std::string client_id = EnvOr(getenv, "AZURE_CLIENT_ID");
  const std::string tenant_id = EnvOr(getenv, "AZURE_TENANT_ID");
  const std::string secret = EnvOr(getenv, "AZURE_CLIENT_SECRET");
  const std::string token_file = EnvOr(getenv, "AZURE_FEDERATED_TOKEN_FILE");
  if (!client_id.empty() && !tenant_id.empty() && (!secret.empty() || !token_file.empty())) {
    return EntraCredentials(std::move(out), options, client_id, tenant_id, secret, token_file);
  }
  if (!options.endpoint_given && Lower(EnvOr(getenv, "AZURE_IMDS_DISABLED")) != "true") {
    return ManagedIdentityCredentials(std::move(out), options, client_id);
  }
  out.source = "none (no key, SAS token, connection string or service principal)";
  return out;
}

// --- Authorizing transports ------------------------------------------------------------------

namespace {

class BearerTransport final : public net::IHttpTransport {
 public:
  BearerTransport(std::shared_ptr<net::IHttpTransport> inner,
                  std::shared_ptr<AccessTokenSource> tokens)
      : inner_(std::move(inner)), tokens_(std::move(tokens)) {}
  absl::StatusOr<net::HttpResponse> Send(const net::HttpRequest& request) override {
    RFS_ASSIGN_OR_RETURN(std::string token, tokens_->Current());
    net::HttpRequest authorized = request;
    authorized.headers.emplace_back("Authorization", StrCat("Bearer ", token));
    return inner_->Send(authorized);
  }
  std::string endpoint() const override { return inner_->endpoint(); }

 private:
  std::shared_ptr<net::IHttpTransport> inner_;
  std::shared_ptr<AccessTokenSource> tokens_;
};

// RFC 1123 time, as x-ms-date wants.
std::string HttpDate(core::IClock::TimePoint when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[64];
  std::strftime(buffer, sizeof(buffer), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buffer;
}

class AzureTransport final : public net::IHttpTransport {
 public:
  AzureTransport(std::shared_ptr<net::IHttpTransport> inner, AzureCredentials credentials,
                 std::string path_prefix, const core::IClock* clock)
      : inner_(std::move(inner)),
        credentials_(std::move(credentials)),
        path_prefix_(std::move(path_prefix)),
        clock_(clock) {}
  absl::StatusOr<net::HttpResponse> Send(const net::HttpRequest& request) override {
    net::HttpRequest authorized = request;
    switch (credentials_.kind) {
      case AzureCredentials::Kind::kNone:
        break;
      case AzureCredentials::Kind::kSas:
        authorized.target += StrCat(authorized.target.find('?') == std::string::npos ? "?" : "&",
                                    credentials_.secret);
        break;
      case AzureCredentials::Kind::kBearer: {
        RFS_ASSIGN_OR_RETURN(std::string token, credentials_.tokens->Current());
        authorized.headers.emplace_back("Authorization", StrCat("Bearer ", token));
        break;
      }
      case AzureCredentials::Kind::kSharedKey: {
        authorized.headers.emplace_back("x-ms-date", HttpDate(ClockOr(clock_).Now()));
        const std::string to_sign = AzureSharedKeyStringToSign(
            authorized.method, StrCat(path_prefix_, authorized.target), authorized.headers,
            authorized.body_size(), credentials_.account);
        RFS_ASSIGN_OR_RETURN(std::string signature,
                             AzureSharedKeySignature(to_sign, credentials_.secret));
        authorized.headers.emplace_back("Authorization",
                                        StrCat("SharedKey ", credentials_.account, ":", signature));
        break;
      }
    }
    return inner_->Send(authorized);
  }
  std::string endpoint() const override { return inner_->endpoint(); }

 private:
  std::shared_ptr<net::IHttpTransport> inner_;
  const AzureCredentials credentials_;
  const std::string path_prefix_;
  const core::IClock* clock_;
};

}  // namespace

std::shared_ptr<net::IHttpTransport> AuthorizingTransport(
    std::shared_ptr<net::IHttpTransport> inner, std::shared_ptr<AccessTokenSource> tokens) {
  if (tokens == nullptr) return inner;
  return std::make_shared<BearerTransport>(std::move(inner), std::move(tokens));
}

std::shared_ptr<net::IHttpTransport> AuthorizingTransport(
    std::shared_ptr<net::IHttpTransport> inner, AzureCredentials credentials,
    std::string path_prefix, const core::IClock* clock) {
  return std::make_shared<AzureTransport>(std::move(inner), std::move(credentials),
                                          std::move(path_prefix), clock);
}

}  // namespace rfs::cloud
