// The command line of CreateSnapshot.
#include "cli.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/cloud/gcs_repo.hpp"
#include "rfs/core/duration.hpp"
#include "rfs/core/str_cat.hpp"

#include "absl/strings/ascii.h"
#include "common/connection.hpp"
#include "common/options.hpp"
#include "common/text.hpp"

namespace rfs::apps::create_snapshot {

namespace po = boost::program_options;
using core::StrCat;

const char* const kUsage =
    "Usage: CreateSnapshot --snapshot-name NAME --source-host URL\n"
    "         (--file-system-repo-path PATH | --s3-repo-uri s3://BUCKET/PATH --s3-region R)\n"
    "         [options]\n"
    "\n"
    "Takes a snapshot of the SOURCE cluster that rfs can then migrate from: registers the\n"
    "snapshot repository on the source (PUT /_snapshot/<repo>: type fs with the path, which must\n"
    "be listed in the source nodes' path.repo, or type s3, which needs the repository-s3\n"
    "plugin), starts the snapshot (with the cluster's global state: templates and settings) and\n"
    "waits until it finishes.\n"
    "\n"
    "Exit codes: 0 the snapshot finished SUCCESS (with --no-wait: it was started), 1 it ended\n"
    "FAILED or PARTIAL (the failed shards are named) or a request failed, 64 usage.\n"
    "\n"
    "Progress: on a terminal, one live line (state, shards done/total, bytes, elapsed time);\n"
    "otherwise one JSON line per poll. Both go to stderr; a summary ends the run on stdout.\n"
    "Every option can also be set through an RFS_ environment variable, e.g. RFS_SNAPSHOT_NAME\n"
    "for --snapshot-name. The Java tool's JSON form is taken too: ---INLINE-JSON\n"
    "'{\"sourceHost\": URL, ...}' (or its base64), or ---JSON-FILE PATH.\n";

po::options_description Options() {
  po::options_description options("Options", 100, 50);
  options.add_options()("help,h", "show this help")("snapshot-name", po::value<std::string>(),
                                                    "name of the snapshot to create (required)")(
      "snapshot-repo-name",
      po::value<std::string>()->default_value(
          std::string(opensearch::kDefaultSnapshotRepositoryName)),
      "name under which the repository is registered on the source")(
      "file-system-repo-path", po::value<std::string>(),
      "fs repository: a shared folder every source node mounts at this path (listed in their "
      "path.repo)")("s3-repo-uri", po::value<std::string>(),
                    "s3 repository: s3://BUCKET or s3://BUCKET/BASE/PATH")(
      "repo-uri", po::value<std::string>(),
      "the repository as the Java tool's --repo-uri: file:///PATH or /PATH (as "
      "--file-system-repo-path), s3://BUCKET/PATH (as --s3-repo-uri), or gs://BUCKET/PATH (a "
      "gcs repository: the source needs the repository-gcs plugin, its credentials and endpoint "
      "set on the source as gcs.client.default.*)")("s3-region", po::value<std::string>(),
                                                    "AWS region of the bucket (required with S3)")(
      "s3-endpoint", po::value<std::string>(),
      "custom S3 endpoint, e.g. http://minio:9000 (optional)")("endpoint", po::value<std::string>(),
                                                               "alias of --s3-endpoint")(
      "s3-role-arn", po::value<std::string>(),
      "IAM role the source cluster assumes to write to the bucket (optional)")(
      "s3-disable-chunked-encoding", po::bool_switch(),
      "the repository uploads plain bodies (setting disable_chunked_encoding): for S3-compatible "
      "servers that store aws-chunked signatures as data");
  AddConnectionOptions(options, "source", "source");
  AddPlainHttpOption(options);
  options.add_options()(
      "index-allowlist", po::value<std::vector<std::string>>()->multitoken(),
      "indices to snapshot: names and wildcards, space- or comma-separated (default: every "
      "index); a missing concrete index fails the snapshot")(
      "max-snapshot-rate-mb-per-node",
      po::value<Bounded<int64_t, 0, 1000000000>>()->default_value({0}),
      "throttle each node's snapshot writes to this many MB/s (0: the cluster's default)")(
      "compression-enabled", po::bool_switch(), "compress the repository's metadata files")(
      "include-global-state", po::value<std::string>(),
      "true (default) or false: whether the snapshot holds the cluster's templates and "
      "persistent settings, which MetadataMigration needs to migrate templates")(
      "source-type", po::value<std::string>()->default_value("elasticsearch"),
      "elasticsearch (Elasticsearch or OpenSearch; Solr sources are refused)")(
      "mode", po::value<std::string>()->default_value("create"),
      "create (the Java tool's import mode is for Solr sources, which are refused)")(
      "no-wait", po::bool_switch(), "start the snapshot and exit without waiting for it")(
      "poll-interval", po::value<std::string>()->default_value("PT1S"),
      "ISO-8601 interval between progress polls")(
      "timeout", po::value<std::string>(),
      "ISO-8601 limit on the wait, e.g. PT2H (default: wait as long as it takes)");
  AddTraceOption(options);
  options.add_options()("otel-metrics-collector-endpoint", po::value<std::string>(),
                        "accepted for compatibility with the Java tool: CreateSnapshot exports "
                        "no metrics, and says so at start");

  return options;
}

namespace {

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

constexpr const char* kS3Only[] = {"s3-region", "s3-endpoint", "endpoint", "s3-role-arn"};

bool IsGcsUri(const po::variables_map& vm) { return Text(vm, "repo-uri").starts_with("gs://"); }

}  // namespace

std::vector<std::string> IgnoredOptions(const po::variables_map& vm) {
  std::vector<std::string> ignored;
  if (!IsGcsUri(vm)) return ignored;
  // The Java tool takes them with gs:// too (its --endpoint serves the readers' fake-gcs-server)
  // and does not forward them.
  for (const char* s3_only : kS3Only) {
    if (vm.count(s3_only)) {
      ignored.push_back(StrCat("--", s3_only,
                               " is ignored for a gs:// repository: repository-gcs takes its "
                               "endpoint and credentials from the source's gcs.client.default.* "
                               "settings"));
    }
  }
  if (vm["s3-disable-chunked-encoding"].as<bool>()) {
    ignored.push_back("--s3-disable-chunked-encoding is ignored for a gs:// repository");
  }
  return ignored;
}

absl::StatusOr<migration::CreateSnapshotToolOptions> ToolOptions(const po::variables_map& vm) {
  auto text = [&](const char* name) { return Text(vm, name); };
  migration::CreateSnapshotToolOptions run;
  run.snapshot.name = text("snapshot-name");
  run.repository_name = text("snapshot-repo-name");
  std::string fs_path = text("file-system-repo-path");
  std::string s3_uri = text("s3-repo-uri");
  if (const std::string uri = text("repo-uri"); !uri.empty()) {
    if (!fs_path.empty() || !s3_uri.empty()) {
      return Invalid("give one of --repo-uri, --file-system-repo-path, --s3-repo-uri");
    }
    if (IsGcsUri(vm)) {
      auto parsed = cloud::ParseGcsUri(uri);
      if (!parsed.ok()) return Invalid(StrCat("--repo-uri: ", parsed.status().message()));
      std::string base_path = parsed->prefix;
      if (base_path.ends_with('/')) base_path.pop_back();
      run.repository.storage = opensearch::GcsRepositoryConfig{parsed->bucket, base_path};
    } else if (uri.starts_with("s3://")) {
      s3_uri = uri;
    } else if (uri.starts_with("file:///")) {
      fs_path = uri.substr(7);
    } else if (uri.starts_with("/")) {
      fs_path = uri;
    } else {
      return Invalid(StrCat("--repo-uri '", uri,
                            "': CreateSnapshot registers file:///PATH, /PATH, s3://BUCKET/PATH and "
                            "gs://BUCKET/PATH repositories (an az:// one can be registered on the "
                            "source by hand, then read by the other tools with --repo-uri)"));
    }
  }
  if (vm.count("s3-endpoint") && vm.count("endpoint")) {
    return Invalid("give one of --s3-endpoint and --endpoint (its alias)");
  }
  const std::string endpoint =
      !text("s3-endpoint").empty() ? text("s3-endpoint") : text("endpoint");
  const bool fs = !fs_path.empty();
  const bool s3 = !s3_uri.empty();
  // A gs:// repository is set already; its S3 options are only reported (IgnoredOptions).
  const bool gcs = std::holds_alternative<opensearch::GcsRepositoryConfig>(run.repository.storage);
  if (!gcs && fs == s3) {
    return Invalid(
        "give exactly one repository: --file-system-repo-path PATH or --s3-repo-uri s3://BUCKET/"
        "PATH");
  }
  if (fs) {
    for (const char* s3_only : kS3Only) {
      if (vm.count(s3_only)) {
        return Invalid(StrCat("--", s3_only, " applies to --s3-repo-uri only"));
      }
    }
    run.repository.storage = opensearch::FileSystemRepositoryConfig{fs_path};
  } else if (s3) {
    if (text("s3-region").empty()) return Invalid("--s3-repo-uri needs --s3-region");
    run.repository.storage = opensearch::S3RepositoryConfig{
        .uri = s3_uri,
        .region = text("s3-region"),
        .endpoint = endpoint,
        .role_arn = text("s3-role-arn"),
        .disable_chunked_encoding = vm["s3-disable-chunked-encoding"].as<bool>()};
  }
  const int64_t rate =
      vm["max-snapshot-rate-mb-per-node"].as<Bounded<int64_t, 0, 1000000000>>().value;
  if (rate < 0) return Invalid("--max-snapshot-rate-mb-per-node must not be negative");
  if (rate > 0) run.repository.max_snapshot_rate_mb_per_node = rate;
  run.repository.compress = vm["compression-enabled"].as<bool>();
  if (vm.count("index-allowlist")) {
    run.snapshot.indices = CommaList(vm["index-allowlist"].as<std::vector<std::string>>());
  }
  auto interval = core::ParseIsoDuration(text("poll-interval"));
  if (!interval.ok()) return Invalid(StrCat("--poll-interval: ", interval.status().message()));
  if (*interval <= std::chrono::nanoseconds(0)) return Invalid("--poll-interval must be positive");
  run.wait.poll_interval =
      std::max(std::chrono::milliseconds(1),
               std::chrono::duration_cast<std::chrono::milliseconds>(*interval));
  if (vm.count("timeout")) {
    auto timeout = core::ParseIsoDuration(text("timeout"));
    if (!timeout.ok()) return Invalid(StrCat("--timeout: ", timeout.status().message()));
    if (*timeout <= std::chrono::nanoseconds(0)) return Invalid("--timeout must be positive");
    run.wait.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*timeout);
  }
  auto source = ConnectionOptions(vm, "source");
  if (!source.ok()) return source.status();
  if (!*source) return Invalid("--source-host is required");
  run.source = **source;
  run.no_wait = vm["no-wait"].as<bool>();
  auto global_state = JavaBoolean(vm, "include-global-state", true);
  if (!global_state.ok()) return global_state.status();
  run.snapshot.include_global_state = *global_state;
  auto lower = [&](const char* name) { return absl::AsciiStrToLower(text(name)); };
  if (lower("source-type") != "elasticsearch") {
    return Invalid(StrCat("--source-type '", text("source-type"),
                          "': CreateSnapshot snapshots Elasticsearch and OpenSearch clusters; back "
                          "a Solr collection up with Solr's BACKUP action and migrate the backup "
                          "(docs/solr.md)"));
  }
  if (lower("mode") != "create") {
    return Invalid(StrCat("--mode '", text("mode"),
                          "': CreateSnapshot only creates snapshots (the Java tool's import mode "
                          "is for Solr sources)"));
  }

  return run;
}

}  // namespace rfs::apps::create_snapshot
