#include "rfs_worker/cli.hpp"

#include <iostream>
#include <memory>
#include <mutex>

#include <boost/json.hpp>

#include "rfs/cloud/gcs_repo.hpp"
#include "rfs/core/duration.hpp"
#include "rfs/core/exit_codes.hpp"
#include "rfs/core/json_text.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/transform/es_mapping_rules.hpp"

#include "common/connection.hpp"
#include "common/document_options.hpp"
#include "common/options.hpp"
#include "common/progress.hpp"
#include "common/text.hpp"

namespace rfs::apps::worker {

namespace po = boost::program_options;
namespace json = boost::json;

const char* const kUsage =
    "Usage: RfsWorker --snapshot-local-dir DIR | --s3-repo-uri s3://... | --gcs-repo-uri gs://...\n"
    "                 | --azure-repo-uri az://... [--snapshot-name NAME]\n"
    "         (--output-dir OUT | --target-host URL) [--source-host URL] [options]\n"
    "\n"
    "The whole migration in one command. Start as many copies as you like, from an empty store;\n"
    "each looks at the records in the coordination store and does what is due, any of them may\n"
    "be killed at any time:\n"
    "  1 snapshot   with --source-host: create the snapshot (named --snapshot-name, or rfs-<hash\n"
    "               of the configuration>, the same in every worker) and wait for it; without:\n"
    "               check that the snapshot is in the repository (default: the newest)\n"
    "  2 metadata   templates (legacy, component, index) allowed and not on the target yet\n"
    "  3 indices    each index created if missing, never modified\n"
    "  4 documents  every live document by its original _id (as DocumentsFromSnapshotMigration);\n"
    "               an index phase 3 created gets number_of_replicas 0 and refresh_interval -1\n"
    "               before its first bulk, and its original values back (with a refresh) when\n"
    "               its last item is done (--no-tune-target: settings left alone; a killed\n"
    "               worker's are put back by the next worker or --restore-target-settings)\n"
    "  5 verify     per index: the snapshot's live documents against the target's _count after\n"
    "               a refresh, and a sample fetched by _id compared with the snapshot's _source;\n"
    "               with --verify-all, every document (below)\n"
    "Every phase, and each index, runs under a lease a health thread renews; a worker whose\n"
    "lease is lost ends at once (exit 2). Transient errors (a source or target not up yet, 429,\n"
    "5xx, resets) are retried under the lease and never count as attempts. A record taken\n"
    "--max-attempts times without finishing, or whose work fails for good (snapshot FAILED,\n"
    "template rejected, documents missing), makes the migration FAILED: every worker then ends\n"
    "with exit 7 and the reason, until one runs with --reset-failed after the cause is fixed.\n"
    "A store remembers the snapshot and allowlists it was set up for: a run with others is\n"
    "refused (exit 64; use --session-name or another store).\n"
    "\n"
    "Exit codes: 0 every phase COMPLETED (also for a worker that finds it so), 2 stopped by\n"
    "SIGTERM/SIGINT or its lease was lost (run again), 5 the snapshot cannot be read, 6 some\n"
    "documents could not be migrated (they are in the failed-documents folder), 7 a phase FAILED\n"
    "(the reason is printed), 1 other failures, 64 usage. --verify-only runs phase 5 alone: 0\n"
    "when every document is accounted for, 7 when some are missing.\n"
    "\n"
    "--verify-all (with a target cluster; not with --output-dir) compares every document: the\n"
    "source shards are work items of a verification round, in a space of their own in the same\n"
    "store (verify_items_N; a console's space verify-N, whose status shows the round per index),\n"
    "leased and shared by every copy that takes part. Each is\n"
    "read from the snapshot as the migration reads it (rebuilt, transformed), its ids fetched\n"
    "from the target (_mget with routing; a data stream searched by ids) and each _source\n"
    "compared. Per index: expected, equal, missing, different, not comparable (the target keeps\n"
    "no _source or leaves fields out), already newer (--preserve-version) and extra (the target's\n"
    "_count beyond them; with --verify-scan-extra, every _id of the target index scanned and each\n"
    "document the source does not hold named and recorded as a delete). Every document missing or\n"
    "different is recorded in\n"
    "<failed-documents folder>/verify-round-N (or the S3 stream's session "
    "<session>-verify-round-N),\n"
    "which --redrive-failed-documents of DocumentsFromSnapshotMigration sends again. Exit 0 only\n"
    "when every document is equal, else 7. Each --verify-only --verify-all after a round is\n"
    "reported begins a new round; copies started together share one.\n"
    "\n"
    "Options of DocumentsFromSnapshotMigration apply (targets, coordination: --coordinator-db,\n"
    "--console-url, the target's index by default); every option can also be set through an RFS_\n"
    "environment variable, or in the Java tools' JSON form (---INLINE-JSON '{...}', or its\n"
    "base64, or ---JSON-FILE PATH).\n";

po::options_description Options() {
  po::options_description options = DocumentOptions();
  rfs::apps::AddConnectionOptions(options, "source", "source");
  options.add_options()(
      "source-repo-path", po::value<std::string>(),
      "phase 1: the repository folder as the source cluster sees it (path.repo; default: "
      "--snapshot-local-dir)")("snapshot-repo-name",
                               po::value<std::string>()->default_value(
                                   std::string(rfs::opensearch::kDefaultSnapshotRepositoryName)),
                               "phase 1: the repository name to register on the source")(
      "index-template-allowlist", po::value<std::vector<std::string>>()->multitoken(),
      "index and legacy templates to migrate: names or regex:<pattern> (default: every "
      "non-system template)")("component-template-allowlist",
                              po::value<std::vector<std::string>>()->multitoken(),
                              "component templates to migrate")(
      "knn-engine", po::value<std::string>()->default_value("lucene"),
      "engine of the knn_vector fields translated from Elasticsearch dense_vector: lucene (the "
      "HNSW Elasticsearch uses) or faiss (docs/es-mapping-compatibility.md)")(
      "phase-lease-duration", po::value<std::string>()->default_value("PT5M"),
      "the lease on a phase or index record (ISO-8601), renewed every quarter of it while the "
      "work runs; a dead worker's record is taken over once it runs out")(
      "snapshot-poll-interval", po::value<std::string>()->default_value("PT1S"),
      "phase 1: how often the snapshot's progress is polled")(
      "max-attempts", po::value<rfs::apps::Bounded<int, 1, 1000>>()->default_value({3}),
      "acquisitions of one phase or index record before the migration is marked FAILED")(
      "verify-sample", po::value<rfs::apps::Bounded<int, 0, 1000000>>()->default_value({20}),
      "documents per index fetched by _id and compared with the snapshot's _source")(
      "skip-verify", po::bool_switch(), "skip phase 5")("verify-only", po::bool_switch(),
                                                        "run phase 5 alone and report")(
      "verify-all", po::bool_switch(),
      "phase 5 compares every document with the target, not a sample (needs --target-host; "
      "see above)")(
      "verify-scan-extra", po::bool_switch(),
      "with --verify-all: scan every _id of each target index and record each document the "
      "source does not hold (the reporting worker reads the source's ids again: 8 bytes of "
      "memory per document)")(
      "restore-target-settings", po::bool_switch(),
      "only put back the original number_of_replicas and refresh_interval of every index this "
      "store's records say is tuned and not yet restored (a killed worker's), with a refresh; "
      "exit 0 when every one is restored")(
      "reset-failed", po::bool_switch(),
      "clear the migration's FAILED mark in this store (after fixing its cause), then run: the "
      "phases go on where they stopped, each record with --max-attempts more attempts");
  rfs::apps::AddTransformerOptions(options, "transformer-config",
                                   "phase 2: user transforms of each template and index (the "
                                   "MetadataMigration option)");
  return options;
}

absl::StatusOr<migration::RfsWorkerOptions> WorkerOptions(const po::variables_map& vm) {
  rfs::migration::RfsWorkerOptions run;
  auto documents = DocumentsToolOptionsFrom(vm);
  if (!documents.ok()) return documents.status();
  run.documents = *std::move(documents);
  run.metadata.index_allowlist = run.documents.migration.index_allowlist;
  run.metadata.multi_type_policy = run.documents.migration.multi_type_policy;
  run.metadata.target_index_prefix = run.documents.migration.target_index_prefix;
  auto transformers = rfs::apps::TransformerConfig(vm, "transformer-config");
  if (!transformers.ok()) return transformers.status();
  run.metadata.transformer_config = *std::move(transformers);
  if (run.metadata.transformer_config) {
    auto loaded = rfs::transform::LoadTransformers(*run.metadata.transformer_config);
    if (!loaded.ok()) {
      return absl::InvalidArgumentError(
          rfs::core::StrCat("--transformer-config: ", loaded.status().message()));
    }
  }
  for (auto [name, into] :
       {std::pair{"index-template-allowlist", &run.metadata.index_template_allowlist},
        {"component-template-allowlist", &run.metadata.component_template_allowlist}}) {
    if (!vm.count(name)) continue;
    auto parsed = rfs::transform::Allowlist::Parse(vm[name].as<std::vector<std::string>>());
    if (!parsed.ok()) return parsed.status();
    *into = *std::move(parsed);
  }
  auto engine = rfs::transform::ParseKnnEngine(vm["knn-engine"].as<std::string>());
  if (!engine.ok()) {
    return absl::InvalidArgumentError(
        rfs::core::StrCat("--knn-engine: ", engine.status().message()));
  }
  run.metadata.knn_engine = *engine;
  auto source = rfs::apps::ConnectionOptions(vm, "source");
  if (!source.ok()) return source.status();
  run.source = *std::move(source);
  if (run.source) {
    const std::string uri = run.documents.repository.uri;
    rfs::opensearch::RepositoryConfig repository;
    if (uri.starts_with("az://")) {
      return absl::InvalidArgumentError(
          "--source-host registers an fs, S3 or GCS repository on the source; an Azure "
          "repository is read without it (create the snapshot with the source's own "
          "repository-azure, then run without --source-host)");
    }
    if (uri.starts_with("gs://")) {
      // The source writes through its repository-gcs plugin, with its own gcs.client.default.*
      // credentials and endpoint; --gcs-endpoint is the reader's.
      auto parsed = rfs::cloud::ParseGcsUri(uri);
      if (!parsed.ok()) return parsed.status();
      std::string base_path = parsed->prefix;
      if (base_path.ends_with('/')) base_path.pop_back();
      repository.storage = rfs::opensearch::GcsRepositoryConfig{parsed->bucket, base_path};
    } else if (uri.starts_with("s3://")) {
      repository.storage =
          rfs::opensearch::S3RepositoryConfig{.uri = uri,
                                              .region = run.documents.repository.s3.region,
                                              .endpoint = run.documents.repository.s3.endpoint,
                                              .role_arn = ""};
    } else {
      std::string path = rfs::apps::Text(vm, "source-repo-path");
      if (path.empty()) path = uri.starts_with("file://") ? uri.substr(7) : uri;
      repository.storage = rfs::opensearch::FileSystemRepositoryConfig{path};
    }
    run.source_repository = std::move(repository);
  }
  run.source_repository_name = vm["snapshot-repo-name"].as<std::string>();
  for (auto [name, into] : {std::pair{"phase-lease-duration", &run.record_lease},
                            {"snapshot-poll-interval", &run.snapshot_poll_interval}}) {
    auto duration = rfs::core::ParseIsoDuration(vm[name].as<std::string>());
    if (!duration.ok()) {
      return absl::InvalidArgumentError(
          rfs::core::StrCat("--", name, ": ", duration.status().message()));
    }
    *into = std::chrono::duration_cast<std::chrono::milliseconds>(*duration);
    if (into->count() <= 0) {
      return absl::InvalidArgumentError(rfs::core::StrCat("--", name, " must be positive"));
    }
  }
  run.max_attempts = vm["max-attempts"].as<rfs::apps::Bounded<int, 1, 1000>>().value;
  if (run.max_attempts < 1) return absl::InvalidArgumentError("--max-attempts must be >= 1");
  run.verify_sample = vm["verify-sample"].as<rfs::apps::Bounded<int, 0, 1000000>>().value;
  if (run.verify_sample < 0) return absl::InvalidArgumentError("--verify-sample must be >= 0");
  run.reset_failed = vm["reset-failed"].as<bool>();
  run.skip_verify = vm["skip-verify"].as<bool>();
  run.verify_only = vm["verify-only"].as<bool>();
  run.restore_target_settings = vm["restore-target-settings"].as<bool>();
  if (run.restore_target_settings && run.verify_only) {
    return absl::InvalidArgumentError(
        "--restore-target-settings and --verify-only exclude each other");
  }
  if (run.skip_verify && run.verify_only) {
    return absl::InvalidArgumentError("--skip-verify and --verify-only exclude each other");
  }
  run.verify_all = vm["verify-all"].as<bool>();
  if (run.skip_verify && run.verify_all) {
    return absl::InvalidArgumentError("--skip-verify and --verify-all exclude each other");
  }
  run.verify_scan_extra = vm["verify-scan-extra"].as<bool>();
  if (run.verify_scan_extra && !run.verify_all) {
    return absl::InvalidArgumentError("--verify-scan-extra goes with --verify-all");
  }
  return run;
}

std::function<void(const migration::RfsWorkerEvent&)> EventPrinter(std::string worker_id,
                                                                   bool live) {
  auto print_mu = std::make_shared<std::mutex>();
  return [print_mu, worker_id = std::move(worker_id), live](const migration::RfsWorkerEvent& e) {
    std::lock_guard lock(*print_mu);
    if (live) {
      std::cerr << "\r\033[K[" << rfs::migration::ToString(e.phase) << "] " << e.kind
                << (e.item.empty() ? "" : " " + e.item)
                << (e.message.empty() ? "" : ": " + e.message) << (e.kind == "progress" ? "" : "\n")
                << std::flush;
    } else {
      json::object line{{"ts", rfs::apps::NowIso8601()},
                        {"worker", worker_id},
                        {"phase", std::string(rfs::migration::ToString(e.phase))},
                        {"event", e.kind}};
      if (!e.item.empty()) line["item"] = e.item;
      if (!e.message.empty()) line["message"] = e.message;
      std::cerr << rfs::core::JsonText(line) << "\n";
    }
  };
}

void PrintResult(const migration::RfsWorkerResult& result, bool verify_only, uint64_t trial_limit,
                 const std::string& trial_prefix) {
  if (result.verify) std::cout << result.verify->ToText();
  json::object summary{{"worker", result.worker_id},
                       {"snapshot", result.snapshot_name},
                       {"exit_code", result.exit_code},
                       {"documents_written", result.documents.docs_written},
                       {"documents_failed", result.documents.docs_failed}};
  if (result.documents.docs_already_newer > 0) {
    // --preserve-version: documents the target holds in an equal or higher version, left there.
    summary["documents_already_newer"] = result.documents.docs_already_newer;
  }
  if (!result.documents.data_streams_without_versions.empty()) {
    json::array streams;
    for (const auto& stream : result.documents.data_streams_without_versions) {
      streams.emplace_back(stream);
    }
    summary["data_streams_without_versions"] = std::move(streams);
  }
  if (!result.failure.empty()) summary["failure"] = result.failure;
  if (trial_limit > 0 || !trial_prefix.empty()) {
    // Shown as what it is: a sample of the migration, in indices of its own.
    summary["trial"] =
        json::object{{"max_docs_per_shard", trial_limit}, {"target_index_prefix", trial_prefix}};
    std::cout << "TRIAL run: "
              << (trial_limit > 0
                      ? "at most " + std::to_string(trial_limit) + " documents of each shard"
                      : std::string("every document"))
              << " into indices prefixed '" << trial_prefix << "'\n";
  }
  if (result.verify) summary["verify"] = result.verify->ToJson();
  // Documents that could not be migrated make a finished run COMPLETED_WITH_FINDINGS, never
  // plain COMPLETED: the failed-documents records say which and why.
  const bool findings = result.exit_code == rfs::core::kExitDocumentsFailed;
  summary["outcome"] = result.exit_code == 0 ? "COMPLETED"
                       : findings            ? "COMPLETED_WITH_FINDINGS"
                                             : "ENDED";
  if (!verify_only || !result.verify) {
    std::cout << (result.exit_code == 0 ? "every phase COMPLETED"
                  : findings            ? "every phase COMPLETED_WITH_FINDINGS"
                                        : "ended")
              << ": " << rfs::core::JsonText(summary) << "\n";
  }
  if (!result.status.ok()) {
    std::cerr << "RfsWorker: " << result.status.message() << "\n";
  }
}

}  // namespace rfs::apps::worker
