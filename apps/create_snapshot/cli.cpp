// The command line of CreateSnapshot.
#include "cli.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/core/duration.hpp"
#include "rfs/core/str_cat.hpp"

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
    "for --snapshot-name.\n";

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
      "s3-region", po::value<std::string>(), "AWS region of the bucket (required with S3)")(
      "s3-endpoint", po::value<std::string>(),
      "custom S3 endpoint, e.g. http://minio:9000 (optional)")(
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
      "no-wait", po::bool_switch(), "start the snapshot and exit without waiting for it")(
      "poll-interval", po::value<std::string>()->default_value("PT1S"),
      "ISO-8601 interval between progress polls")(
      "timeout", po::value<std::string>(),
      "ISO-8601 limit on the wait, e.g. PT2H (default: wait as long as it takes)");

  return options;
}

namespace {

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

}  // namespace

absl::StatusOr<migration::CreateSnapshotToolOptions> ToolOptions(const po::variables_map& vm) {
  auto text = [&](const char* name) { return Text(vm, name); };
  migration::CreateSnapshotToolOptions run;
  run.snapshot.name = text("snapshot-name");
  run.repository_name = text("snapshot-repo-name");
  const bool fs = !text("file-system-repo-path").empty();
  const bool s3 = !text("s3-repo-uri").empty();
  if (fs == s3) {
    return Invalid(
        "give exactly one repository: --file-system-repo-path PATH or --s3-repo-uri s3://BUCKET/"
        "PATH");
  }
  if (fs) {
    for (const char* s3_only : {"s3-region", "s3-endpoint", "s3-role-arn"}) {
      if (vm.count(s3_only)) {
        return Invalid(StrCat("--", s3_only, " applies to --s3-repo-uri only"));
      }
    }
    run.repository.storage = opensearch::FileSystemRepositoryConfig{text("file-system-repo-path")};
  } else {
    if (text("s3-region").empty()) return Invalid("--s3-repo-uri needs --s3-region");
    run.repository.storage = opensearch::S3RepositoryConfig{
        .uri = text("s3-repo-uri"),
        .region = text("s3-region"),
        .endpoint = text("s3-endpoint"),
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

  return run;
}

}  // namespace rfs::apps::create_snapshot
