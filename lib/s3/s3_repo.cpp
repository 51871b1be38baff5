// S3Repo (see s3_repo.hpp): S3's requests and answers over cloud::RangedObjectRepo.
#include "rfs/s3/s3_repo.hpp"

#include <algorithm>

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/aws_credentials.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/net/encoding.hpp"
#include "rfs/net/http_status.hpp"
#include "rfs/net/xml.hpp"

#include "s3/list_page_internal.hpp"

namespace rfs::s3 {
namespace {

using core::StrCat;

bool ValidBucketName(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  return std::all_of(b.begin(), b.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
  });
}

class S3Protocol final : public cloud::IObjectProtocol {
 public:
  // Requests go to "/<key>" (virtual-hosted) or "/<bucket>/<key>" (path-style).
  explicit S3Protocol(std::string key_path_prefix) : key_path_prefix_(std::move(key_path_prefix)) {}

  net::HttpRequest ListRequest(std::string_view prefix, bool flat, std::string_view token,
                               int page_keys) const override {
    net::HttpRequest request;
    // The bucket itself: "/" virtual-hosted, "/<bucket>" path-style (a trailing slash would
    // name an empty key).
    request.target = StrCat(key_path_prefix_.empty() ? "/" : key_path_prefix_, "?list-type=2",
                            flat ? "" : "&delimiter=%2F", "&max-keys=", std::min(page_keys, 1000),
                            "&prefix=", net::PercentEncode(prefix, /*keep_slash=*/false));
    if (!token.empty()) {
      request.target += "&continuation-token=" + net::PercentEncode(token, false);
    }
    return request;
  }

  absl::StatusOr<cloud::ObjectListPage> ParseList(const net::HttpResponse& response,
                                                  std::string_view source) const override {
    RFS_ASSIGN_OR_RETURN(internal::ListPage listed, internal::ParseListPage(response.body, source));
    if (listed.truncated && listed.next_token.empty()) {
      return absl::DataLossError(StrCat(source, ": truncated page without a continuation token"));
    }
    return cloud::ObjectListPage{.keys = std::move(listed.keys),
                                 .prefixes = std::move(listed.prefixes),
                                 .next_token = listed.truncated ? listed.next_token : ""};
  }

  net::HttpRequest GetRequest(std::string_view key) const override {
    net::HttpRequest request;
    request.target = KeyTarget(key);
    return request;
  }

  net::HttpRequest SizeRequest(std::string_view key) const override {
    net::HttpRequest request;
    request.method = "HEAD";
    request.target = KeyTarget(key);
    return request;
  }

  net::HttpRequest PutRequest(std::string_view key, std::string body,
                              std::string_view content_type) const override {
    net::HttpRequest request;
    request.method = "PUT";
    request.target = KeyTarget(key);
    request.headers.emplace_back("Content-Type", std::string(content_type));
    request.body = std::move(body);
    return request;
  }

  // An S3 error response as a status: the code and message from its XML body.
  absl::Status ErrorFor(const net::HttpResponse& r, std::string_view what,
                        std::string_view description) const override {
    const std::string code = net::XmlElementText(r.body, "Code").value_or("");
    const std::string message = net::XmlElementText(r.body, "Message").value_or("");
    const std::string text =
        StrCat(what, " in ", description, ": HTTP ", r.status, code.empty() ? "" : " ", code,
               message.empty() ? "" : ": ", message);
    if (r.status == 301 || r.status == 307) {
      return absl::FailedPreconditionError(
          StrCat(text, " (the bucket is in another region: check --s3-region)"));
    }
    return net::StatusFromHttp(r.status, text, {{401, absl::StatusCode::kPermissionDenied}});
  }

 private:
  std::string KeyTarget(std::string_view key) const {
    return StrCat(key_path_prefix_, "/", net::PercentEncode(key, /*keep_slash=*/true));
  }

  std::string key_path_prefix_;
};

}  // namespace

absl::StatusOr<S3Uri> S3Uri::Parse(std::string_view uri) {
  if (!uri.starts_with("s3://")) {
    return absl::InvalidArgumentError(StrCat("'", uri, "' is not an s3://bucket/prefix URI"));
  }
  uri.remove_prefix(5);
  cloud::BucketUri split = cloud::BucketUri::Split(uri);
  if (!ValidBucketName(split.bucket)) {
    return absl::InvalidArgumentError(StrCat("'", split.bucket, "' is not a valid S3 bucket name"));
  }
  return S3Uri{std::move(split.bucket), std::move(split.prefix)};
}

absl::StatusOr<std::shared_ptr<S3Repo>> S3Repo::Open(std::string_view uri, S3Options options) {
  RFS_ASSIGN_OR_RETURN(S3Uri parsed, S3Uri::Parse(uri));
  options.region = net::ResolveAwsRegion(options.region);
  if (options.region.empty()) {
    if (!options.endpoint.empty()) {
      options.region = "us-east-1";  // What S3-compatible servers accept when none is set up.
    } else {
      return absl::InvalidArgumentError(StrCat("reading ", uri, " needs --s3-region"));
    }
  }
  std::string key_path_prefix;
  std::shared_ptr<net::IHttpTransport> transport = options.transport;
  if (transport == nullptr) {
    net::HttpTransportOptions http;
    if (options.endpoint.empty()) {
      http.endpoint = StrCat("https://", parsed.bucket, ".s3.", options.region, ".amazonaws.com");
    } else {
      http.endpoint = options.endpoint;
      while (http.endpoint.ends_with('/')) http.endpoint.pop_back();
      key_path_prefix = StrCat("/", parsed.bucket);
    }
    std::shared_ptr<net::AwsCredentialsProvider> provider = options.credentials_provider;
    if (provider == nullptr && options.credentials) {
      provider = net::AwsCredentialsProvider::Fixed(*options.credentials);
    }
    if (provider == nullptr) {
      auto resolved = net::AwsCredentialsProvider::Resolve();
      if (!resolved.ok()) {
        return core::WithContext(resolved.status(), StrCat("credentials for ", uri));
      }
      provider = *std::move(resolved);
    }
    http.sigv4 = net::SigV4Options{.region = options.region,
                                   .service = "s3",
                                   .credentials = {},
                                   .credentials_provider = std::move(provider),
                                   .add_content_sha256_header = true};
    RFS_ASSIGN_OR_RETURN(auto opened, net::BeastHttpTransport::Open(std::move(http)));
    transport = std::shared_ptr<net::IHttpTransport>(std::move(opened));
  } else if (!options.endpoint.empty()) {
    key_path_prefix = StrCat("/", parsed.bucket);
  }
  auto impl = MakeImpl(std::string(uri), parsed.prefix,
                       std::make_shared<S3Protocol>(std::move(key_path_prefix)),
                       std::move(transport), options);
  return std::shared_ptr<S3Repo>(new S3Repo(std::move(impl)));
}

}  // namespace rfs::s3
