// AWS credentials, found where the AWS SDKs look, in their order (as far as rfs reads them):
//   1. the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN;
//   2. web identity (EKS IRSA): AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN
//      (AWS_ROLE_SESSION_NAME) exchanged with STS AssumeRoleWithWebIdentity (AWS_ENDPOINT_URL_STS,
//      else the regional endpoint of AWS_REGION);
//   3. the shared files: the profile AWS_PROFILE (default "default") of
//      AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials), then of AWS_CONFIG_FILE (default
//      ~/.aws/config, where profiles are "[profile NAME]"), with aws_access_key_id,
//      aws_secret_access_key and aws_session_token;
//   4. container credentials (ECS task roles, EKS Pod Identity): AWS_CONTAINER_CREDENTIALS_FULL_URI
//      (https anywhere; plain http only to loopback or the ECS/EKS addresses, as the AWS SDKs)
//      or _RELATIVE_URI, with AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE];
//   5. the EC2 instance metadata service, IMDSv2 (AWS_EC2_METADATA_SERVICE_ENDPOINT;
//      AWS_EC2_METADATA_DISABLED=true skips it).
// Temporary credentials (STS, container, instance) carry their expiration; AwsCredentialsProvider
// resolves the chain again before they expire, so a long shard keeps going across rotations.
// Secrets never appear in errors.
#pragma once

#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "rfs/core/clock.hpp"
#include "rfs/net/aws_sigv4.hpp"

#include "absl/status/statusor.h"

namespace rfs::net {

/// Where the chain reads from; tests give their own environment.
struct AwsCredentialSources {
  /// Reads an environment variable (nullptr when unset).
  std::function<const char*(const char*)> getenv = [](const char* name) {
    return std::getenv(name);
  };
};

/// The profile `profile` of an INI file in the shared-credentials format (`config_style`: the
/// sections of non-default profiles are "[profile NAME]"). NotFound when the file or the profile
/// is missing; FailedPrecondition when the profile lacks a key; DataLoss naming the file and
/// line for malformed content.
absl::StatusOr<AwsCredentials> AwsCredentialsFromProfileFile(std::string_view path,
                                                             std::string_view profile,
                                                             bool config_style);

/// The chain above. FailedPrecondition listing what was looked at when nothing has credentials.
/// Whether container credentials may be fetched from `url`: any https URL; plain http only to a
/// loopback host or the ECS/EKS credentials addresses (169.254.170.2, 169.254.170.23,
/// fd00:ec2::23), as the AWS SDKs allow.
bool ContainerCredentialsUrlAllowed(std::string_view url);

absl::StatusOr<AwsCredentials> ResolveAwsCredentials(const AwsCredentialSources& sources = {});

/// The region for AWS requests: `flag` when not empty, then AWS_REGION, AWS_DEFAULT_REGION, then
/// the `region` of the profile AWS_PROFILE in the config file. Empty when none is set.
std::string ResolveAwsRegion(std::string_view flag, const AwsCredentialSources& sources = {});

/// Credentials that stay valid: the chain's answer, resolved again when temporary credentials
/// come within `refresh_before` of their expiration. A failed refresh keeps the old credentials
/// while they last (trying again every `retry_after`); past their expiration Current() is
/// Unavailable with the reason. Thread-safe.
class AwsCredentialsProvider {
 public:
  struct Options {
    AwsCredentialSources sources;
    /// The system clock when null.
    const core::IClock* clock = nullptr;
    std::chrono::seconds refresh_before{300};
    std::chrono::seconds retry_after{10};
  };
  /// Resolves the chain once now, so a missing credential fails at start-up.
  static absl::StatusOr<std::shared_ptr<AwsCredentialsProvider>> Resolve(Options options);
  static absl::StatusOr<std::shared_ptr<AwsCredentialsProvider>> Resolve() {
    return Resolve(Options{});
  }
  /// Fixed credentials (never refreshed).
  static std::shared_ptr<AwsCredentialsProvider> Fixed(AwsCredentials credentials);

  absl::StatusOr<AwsCredentials> Current();
  /// Successful refreshes so far.
  uint64_t refreshes() const;

 private:
  AwsCredentialsProvider(Options options, AwsCredentials first, bool refreshable);
  const core::IClock& clock() const;

  const Options options_;
  const bool refreshable_;
  mutable std::mutex mu_;
  AwsCredentials current_;
  core::IClock::TimePoint next_attempt_{};
  uint64_t refreshes_ = 0;
};

}  // namespace rfs::net
