#include "rfs/net/aws_credentials.hpp"

#include <fstream>
#include <map>

#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"

namespace {

using rfs::net::AwsCredentialSources;
using rfs::net::ResolveAwsCredentials;

AwsCredentialSources Environment(std::map<std::string, std::string> variables) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(variables));
  return AwsCredentialSources{[shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  }};
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_CASE("the environment comes first in the AWS credentials chain", "[net][aws]") {
  rfs::test::TempDir dir("rfs-aws");
  Write(dir.File("credentials"),
        "[default]\naws_access_key_id = FILE\naws_secret_access_key = f\n");
  auto found = ResolveAwsCredentials(
      Environment({{"AWS_ACCESS_KEY_ID", "ENV"},
                   {"AWS_SECRET_ACCESS_KEY", "secret"},
                   {"AWS_SESSION_TOKEN", "token"},
                   {"AWS_SHARED_CREDENTIALS_FILE", dir.File("credentials")}}));
  REQUIRE(found.ok());
  CHECK(found->access_key_id == "ENV");
  CHECK(found->session_token == "token");
  auto half = ResolveAwsCredentials(Environment({{"AWS_ACCESS_KEY_ID", "ENV"}}));
  CHECK(absl::IsFailedPrecondition(half.status()));
}

TEST_CASE("shared credentials and config files, by profile", "[net][aws]") {
  rfs::test::TempDir dir("rfs-aws");
  Write(dir.File("credentials"),
        "# comment\n[default]\naws_access_key_id = DEFAULTKEY\naws_secret_access_key = "
        "default-secret\n\n[migration]\naws_access_key_id=MIGKEY\naws_secret_access_key=mig\n"
        "aws_session_token = mig-token\n");
  Write(dir.File("config"),
        "[default]\nregion = us-east-1\n[profile ops]\naws_access_key_id = OPSKEY\n"
        "aws_secret_access_key = ops\ns3 =\n  max_concurrent_requests = 20\n");
  const std::map<std::string, std::string> files = {
      {"AWS_SHARED_CREDENTIALS_FILE", dir.File("credentials")},
      {"AWS_CONFIG_FILE", dir.File("config")}};
  auto with = [&](std::map<std::string, std::string> extra) {
    extra.insert(files.begin(), files.end());
    return Environment(extra);
  };
  auto default_profile = ResolveAwsCredentials(with({}));
  REQUIRE(default_profile.ok());
  CHECK(default_profile->access_key_id == "DEFAULTKEY");
  auto migration = ResolveAwsCredentials(with({{"AWS_PROFILE", "migration"}}));
  REQUIRE(migration.ok());
  CHECK(migration->session_token == "mig-token");
  auto ops = ResolveAwsCredentials(with({{"AWS_PROFILE", "ops"}}));  // from the config file
  REQUIRE(ops.ok());
  CHECK(ops->access_key_id == "OPSKEY");
  auto missing = ResolveAwsCredentials(with({{"AWS_PROFILE", "nobody"}}));
  CHECK(absl::IsFailedPrecondition(missing.status()));
  CHECK(missing.status().message().find("[nobody]") != std::string::npos);
  CHECK(missing.status().message().find("secret") == std::string::npos);

  Write(dir.File("broken"), "[default\naws_access_key_id = X\n");
  CHECK(absl::IsDataLoss(
      rfs::net::AwsCredentialsFromProfileFile(dir.File("broken"), "default", false).status()));
  Write(dir.File("keyless"), "[default]\nregion = eu-west-1\n");
  CHECK(absl::IsFailedPrecondition(
      rfs::net::AwsCredentialsFromProfileFile(dir.File("keyless"), "default", false).status()));
}
