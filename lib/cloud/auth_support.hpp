// Helpers shared by the credential code of lib/cloud (not a public header): files, JSON answers
// and the requests to token endpoints.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "rfs/cloud/cloud_auth.hpp"

#include "absl/status/statusor.h"

namespace rfs::cloud::internal {

const core::IClock& ClockOr(const core::IClock* clock);
/// The variable's value, or `fallback` when it is unset or empty.
std::string EnvOr(const GetEnv& getenv, const char* name, std::string fallback = "");
std::string Lower(std::string_view text);
absl::StatusOr<std::string> ReadTextFile(const std::string& path);
/// A JSON object from a credentials file or a token answer; InvalidArgument naming `what`.
absl::StatusOr<boost::json::object> JsonObject(std::string_view text, std::string_view what);
/// The string at `key`, or "" when absent or not a string.
std::string StringField(const boost::json::object& object, std::string_view key);
/// A request to a full URL (token endpoints, metadata servers); the path and query of `url`
/// become the request's target.
absl::StatusOr<net::HttpResponse> SendToUrl(std::string_view url, net::HttpRequest request,
                                            std::chrono::milliseconds connect_timeout);
/// {"access_token", "expires_in"} from a 200 answer; PermissionDenied for 400/401/403 (with the
/// OAuth error fields, which hold no secret), Unavailable for other failures.
absl::StatusOr<AccessToken> TokenFromAnswer(const net::HttpResponse& response,
                                            std::string_view what, const core::IClock* clock);
/// `url` parsed, InvalidArgument unless it is https:// or plain http to a loopback host: what is
/// sent there is a secret.
absl::StatusOr<EndpointUrl> SecureTokenUrl(std::string_view url, std::string_view what);

/// An external_account file (Workload Identity Federation) as a token source; see
/// gcs_external_account.cpp.
absl::StatusOr<std::shared_ptr<AccessTokenSource>> GcsExternalAccountTokenSource(
    const boost::json::object& file, const std::string& path, std::string_view origin,
    const GcsCredentialOptions& options);

}  // namespace rfs::cloud::internal
