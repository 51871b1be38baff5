// Google's external_account credentials (Workload Identity Federation), as its client libraries
// read them (google.aip.dev/auth/4117): a token of another identity provider (the "subject
// token") is exchanged at Google's Security Token Service (RFC 8693 token exchange) for a Google
// access token, which may in turn be exchanged for a service account's token (IAM Credentials'
// generateAccessToken).
//
// The subject token comes from the file's credential_source:
//   - "file": a file the platform keeps fresh (a Kubernetes projected token, ...);
//   - "url": a local metadata endpoint (Azure's IMDS, ...), with "headers";
//   - either as "format" {"type": "text"} (the whole body) or {"type": "json",
//     "subject_token_field_name": F};
//   - "executable": a command run without a shell (only when
//     GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1, as the libraries require), whose JSON answer
//     {"version": 1, "success": true, "token_type", "id_token" | "saml_response",
//     "expiration_time"} holds the token; its "output_file" is used while it holds an unexpired
//     answer;
//   - "environment_id": "aws1": a SigV4-signed AWS STS GetCallerIdentity request (signed with
//     the AWS credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN, else
//     from the metadata "url"; the region from AWS_REGION/AWS_DEFAULT_REGION, else "region_url"),
//     serialized as JSON and URL-encoded.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <sstream>
#include <vector>

#include "rfs/core/base64.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/aws_sigv4.hpp"
#include "rfs/net/encoding.hpp"

#include "auth_support.hpp"
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace rfs::cloud::internal {

using core::StrCat;

namespace {

constexpr std::string_view kDefaultStsUrl = "https://sts.googleapis.com/v1/token";

std::string FormValue(std::string_view value) { return net::PercentEncode(value, false); }

int64_t IntField(const boost::json::object& object, std::string_view key, int64_t fallback) {
  const auto* value = object.if_contains(key);
  if (value == nullptr) return fallback;
  if (value->is_int64()) return value->as_int64();
  if (value->is_uint64()) return static_cast<int64_t>(value->as_uint64());
  return fallback;
}

int64_t NowSeconds(const core::IClock* clock) {
  return std::chrono::duration_cast<std::chrono::seconds>(ClockOr(clock).Now().time_since_epoch())
      .count();
}

/// A subject token read from a body by the source's "format".
absl::StatusOr<std::string> TokenFromBody(std::string_view body, const boost::json::object& source,
                                          std::string_view where) {
  const auto* format = source.if_contains("format");
  const boost::json::object* format_object =
      format != nullptr && format->is_object() ? &format->as_object() : nullptr;
  const std::string type = format_object ? StringField(*format_object, "type") : "text";
  if (type == "text" || type.empty()) {
    if (body.empty()) return absl::InvalidArgumentError(StrCat(where, " is empty"));
    return std::string(body);
  }
  if (type != "json") {
    return absl::InvalidArgumentError(
        StrCat("credential_source.format.type '", type, "' is neither 'text' nor 'json'"));
  }
  const std::string field = StringField(*format_object, "subject_token_field_name");
  if (field.empty()) {
    return absl::InvalidArgumentError(
        "credential_source.format of type 'json' names no subject_token_field_name");
  }
  RFS_ASSIGN_OR_RETURN(boost::json::object answer, JsonObject(body, where));
  std::string token = StringField(answer, field);
  if (token.empty()) {
    return absl::InvalidArgumentError(StrCat(where, " has no string field '", field, "'"));
  }
  return token;
}

absl::StatusOr<net::HttpResponse> Get(std::string_view url, net::HttpHeaders headers,
                                      std::string_view what) {
  net::HttpRequest request;
  request.headers = std::move(headers);
  auto response = SendToUrl(url, std::move(request), std::chrono::milliseconds(5'000));
  if (!response.ok()) {
    return absl::UnavailableError(StrCat(what, ": ", response.status().message()));
  }
  if (response->status != 200) {
    return absl::UnavailableError(StrCat(what, ": HTTP ", response->status));
  }
  return response;
}

// --- The executable source --------------------------------------------------------------------

struct ExecutableSource {
  std::vector<std::string> argv;
  std::chrono::milliseconds timeout{30'000};
  std::string output_file;
};

/// The executable's answer: the subject token, or why there is none. An answer read from the
/// output file must say when it expires.
absl::StatusOr<std::string> TokenFromExecutableAnswer(std::string_view text, std::string_view where,
                                                      int64_t now, bool from_output_file) {
  RFS_ASSIGN_OR_RETURN(boost::json::object answer, JsonObject(text, where));
  if (IntField(answer, "version", 0) != 1) {
    return absl::InvalidArgumentError(StrCat(where, " is not of version 1"));
  }
  const auto* success = answer.if_contains("success");
  if (success == nullptr || !success->is_bool()) {
    return absl::InvalidArgumentError(StrCat(where, " has no boolean 'success'"));
  }
  if (!success->as_bool()) {
    return absl::PermissionDeniedError(StrCat(where,
                                              " reports failure: ", StringField(answer, "code"),
                                              " ", StringField(answer, "message")));
  }
  const int64_t expires = IntField(answer, "expiration_time", 0);
  if (from_output_file && expires == 0) {
    return absl::InvalidArgumentError(StrCat(where, " has no expiration_time"));
  }
  if (expires != 0 && expires <= now) {
    return absl::FailedPreconditionError(StrCat(where, " holds an expired token"));
  }
  const std::string type = StringField(answer, "token_type");
  const std::string token = type == "urn:ietf:params:oauth:token-type:saml2"
                                ? StringField(answer, "saml_response")
                                : StringField(answer, "id_token");
  if (token.empty()) {
    return absl::InvalidArgumentError(StrCat(where, " holds no token for token_type '", type, "'"));
  }
  return token;
}

/// Runs the command without a shell, its environment this process's plus `extra`; its standard
/// output, or an error once `timeout` passes (the child is killed).
absl::StatusOr<std::string> RunCommand(const std::vector<std::string>& argv,
                                       const std::vector<std::string>& extra,
                                       std::chrono::milliseconds timeout) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  std::vector<std::string> env_strings(extra);
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const bool overridden = std::any_of(extra.begin(), extra.end(), [&](const std::string& x) {
      return entry.substr(0, entry.find('=') + 1) == std::string_view(x).substr(0, x.find('=') + 1);
    });
    if (!overridden) env_strings.emplace_back(entry);
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args(argv);
  std::vector<char*> argp;
  for (auto& s : args) argp.push_back(s.data());
  argp.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argp[0], &actions, nullptr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    return absl::FailedPreconditionError(
        StrCat("cannot run '", argv[0], "': ", std::strerror(spawned)));
  }
  std::string output;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fd{pipe_fds[0], POLLIN, 0};
    const int ready = ::poll(&fd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buffer, static_cast<size_t>(n));
    if (output.size() > (1u << 20)) break;  // an answer is a few kB; stop reading a flood
  }
  ::close(pipe_fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int wait_status = 0;
  while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return absl::DeadlineExceededError(
        StrCat("'", argv[0], "' gave no answer within ", timeout.count(), " ms"));
  }
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    return absl::FailedPreconditionError(
        StrCat("'", argv[0], "' failed (exit status ",
               WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1, ")"));
  }
  return output;
}

// --- The AWS source ---------------------------------------------------------------------------

struct AwsSource {
  std::string region_url;
  std::string credentials_url;
  std::string verification_url;  // with "{region}"
  std::string imdsv2_token_url;
};

// The keys of the instance's role, from the metadata service at `credentials_url`.
absl::StatusOr<net::AwsCredentials> AwsRoleCredentials(const std::string& credentials_url,
                                                       const net::HttpHeaders& imds_headers) {
  RFS_ASSIGN_OR_RETURN(auto role, Get(credentials_url, imds_headers, "the AWS role (url)"));
  RFS_ASSIGN_OR_RETURN(auto keys, Get(StrCat(credentials_url, "/", role.body), imds_headers,
                                      "the AWS role's credentials"));
  RFS_ASSIGN_OR_RETURN(boost::json::object body,
                       JsonObject(keys.body, "the AWS role's credentials"));
  net::AwsCredentials credentials;
  credentials.access_key_id = StringField(body, "AccessKeyId");
  credentials.secret_access_key = StringField(body, "SecretAccessKey");
  credentials.session_token = StringField(body, "Token");
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
    return absl::DataLossError("the AWS role's credentials lack AccessKeyId or SecretAccessKey");
  }
  return credentials;
}

absl::StatusOr<std::string> AwsSubjectToken(const AwsSource& source, std::string_view audience,
                                            const GetEnv& getenv, const core::IClock* clock) {
  net::HttpHeaders imds_headers;
  auto imds = [&]() -> absl::Status {
    if (source.imdsv2_token_url.empty() || !imds_headers.empty()) return absl::OkStatus();
    net::HttpRequest request;
    request.method = "PUT";
    request.headers.emplace_back("X-aws-ec2-metadata-token-ttl-seconds", "300");
    auto answer =
        SendToUrl(source.imdsv2_token_url, std::move(request), std::chrono::milliseconds(5'000));
    if (!answer.ok() || answer->status != 200) {
      return absl::UnavailableError("the AWS metadata session token (imdsv2_session_token_url)");
    }
    imds_headers.emplace_back("X-aws-ec2-metadata-token", answer->body);
    return absl::OkStatus();
  };
  std::string region = EnvOr(getenv, "AWS_REGION", EnvOr(getenv, "AWS_DEFAULT_REGION"));
  if (region.empty()) {
    if (source.region_url.empty()) {
      return absl::InvalidArgumentError(
          "no AWS region: neither AWS_REGION nor AWS_DEFAULT_REGION is set and "
          "credential_source has no region_url");
    }
    RFS_RETURN_IF_ERROR(imds());
    RFS_ASSIGN_OR_RETURN(auto zone, Get(source.region_url, imds_headers, "the AWS region_url"));
    // The availability zone (us-east-2b): the region is all but its last letter.
    if (zone.body.size() < 2) return absl::DataLossError("the AWS region_url answered no zone");
    region = zone.body.substr(0, zone.body.size() - 1);
  }
  net::AwsCredentials credentials;
  credentials.access_key_id = EnvOr(getenv, "AWS_ACCESS_KEY_ID");
  credentials.secret_access_key = EnvOr(getenv, "AWS_SECRET_ACCESS_KEY");
  credentials.session_token = EnvOr(getenv, "AWS_SESSION_TOKEN");
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
    if (source.credentials_url.empty()) {
      return absl::InvalidArgumentError(
          "no AWS credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are not set and "
          "credential_source has no url");
    }
    RFS_RETURN_IF_ERROR(imds());
    RFS_ASSIGN_OR_RETURN(credentials, AwsRoleCredentials(source.credentials_url, imds_headers));
  }
  std::string url = source.verification_url;
  if (const size_t at = url.find("{region}"); at != std::string::npos) {
    url.replace(at, 8, region);
  }
  RFS_ASSIGN_OR_RETURN(EndpointUrl endpoint,
                       EndpointUrl::Parse(url.substr(0, url.find_first_of("?#")),
                                          "credential_source.regional_cred_verification_url"));
  // The path and query as sent: what follows scheme://authority.
  std::string target = url.substr(std::min(url.size(), endpoint.origin.size()));
  if (target.empty() || target.front() == '?') target.insert(0, "/");
  net::HttpHeaders headers{{"host", endpoint.origin.substr(endpoint.origin.find("://") + 3)},
                           {"x-goog-cloud-target-resource", std::string(audience)}};
  net::SigV4Options sign;
  sign.region = region;
  sign.service = "sts";
  sign.credentials = credentials;
  sign.add_content_sha256_header = false;
  RFS_RETURN_IF_ERROR(net::SignSigV4("POST", target, "", headers, sign, ClockOr(clock).Now()));
  boost::json::array listed;
  auto add = [&](const char* key, std::string_view header) {
    if (auto value = net::FindHeader(headers, header)) {
      listed.push_back(boost::json::object{{"key", key}, {"value", *value}});
    }
  };
  add("Authorization", "authorization");
  add("host", "host");
  add("x-amz-date", "x-amz-date");
  add("x-amz-security-token", "x-amz-security-token");
  add("x-goog-cloud-target-resource", "x-goog-cloud-target-resource");
  const boost::json::object request{{"url", url}, {"method", "POST"}, {"headers", listed}};
  return net::PercentEncode(boost::json::serialize(request), false);
}

}  // namespace

namespace {

// The fields of an external-account file that the token exchange uses.
struct ExternalAccount {
  std::string audience;
  std::string subject_token_type;
  std::string token_url;
  std::string impersonation_url;
  int64_t lifetime = 3600;  // of an impersonated token, in seconds
  std::string client_id;
  std::string client_secret;
  std::string user_project;
  std::string scope;
  const core::IClock* clock = nullptr;
};

// How the subject token is obtained, and a description of it for messages.
struct SubjectSource {
  std::function<absl::StatusOr<std::string>()> fetch;
  std::string kind;
};

absl::StatusOr<ExternalAccount> ParseExternalAccount(const boost::json::object& file,
                                                     const std::string& where,
                                                     const GcsCredentialOptions& options) {
  ExternalAccount account;
  account.audience = StringField(file, "audience");
  account.subject_token_type = StringField(file, "subject_token_type");
  account.token_url = StringField(file, "token_url").empty() ? std::string(kDefaultStsUrl)
                                                             : StringField(file, "token_url");
  if (account.audience.empty() || account.subject_token_type.empty()) {
    return absl::InvalidArgumentError(StrCat(where, " lacks audience or subject_token_type"));
  }
  RFS_RETURN_IF_ERROR(SecureTokenUrl(account.token_url, "the subject token (token_url)").status());
  account.impersonation_url = StringField(file, "service_account_impersonation_url");
  if (!account.impersonation_url.empty()) {
    RFS_RETURN_IF_ERROR(
        SecureTokenUrl(account.impersonation_url, "a token (service_account_impersonation_url)")
            .status());
  }
  if (const auto* impersonation = file.if_contains("service_account_impersonation");
      impersonation != nullptr && impersonation->is_object()) {
    account.lifetime = IntField(impersonation->as_object(), "token_lifetime_seconds", 3600);
    if (account.lifetime < 600 || account.lifetime > 43200) {
      return absl::InvalidArgumentError(
          StrCat(where, ": token_lifetime_seconds must lie between 600 and 43200"));
    }
  }
  account.client_id = StringField(file, "client_id");
  account.client_secret = StringField(file, "client_secret");
  account.user_project = StringField(file, "workforce_pool_user_project");
  account.scope = options.scope;
  account.clock = options.clock;
  return account;
}

// credential_source.executable: a command the user allowed prints the subject token.
absl::StatusOr<SubjectSource> ExecutableSubject(const boost::json::object& executable,
                                                const ExternalAccount& account,
                                                const std::string& where, const GetEnv& getenv) {
  ExecutableSource run;
  std::istringstream words(StringField(executable, "command"));
  for (std::string word; words >> word;) run.argv.push_back(word);
  if (run.argv.empty()) {
    return absl::InvalidArgumentError(StrCat(where, ": the executable source has no command"));
  }
  const int64_t timeout = IntField(executable, "timeout_millis", 30'000);
  if (timeout < 5'000 || timeout > 120'000) {
    return absl::InvalidArgumentError(
        StrCat(where, ": executable.timeout_millis must lie between 5000 and 120000"));
  }
  run.timeout = std::chrono::milliseconds(timeout);
  run.output_file = StringField(executable, "output_file");
  std::vector<std::string> extra{
      StrCat("GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE=", account.audience),
      StrCat("GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE=", account.subject_token_type),
      "GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE=0"};
  if (const std::string& url = account.impersonation_url; !url.empty()) {
    // ".../serviceAccounts/EMAIL:generateAccessToken"
    const size_t slash = url.rfind('/');
    const size_t colon = url.rfind(':');
    if (slash != std::string::npos && colon != std::string::npos && colon > slash) {
      extra.push_back(StrCat("GOOGLE_EXTERNAL_ACCOUNT_IMPERSONATED_EMAIL=",
                             url.substr(slash + 1, colon - slash - 1)));
    }
  }
  if (!run.output_file.empty()) {
    extra.push_back(StrCat("GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE=", run.output_file));
  }
  const core::IClock* clock = account.clock;
  auto fetch = [run, extra, getenv, clock]() -> absl::StatusOr<std::string> {
    if (EnvOr(getenv, "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES") != "1") {
      return absl::PermissionDeniedError(
          "executable sources run only with GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1");
    }
    const int64_t now = NowSeconds(clock);
    if (!run.output_file.empty()) {
      if (auto cached = ReadTextFile(run.output_file); cached.ok() && !cached->empty()) {
        auto token = TokenFromExecutableAnswer(*cached, "the executable's output file", now, true);
        if (token.ok()) return token;
      }
    }
    RFS_ASSIGN_OR_RETURN(std::string output, RunCommand(run.argv, extra, run.timeout));
    return TokenFromExecutableAnswer(output, StrCat("the answer of ", run.argv[0]), now, false);
  };
  return SubjectSource{std::move(fetch), StrCat("the command ", run.argv[0])};
}

// credential_source: AWS (environment_id aws1), a file, a URL or an executable.
absl::StatusOr<SubjectSource> SubjectTokenSource(const boost::json::object& source,
                                                 const ExternalAccount& account,
                                                 const std::string& where, const GetEnv& getenv) {
  if (const std::string environment = StringField(source, "environment_id"); !environment.empty()) {
    if (environment != "aws1") {
      return absl::InvalidArgumentError(StrCat(where, ": credential_source.environment_id '",
                                               environment,
                                               "' is not supported (rfs reads 'aws1')"));
    }
    AwsSource aws{StringField(source, "region_url"), StringField(source, "url"),
                  StringField(source, "regional_cred_verification_url"),
                  StringField(source, "imdsv2_session_token_url")};
    if (aws.verification_url.empty()) {
      return absl::InvalidArgumentError(
          StrCat(where, ": an aws1 credential_source needs regional_cred_verification_url"));
    }
    return SubjectSource{[aws, audience = account.audience, getenv, clock = account.clock] {
                           return AwsSubjectToken(aws, audience, getenv, clock);
                         },
                         "AWS"};
  }
  if (const std::string token_file = StringField(source, "file"); !token_file.empty()) {
    return SubjectSource{[source, token_file]() -> absl::StatusOr<std::string> {
                           auto text = ReadTextFile(token_file);
                           if (!text.ok()) {
                             return absl::UnavailableError(
                                 StrCat("the subject token file: ", text.status().message()));
                           }
                           return TokenFromBody(*text, source,
                                                StrCat("the subject token file ", token_file));
                         },
                         StrCat("the token file ", token_file)};
  }
  if (const std::string url = StringField(source, "url"); !url.empty()) {
    RFS_ASSIGN_OR_RETURN(EndpointUrl parsed, EndpointUrl::Parse(url, "credential_source.url"));
    net::HttpHeaders headers;
    if (const auto* h = source.if_contains("headers"); h != nullptr && h->is_object()) {
      for (const auto& [name, value] : h->as_object()) {
        if (value.is_string())
          headers.emplace_back(std::string(name), std::string(value.as_string()));
      }
    }
    return SubjectSource{
        [source, url, headers]() -> absl::StatusOr<std::string> {
          RFS_ASSIGN_OR_RETURN(auto answer, Get(url, headers, "the subject token URL"));
          return TokenFromBody(answer.body, source, "the subject token URL's answer");
        },
        StrCat("the token URL ", parsed.origin)};
  }
  if (const auto* exe = source.if_contains("executable"); exe != nullptr && exe->is_object()) {
    return ExecutableSubject(exe->as_object(), account, where, getenv);
  }
  return absl::InvalidArgumentError(
      StrCat(where, ": credential_source names no file, url, executable or environment_id"));
}

// RFC 8693 token exchange at Google's STS: the subject token buys a federated access token.
absl::StatusOr<AccessToken> ExchangeToken(const ExternalAccount& account,
                                          const std::string& subject_token) {
  std::string form =
      StrCat("grant_type=", FormValue("urn:ietf:params:oauth:grant-type:token-exchange"),
             "&audience=", FormValue(account.audience), "&scope=",
             FormValue(account.impersonation_url.empty()
                           ? account.scope
                           : "https://www.googleapis.com/auth/cloud-platform"),
             "&requested_token_type=", FormValue("urn:ietf:params:oauth:token-type:access_token"),
             "&subject_token=", FormValue(subject_token),
             "&subject_token_type=", FormValue(account.subject_token_type));
  net::HttpRequest exchange;
  exchange.method = "POST";
  exchange.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
  if (!account.client_id.empty()) {
    const std::string pair = StrCat(account.client_id, ":", account.client_secret);
    exchange.headers.emplace_back(
        "Authorization",
        StrCat("Basic ", core::Base64Encode(std::span<const uint8_t>(
                             reinterpret_cast<const uint8_t*>(pair.data()), pair.size()))));
  } else if (!account.user_project.empty()) {
    form += StrCat("&options=", FormValue(boost::json::serialize(
                                    boost::json::object{{"userProject", account.user_project}})));
  }
  exchange.body = std::move(form);
  auto answer =
      SendToUrl(account.token_url, std::move(exchange), std::chrono::milliseconds(10'000));
  if (!answer.ok()) {
    return absl::UnavailableError(
        StrCat("the token exchange at ", account.token_url, ": ", answer.status().message()));
  }
  return TokenFromAnswer(*answer, StrCat("the token exchange at ", account.token_url),
                         account.clock);
}

// The federated token buys the service account's token (service_account_impersonation_url).
absl::StatusOr<AccessToken> ImpersonatedToken(const ExternalAccount& account,
                                              const AccessToken& federated) {
  net::HttpRequest impersonate;
  impersonate.method = "POST";
  impersonate.headers.emplace_back("Content-Type", "application/json");
  impersonate.headers.emplace_back("Authorization", StrCat("Bearer ", federated.token));
  impersonate.body = boost::json::serialize(
      boost::json::object{{"scope", boost::json::array{boost::json::string(account.scope)}},
                          {"lifetime", StrCat(account.lifetime, "s")}});
  auto impersonated = SendToUrl(account.impersonation_url, std::move(impersonate),
                                std::chrono::milliseconds(10'000));
  const std::string what = "the service account's token (service_account_impersonation_url)";
  if (!impersonated.ok()) {
    return absl::UnavailableError(StrCat(what, ": ", impersonated.status().message()));
  }
  if (impersonated->status != 200) {
    const std::string text = StrCat(what, ": HTTP ", impersonated->status);
    return impersonated->status == 401 || impersonated->status == 403
               ? absl::PermissionDeniedError(text)
               : absl::UnavailableError(text);
  }
  RFS_ASSIGN_OR_RETURN(boost::json::object body, JsonObject(impersonated->body, what));
  AccessToken token;
  token.token = StringField(body, "accessToken");
  if (token.token.empty()) return absl::DataLossError(StrCat(what, ": no accessToken"));
  // expireTime is RFC 3339; the lifetime asked for is what it says.
  token.expires = ClockOr(account.clock).Now() + std::chrono::seconds(account.lifetime);
  return token;
}

}  // namespace

absl::StatusOr<std::shared_ptr<AccessTokenSource>> GcsExternalAccountTokenSource(
    const boost::json::object& file, const std::string& path, std::string_view origin,
    const GcsCredentialOptions& options) {
  const std::string where = StrCat("the external-account file ", path, " (", origin, ")");
  RFS_ASSIGN_OR_RETURN(ExternalAccount account, ParseExternalAccount(file, where, options));
  const auto* source = file.if_contains("credential_source");
  if (source == nullptr || !source->is_object()) {
    return absl::InvalidArgumentError(StrCat(where, " has no credential_source object"));
  }
  RFS_ASSIGN_OR_RETURN(SubjectSource subject,
                       SubjectTokenSource(source->as_object(), account, where, options.getenv));
  auto fetch = [account, subject = subject.fetch]() -> absl::StatusOr<AccessToken> {
    RFS_ASSIGN_OR_RETURN(std::string subject_token, subject());
    RFS_ASSIGN_OR_RETURN(AccessToken federated, ExchangeToken(account, subject_token));
    if (account.impersonation_url.empty()) return federated;
    return ImpersonatedToken(account, federated);
  };
  std::string description =
      StrCat("external account (", subject.kind, ", audience ", account.audience);
  if (!account.impersonation_url.empty()) description += ", impersonating a service account";
  description += StrCat(") from ", origin, " (", path, ")");
  return std::make_shared<AccessTokenSource>(std::move(description), std::move(fetch),
                                             options.clock);
}

}  // namespace rfs::cloud::internal
