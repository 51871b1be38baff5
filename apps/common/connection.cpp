#include "connection.hpp"

#include <cctype>

#include "rfs/core/str_cat.hpp"
#include "rfs/net/aws_credentials.hpp"
#include "rfs/net/aws_sigv4.hpp"

namespace rfs::apps {

std::string EnvName(const std::string& side) {
  std::string out;
  for (char c : side) out += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return out;
}

void AddPlainHttpOption(po::options_description& options) {
  options.add_options()("refuse-plain-http-credentials", po::bool_switch(),
                        "stop instead of warning when a password, SigV4 signature or token "
                        "would go over plain http:// to a host other than this one");
}

void ApplyPlainHttpOption(const po::variables_map& vm,
                          std::function<void(const std::string&)> warn) {
  const bool refuse =
      vm.count("refuse-plain-http-credentials") && vm["refuse-plain-http-credentials"].as<bool>();
  net::SetPlainHttpCredentialsPolicy(
      refuse ? net::PlainHttpCredentials::kRefuse : net::PlainHttpCredentials::kWarn,
      std::move(warn));
}

void AddConnectionOptions(po::options_description& options, const std::string& side,
                          const std::string& what) {
  auto name = [&](const char* suffix) { return side + "-" + suffix; };
  options.add_options()(name("host").c_str(), po::value<std::string>(),
                        (what + " cluster URL, e.g. https://localhost:9200").c_str())(
      name("username").c_str(), po::value<std::string>(), "basic-auth user name")(
      name("password").c_str(), po::value<std::string>(),
      ("basic-auth password; give it as RFS_" + EnvName(side) +
       "_PASSWORD in the environment rather than on the command line, which every process of "
       "the host can read")
          .c_str())(
      name("aws-region").c_str(), po::value<std::string>(),
      "sign requests with AWS SigV4 for this region (credentials from the AWS chain: AWS_* "
      "variables, web identity (IRSA), ~/.aws files (AWS_PROFILE), container credentials (ECS, "
      "Pod Identity), EC2 instance role; temporary ones refreshed before they expire)")(
      name("aws-service-signing-name").c_str(), po::value<std::string>()->default_value("es"),
      "SigV4 service name: es (Amazon OpenSearch Service) or aoss (Serverless)")(
      name("cacert").c_str(), po::value<std::string>(), "PEM file of CA certificates to trust")(
      name("client-cert").c_str(), po::value<std::string>(),
      "PEM client certificate (chain) for a cluster that asks for one (mutual TLS)")(
      name("client-cert-key").c_str(), po::value<std::string>(),
      ("PEM private key of --" + side + "-client-cert").c_str())(
      name("insecure").c_str(), po::bool_switch(),
      "skip TLS certificate and host-name verification");
}

absl::StatusOr<std::optional<net::HttpTransportOptions>> ConnectionOptions(
    const po::variables_map& vm, const std::string& side) {
  auto get = [&](const char* suffix) -> std::string {
    const std::string key = side + "-" + suffix;
    return vm.count(key) ? vm[key].as<std::string>() : std::string();
  };
  net::HttpTransportOptions options;
  options.endpoint = get("host");
  if (options.endpoint.empty()) return std::nullopt;
  const std::string username = get("username");
  const std::string password = get("password");
  if (username.empty() != password.empty()) {
    return absl::InvalidArgumentError(
        core::StrCat("--", side, "-username and --", side, "-password must be given together"));
  }
  if (!username.empty()) options.basic_auth = net::BasicAuth{username, password};
  options.tls.ca_cert_file = get("cacert");
  options.tls.client_cert_file = get("client-cert");
  options.tls.client_key_file = get("client-cert-key");
  if (options.tls.client_cert_file.empty() != options.tls.client_key_file.empty()) {
    return absl::InvalidArgumentError(core::StrCat("--", side, "-client-cert and --", side,
                                                   "-client-cert-key must be given together"));
  }
  options.tls.insecure = vm.count(side + "-insecure") && vm[side + "-insecure"].as<bool>();
  if (const std::string region = get("aws-region"); !region.empty()) {
    if (options.basic_auth) {
      return absl::InvalidArgumentError(
          core::StrCat("--", side, "-aws-region (SigV4) and basic-auth credentials are exclusive"));
    }
    auto provider = net::AwsCredentialsProvider::Resolve();
    if (!provider.ok()) return provider.status();
    net::SigV4Options sigv4;
    sigv4.region = region;
    sigv4.service = get("aws-service-signing-name");
    sigv4.credentials_provider = *std::move(provider);
    options.sigv4 = std::move(sigv4);
  }
  return options;
}

}  // namespace rfs::apps
