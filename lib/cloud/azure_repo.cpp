// AzureRepo (see azure_repo.hpp): the Blob service's requests and answers over RangedObjectRepo.
#include "rfs/cloud/azure_repo.hpp"

#include <algorithm>

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/net/encoding.hpp"
#include "rfs/net/http_status.hpp"
#include "rfs/net/xml.hpp"

namespace rfs::cloud {

using core::StrCat;

namespace {

// https://learn.microsoft.com/rest/api/storageservices/naming-and-referencing-containers--blobs--and-metadata:
// 3-63 lower-case letters, digits and single '-', starting and ending with a letter or digit.
bool ValidContainer(std::string_view c) {
  if (c.size() < 3 || c.size() > 63) return false;
  auto alnum = [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'); };
  if (!alnum(c.front()) || !alnum(c.back()) || c.find("--") != std::string_view::npos) {
    return false;
  }
  return std::all_of(c.begin(), c.end(), [&](char ch) { return alnum(ch) || ch == '-'; });
}

// The text of each <Name> inside the <`element`> elements of a List Blobs page, bounds-checked.
absl::Status NamesIn(std::string_view xml, std::string_view element, std::string_view source,
                     std::vector<std::string>& out) {
  const std::string open = StrCat("<", element, ">");
  const std::string close = StrCat("</", element, ">");
  size_t at = 0;
  while ((at = xml.find(open, at)) != std::string_view::npos) {
    const size_t end = xml.find(close, at);
    if (end == std::string_view::npos) {
      return absl::DataLossError(
          StrCat(source, ": <", element, "> at offset ", at, " is not closed"));
    }
    const std::string_view body = xml.substr(at + open.size(), end - at - open.size());
    auto name = net::XmlElementText(body, "Name");
    if (!name) {
      // Names with characters XML cannot hold come as <Name Encoded="true">: not in a snapshot
      // repository.
      return absl::DataLossError(
          StrCat(source, ": <", element, "> at offset ", at, " has no plain <Name>"));
    }
    out.push_back(*std::move(name));
    at = end + close.size();
  }
  return absl::OkStatus();
}

class AzureProtocol final : public IObjectProtocol {
 public:
  // `container_path`: the endpoint's path and the container, e.g. "/devstoreaccount1/snaps".
  AzureProtocol(std::string container_path, std::string credential_source)
      : container_path_(std::move(container_path)),
        credential_source_(std::move(credential_source)) {}

  net::HttpRequest ListRequest(std::string_view prefix, bool flat, std::string_view token,
                               int page_keys) const override {
    net::HttpRequest request = Versioned();
    request.target = StrCat(
        container_path_, "?restype=container&comp=list&prefix=", net::PercentEncode(prefix, false),
        flat ? "" : "&delimiter=%2F", "&maxresults=", std::min(page_keys, 5000));
    if (!token.empty()) request.target += "&marker=" + net::PercentEncode(token, false);
    return request;
  }

  absl::StatusOr<ObjectListPage> ParseList(const net::HttpResponse& response,
                                           std::string_view source) const override {
    std::string_view xml = response.body;
    if (xml.find("<EnumerationResults") == std::string_view::npos) {
      return absl::DataLossError(StrCat(source, ": not a List Blobs answer"));
    }
    ObjectListPage out;
    RFS_RETURN_IF_ERROR(NamesIn(xml, "Blob", source, out.keys));
    RFS_RETURN_IF_ERROR(NamesIn(xml, "BlobPrefix", source, out.prefixes));
    out.next_token = net::XmlElementText(xml, "NextMarker").value_or("");
    return out;
  }

  net::HttpRequest GetRequest(std::string_view key) const override {
    net::HttpRequest request = Versioned();
    request.target = BlobPath(key);
    return request;
  }
  std::string_view RangeHeader() const override { return "x-ms-range"; }

  net::HttpRequest SizeRequest(std::string_view key) const override {
    net::HttpRequest request = Versioned();
    request.method = "HEAD";
    request.target = BlobPath(key);
    return request;
  }

  net::HttpRequest PutRequest(std::string_view key, std::string body,
                              std::string_view content_type) const override {
    net::HttpRequest request = Versioned();
    request.method = "PUT";
    request.target = BlobPath(key);
    request.headers.emplace_back("x-ms-blob-type", "BlockBlob");
    request.headers.emplace_back("Content-Type", std::string(content_type));
    request.body = std::move(body);
    return request;
  }

  // <Error><Code>..</Code><Message>..</Message></Error> (a HEAD's answer has no body: the code
  // is in x-ms-error-code).
  absl::Status ErrorFor(const net::HttpResponse& r, std::string_view what,
                        std::string_view description) const override {
    std::string code =
        net::XmlElementText(r.body, "Code").value_or(r.Header("x-ms-error-code").value_or(""));
    std::string message = net::XmlElementText(r.body, "Message").value_or("");
    message = message.substr(0, message.find('\n'));  // then RequestId and Time
    std::string text = StrCat(what, " in ", description, ": HTTP ", r.status,
                              code.empty() ? "" : " ", code, message.empty() ? "" : ": ", message);
    // Azure answers anonymous requests to a private container with 404, as if it were not
    // there: the credentials say why.
    if (r.status == 401 || r.status == 403 ||
        (r.status == 404 && credential_source_.starts_with("none"))) {
      text += StrCat(" (credentials: ", credential_source_, ")");
    }
    return net::StatusFromHttp(r.status, text, {{401, absl::StatusCode::kPermissionDenied}});
  }

 private:
  static net::HttpRequest Versioned() {
    net::HttpRequest request;
    request.headers.emplace_back("x-ms-version", kAzureStorageVersion);
    return request;
  }
  std::string BlobPath(std::string_view key) const {
    return StrCat(container_path_, "/", net::PercentEncode(key, /*keep_slash=*/true));
  }

  std::string container_path_;
  std::string credential_source_;
};

}  // namespace

absl::StatusOr<BucketUri> ParseAzureUri(std::string_view uri) {
  RFS_ASSIGN_OR_RETURN(BucketUri parsed, BucketUri::Parse(uri, "az", "az://container/path"));
  if (!ValidContainer(parsed.bucket)) {
    return absl::InvalidArgumentError(
        StrCat("'", parsed.bucket, "' is not a valid Azure container name"));
  }
  return parsed;
}

absl::StatusOr<std::shared_ptr<AzureRepo>> AzureRepo::Open(std::string_view uri,
                                                           AzureOptions options) {
  RFS_ASSIGN_OR_RETURN(BucketUri parsed, ParseAzureUri(uri));
  AzureCredentials credentials;
  if (options.credentials) {
    credentials = *options.credentials;
    if (!options.account.empty()) credentials.account = options.account;
  } else {
    AzureCredentialOptions chain;
    chain.getenv = options.getenv;
    chain.account = options.account;
    chain.endpoint_given = !options.endpoint.empty();
    auto resolved = ResolveAzureCredentials(chain);
    if (!resolved.ok()) {
      return core::WithContext(resolved.status(), StrCat("credentials for ", uri));
    }
    credentials = *std::move(resolved);
  }
  std::string endpoint = options.endpoint;
  if (endpoint.empty()) endpoint = credentials.blob_endpoint;
  if (endpoint.empty()) {
    if (credentials.account.empty()) {
      return absl::InvalidArgumentError(
          StrCat("reading ", uri, " needs --azure-account (or AZURE_STORAGE_ACCOUNT)"));
    }
    endpoint = StrCat("https://", credentials.account, ".blob.core.windows.net");
  }
  RFS_ASSIGN_OR_RETURN(EndpointUrl url, EndpointUrl::Parse(endpoint, "--azure-endpoint"));
  std::shared_ptr<net::IHttpTransport> transport = options.transport;
  if (transport == nullptr) {
    net::HttpTransportOptions http;
    http.endpoint = url.origin;
    // The plain-http policy of every credentialed transport (warn, or refuse with
    // --refuse-plain-http-credentials) covers the key's signatures, SAS tokens and OAuth tokens.
    http.sends_bearer_token = credentials.kind != AzureCredentials::Kind::kNone;
    RFS_ASSIGN_OR_RETURN(auto opened, net::BeastHttpTransport::Open(std::move(http)));
    transport = std::shared_ptr<net::IHttpTransport>(std::move(opened));
  }
  const std::string source = credentials.source;
  // The targets carry the endpoint's path, so the signature covers the whole path.
  transport = AuthorizingTransport(std::move(transport), std::move(credentials), "");
  auto impl =
      MakeImpl(std::string(uri), parsed.prefix,
               std::make_shared<AzureProtocol>(StrCat(url.path, "/", parsed.bucket), source),
               std::move(transport), options);
  return std::shared_ptr<AzureRepo>(new AzureRepo(std::move(impl), source));
}

}  // namespace rfs::cloud
