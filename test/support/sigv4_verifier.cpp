// VerifySigV4 (see sigv4_verifier.hpp). Follows the AWS user guide "Create a signed AWS API
// request" and "Authenticating Requests (AWS Signature Version 4)" of the S3 API reference.
#include "sigv4_verifier.hpp"

#include <algorithm>
#include <ctime>
#include <vector>

#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace rfs::test {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string HexOf(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(digits[p[i] >> 4]);
    out.push_back(digits[p[i] & 15]);
  }
  return out;
}

std::string Sha256(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), digest, &n, EVP_sha256(), nullptr);
  return HexOf(digest, n);
}

std::string HmacRaw(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &n);
  return std::string(reinterpret_cast<const char*>(out), n);
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string Decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 && HexValue(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// RFC 3986 unreserved characters stay, everything else is %XX (upper-case hex).
std::string Encode(std::string_view s, bool keep_slash) {
  static const char* digits = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(digits[c >> 4]);
      out.push_back(digits[c & 15]);
    }
  }
  return out;
}

std::string Collapse(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

// "k=v, k2=v2" parts of the Authorization header after the algorithm.
std::map<std::string, std::string> AuthorizationFields(std::string_view text) {
  std::map<std::string, std::string> out;
  while (!text.empty()) {
    while (!text.empty() && (text.front() == ' ' || text.front() == ',')) text.remove_prefix(1);
    const size_t end = text.find(',');
    std::string_view part = text.substr(0, end);
    const size_t eq = part.find('=');
    if (eq != std::string_view::npos) {
      out[std::string(part.substr(0, eq))] = std::string(part.substr(eq + 1));
    }
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

std::optional<SigV4Rejection> Reject(std::string code, std::string message) {
  return SigV4Rejection{std::move(code), std::move(message)};
}

}  // namespace

std::optional<SigV4Rejection> VerifySigV4(const net::HttpRequest& request,
                                          const SigV4Expectation& expect,
                                          core::IClock::TimePoint now) {
  const std::string authorization = net::FindHeader(request.headers, "authorization").value_or("");
  const std::string algorithm = "AWS4-HMAC-SHA256 ";
  if (!authorization.starts_with(algorithm)) {
    return Reject("MissingAuthenticationToken", "no AWS4-HMAC-SHA256 Authorization header");
  }
  auto fields = AuthorizationFields(std::string_view(authorization).substr(algorithm.size()));
  const std::string credential = fields["Credential"];
  const std::string signed_names = fields["SignedHeaders"];
  const std::string signature = fields["Signature"];
  // Credential = KEY/DATE/REGION/SERVICE/aws4_request
  std::vector<std::string> scope;
  for (size_t start = 0;;) {
    const size_t slash = credential.find('/', start);
    scope.push_back(credential.substr(start, slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (scope.size() != 5 || scope[4] != "aws4_request" || signed_names.empty() ||
      signature.size() != 64) {
    return Reject("AuthorizationHeaderMalformed", "malformed Authorization: " + credential);
  }
  const std::string& key = scope[0];
  auto secret = expect.secrets.find(key);
  if (secret == expect.secrets.end()) {
    return Reject("InvalidAccessKeyId", "unknown access key " + key);
  }
  if (auto expiry = expect.expirations.find(key);
      expiry != expect.expirations.end() && now >= expiry->second) {
    return Reject("ExpiredToken", "the security token included in the request is expired");
  }
  if (scope[2] != expect.region) {
    return Reject("AuthorizationHeaderMalformed", "the region '" + scope[2] + "' is wrong");
  }
  if (scope[3] != expect.service) {
    return Reject("SignatureDoesNotMatch", "service '" + scope[3] + "' is wrong");
  }
  const std::string amz_date = net::FindHeader(request.headers, "x-amz-date").value_or("");
  std::tm tm{};
  if (amz_date.size() != 16 || strptime(amz_date.c_str(), "%Y%m%dT%H%M%SZ", &tm) == nullptr) {
    return Reject("AccessDenied", "no valid X-Amz-Date");
  }
  const auto signed_at = std::chrono::system_clock::from_time_t(timegm(&tm));
  if (signed_at > now + expect.max_skew || signed_at < now - expect.max_skew) {
    return Reject("RequestTimeTooSkewed", "X-Amz-Date " + amz_date + " is too far from now");
  }
  if (amz_date.substr(0, 8) != scope[1]) {
    return Reject("SignatureDoesNotMatch", "the credential scope date is not X-Amz-Date's");
  }

  // The payload hash: S3 requires x-amz-content-sha256 and checks it against the body.
  const auto content_sha = net::FindHeader(request.headers, "x-amz-content-sha256");
  const std::string body_sha = Sha256(request.body);
  if (content_sha && *content_sha != "UNSIGNED-PAYLOAD" && *content_sha != body_sha) {
    return Reject("XAmzContentSHA256Mismatch", "x-amz-content-sha256 is not the body's hash");
  }
  if (expect.service == "s3" && !content_sha) {
    return Reject("InvalidRequest", "S3 requests need x-amz-content-sha256");
  }
  const std::string payload_hash = content_sha ? *content_sha : body_sha;

  // Signed headers: each listed name's values, in the order received, joined with commas.
  std::string canonical_headers;
  bool host_signed = false;
  for (size_t start = 0;;) {
    const size_t semi = signed_names.find(';', start);
    const std::string name = signed_names.substr(start, semi - start);
    if (name != Lower(name)) return Reject("SignatureDoesNotMatch", "signed header not lower case");
    host_signed = host_signed || name == "host";
    std::string values;
    bool found = false;
    for (const auto& [n, v] : request.headers) {
      if (Lower(n) != name) continue;
      if (found) values.push_back(',');
      values += Collapse(v);
      found = true;
    }
    if (!found) return Reject("SignatureDoesNotMatch", "signed header '" + name + "' is missing");
    canonical_headers += name + ":" + values + "\n";
    if (semi == std::string::npos) break;
    start = semi + 1;
  }
  if (!host_signed) return Reject("SignatureDoesNotMatch", "the Host header is not signed");
  if (net::FindHeader(request.headers, "x-amz-security-token") &&
      signed_names.find("x-amz-security-token") == std::string::npos && expect.service != "s3") {
    return Reject("SignatureDoesNotMatch", "X-Amz-Security-Token is not signed");
  }

  const std::string& target = request.target;
  const size_t question = target.find('?');
  const std::string raw_path = target.substr(0, question);
  std::string canonical_path = Encode(Decode(raw_path.empty() ? "/" : raw_path), true);
  if (expect.service != "s3") canonical_path = Encode(canonical_path, true);
  std::vector<std::pair<std::string, std::string>> params;
  if (question != std::string::npos) {
    std::string_view query = std::string_view(target).substr(question + 1);
    while (!query.empty()) {
      const size_t amp = query.find('&');
      const std::string_view part = query.substr(0, amp);
      if (!part.empty()) {
        const size_t eq = part.find('=');
        params.emplace_back(
            Encode(Decode(part.substr(0, eq)), false),
            eq == std::string_view::npos ? "" : Encode(Decode(part.substr(eq + 1)), false));
      }
      if (amp == std::string_view::npos) break;
      query.remove_prefix(amp + 1);
    }
  }
  std::sort(params.begin(), params.end());
  std::string canonical_query;
  for (const auto& [name, value] : params) {
    if (!canonical_query.empty()) canonical_query.push_back('&');
    canonical_query += name + "=" + value;
  }
  const std::string canonical_request = request.method + "\n" + canonical_path + "\n" +
                                        canonical_query + "\n" + canonical_headers + "\n" +
                                        signed_names + "\n" + payload_hash;
  const std::string scope_text = scope[1] + "/" + scope[2] + "/" + scope[3] + "/aws4_request";
  const std::string string_to_sign =
      "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope_text + "\n" + Sha256(canonical_request);
  std::string signing_key = HmacRaw("AWS4" + secret->second, scope[1]);
  signing_key = HmacRaw(signing_key, scope[2]);
  signing_key = HmacRaw(signing_key, scope[3]);
  signing_key = HmacRaw(signing_key, "aws4_request");
  const std::string expected = HmacRaw(signing_key, string_to_sign);
  if (HexOf(reinterpret_cast<const unsigned char*>(expected.data()), expected.size()) !=
      signature) {
    return Reject("SignatureDoesNotMatch",
                  "the request signature we calculated does not match the signature you "
                  "provided; canonical request:\n" +
                      canonical_request);
  }
  return std::nullopt;
}

}  // namespace rfs::test
