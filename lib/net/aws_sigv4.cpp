// AWS SigV4 signing (see aws_sigv4.hpp). Hashes and HMACs come from OpenSSL's libcrypto; the
// canonicalisation rules cite the AWS user guide "Create a signed AWS API request".
#include "rfs/net/aws_sigv4.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <utility>
#include <vector>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "rfs/core/str_cat.hpp"
#include "rfs/net/encoding.hpp"

namespace rfs::net {
namespace {

using Digest = std::array<unsigned char, 32>;

Digest Hmac(std::string_view key, std::string_view data) {
  Digest out{};
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &length);
  return out;
}

std::string_view AsView(const Digest& digest) {
  return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

std::string Hex(const unsigned char* bytes, size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 0xF];
  }
  return out;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Trims and collapses runs of spaces, as the canonical header rules require.
std::string CanonicalHeaderValue(std::string_view value) {
  std::string out;
  bool in_space = false;
  for (char c : value) {
    if (c == ' ' || c == '\t') {
      in_space = true;
      continue;
    }
    if (in_space && !out.empty()) out.push_back(' ');
    in_space = false;
    out.push_back(c);
  }
  return out;
}

// Query parameters decoded from the wire form, re-encoded strictly and sorted by name, then
// value.
std::string CanonicalQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> params;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    std::string_view name = part.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
    params.emplace_back(PercentEncode(PercentDecode(name), false),
                        PercentEncode(PercentDecode(value), false));
  }
  std::sort(params.begin(), params.end());
  std::string out;
  for (const auto& [name, value] : params) {
    if (!out.empty()) out.push_back('&');
    out.append(name).append("=").append(value);
  }
  return out;
}

// Headers a proxy or the HTTP layer may add or rewrite; the AWS SDKs leave them unsigned.
bool IsUnsignedHeader(std::string_view lower_name) {
  return lower_name == "authorization" || lower_name == "user-agent" || lower_name == "expect" ||
         lower_name == "connection" || lower_name == "x-amzn-trace-id" ||
         lower_name == "content-length";
}

void SetHeader(net::HttpHeaders& headers, std::string_view name, std::string value) {
  const std::string lower = ToLower(name);
  std::erase_if(headers, [&](const auto& h) { return ToLower(h.first) == lower; });
  headers.emplace_back(std::string(name), std::move(value));
}

// RFC 3986 remove_dot_segments plus empty segments dropped ("//" -> "/"), as services other
// than S3 normalise the path before they check a signature (the test suite's normalize-path
// cases). A trailing slash stays.
std::string NormalizePath(std::string_view path) {
  std::vector<std::string_view> segments;
  const bool trailing_slash =
      path.size() > 1 && (path.ends_with('/') || path.ends_with("/.") || path.ends_with("/.."));
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    const std::string_view segment = path.substr(start, slash - start);
    if (segment == "..") {
      if (!segments.empty()) segments.pop_back();
    } else if (!segment.empty() && segment != ".") {
      segments.push_back(segment);
    }
    start = slash + 1;
  }
  std::string out;
  for (const auto& segment : segments) out.append("/").append(segment);
  if (out.empty() || trailing_slash) out.push_back('/');
  return out;
}

std::string AmzDate(core::IClock::TimePoint now) {
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y%m%dT%H%M%SZ", &tm);
  return buffer;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
  return Hex(digest, length);
}

std::string Sha256Hex(std::span<const std::string_view> pieces) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(),
                                                                  &EVP_MD_CTX_free);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  bool ok = context != nullptr && EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) == 1;
  for (size_t i = 0; ok && i < pieces.size(); ++i) {
    ok = EVP_DigestUpdate(context.get(), pieces[i].data(), pieces[i].size()) == 1;
  }
  ok = ok && EVP_DigestFinal_ex(context.get(), digest, &length) == 1;
  // OpenSSL fails here only out of memory; an empty hash then fails the signature check loudly.
  return ok ? Hex(digest, length) : std::string();
}

absl::StatusOr<AwsCredentials> AwsCredentialsFromEnvironment() {
  AwsCredentials credentials;
  const char* key = std::getenv("AWS_ACCESS_KEY_ID");
  if (key == nullptr || *key == '\0') {
    return absl::FailedPreconditionError("AWS_ACCESS_KEY_ID is not set");
  }
  const char* secret = std::getenv("AWS_SECRET_ACCESS_KEY");
  if (secret == nullptr || *secret == '\0') {
    return absl::FailedPreconditionError("AWS_SECRET_ACCESS_KEY is not set");
  }
  credentials.access_key_id = key;
  credentials.secret_access_key = secret;
  if (const char* token = std::getenv("AWS_SESSION_TOKEN"); token != nullptr) {
    credentials.session_token = token;
  }
  return credentials;
}

namespace {

absl::Status SignWithPayloadHash(std::string_view method, std::string_view target,
                                 const std::string& payload_hash, net::HttpHeaders& headers,
                                 const SigV4Options& options, core::IClock::TimePoint now,
                                 std::string* canonical_request_out);

}  // namespace

absl::Status SignSigV4(std::string_view method, std::string_view target, std::string_view body,
                       net::HttpHeaders& headers, const SigV4Options& options,
                       core::IClock::TimePoint now, std::string* canonical_request_out) {
  return SignWithPayloadHash(method, target, Sha256Hex(body), headers, options, now,
                             canonical_request_out);
}

absl::Status SignSigV4(std::string_view method, std::string_view target,
                       std::span<const std::string_view> body_pieces, net::HttpHeaders& headers,
                       const SigV4Options& options, core::IClock::TimePoint now) {
  return SignWithPayloadHash(method, target, Sha256Hex(body_pieces), headers, options, now,
                             nullptr);
}

namespace {

absl::Status SignWithPayloadHash(std::string_view method, std::string_view target,
                                 const std::string& payload_hash, net::HttpHeaders& headers,
                                 const SigV4Options& options, core::IClock::TimePoint now,
                                 std::string* canonical_request_out) {
  if (options.region.empty() || options.service.empty()) {
    return absl::InvalidArgumentError("SigV4 signing needs a region and a service name");
  }
  if (options.credentials.access_key_id.empty() || options.credentials.secret_access_key.empty()) {
    return absl::InvalidArgumentError("SigV4 signing needs an access key id and a secret key");
  }
  if (!net::FindHeader(headers, "host")) {
    return absl::InvalidArgumentError("SigV4 signing needs the Host header");
  }
  const std::string amz_date = AmzDate(now);
  const std::string date = amz_date.substr(0, 8);
  SetHeader(headers, "X-Amz-Date", amz_date);
  if (!options.credentials.session_token.empty()) {
    SetHeader(headers, "X-Amz-Security-Token", options.credentials.session_token);
  }
  if (options.add_content_sha256_header) {
    SetHeader(headers, "x-amz-content-sha256", payload_hash);
  }

  // Canonical headers: lower-case names, sorted, values of repeated names joined by commas.
  std::vector<std::pair<std::string, std::string>> signed_headers;
  for (const auto& [name, value] : headers) {
    std::string lower = ToLower(name);
    if (IsUnsignedHeader(lower)) continue;
    auto it = std::find_if(signed_headers.begin(), signed_headers.end(),
                           [&](const auto& h) { return h.first == lower; });
    if (it == signed_headers.end()) {
      signed_headers.emplace_back(std::move(lower), CanonicalHeaderValue(value));
    } else {
      it->second.append(",").append(CanonicalHeaderValue(value));
    }
  }
  std::sort(signed_headers.begin(), signed_headers.end());
  std::string canonical_headers;
  std::string signed_names;
  for (const auto& [name, value] : signed_headers) {
    canonical_headers.append(name).append(":").append(value).append("\n");
    if (!signed_names.empty()) signed_names.push_back(';');
    signed_names.append(name);
  }

  const size_t question = target.find('?');
  const std::string_view path = target.substr(0, question);
  const std::string_view query =
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
  // Services other than S3 encode the (already URL-encoded) path once more; S3 signs it as sent.
  const std::string_view wire_path = path.empty() ? std::string_view("/") : path;
  const std::string canonical_path = options.service == "s3"
                                         ? std::string(wire_path)
                                         : PercentEncode(NormalizePath(wire_path), true);
  const std::string canonical_request =
      core::StrCat(method, "\n", canonical_path, "\n", CanonicalQuery(query), "\n",
                   canonical_headers, "\n", signed_names, "\n", payload_hash);
  if (canonical_request_out != nullptr) *canonical_request_out = canonical_request;
  const std::string scope =
      core::StrCat(date, "/", options.region, "/", options.service, "/aws4_request");
  const std::string string_to_sign =
      core::StrCat("AWS4-HMAC-SHA256\n", amz_date, "\n", scope, "\n", Sha256Hex(canonical_request));
  const Digest k_date = Hmac(core::StrCat("AWS4", options.credentials.secret_access_key), date);
  const Digest k_region = Hmac(AsView(k_date), options.region);
  const Digest k_service = Hmac(AsView(k_region), options.service);
  const Digest k_signing = Hmac(AsView(k_service), "aws4_request");
  const Digest signature = Hmac(AsView(k_signing), string_to_sign);
  SetHeader(headers, "Authorization",
            core::StrCat("AWS4-HMAC-SHA256 Credential=", options.credentials.access_key_id, "/",
                         scope, ", SignedHeaders=", signed_names,
                         ", Signature=", Hex(signature.data(), signature.size())));
  return absl::OkStatus();
}

}  // namespace

}  // namespace rfs::net
