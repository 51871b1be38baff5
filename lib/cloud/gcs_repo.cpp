// GcsRepo (see gcs_repo.hpp): the JSON API's requests and answers over RangedObjectRepo.
#include "rfs/cloud/gcs_repo.hpp"

#include <algorithm>
#include <charconv>

#include <boost/json.hpp>

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/net/encoding.hpp"
#include "rfs/net/http_status.hpp"

namespace rfs::cloud {

using core::StrCat;

namespace {

// https://cloud.google.com/storage/docs/buckets#naming: 3-63 characters (up to 222 in dotted
// names) of lower-case letters, digits, '-', '_' and '.', starting and ending with a letter or
// digit.
bool ValidGcsBucket(std::string_view b) {
  if (b.size() < 3 || b.size() > 222) return false;
  if (b.find('.') == std::string_view::npos && b.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(b.front()) || !alnum(b.back())) return false;
  return std::all_of(b.begin(), b.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

class GcsProtocol final : public IObjectProtocol {
 public:
  GcsProtocol(std::string bucket, std::string credential_source)
      : bucket_(std::move(bucket)), credential_source_(std::move(credential_source)) {}

  net::HttpRequest ListRequest(std::string_view prefix, bool flat, std::string_view token,
                               int page_keys) const override {
    net::HttpRequest request;
    request.target =
        StrCat("/storage/v1/b/", bucket_, "/o?prefix=", net::PercentEncode(prefix, false),
               flat ? "" : "&delimiter=%2F", "&maxResults=", std::min(page_keys, 5000),
               "&fields=", net::PercentEncode("items(name),prefixes,nextPageToken", false));
    if (!token.empty()) request.target += "&pageToken=" + net::PercentEncode(token, false);
    return request;
  }

  absl::StatusOr<ObjectListPage> ParseList(const net::HttpResponse& response,
                                           std::string_view source) const override {
    auto parsed = net::ParseJson(response.body);
    if (!parsed || !parsed->is_object()) {
      return absl::DataLossError(StrCat(source, ": the answer is not a JSON object"));
    }
    const boost::json::object& page = parsed->as_object();
    ObjectListPage out;
    if (const auto* items = page.if_contains("items")) {
      if (!items->is_array()) return absl::DataLossError(StrCat(source, ": items is no array"));
      for (const auto& item : items->as_array()) {
        const auto* name = item.is_object() ? item.as_object().if_contains("name") : nullptr;
        if (name == nullptr || !name->is_string()) {
          return absl::DataLossError(StrCat(source, ": an item without a name"));
        }
        out.keys.emplace_back(name->as_string());
      }
    }
    if (const auto* prefixes = page.if_contains("prefixes")) {
      if (!prefixes->is_array()) {
        return absl::DataLossError(StrCat(source, ": prefixes is no array"));
      }
      for (const auto& p : prefixes->as_array()) {
        if (!p.is_string()) return absl::DataLossError(StrCat(source, ": a prefix not a string"));
        out.prefixes.emplace_back(p.as_string());
      }
    }
    if (const auto* token = page.if_contains("nextPageToken"); token && token->is_string()) {
      out.next_token = std::string(token->as_string());
    }
    return out;
  }

  net::HttpRequest GetRequest(std::string_view key) const override {
    net::HttpRequest request;
    request.target = StrCat(ObjectPath(key), "?alt=media");
    return request;
  }

  net::HttpRequest SizeRequest(std::string_view key) const override {
    net::HttpRequest request;
    request.target = StrCat(ObjectPath(key), "?fields=size");
    return request;
  }

  absl::StatusOr<uint64_t> ParseSize(const net::HttpResponse& response,
                                     std::string_view source) const override {
    auto parsed = net::ParseJson(response.body);
    const boost::json::value* size =
        parsed && parsed->is_object() ? parsed->as_object().if_contains("size") : nullptr;
    uint64_t out = 0;
    // The JSON API sends uint64 values as strings.
    if (size == nullptr || !size->is_string() ||
        std::from_chars(size->as_string().data(),
                        size->as_string().data() + size->as_string().size(), out)
                .ec != std::errc()) {
      return absl::DataLossError(StrCat(source, ": the object's metadata has no usable size"));
    }
    return out;
  }

  net::HttpRequest PutRequest(std::string_view key, std::string body,
                              std::string_view content_type) const override {
    net::HttpRequest request;
    request.method = "POST";
    request.target = StrCat("/upload/storage/v1/b/", bucket_,
                            "/o?uploadType=media&name=", net::PercentEncode(key, false));
    request.headers.emplace_back("Content-Type", std::string(content_type));
    request.body = std::move(body);
    return request;
  }

  // {"error": {"code": 403, "message": "..."}}, or a plain-text body from some servers.
  absl::Status ErrorFor(const net::HttpResponse& r, std::string_view what,
                        std::string_view description) const override {
    std::string message;
    if (auto parsed = net::ParseJson(r.body); parsed && parsed->is_object()) {
      if (const auto* error = parsed->as_object().if_contains("error");
          error != nullptr && error->is_object()) {
        if (const auto* m = error->as_object().if_contains("message"); m && m->is_string()) {
          message = std::string(m->as_string());
        }
      }
    } else if (r.body.size() < 512) {
      message = r.body;
      while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) {
        message.pop_back();
      }
    }
    std::string text = StrCat(what, " in ", description, ": HTTP ", r.status,
                              message.empty() ? "" : ": ", message);
    if (r.status == 401 || r.status == 403) {
      text += StrCat(" (credentials: ", credential_source_, ")");
    }
    return net::StatusFromHttp(r.status, text, {{401, absl::StatusCode::kPermissionDenied}});
  }

 private:
  std::string ObjectPath(std::string_view key) const {
    return StrCat("/storage/v1/b/", bucket_, "/o/", net::PercentEncode(key, false));
  }

  std::string bucket_;
  std::string credential_source_;
};

}  // namespace

absl::StatusOr<BucketUri> ParseGcsUri(std::string_view uri) {
  RFS_ASSIGN_OR_RETURN(BucketUri parsed, BucketUri::Parse(uri, "gs", "gs://bucket/path"));
  if (!ValidGcsBucket(parsed.bucket)) {
    return absl::InvalidArgumentError(
        StrCat("'", parsed.bucket, "' is not a valid GCS bucket name"));
  }
  return parsed;
}

absl::StatusOr<std::shared_ptr<GcsRepo>> GcsRepo::Open(std::string_view uri, GcsOptions options) {
  RFS_ASSIGN_OR_RETURN(BucketUri parsed, ParseGcsUri(uri));
  const bool endpoint_given = !options.endpoint.empty();
  std::string endpoint = options.endpoint;
  if (endpoint.empty()) {
    const char* emulator = options.getenv("STORAGE_EMULATOR_HOST");
    if (emulator != nullptr && *emulator != '\0') {
      endpoint = emulator;
      if (endpoint.find("://") == std::string::npos) endpoint = StrCat("http://", endpoint);
    } else {
      endpoint = "https://storage.googleapis.com";
    }
  }
  RFS_ASSIGN_OR_RETURN(EndpointUrl url, EndpointUrl::Parse(endpoint, "--gcs-endpoint"));
  if (!url.path.empty()) {
    return absl::InvalidArgumentError(
        StrCat("--gcs-endpoint takes scheme://host[:port], not a path ('", url.path, "')"));
  }
  GcsCredentials credentials;
  if (options.credentials) {
    credentials = *options.credentials;
  } else {
    GcsCredentialOptions chain;
    chain.getenv = options.getenv;
    chain.endpoint_given = endpoint_given;
    auto resolved = ResolveGcsCredentials(chain);
    if (!resolved.ok()) {
      return core::WithContext(resolved.status(), StrCat("credentials for ", uri));
    }
    credentials = *std::move(resolved);
  }
  std::shared_ptr<net::IHttpTransport> transport = options.transport;
  if (transport == nullptr) {
    net::HttpTransportOptions http;
    http.endpoint = url.origin;
    // The plain-http policy of every credentialed transport (warn, or refuse with
    // --refuse-plain-http-credentials) covers the OAuth token.
    http.sends_bearer_token = credentials.tokens != nullptr;
    RFS_ASSIGN_OR_RETURN(auto opened, net::BeastHttpTransport::Open(std::move(http)));
    transport = std::shared_ptr<net::IHttpTransport>(std::move(opened));
  }
  transport = AuthorizingTransport(std::move(transport), credentials.tokens);
  auto impl = MakeImpl(std::string(uri), parsed.prefix,
                       std::make_shared<GcsProtocol>(parsed.bucket, credentials.source),
                       std::move(transport), options);
  return std::shared_ptr<GcsRepo>(new GcsRepo(std::move(impl), credentials.source));
}

}  // namespace rfs::cloud
