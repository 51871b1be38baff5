#include "document_options.hpp"

#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "rfs/core/duration.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/core/version.hpp"
#include "rfs/net/aws_credentials.hpp"

#include "absl/strings/ascii.h"
#include "connection.hpp"
#include "options.hpp"
#include "repository.hpp"
#include "text.hpp"

namespace rfs::apps {

namespace po = boost::program_options;

po::options_description DocumentOptions() {
  po::options_description options("Options");
  options.add_options()("help,h", "show this help")("snapshot-name", po::value<std::string>(),
                                                    "snapshot to migrate (default: the newest)");
  AddRepositoryOptions(options);
  AddSolrBackupOptions(options);
  options.add_options()(
      "lucene-dir", po::value<std::string>(),
      "accepted for compatibility with the Java tool and ignored: shards are read in place from "
      "the repository, nothing is unpacked")(
      "source-version", po::value<std::string>(),
      "the source's version, e.g. ES_7_10 or \"OS 2.11\" (default: detected from the snapshot; "
      "a mismatch is reported); \"SOLR 9\" (or 6, 7, 8): the location holds Solr backups and "
      "--snapshot-name names the one to migrate (docs/solr.md)")(
      "output-dir", po::value<std::string>(),
      "embedded default target: bulk NDJSON files under this folder");
  AddConnectionOptions(options, "target", "target");
  AddConnectionOptions(options, "coordinator", "coordination");
  AddPlainHttpOption(options);
  options.add_options()("coordinator-db", po::value<std::string>(),
                        "coordinate through this SQLite file (default with --output-dir: OUT/.rfs/"
                        "coordination.sqlite; workers must share a local file system), or this "
                        "PostgreSQL database (postgresql://user@host/db: table work_items, or "
                        "work_items_<session>)")(
      "console-url", po::value<std::string>(),
      "coordinate through a migration console (MigrationConsole serve) at this URL, in the "
      "session --session-name; progress shows in the console")(
      "console-token", po::value<std::string>(),
      "the console session's bearer token (better: RFS_CONSOLE_TOKEN, kept out of the process "
      "list)")("console-cacert", po::value<std::string>(),
               "PEM CA certificates to trust for an https:// --console-url (default: the "
               "system's)")(
      "session-name", po::value<std::string>()->default_value(""),
      "names the coordination index (.migrations_working_state_<session>) so several "
      "migrations can share a cluster; with --console-url, the console session")(
      "index-allowlist", po::value<std::vector<std::string>>()->multitoken(),
      "indices to migrate: names, comma lists or regex:<pattern> (default: every index except "
      "system indices, whose names start with '.')")(
      "multi-type-behavior", po::value<std::string>()->default_value("union"),
      "for ES <= 6 indices with several mapping types: union (one index) or split "
      "(<index>_<type> per type); must match MetadataMigration's")(
      "max-shard-size-bytes", po::value<Count>()->default_value({uint64_t{80} << 30}),
      "a shard whose snapshot files are larger stops the worker with an error (it is never "
      "skipped silently)")(
      "split-shard-bytes", po::value<Count>()->default_value({uint64_t{10} << 30}),
      "shards with more snapshot files than this are set up as several work items over "
      "disjoint document ranges (about this size each), so several workers migrate one shard at "
      "once; 0 never splits")(
      "initial-lease-duration", po::value<std::string>()->default_value("PT10M"),
      "ISO-8601 lease of a work item's first attempt; an attempt that ends without progress "
      "doubles the next one")(
      "lease-renewal-interval", po::value<std::string>()->default_value("PT30S"),
      "ISO-8601 heartbeat: while a shard moves, its lease is renewed and the acknowledged "
      "cursor recorded this often (at most a quarter of the lease; PT0S turns it off), so a "
      "killed worker costs about one interval of re-sent documents")(
      "progress-report-interval", po::value<std::string>()->default_value("PT5S"),
      "ISO-8601: between heartbeats, the acknowledged cursor and counts are recorded this often "
      "without renewing the lease, so a console's throughput follows the real rate (PT1S at "
      "least; PT0S: only with the heartbeats)")(
      "max-retries", po::value<Bounded<uint64_t, 0, 1000000>>()->default_value({0}),
      "attempts per bulk request before the worker gives up (0: retry transient errors, "
      "429s, 5xx and blocked indices, for as long as the lease allows; N: the lease is renewed "
      "while they wait, and a shard given up on is given back at once, exit 1)")(
      "shutdown-timeout", po::value<std::string>()->default_value("PT20S"),
      "on SIGTERM or SIGINT: how long in-flight bulk requests may take before the worker "
      "records its cursor, releases the shard and exits 2 (a second signal exits at once)")(
      "max-connections", po::value<Connections>()->default_value({10}),
      "bulk requests in flight at once")("documents-per-bulk-request",
                                         po::value<RequestDocs>()->default_value({0}),
                                         "documents per bulk request (0: no limit but the size)")(
      "documents-size-per-bulk-request",
      po::value<RequestBytes>()->default_value({uint64_t{10} << 20}),
      "bytes of documents per bulk request (0: no limit but the document count; a larger "
      "document travels alone)")(
      "memory-budget-bytes", po::value<RequestBytes>()->default_value({uint64_t{96} << 20}),
      "bytes of documents the worker holds at once: bulk requests in flight, and a huge "
      "document being read (counted twice: decoded and converted), share it; a document too "
      "large for it is read and sent alone. With the defaults the worker's peak RSS stays "
      "under 256 MiB whatever the documents' sizes (up to the 100 MB HTTP limit); 0: no "
      "budget")(
      "allowed-doc-exception-types", po::value<std::vector<std::string>>()->multitoken(),
      "bulk item error types that count as success, e.g. version_conflict_engine_exception")(
      "failed-documents-dir", po::value<std::string>(),
      "where documents the target rejects for good are kept, as gzip NDJSON (default: "
      "OUT/.rfs/failed-documents, or ./failed-documents with --target-host)")(
      "failed-document-stream-s3-bucket", po::value<std::string>(),
      "send failed documents to this S3 bucket instead of the folder (gzip NDJSON objects "
      "<prefix>session=S/index=I/worker=W/failed-document-stream-TIME-SEQ.ndjson.gz, as the "
      "Java tool writes them)")(
      "failed-document-stream-s3-prefix",
      po::value<std::string>()->default_value("rfs-failed-document-stream/"),
      "key prefix in that bucket")("failed-document-stream-s3-region", po::value<std::string>(),
                                   "the bucket's region (default: --s3-region, AWS_REGION, ...)")(
      "failed-document-stream-s3-endpoint", po::value<std::string>(),
      "a custom S3 endpoint for that bucket (default: --s3-endpoint)")(
      "failed-document-stream-gcs-bucket", po::value<std::string>(),
      "send failed documents to this GCS bucket instead, as to S3")(
      "failed-document-stream-gcs-prefix", po::value<std::string>(),
      "key prefix in that bucket (default: --failed-document-stream-s3-prefix's)")(
      "failed-document-stream-gcs-endpoint", po::value<std::string>(),
      "a custom GCS endpoint for that bucket (default: --gcs-endpoint)")(
      "failed-document-stream-azure-container", po::value<std::string>(),
      "send failed documents to this Azure Blob container instead, as to S3")(
      "failed-document-stream-azure-prefix", po::value<std::string>(),
      "blob-name prefix in that container (default: --failed-document-stream-s3-prefix's)")(
      "failed-document-stream-azure-account", po::value<std::string>(),
      "the container's storage account (default: --azure-account)")(
      "failed-document-stream-azure-endpoint", po::value<std::string>(),
      "a custom Azure Blob endpoint for that container (default: --azure-endpoint)")(
      "failed-document-stream-session-id", po::value<std::string>(),
      "the session= part of the keys (default: ARGO_WORKFLOW_UID, then worker-<worker id>)")(
      "failed-document-stream-max-buffer-bytes",
      po::value<Count>()->default_value({uint64_t{64} << 20}),
      "NDJSON bytes per object before compression; a larger batch is split")(
      "single-work-item", po::bool_switch(), "stop after one completed work item (exit 0)")(
      "redrive-failed-documents", po::value<std::string>(),
      "instead of migrating: send the failed documents recorded in this folder or "
      "s3://bucket/prefix (a failed-documents folder or the failed-document stream) to the "
      "target again, through the transforms; each file is a work item, so several workers can "
      "share it. Only index and create actions are sent (and deletes of a record's own "
      "document, as rfs records them), never into .migrations_working_state*: other records are "
      "refused and named; a file that cannot be read (empty, cut) is skipped and named, the "
      "others go on. Exit 0 when every one was accepted, 6 when some failed again (recorded "
      "anew), were refused or were in a file skipped")(
      "worker-id", po::value<std::string>(), "this worker's id (default: host-pid-random)");
  AddReaderThreadsOption(options);
  AddSourcelessOption(options);
  AddDeltaOptions(options);
  AddTrialOptions(options);
  AddTransformerOptions(options, "doc-transformer-config",
                        "user transforms of each document: a JSON list of {\"<Provider>\": "
                        "<config>} applied in order");
  options.add_options()(
      "transform-time-budget", po::value<std::string>()->default_value("PT30S"),
      "ISO-8601 time one batch of documents may spend in a jq or JavaScript transform; past it "
      "the program is interrupted and the batch's documents are recorded as failed "
      "(transform_budget_exceeded)")(
      "transform-memory-budget-mb",
      po::value<Bounded<uint64_t, 16, 1048576>>()->default_value({128}),
      "MiB a jq or JavaScript transform may grow the worker by on one batch (and, for "
      "JavaScript, its heap); past it the batch's documents are recorded as failed. A document "
      "needs about 4 times its _source to transform: one over a quarter of this fails at once "
      "(transform_budget_exceeded; redrive it with a larger value). Within the default, a worker "
      "with transforms stays under 256 MiB");
  AddMetricsOptions(options);
  AddTraceOption(options);
  options.add_options()(
      "coordinator-retry-max-retries", po::value<Bounded<int, 0, 1000>>()->default_value({7}),
      "retries of a coordination request that fails for a transient reason (429, 5xx, a lost "
      "connection) before the worker gives up on it")(
      "coordinator-retry-initial-delay-ms",
      po::value<Bounded<int64_t, 1, 3'600'000>>()->default_value({250}),
      "the first of those retries waits about this long (with jitter); each wait doubles")(
      "coordinator-retry-max-delay-ms",
      po::value<Bounded<int64_t, 1, 3'600'000>>()->default_value({8000}),
      "the longest wait between two of those retries")(
      "server-generated-ids", po::value<std::string>()->default_value("AUTO"),
      "AUTO or NEVER: every document is written under its source _id, so that work redone "
      "after a worker's death overwrites rather than duplicates (the Java tool's AUTO lets "
      "Amazon OpenSearch Serverless time-series and vector collections make ids; rfs does not, "
      "and refuses ALWAYS)")(
      "emit-doc-type", po::value<std::string>()->default_value("AUTO"),
      "AUTO or OFF: bulk action lines carry no _type, which OpenSearch does not take (the Java "
      "tool's ON is refused); a typed source's type is handled by --multi-type-behavior");
  AddLooseVersionMatchingOption(options);
  AddIgnoredJavaOption(options, "clean-local-dirs", false,
                       "shards are read in place, nothing is downloaded");
  AddIgnoredJavaOption(options, "use-recovery-source", false,
                       "a document without _source is always sent from its _recovery_source "
                       "when the shard keeps one");
  AddIgnoredJavaOption(options, "position-gap-stopword", true,
                       "rfs rebuilds no text field from its positions (such a field stops the "
                       "rebuild, named)");
  options.add_options()("disable-compression", po::bool_switch(),
                        "send bulk bodies uncompressed even when the target accepts gzip "
                        "(default: gzip them, which costs CPU here and saves network)");
  options.add_options()("no-auto-create-indices", po::bool_switch(),
                        "with --target-host: fail the documents of an index the target does not "
                        "have (index_not_on_target) instead of letting the target create it at "
                        "the first bulk with its default settings and dynamic mappings (which is "
                        "allowed by default, and reported). Documents of a data stream always "
                        "fail when the stream is not on the target (data_stream_not_on_target): "
                        "MetadataMigration creates it");
  options.add_options()("preserve-version", po::bool_switch(),
                        "write each document with its source _version (version_type=external, "
                        "read from the shard's _version doc values), so that a resent or older "
                        "copy never overwrites a newer one on the target; a document the target "
                        "holds in an equal or higher version (409) is counted as already newer, "
                        "not failed. Data streams take only create with internal versions: their "
                        "documents go without versions (warned). A delta's deletes carry no "
                        "version. Indices created before Elasticsearch 6 are refused (exit 64)");
  options.add_options()(
      "tune-target", po::bool_switch(),
      "with --target-host: an index this run created empty gets number_of_replicas 0 and "
      "refresh_interval -1 before its first bulk, its original values kept in the coordination "
      "store and put back (with a refresh) when its last item is done; never during a delta, "
      "never for an index that existed before. On by default in RfsWorker (its phase 3 knows "
      "which indices it created); off by default here, where it counts as created empty an "
      "index on the target with no document and no tuning record when the shard setup runs")(
      "no-tune-target", po::bool_switch(), "leave the target indices' settings alone");
  options.add_options()("no-backpressure", po::bool_switch(),
                        "keep --max-connections bulks of --documents-size-per-bulk-request in "
                        "flight even while the target answers 429 or slows down (default: fewer "
                        "and smaller bulks until it recovers; bulk files in --output-dir always "
                        "get the configured numbers)");

  return options;
}

absl::StatusOr<migration::DocumentsToolOptions> DocumentsToolOptionsFrom(
    const po::variables_map& vm) {
  migration::DocumentsToolOptions run;
  run.redrive_source = Text(vm, "redrive-failed-documents");
  // A redrive reads no snapshot: its source stands in for the repository (and its S3 options).
  auto repository = !run.redrive_source.empty() && !HasRepositoryOption(vm)
                        ? LocationOf(run.redrive_source, vm)
                        : RepositoryOption(vm);
  if (!repository.ok()) return repository.status();
  run.repository = *std::move(repository);
  auto text = [&](const char* name) { return Text(vm, name); };
  run.output_dir = text("output-dir");
  for (auto [side, into] : {std::pair{"target", &run.target}, {"coordinator", &run.coordinator}}) {
    auto connection = ConnectionOptions(vm, side);
    if (!connection.ok()) return connection.status();
    *into = *std::move(connection);
  }
  run.coordinator_db = text("coordinator-db");
  if (auto valid = migration::ValidateCoordinatorDb(run.coordinator_db); !valid.ok()) {
    return valid;
  }
  run.console_url = text("console-url");
  run.console_token = text("console-token");
  run.console_ca_cert_file = text("console-cacert");
  run.session_name = text("session-name");
  run.failed_documents_dir = text("failed-documents-dir");
  const int stream_stores = static_cast<int>(vm.count("failed-document-stream-s3-bucket") +
                                             vm.count("failed-document-stream-gcs-bucket") +
                                             vm.count("failed-document-stream-azure-container"));
  if (stream_stores > 1) {
    return absl::InvalidArgumentError(
        "give one of --failed-document-stream-s3-bucket, --failed-document-stream-gcs-bucket, "
        "--failed-document-stream-azure-container");
  }
  if (stream_stores == 1) {
    migration::FailedDocumentStreamOptions stream;
    stream.prefix = text("failed-document-stream-s3-prefix");
    if (vm.count("failed-document-stream-gcs-bucket")) {
      stream.scheme = "gs";
      stream.bucket = text("failed-document-stream-gcs-bucket");
      if (vm.count("failed-document-stream-gcs-prefix")) {
        stream.prefix = text("failed-document-stream-gcs-prefix");
      }
      stream.gcs.endpoint = text("failed-document-stream-gcs-endpoint");
      if (stream.gcs.endpoint.empty()) stream.gcs.endpoint = text("gcs-endpoint");
    } else if (vm.count("failed-document-stream-azure-container")) {
      stream.scheme = "az";
      stream.bucket = text("failed-document-stream-azure-container");
      if (vm.count("failed-document-stream-azure-prefix")) {
        stream.prefix = text("failed-document-stream-azure-prefix");
      }
      stream.azure.account = text("failed-document-stream-azure-account");
      if (stream.azure.account.empty()) stream.azure.account = text("azure-account");
      stream.azure.endpoint = text("failed-document-stream-azure-endpoint");
      if (stream.azure.endpoint.empty()) stream.azure.endpoint = text("azure-endpoint");
    } else {
      stream.bucket = text("failed-document-stream-s3-bucket");
      stream.s3.region = net::ResolveAwsRegion(vm.count("failed-document-stream-s3-region")
                                                   ? text("failed-document-stream-s3-region")
                                                   : text("s3-region"));
      stream.s3.endpoint = text("failed-document-stream-s3-endpoint");
      if (stream.s3.endpoint.empty()) stream.s3.endpoint = run.repository.s3.endpoint;
      if (stream.s3.region.empty() && stream.s3.endpoint.empty()) {
        return absl::InvalidArgumentError(
            "--failed-document-stream-s3-bucket needs --failed-document-stream-s3-region (or "
            "--s3-region, AWS_REGION)");
      }
    }
    stream.session_id = text("failed-document-stream-session-id");
    if (stream.session_id.empty()) {
      if (const char* argo = std::getenv("ARGO_WORKFLOW_UID"); argo != nullptr) {
        stream.session_id = argo;
      }
    }
    stream.max_object_bytes = vm["failed-document-stream-max-buffer-bytes"].as<Count>().value;
    if (stream.max_object_bytes == 0) {
      return absl::InvalidArgumentError("--failed-document-stream-max-buffer-bytes must be > 0");
    }
    run.failed_document_stream = std::move(stream);
  }
  run.worker_id = text("worker-id");
  run.source_version = text("source-version");
  RFS_RETURN_IF_ERROR(
      ApplySolrSource(vm, run.source_version, text("snapshot-name"), run.repository));
  if (!run.source_version.empty() && !run.repository.solr) {
    if (auto parsed = core::ClusterVersion::ParseKnown(run.source_version); !parsed.ok()) {
      return absl::InvalidArgumentError(
          core::StrCat("--source-version: ", parsed.status().message()));
    }
  }
  migration::DocumentMigrationOptions& docs = run.migration;
  docs.snapshot_name = text("snapshot-name");
  if (vm.count("index-allowlist")) {
    auto allowlist =
        transform::Allowlist::Parse(vm["index-allowlist"].as<std::vector<std::string>>());
    if (!allowlist.ok()) return allowlist.status();
    docs.index_allowlist = *std::move(allowlist);
  }
  auto policy = transform::ParseMultiTypePolicy(vm["multi-type-behavior"].as<std::string>());
  if (!policy.ok()) return policy.status();
  docs.multi_type_policy = *policy;
  docs.max_shard_size_bytes = Get<Count>(vm, "max-shard-size-bytes");
  docs.split_shard_bytes = Get<Count>(vm, "split-shard-bytes");
  auto lease = core::ParseIsoDuration(vm["initial-lease-duration"].as<std::string>());
  if (!lease.ok()) {
    return absl::InvalidArgumentError(
        core::StrCat("--initial-lease-duration: ", lease.status().message()));
  }
  if (*lease <= std::chrono::nanoseconds(0)) {
    return absl::InvalidArgumentError("--initial-lease-duration must be positive");
  }
  docs.initial_lease = *lease;
  for (auto [name, into] : {std::pair{"lease-renewal-interval", &docs.lease_renewal_interval},
                            {"progress-report-interval", &docs.progress_report_interval},
                            {"shutdown-timeout", &docs.shutdown_timeout}}) {
    auto duration = core::ParseIsoDuration(vm[name].as<std::string>());
    if (!duration.ok()) {
      return absl::InvalidArgumentError(
          core::StrCat("--", name, ": ", duration.status().message()));
    }
    if (*duration < std::chrono::nanoseconds(0)) {
      return absl::InvalidArgumentError(core::StrCat("--", name, " must not be negative"));
    }
    *into = std::chrono::duration_cast<std::chrono::milliseconds>(*duration);
  }
  // Reports more often than once a second would flood a shared store with writes.
  if (docs.progress_report_interval > std::chrono::milliseconds(0) &&
      docs.progress_report_interval <
          migration::DocumentMigrationOptions::kMinProgressReportInterval) {
    return absl::InvalidArgumentError("--progress-report-interval must be PT0S or at least PT1S");
  }
  const uint64_t max_retries = Get<Bounded<uint64_t, 0, 1000000>>(vm, "max-retries");
  if (max_retries > 1'000'000) {
    return absl::InvalidArgumentError("--max-retries must be at most 1000000 (0: no limit)");
  }
  // Attempts count the first request too.
  docs.reindexer.retry.max_attempts = max_retries == 0 ? 0 : static_cast<int>(max_retries) + 1;
  docs.reindexer.max_concurrent_batches = Get<Connections>(vm, "max-connections");
  docs.reindexer.max_docs_per_batch = Get<RequestDocs>(vm, "documents-per-bulk-request");
  docs.reindexer.max_bytes_per_batch = Get<RequestBytes>(vm, "documents-size-per-bulk-request");
  docs.reindexer.max_in_flight_bytes = Get<RequestBytes>(vm, "memory-budget-bytes");
  auto reader_threads = ReaderThreads(vm);
  if (!reader_threads.ok()) return reader_threads.status();
  docs.reader_threads = *reader_threads;
  docs.enable_sourceless_migrations = vm["enable-sourceless-migrations"].as<bool>();
  if (absl::Status delta = ApplyDeltaOptions(vm, docs); !delta.ok()) return delta;
  if (absl::Status trial = ApplyTrialOptions(vm, docs); !trial.ok()) return trial;
  docs.reindexer.backpressure = !vm["no-backpressure"].as<bool>();
  docs.no_auto_create_indices = vm["no-auto-create-indices"].as<bool>();
  if (vm["tune-target"].as<bool>() && vm["no-tune-target"].as<bool>()) {
    return absl::InvalidArgumentError("--tune-target and --no-tune-target exclude each other");
  }
  if (vm["tune-target"].as<bool>()) run.tune_target = true;
  if (vm["no-tune-target"].as<bool>()) run.tune_target = false;
  docs.preserve_version = vm["preserve-version"].as<bool>();
  run.target_compression = !vm["disable-compression"].as<bool>();
  if (vm.count("allowed-doc-exception-types")) {
    docs.reindexer.allowed_exception_types =
        CommaList(vm["allowed-doc-exception-types"].as<std::vector<std::string>>());
  }
  auto transformers = TransformerConfig(vm, "doc-transformer-config");
  if (!transformers.ok()) return transformers.status();
  docs.doc_transformer_config = *std::move(transformers);
  auto budget = core::ParseIsoDuration(vm["transform-time-budget"].as<std::string>());
  if (!budget.ok() || *budget <= std::chrono::nanoseconds(0)) {
    return absl::InvalidArgumentError(core::StrCat(
        "--transform-time-budget: ", budget.ok() ? "must be positive" : budget.status().message()));
  }
  docs.transform_limits.time_per_call =
      std::chrono::duration_cast<std::chrono::milliseconds>(*budget);
  docs.transform_limits.memory_bytes =
      Get<Bounded<uint64_t, 16, 1048576>>(vm, "transform-memory-budget-mb") << 20;
  auto metrics = MetricsOptionsFrom(vm);
  if (!metrics.ok()) return metrics.status();
  run.metrics = *std::move(metrics);
  docs.single_work_item = vm["single-work-item"].as<bool>();
  docs.coordinator_retries.max_attempts =
      Get<Bounded<int, 0, 1000>>(vm, "coordinator-retry-max-retries") + 1;
  docs.coordinator_retries.initial_backoff = std::chrono::milliseconds(
      Get<Bounded<int64_t, 1, 3'600'000>>(vm, "coordinator-retry-initial-delay-ms"));
  docs.coordinator_retries.max_backoff = std::chrono::milliseconds(
      Get<Bounded<int64_t, 1, 3'600'000>>(vm, "coordinator-retry-max-delay-ms"));
  if (docs.coordinator_retries.max_backoff < docs.coordinator_retries.initial_backoff) {
    return absl::InvalidArgumentError(
        "--coordinator-retry-max-delay-ms must not be less than "
        "--coordinator-retry-initial-delay-ms");
  }
  for (auto [name, refused, why] :
       {std::tuple{"server-generated-ids", "ALWAYS",
                   "rfs writes every document under its source _id, so that work redone after a "
                   "worker's death overwrites and never duplicates"},
        {"emit-doc-type", "ON", "OpenSearch takes no _type in bulk action lines"}}) {
    const std::string value = absl::AsciiStrToUpper(Text(vm, name));
    if (value == refused) {
      return absl::InvalidArgumentError(core::StrCat("--", name, " ", refused, ": ", why));
    }
    const std::string_view other = std::string_view(name) == "emit-doc-type" ? "OFF" : "NEVER";
    if (value != "AUTO" && value != other) {
      return absl::InvalidArgumentError(
          core::StrCat("--", name, " takes AUTO or ", other, ", not '", Text(vm, name), "'"));
    }
  }
  if (run.worker_id.empty()) run.worker_id = rfs::migration::DefaultWorkerId();
  return run;
}

}  // namespace rfs::apps
