#include "rfs/net/aws_credentials.hpp"

#include <cctype>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include "rfs/core/str_cat.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/net/encoding.hpp"
#include "rfs/net/http_transport.hpp"
#include "rfs/net/xml.hpp"

namespace rfs::net {
namespace {

using core::StrCat;

std::string_view Trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return std::string(Trim(text.str()));
}

// One request to a credentials endpoint, with short timeouts: on a machine without that
// service the chain must move on quickly.
absl::StatusOr<HttpResponse> Fetch(const std::string& endpoint, const HttpRequest& request) {
  HttpTransportOptions options;
  options.endpoint = endpoint;
  options.connect_timeout = std::chrono::milliseconds(1000);
  options.response_timeout = std::chrono::milliseconds(3000);
  auto transport = BeastHttpTransport::Open(std::move(options));
  if (!transport.ok()) return transport.status();
  return (*transport)->Send(request);
}

// "http://host:port/path?query" -> ("http://host:port", "/path?query").
std::pair<std::string, std::string> SplitUrl(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (slash == std::string::npos) return {url, "/"};
  return {url.substr(0, slash), url.substr(slash)};
}

// "2030-01-01T00:00:00Z" (fractional seconds allowed), as STS, ECS and IMDS write expirations.
std::optional<std::chrono::system_clock::time_point> ParseIso8601Utc(std::string_view text) {
  text = Trim(text);
  std::tm tm{};
  const std::string copy(text);
  const char* end = strptime(copy.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  std::string_view rest(end);
  if (rest.starts_with('.')) {
    rest.remove_prefix(1);
    while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') rest.remove_prefix(1);
  }
  if (rest != "Z" && rest != "+00:00") return std::nullopt;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

// {"AccessKeyId","SecretAccessKey","Token","Expiration"} as the container and instance
// endpoints send them.
absl::StatusOr<AwsCredentials> FromCredentialsJson(std::string_view body, std::string_view what) {
  const auto parsed = ParseJson(body);
  const boost::json::object* o = parsed && parsed->is_object() ? &parsed->as_object() : nullptr;
  auto field = [&](const char* name) -> std::string {
    const boost::json::value* v = o != nullptr ? o->if_contains(name) : nullptr;
    return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
  };
  AwsCredentials out{field("AccessKeyId"), field("SecretAccessKey"), field("Token"), std::nullopt};
  if (out.access_key_id.empty() || out.secret_access_key.empty()) {
    return absl::DataLossError(StrCat(what, ": no AccessKeyId and SecretAccessKey in the answer"));
  }
  if (const std::string expiration = field("Expiration"); !expiration.empty()) {
    out.expiration = ParseIso8601Utc(expiration);
    if (!out.expiration) {
      return absl::DataLossError(StrCat(what, ": unreadable Expiration '", expiration, "'"));
    }
  }
  return out;
}

}  // namespace

bool ContainerCredentialsUrlAllowed(std::string_view url) {
  if (url.starts_with("https://")) return true;
  if (!url.starts_with("http://")) return false;
  std::string_view host = url.substr(7);
  host = host.substr(0, host.find_first_of("/?#"));
  if (const size_t at = host.rfind('@'); at != std::string_view::npos) host = host.substr(at + 1);
  if (host.starts_with('[')) {
    host =
        host.substr(1, host.find(']') == std::string_view::npos ? host.size() : host.find(']') - 1);
  } else {
    host = host.substr(0, host.find(':'));
  }
  if (IsLoopbackHost(host)) return true;
  std::string lower(host);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower == "169.254.170.2" || lower == "169.254.170.23" || lower == "fd00:ec2::23";
}

absl::StatusOr<AwsCredentials> AwsCredentialsFromProfileFile(std::string_view path,
                                                             std::string_view profile,
                                                             bool config_style) {
  std::ifstream in{std::string(path)};
  if (!in) return absl::NotFoundError(StrCat("no AWS shared file ", path));
  const std::string wanted =
      config_style && profile != "default" ? StrCat("profile ", profile) : std::string(profile);
  std::string line;
  int number = 0;
  bool in_section = false;
  bool found = false;
  AwsCredentials out;
  while (std::getline(in, line)) {
    ++number;
    const std::string_view text = Trim(line);
    if (text.empty() || text.front() == '#' || text.front() == ';') continue;
    if (text.front() == '[') {
      if (text.back() != ']') {
        return absl::DataLossError(StrCat(path, ":", number, ": unterminated section header"));
      }
      in_section = Trim(text.substr(1, text.size() - 2)) == wanted;
      found = found || in_section;
      continue;
    }
    if (!in_section) continue;
    const size_t eq = text.find('=');
    if (eq == std::string_view::npos) {
      // Nested settings (e.g. "s3 =" followed by indented keys) have no value on their line.
      continue;
    }
    const std::string_view key = Trim(text.substr(0, eq));
    const std::string_view value = Trim(text.substr(eq + 1));
    if (key == "aws_access_key_id") out.access_key_id = std::string(value);
    if (key == "aws_secret_access_key") out.secret_access_key = std::string(value);
    if (key == "aws_session_token") out.session_token = std::string(value);
  }
  if (!found) return absl::NotFoundError(StrCat("no profile [", wanted, "] in ", path));
  if (out.access_key_id.empty() || out.secret_access_key.empty()) {
    return absl::FailedPreconditionError(StrCat(
        "profile [", wanted, "] in ", path, " has no aws_access_key_id and aws_secret_access_key"));
  }
  return out;
}

namespace {

// The value of an environment variable of `sources`, empty when unset.
std::string EnvValue(const AwsCredentialSources& sources, const char* name) {
  const char* value = sources.getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}

// Web identity (EKS IRSA): STS AssumeRoleWithWebIdentity with the projected token.
absl::StatusOr<AwsCredentials> WebIdentityCredentials(const AwsCredentialSources& sources) {
  auto env = [&](const char* name) { return EnvValue(sources, name); };
  std::string region = env("AWS_REGION");
  if (region.empty()) region = env("AWS_DEFAULT_REGION");
  std::string sts = env("AWS_ENDPOINT_URL_STS");
  if (sts.empty()) {
    sts = region.empty() ? "https://sts.amazonaws.com"
                         : StrCat("https://sts.", region, ".amazonaws.com");
  }
  std::string session = env("AWS_ROLE_SESSION_NAME");
  if (session.empty()) session = "rfs";
  const std::string token = ReadFile(env("AWS_WEB_IDENTITY_TOKEN_FILE"));
  if (token.empty()) {
    return absl::FailedPreconditionError(StrCat("AWS_WEB_IDENTITY_TOKEN_FILE ",
                                                env("AWS_WEB_IDENTITY_TOKEN_FILE"),
                                                " is missing or empty"));
  }
  HttpRequest request;
  request.method = "POST";
  request.target = "/";
  request.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
  request.body = StrCat("Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=",
                        PercentEncode(env("AWS_ROLE_ARN"), false),
                        "&RoleSessionName=", PercentEncode(session, false),
                        "&WebIdentityToken=", PercentEncode(token, false));
  auto response = Fetch(sts, request);
  if (!response.ok()) {
    return absl::UnavailableError(
        StrCat("STS AssumeRoleWithWebIdentity at ", sts, ": ", response.status().message()));
  }
  if (response->status != 200) {
    return absl::PermissionDeniedError(
        StrCat("STS AssumeRoleWithWebIdentity for ", env("AWS_ROLE_ARN"), ": HTTP ",
               response->status, " ", XmlElementText(response->body, "Code").value_or(""), ": ",
               XmlElementText(response->body, "Message").value_or("")));
  }
  AwsCredentials out{XmlElementText(response->body, "AccessKeyId").value_or(""),
                     XmlElementText(response->body, "SecretAccessKey").value_or(""),
                     XmlElementText(response->body, "SessionToken").value_or(""), std::nullopt};
  if (out.access_key_id.empty() || out.secret_access_key.empty()) {
    return absl::DataLossError("STS AssumeRoleWithWebIdentity: no credentials in the answer");
  }
  if (auto expiration = XmlElementText(response->body, "Expiration")) {
    out.expiration = ParseIso8601Utc(*expiration);
    if (!out.expiration) {
      return absl::DataLossError("STS AssumeRoleWithWebIdentity: unreadable Expiration");
    }
  }
  return out;
}

// Container credentials (ECS task roles, EKS Pod Identity) from `container`, their URL.
absl::StatusOr<AwsCredentials> ContainerCredentials(const AwsCredentialSources& sources,
                                                    const std::string& container) {
  auto env = [&](const char* name) { return EnvValue(sources, name); };
  if (!ContainerCredentialsUrlAllowed(container)) {
    // As the AWS SDKs: the token and the keys must not cross a network in the clear.
    return absl::PermissionDeniedError(StrCat(
        "container credentials URL ", container,
        " is plain http to a host that is neither loopback nor the ECS/EKS credentials address "
        "(169.254.170.2, 169.254.170.23, fd00:ec2::23): use https"));
  }
  auto [endpoint, target] = SplitUrl(container);
  HttpRequest request;
  request.target = target;
  std::string authorization = env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
  if (!env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE").empty()) {
    authorization = ReadFile(env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"));
  }
  if (!authorization.empty()) request.headers.emplace_back("Authorization", authorization);
  auto response = Fetch(endpoint, request);
  if (!response.ok() || response->status != 200) {
    return absl::UnavailableError(StrCat("container credentials at ", container, ": ",
                                         response.ok() ? StrCat("HTTP ", response->status)
                                                       : std::string(response.status().message())));
  }
  return FromCredentialsJson(response->body, "container credentials");
}

// The EC2 instance metadata service (IMDSv2: a session token first); nullopt when it answers
// with no role.
std::optional<absl::StatusOr<AwsCredentials>> InstanceMetadataCredentials(
    const AwsCredentialSources& sources) {
  auto env = [&](const char* name) { return EnvValue(sources, name); };
  std::string imds = env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  if (imds.empty()) imds = "http://169.254.169.254";
  while (imds.ends_with('/')) imds.pop_back();
  HttpRequest token_request;
  token_request.method = "PUT";
  token_request.target = "/latest/api/token";
  token_request.headers.emplace_back("X-aws-ec2-metadata-token-ttl-seconds", "21600");
  auto token = Fetch(imds, token_request);
  if (token.ok() && token->status == 200) {
    HttpRequest roles;
    roles.target = "/latest/meta-data/iam/security-credentials/";
    roles.headers.emplace_back("X-aws-ec2-metadata-token", std::string(Trim(token->body)));
    auto role = Fetch(imds, roles);
    if (role.ok() && role->status == 200 && !Trim(role->body).empty()) {
      std::string name(Trim(role->body));
      name = name.substr(0, name.find('\n'));
      HttpRequest credentials = roles;
      credentials.target += PercentEncode(name, false);
      auto answer = Fetch(imds, credentials);
      if (answer.ok() && answer->status == 200) {
        return FromCredentialsJson(answer->body, "instance metadata credentials");
      }
    }
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<AwsCredentials> ResolveAwsCredentials(const AwsCredentialSources& sources) {
  auto env = [&](const char* name) { return EnvValue(sources, name); };
  // 1. The environment.
  if (!env("AWS_ACCESS_KEY_ID").empty() || !env("AWS_SECRET_ACCESS_KEY").empty()) {
    if (env("AWS_ACCESS_KEY_ID").empty()) {
      return absl::FailedPreconditionError(
          "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not");
    }
    if (env("AWS_SECRET_ACCESS_KEY").empty()) {
      return absl::FailedPreconditionError(
          "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
    }
    return AwsCredentials{env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"),
                          env("AWS_SESSION_TOKEN"), std::nullopt};
  }
  // 2. Web identity.
  if (!env("AWS_WEB_IDENTITY_TOKEN_FILE").empty() && !env("AWS_ROLE_ARN").empty()) {
    return WebIdentityCredentials(sources);
  }
  // 3. The shared files.
  std::string profile = env("AWS_PROFILE");
  if (profile.empty()) profile = "default";
  const std::string home = env("HOME");
  std::string credentials_file = env("AWS_SHARED_CREDENTIALS_FILE");
  if (credentials_file.empty() && !home.empty()) credentials_file = home + "/.aws/credentials";
  std::string config_file = env("AWS_CONFIG_FILE");
  if (config_file.empty() && !home.empty()) config_file = home + "/.aws/config";
  for (const auto& [file, config_style] :
       {std::pair{credentials_file, false}, std::pair{config_file, true}}) {
    if (file.empty()) continue;
    auto found = AwsCredentialsFromProfileFile(file, profile, config_style);
    if (found.ok() || !absl::IsNotFound(found.status())) return found;
  }
  // 4. Container credentials.
  std::string container = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (container.empty() && !env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").empty()) {
    container = StrCat("http://169.254.170.2", env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"));
  }
  if (!container.empty()) return ContainerCredentials(sources, container);
  // 5. The EC2 instance metadata service.
  if (env("AWS_EC2_METADATA_DISABLED") != "true") {
    if (auto found = InstanceMetadataCredentials(sources)) return *std::move(found);
  }
  return absl::FailedPreconditionError(StrCat(
      "no AWS credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are not set and profile [",
      profile, "] is in neither ",
      credentials_file.empty() ? "(no credentials file)" : credentials_file, " nor ",
      config_file.empty() ? "(no config file)" : config_file,
      "; no web identity, container or instance credentials either"));
}

std::string ResolveAwsRegion(std::string_view flag, const AwsCredentialSources& sources) {
  if (!flag.empty()) return std::string(flag);
  auto env = [&](const char* name) { return EnvValue(sources, name); };
  for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    if (std::string region = env(name); !region.empty()) return region;
  }
  std::string config_file = env("AWS_CONFIG_FILE");
  if (config_file.empty() && !env("HOME").empty()) config_file = env("HOME") + "/.aws/config";
  std::string profile = env("AWS_PROFILE");
  if (profile.empty()) profile = "default";
  const std::string wanted = profile == "default" ? profile : StrCat("profile ", profile);
  std::ifstream in(config_file);
  std::string line;
  bool in_section = false;
  while (std::getline(in, line)) {
    const std::string_view text = Trim(line);
    if (text.starts_with('[') && text.ends_with(']')) {
      in_section = Trim(text.substr(1, text.size() - 2)) == wanted;
    } else if (in_section && text.find('=') != std::string_view::npos &&
               Trim(text.substr(0, text.find('='))) == "region") {
      return std::string(Trim(text.substr(text.find('=') + 1)));
    }
  }
  return {};
}

AwsCredentialsProvider::AwsCredentialsProvider(Options options, AwsCredentials first,
                                               bool refreshable)
    : options_(std::move(options)), refreshable_(refreshable), current_(std::move(first)) {}

const core::IClock& AwsCredentialsProvider::clock() const {
  return options_.clock != nullptr ? *options_.clock : core::SystemClock::Instance();
}

absl::StatusOr<std::shared_ptr<AwsCredentialsProvider>> AwsCredentialsProvider::Resolve(
    Options options) {
  auto first = ResolveAwsCredentials(options.sources);
  if (!first.ok()) return first.status();
  return std::shared_ptr<AwsCredentialsProvider>(
      new AwsCredentialsProvider(std::move(options), *std::move(first), true));
}

std::shared_ptr<AwsCredentialsProvider> AwsCredentialsProvider::Fixed(AwsCredentials credentials) {
  return std::shared_ptr<AwsCredentialsProvider>(
      new AwsCredentialsProvider(Options{}, std::move(credentials), false));
}

absl::StatusOr<AwsCredentials> AwsCredentialsProvider::Current() {
  std::lock_guard lock(mu_);
  if (!refreshable_ || !current_.expiration) return current_;
  const core::IClock::TimePoint now = clock().Now();
  if (now < *current_.expiration - options_.refresh_before || now < next_attempt_) {
    if (now < *current_.expiration) return current_;
  }
  auto fresh = ResolveAwsCredentials(options_.sources);
  if (fresh.ok()) {
    current_ = *std::move(fresh);
    ++refreshes_;
    next_attempt_ = {};
    if (!current_.expiration || now < *current_.expiration) return current_;
    return absl::UnavailableError("the refreshed temporary AWS credentials have expired already");
  }
  next_attempt_ = now + options_.retry_after;
  if (now < *current_.expiration) return current_;
  return absl::UnavailableError(StrCat(
      "temporary AWS credentials expired and could not be refreshed: ", fresh.status().message()));
}

uint64_t AwsCredentialsProvider::refreshes() const {
  std::lock_guard lock(mu_);
  return refreshes_;
}

}  // namespace rfs::net
