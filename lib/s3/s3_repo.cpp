// S3Repo (see s3_repo.hpp).
#include "rfs/s3/s3_repo.hpp"

#include <algorithm>
#include <charconv>
#include <list>
#include <map>
#include <mutex>

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/aws_credentials.hpp"
#include "rfs/net/encoding.hpp"
#include "rfs/net/http_transport.hpp"
#include "rfs/net/retrying_transport.hpp"
#include "rfs/net/xml.hpp"

#include "s3/xml_internal.hpp"

namespace rfs::s3 {
namespace {

using core::StrCat;

// Ranged reads fetch aligned blocks of this size and keep a few per open blob, so that a reader's
// small positional reads (headers, footers, one chunk at a time) cost one request per block.
constexpr uint64_t kBlockBytes = uint64_t{4} << 20;
constexpr size_t kBlocksPerBlob = 8;

bool ValidBucketName(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  return std::all_of(b.begin(), b.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
  });
}

}  // namespace

absl::StatusOr<S3Uri> S3Uri::Parse(std::string_view uri) {
  if (!uri.starts_with("s3://")) {
    return absl::InvalidArgumentError(StrCat("'", uri, "' is not an s3://bucket/prefix URI"));
  }
  uri.remove_prefix(5);
  S3Uri out;
  const size_t slash = uri.find('/');
  out.bucket = std::string(uri.substr(0, slash));
  if (!ValidBucketName(out.bucket)) {
    return absl::InvalidArgumentError(StrCat("'", out.bucket, "' is not a valid S3 bucket name"));
  }
  if (slash != std::string_view::npos) {
    std::string_view prefix = uri.substr(slash + 1);
    while (prefix.starts_with('/')) prefix.remove_prefix(1);
    while (prefix.ends_with('/')) prefix.remove_suffix(1);
    if (!prefix.empty()) out.prefix = StrCat(prefix, "/");
  }
  return out;
}

struct S3Repo::Impl {
  std::string description;
  S3Uri uri;
  S3Options options;
  std::shared_ptr<net::IHttpTransport> transport;
  // Requests go to "/<key>" (virtual-hosted) or "/<bucket>/<key>" (path-style).
  std::string key_path_prefix;

  std::string KeyTarget(std::string_view key) const {
    return StrCat(key_path_prefix, "/", net::PercentEncode(key, /*keep_slash=*/true));
  }

  // An S3 error response as a status: the code and message from its XML body.
  absl::Status ErrorFor(const net::HttpResponse& r, std::string_view what) const {
    const std::string code = net::XmlElementText(r.body, "Code").value_or("");
    const std::string message = net::XmlElementText(r.body, "Message").value_or("");
    const std::string text =
        StrCat(what, " in ", description, ": HTTP ", r.status, code.empty() ? "" : " ", code,
               message.empty() ? "" : ": ", message);
    if (r.status == 404) return absl::NotFoundError(text);
    if (r.status == 403 || r.status == 401) return absl::PermissionDeniedError(text);
    if (r.status == 301 || r.status == 307) {
      return absl::FailedPreconditionError(
          StrCat(text, " (the bucket is in another region: check --s3-region)"));
    }
    if (r.status == 429 || r.status >= 500) return absl::UnavailableError(text);
    return absl::InvalidArgumentError(text);
  }

  absl::StatusOr<net::HttpResponse> Send(net::HttpRequest request, std::string_view what) const {
    auto response = transport->Send(request);
    if (!response.ok())
      return core::WithContext(response.status(), StrCat(what, " in ", description));
    return response;
  }

  // One page after another of ListObjectsV2 under `prefix` with delimiter '/'.
  absl::Status List(std::string_view dir, std::vector<std::string>* blobs,
                    std::vector<std::string>* folders) const {
    std::string prefix = uri.prefix;
    if (!dir.empty()) prefix += StrCat(dir, dir.ends_with('/') ? "" : "/");
    std::string token;
    for (int page = 0; page < 100'000; ++page) {
      net::HttpRequest request;
      // The bucket itself: "/" virtual-hosted, "/<bucket>" path-style (a trailing slash would
      // name an empty key).
      request.target = StrCat(
          key_path_prefix.empty() ? "/" : key_path_prefix,
          "?list-type=2&delimiter=%2F&max-keys=", std::clamp(options.list_page_keys, 1, 1000),
          "&prefix=", net::PercentEncode(prefix, /*keep_slash=*/false));
      if (!token.empty()) {
        request.target += "&continuation-token=" + net::PercentEncode(token, false);
      }
      RFS_ASSIGN_OR_RETURN(net::HttpResponse r, Send(request, StrCat("listing '", prefix, "'")));
      if (r.status != 200) return ErrorFor(r, StrCat("listing '", prefix, "'"));
      RFS_ASSIGN_OR_RETURN(internal::ListPage listed,
                           internal::ParseListPage(r.body, StrCat("listing of ", prefix)));
      for (const auto& key : listed.keys) {
        if (blobs != nullptr && key.starts_with(prefix) && key.size() > prefix.size()) {
          blobs->push_back(key.substr(prefix.size()));
        }
      }
      for (const auto& p : listed.prefixes) {
        if (folders != nullptr && p.starts_with(prefix) && p.size() > prefix.size() + 1) {
          folders->push_back(p.substr(prefix.size(), p.size() - prefix.size() - 1));
        }
      }
      if (!listed.truncated) break;
      if (listed.next_token.empty()) {
        return absl::DataLossError(StrCat("listing of ", prefix, " in ", description,
                                          ": truncated page without a continuation token"));
      }
      token = listed.next_token;
    }
    if (blobs != nullptr) std::sort(blobs->begin(), blobs->end());
    if (folders != nullptr) std::sort(folders->begin(), folders->end());
    return absl::OkStatus();
  }

  absl::StatusOr<uint64_t> Head(std::string_view path) const {
    net::HttpRequest request;
    request.method = "HEAD";
    request.target = KeyTarget(uri.prefix + std::string(path));
    RFS_ASSIGN_OR_RETURN(net::HttpResponse r, Send(request, StrCat("HEAD '", path, "'")));
    if (r.status == 404) {
      return absl::NotFoundError(StrCat("blob '", path, "' not found in ", description));
    }
    if (r.status != 200) return ErrorFor(r, StrCat("HEAD '", path, "'"));
    const auto length = r.Header("Content-Length");
    uint64_t size = 0;
    if (!length ||
        std::from_chars(length->data(), length->data() + length->size(), size).ec != std::errc()) {
      return absl::DataLossError(
          StrCat("HEAD '", path, "' in ", description, ": no usable Content-Length"));
    }
    return size;
  }

  // GET of [offset, offset + length) of a blob of known size, checked to be exactly that.
  absl::StatusOr<std::string> GetRange(std::string_view path, uint64_t offset,
                                       uint64_t length) const {
    net::HttpRequest request;
    request.target = KeyTarget(uri.prefix + std::string(path));
    if (length > 0) {
      request.headers.emplace_back("Range", StrCat("bytes=", offset, "-", offset + length - 1));
    }
    RFS_ASSIGN_OR_RETURN(net::HttpResponse r, Send(request, StrCat("GET '", path, "'")));
    if (r.status != 200 && r.status != 206) return ErrorFor(r, StrCat("GET '", path, "'"));
    if (r.status == 200 && offset > 0) {
      // A server that ignores Range sends the whole blob.
      if (r.body.size() < offset + length) {
        return core::DataLossAt(path, offset, StrCat("short read from ", description));
      }
      r.body = r.body.substr(offset, length);
    }
    if (r.body.size() != length) {
      return core::DataLossAt(
          path, offset,
          StrCat("expected ", length, " bytes from ", description, ", got ", r.body.size()));
    }
    return std::move(r.body);
  }
};

namespace {

// A large blob read by range: aligned blocks fetched on demand, a few kept (least recently used
// out first), so memory stays bounded whatever the blob's size.
class S3File final : public core::IRandomAccessFile {
 public:
  S3File(std::shared_ptr<const S3Repo::Impl> repo, std::string path, uint64_t size)
      : repo_(std::move(repo)), path_(std::move(path)), size_(size) {}

  const std::string& name() const override { return path_; }
  uint64_t size() const override { return size_; }

  absl::Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
    if (offset > size_ || out.size() > size_ - offset) {
      return core::DataLossAt(path_, offset,
                              StrCat("read of ", out.size(), " bytes past the end (", size_, ")"));
    }
    uint64_t done = 0;
    while (done < out.size()) {
      const uint64_t at = offset + done;
      const uint64_t block = at / kBlockBytes;
      RFS_ASSIGN_OR_RETURN(std::shared_ptr<const std::string> bytes, Block(block));
      const uint64_t within = at - block * kBlockBytes;
      const uint64_t n = std::min<uint64_t>(out.size() - done, bytes->size() - within);
      std::copy_n(bytes->data() + within, n, reinterpret_cast<char*>(out.data() + done));
      done += n;
    }
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<std::shared_ptr<const std::string>> Block(uint64_t index) const {
    {
      std::lock_guard lock(mu_);
      for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
        if (it->first == index) {
          blocks_.splice(blocks_.begin(), blocks_, it);
          return it->second;
        }
      }
    }
    const uint64_t start = index * kBlockBytes;
    const uint64_t length = std::min(kBlockBytes, size_ - start);
    RFS_ASSIGN_OR_RETURN(std::string bytes, repo_->GetRange(path_, start, length));
    auto block = std::make_shared<const std::string>(std::move(bytes));
    std::lock_guard lock(mu_);
    blocks_.emplace_front(index, block);
    if (blocks_.size() > kBlocksPerBlob) blocks_.pop_back();
    return block;
  }

  std::shared_ptr<const S3Repo::Impl> repo_;
  const std::string path_;
  const uint64_t size_;
  mutable std::mutex mu_;
  mutable std::list<std::pair<uint64_t, std::shared_ptr<const std::string>>> blocks_;
};

}  // namespace

S3Repo::S3Repo(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
S3Repo::~S3Repo() = default;

absl::StatusOr<std::shared_ptr<S3Repo>> S3Repo::Open(std::string_view uri, S3Options options) {
  RFS_ASSIGN_OR_RETURN(S3Uri parsed, S3Uri::Parse(uri));
  if (options.region.empty()) {
    if (!options.endpoint.empty()) {
      options.region = "us-east-1";  // What S3-compatible servers accept when none is set up.
    } else {
      return absl::InvalidArgumentError(StrCat("reading ", uri, " needs --s3-region"));
    }
  }
  auto impl = std::make_shared<Impl>();
  impl->description = std::string(uri);
  impl->uri = parsed;
  std::shared_ptr<net::IHttpTransport> transport = options.transport;
  if (transport == nullptr) {
    net::HttpTransportOptions http;
    if (options.endpoint.empty()) {
      http.endpoint = StrCat("https://", parsed.bucket, ".s3.", options.region, ".amazonaws.com");
    } else {
      http.endpoint = options.endpoint;
      while (http.endpoint.ends_with('/')) http.endpoint.pop_back();
      impl->key_path_prefix = StrCat("/", parsed.bucket);
    }
    net::AwsCredentials credentials;
    if (options.credentials) {
      credentials = *options.credentials;
    } else {
      auto from_env = net::ResolveAwsCredentials();
      if (!from_env.ok()) {
        return core::WithContext(from_env.status(), StrCat("credentials for ", uri));
      }
      credentials = *std::move(from_env);
    }
    http.sigv4 = net::SigV4Options{.region = options.region,
                                   .service = "s3",
                                   .credentials = std::move(credentials),
                                   .add_content_sha256_header = true};
    RFS_ASSIGN_OR_RETURN(auto opened, net::BeastHttpTransport::Open(std::move(http)));
    transport = std::shared_ptr<net::IHttpTransport>(std::move(opened));
  } else if (!options.endpoint.empty()) {
    impl->key_path_prefix = StrCat("/", parsed.bucket);
  }
  // Every request here is a GET, HEAD or list: safe to send again.
  impl->transport = std::make_shared<net::RetryingHttpTransport>(
      std::move(transport), core::SystemClock::Instance(),
      net::TransportRetryPolicy{.max_attempts = std::max(1, options.request_attempts),
                                .initial_backoff = std::chrono::milliseconds(100),
                                .max_backoff = std::chrono::milliseconds(5000)});
  impl->options = std::move(options);
  return std::shared_ptr<S3Repo>(new S3Repo(std::move(impl)));
}

const std::string& S3Repo::description() const { return impl_->description; }

absl::StatusOr<std::vector<std::string>> S3Repo::ListBlobs(std::string_view dir) const {
  std::vector<std::string> out;
  RFS_RETURN_IF_ERROR(impl_->List(dir, &out, nullptr));
  return out;
}

absl::StatusOr<std::vector<std::string>> S3Repo::ListFolders(std::string_view dir) const {
  std::vector<std::string> out;
  RFS_RETURN_IF_ERROR(impl_->List(dir, nullptr, &out));
  return out;
}

absl::StatusOr<uint64_t> S3Repo::BlobSize(std::string_view path) const { return impl_->Head(path); }

absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> S3Repo::OpenBlob(
    std::string_view path) const {
  RFS_ASSIGN_OR_RETURN(const uint64_t size, impl_->Head(path));
  if (size <= impl_->options.whole_blob_bytes) {
    RFS_ASSIGN_OR_RETURN(std::string bytes, impl_->GetRange(path, 0, size));
    return std::make_shared<core::MemoryFile>(std::string(path),
                                              std::vector<uint8_t>(bytes.begin(), bytes.end()));
  }
  return std::make_shared<S3File>(impl_, std::string(path), size);
}

}  // namespace rfs::s3
