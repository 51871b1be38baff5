// Credentials for Google Cloud Storage and Azure Blob Storage, found where each cloud's own SDKs
// look, in their order (as far as rfs reads them).
//
// GCS (ResolveGcsCredentials):
//   1. STORAGE_EMULATOR_HOST (the Google libraries' own variable): an emulator, no credentials;
//   2. GOOGLE_APPLICATION_CREDENTIALS: a service-account key file (a JWT signed with its RS256
//      key, exchanged at its token_uri for an OAuth token) or an authorized-user file (its
//      refresh token exchanged at its token_uri) or an external-account file (Workload Identity
//      Federation: a token from a file, a URL, a command or AWS exchanged at Google's STS, and
//      optionally for a service account's token; gcs_external_account.cpp);
//   3. gcloud's application-default file ($CLOUDSDK_CONFIG, else ~/.config/gcloud,
//      /application_default_credentials.json), of the same two kinds;
//   4. the GCE/GKE metadata server (GCE_METADATA_HOST, default metadata.google.internal), asked
//      only when no endpoint is given (--gcs-endpoint) and NO_GCE_CHECK is not "true";
//   5. none: anonymous requests (public buckets).
// Azure (ResolveAzureCredentials), for an account from --azure-account, the connection string or
// AZURE_STORAGE_ACCOUNT:
//   1. AZURE_STORAGE_CONNECTION_STRING (AccountName, AccountKey, SharedAccessSignature,
//      BlobEndpoint, EndpointSuffix, DefaultEndpointsProtocol, UseDevelopmentStorage=true);
//   2. AZURE_STORAGE_KEY: the account key, every request signed with SharedKey;
//   3. AZURE_STORAGE_SAS_TOKEN: a SAS token put on every request;
//   4. AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET: a service principal's token
//      from Microsoft Entra ID (AZURE_AUTHORITY_HOST, default https://login.microsoftonline.com);
//      with AZURE_FEDERATED_TOKEN_FILE instead of the secret, workload identity;
//   5. managed identity: the instance metadata service (IMDS; AZURE_POD_IDENTITY_AUTHORITY_HOST
//      names another address, AZURE_CLIENT_ID a user-assigned identity), asked only when no
//      endpoint is given (--azure-endpoint) and AZURE_IMDS_DISABLED is not "true";
//   6. none: anonymous requests (public containers).
// Tokens are fetched again before they expire. Secrets never appear in errors or descriptions;
// a token or key is never sent over plain http except to a loopback host.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "rfs/core/clock.hpp"
#include "rfs/net/http_transport.hpp"

#include "absl/status/statusor.h"

namespace rfs::cloud {

/// Reads an environment variable (nullptr when unset); tests give their own.
using GetEnv = std::function<const char*(const char*)>;
inline GetEnv ProcessEnvironment() {
  return [](const char* name) { return std::getenv(name); };
}

struct AccessToken {
  std::string token;
  core::IClock::TimePoint expires;
};

/// An OAuth access token that stays valid: fetched on first use and again once it comes within
/// `refresh_before` of its expiry. A failed fetch keeps the old token while it lasts. Thread-safe.
class AccessTokenSource {
 public:
  using Fetch = std::function<absl::StatusOr<AccessToken>()>;
  /// `description` names where the token comes from (never a secret), for messages.
  AccessTokenSource(std::string description, Fetch fetch, const core::IClock* clock = nullptr,
                    std::chrono::seconds refresh_before = std::chrono::seconds(300));
  absl::StatusOr<std::string> Current();
  const std::string& description() const { return description_; }
  uint64_t fetches() const;

 private:
  const std::string description_;
  const Fetch fetch_;
  const core::IClock* clock_;
  const std::chrono::seconds refresh_before_;
  mutable std::mutex mu_;
  std::optional<AccessToken> current_;
  uint64_t fetches_ = 0;
};

/// Sends an x-www-form-urlencoded POST to `url` (https, or plain http to a loopback host only: it
/// carries a secret) and reads {"access_token", "expires_in"} from the answer. Errors name
/// `what` and the URL, never the form.
absl::StatusOr<AccessToken> FetchOAuthToken(std::string_view url, std::string_view form,
                                            std::string_view what,
                                            const core::IClock* clock = nullptr);

// --- GCS -------------------------------------------------------------------------------------

/// A compact JWS (header.claims.signature, base64url) signed with RS256 by the PEM private key,
/// as Google's service-account flow wants: {"alg":"RS256","typ":"JWT","kid":key_id} and
/// {"iss","scope","aud","iat","exp" = iat + 3600}.
absl::StatusOr<std::string> SignServiceAccountJwt(std::string_view client_email,
                                                  std::string_view private_key_pem,
                                                  std::string_view key_id, std::string_view scope,
                                                  std::string_view audience, int64_t issued_at);

struct GcsCredentials {
  /// Null: requests go without credentials (an emulator, a public bucket).
  std::shared_ptr<AccessTokenSource> tokens;
  /// Where the credentials came from, e.g. "service account a@b from
  /// GOOGLE_APPLICATION_CREDENTIALS (/path/key.json)" or "none (STORAGE_EMULATOR_HOST)".
  std::string source;
};

struct GcsCredentialOptions {
  GetEnv getenv = ProcessEnvironment();
  /// An endpoint was given (--gcs-endpoint): the metadata server is not asked.
  bool endpoint_given = false;
  const core::IClock* clock = nullptr;
  /// The OAuth scope asked for.
  std::string scope = "https://www.googleapis.com/auth/devstorage.read_write";
};

/// The chain above. InvalidArgument naming the file for an unreadable or malformed credentials
/// file or a kind rfs does not read; no request is sent until the first token is needed, except
/// the metadata server's probe.
absl::StatusOr<GcsCredentials> ResolveGcsCredentials(const GcsCredentialOptions& options = {});

/// A service-account, authorized-user or external-account JSON file as a token source.
/// InvalidArgument naming `path` when it cannot be read or is of another kind.
absl::StatusOr<std::shared_ptr<AccessTokenSource>> GcsTokenSourceFromFile(
    const std::string& path, std::string_view origin, const GcsCredentialOptions& options);

// --- Azure -----------------------------------------------------------------------------------

/// "Key=Value;Key=Value" as the Azure portal gives it, the fields rfs uses.
struct AzureConnectionString {
  std::string account;
  std::string key;
  std::string sas;
  /// From BlobEndpoint, or DefaultEndpointsProtocol + AccountName + EndpointSuffix, or Azurite's
  /// address for UseDevelopmentStorage=true. Empty when none of these is given.
  std::string blob_endpoint;
  /// InvalidArgument (naming the offending key, never a value) when malformed.
  static absl::StatusOr<AzureConnectionString> Parse(std::string_view text);
};

/// Azure's Shared Key string-to-sign for a request to `path_and_query` (the URL's encoded path
/// from the root and its query) with these headers and body length:
/// https://learn.microsoft.com/rest/api/storageservices/authorize-with-shared-key
std::string AzureSharedKeyStringToSign(std::string_view method, std::string_view path_and_query,
                                       const net::HttpHeaders& headers, size_t content_length,
                                       std::string_view account);
/// base64(HMAC-SHA256(base64-decoded key, string_to_sign)); InvalidArgument when the key is not
/// base64 (the message does not show it).
absl::StatusOr<std::string> AzureSharedKeySignature(std::string_view string_to_sign,
                                                    std::string_view account_key);

struct AzureCredentials {
  enum class Kind { kNone, kSharedKey, kSas, kBearer };
  Kind kind = Kind::kNone;
  std::string account;
  /// The account key (kSharedKey) or the SAS token without its leading '?' (kSas).
  std::string secret;
  std::shared_ptr<AccessTokenSource> tokens;  // kBearer
  /// The connection string's blob endpoint, if it gave one.
  std::string blob_endpoint;
  /// Where the credentials came from, for messages: "account key from AZURE_STORAGE_KEY", ...
  std::string source;
};

struct AzureCredentialOptions {
  GetEnv getenv = ProcessEnvironment();
  /// --azure-account; empty: the connection string's or AZURE_STORAGE_ACCOUNT.
  std::string account;
  /// An endpoint was given (--azure-endpoint): the instance metadata service is not asked.
  bool endpoint_given = false;
  const core::IClock* clock = nullptr;
};

/// The chain above. InvalidArgument for a malformed connection string, or when no account is
/// named anywhere.
absl::StatusOr<AzureCredentials> ResolveAzureCredentials(
    const AzureCredentialOptions& options = {});

/// Wraps `inner` so that every request carries the credentials: GCS's or Azure's bearer token,
/// Azure's SharedKey signature (x-ms-date set now) or its SAS token. `path_prefix` is the
/// endpoint's path (e.g. "/devstoreaccount1"), which the signature covers.
std::shared_ptr<net::IHttpTransport> AuthorizingTransport(
    std::shared_ptr<net::IHttpTransport> inner, std::shared_ptr<AccessTokenSource> tokens);
std::shared_ptr<net::IHttpTransport> AuthorizingTransport(
    std::shared_ptr<net::IHttpTransport> inner, AzureCredentials credentials,
    std::string path_prefix, const core::IClock* clock = nullptr);

/// "https://host[:port]" and the path after it (no trailing '/') of an endpoint URL;
/// InvalidArgument naming `option` for anything else (user info, a query, another scheme).
struct EndpointUrl {
  std::string origin;
  std::string path;
  bool tls = false;
  std::string host;
  static absl::StatusOr<EndpointUrl> Parse(std::string_view url, std::string_view option);
};

}  // namespace rfs::cloud
