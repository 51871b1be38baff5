// Cluster connection options shared by the tools, with the Java tools' names:
//   --<side>-host, --<side>-username, --<side>-password, --<side>-aws-region,
//   --<side>-aws-service-signing-name, --<side>-cacert, --<side>-client-cert,
//   --<side>-client-cert-key, --<side>-insecure
// where <side> is "target" (MetadataMigration, DocumentsFromSnapshotMigration) or "source"
// (CreateSnapshot). AWS credentials for SigV4 come from the environment or the shared files
// (net::AwsCredentialsProvider, which refreshes temporary ones).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <boost/program_options.hpp>

#include "rfs/net/beast_http_transport.hpp"

#include "absl/status/statusor.h"

namespace rfs::apps {

namespace po = boost::program_options;

std::string EnvName(const std::string& side);

/// --refuse-plain-http-credentials, once per tool.
void AddPlainHttpOption(po::options_description& options);

/// Sets the process's policy from that option; warnings go to `warn`.
void ApplyPlainHttpOption(const po::variables_map& vm,
                          std::function<void(const std::string&)> warn);

/// Adds the connection options for `side` ("target" or "source") to `options`.
void AddConnectionOptions(po::options_description& options, const std::string& side,
                          const std::string& what);

/// The transport options of the cluster named by the `side` options; nullopt when --<side>-host
/// is not given. InvalidArgument for bad combinations (user without password, SigV4 with basic
/// auth, SigV4 without AWS credentials).
absl::StatusOr<std::optional<net::HttpTransportOptions>> ConnectionOptions(
    const po::variables_map& vm, const std::string& side);

}  // namespace rfs::apps
