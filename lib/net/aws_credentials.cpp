#include "rfs/net/aws_credentials.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "rfs/core/str_cat.hpp"

namespace rfs::net {
namespace {

using core::StrCat;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

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

absl::StatusOr<AwsCredentials> ResolveAwsCredentials(const AwsCredentialSources& sources) {
  auto env = [&](const char* name) -> std::string {
    const char* value = sources.getenv(name);
    return value != nullptr ? std::string(value) : std::string();
  };
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
                          env("AWS_SESSION_TOKEN")};
  }
  // 2. The shared files.
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
  return absl::FailedPreconditionError(StrCat(
      "no AWS credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are not set and profile [",
      profile, "] is in neither ",
      credentials_file.empty() ? "(no credentials file)" : credentials_file, " nor ",
      config_file.empty() ? "(no config file)" : config_file));
}

}  // namespace rfs::net
