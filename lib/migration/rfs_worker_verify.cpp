// RfsWorker's check of the target against the snapshot (--verify-sample), and full verification
// (--verify-all) in rounds (see rfs_worker_internal.hpp).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include <boost/json.hpp>
#include <zlib.h>

#include "rfs/content/source_json.hpp"
#include "rfs/core/backoff.hpp"
#include "rfs/core/checked_path.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/migration/failed_document_stream.hpp"
#include "rfs/migration/redrive.hpp"
#include "rfs/reindex/document_sink.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "absl/strings/str_join.h"
#include "migration/document_migration_worker_internal.hpp"
#include "migration/document_pipeline_internal.hpp"
#include "migration/rfs_worker_internal.hpp"
#include "migration/verify_extra_scan_internal.hpp"
#include "migration/verifying_sink_internal.hpp"
#include <unistd.h>

namespace rfs::migration::internal {

namespace {

absl::StatusOr<SnapshotIndexDocs> ReadIndexDocs(const snapshot::SnapshotRepository& repository,
                                                const snapshot::SnapshotEntry& snapshot,
                                                std::string_view index, size_t sample_size,
                                                std::mt19937_64& rng,
                                                uint64_t max_per_shard = UINT64_MAX,
                                                bool read_versions = false,
                                                bool enable_sourceless = false) {
  SnapshotIndexDocs out;
  auto metadata = repository.ReadIndexMetadata(snapshot, index);
  if (!metadata.ok()) return metadata.status();
  // Read as the migration read them: rebuilt where it rebuilt them (a Solr collection always).
  RFS_ASSIGN_OR_RETURN(
      lucene::ShardReaderOptions reader_options,
      internal::ShardReaderOptionsFor(*metadata, enable_sourceless, read_versions));
  for (int shard = 0; shard < metadata->number_of_shards; ++shard) {
    uint64_t in_shard = 0;
    auto reader = lucene::OpenSnapshotShard(repository, snapshot, index, shard, reader_options);
    if (absl::IsNotFound(reader.status())) continue;  // an empty or failed shard
    if (!reader.ok()) return reader.status();
    auto cursor = (*reader)->OpenAt(0);
    if (!cursor.ok()) return cursor.status();
    lucene::Document doc;
    while (true) {
      auto more = (*cursor)->Next(doc);
      if (!more.ok()) return more.status();
      if (!*more || in_shard++ >= max_per_shard) break;  // a trial sends the first N
      ++out.count;
      // Reservoir sampling over documents with a source (fetched by _id and routing).
      if (!doc.has_source) continue;
      size_t slot = out.sample.size();
      if (out.sample.size() >= sample_size) {
        slot = std::uniform_int_distribution<uint64_t>(0, out.count - 1)(rng);
        if (slot >= sample_size) continue;
      }
      std::string source;
      if (!content::AppendSourceAsJson(doc.source, doc.source_format, source).ok()) continue;
      SnapshotIndexDocs::Sampled sampled{doc.id, doc.routing, std::move(source), doc.version};
      if (slot == out.sample.size()) {
        out.sample.push_back(std::move(sampled));
      } else {
        out.sample[slot] = std::move(sampled);
      }
    }
  }
  return out;
}

// Failed documents per index in the gzip NDJSON files of a failed-documents folder: how many,
// and their ids (a sampled document that failed is accounted for, not missing).
struct FailedDocuments {
  std::map<std::string, uint64_t> counts;
  std::map<std::string, std::set<std::string>> ids;
};
FailedDocuments CountFailedDocuments(const std::string& dir) {
  FailedDocuments out;
  auto& counts = out.counts;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (!entry.is_regular_file()) continue;
    gzFile file = gzopen(entry.path().c_str(), "rb");
    if (file == nullptr) continue;
    std::string line;
    char buffer[65536];
    while (gzgets(file, buffer, sizeof buffer) != nullptr) {
      line += buffer;
      if (line.empty() || line.back() != '\n') continue;
      boost::system::error_code ec;
      json::value record = json::parse(line, ec);
      line.clear();
      if (ec || !record.is_object()) continue;
      const json::value* index = record.as_object().if_contains("index");
      if (index == nullptr) index = record.as_object().if_contains("_index");
      if (index != nullptr && index->is_string()) {
        const std::string name(index->as_string());
        ++counts[name];
        if (const json::value* id = record.as_object().if_contains("id"); id && id->is_string()) {
          out.ids[name].emplace(id->as_string());
        }
      }
    }
    gzclose(file);
  }
  return out;
}

// The embedded target: documents per index in its bulk files, and the sources of `wanted` ids.
struct DirectoryIndex {
  uint64_t count = 0;
  std::map<std::string, std::string> sources;
};

DirectoryIndex ReadDirectoryIndex(const std::string& output_dir, std::string_view index,
                                  const std::set<std::string>& wanted) {
  DirectoryIndex out;
  // A name the sink would not write (an absolute path, "..", ".rfs") names no folder of it.
  if (reindex::InvalidIndexName(index)) return out;
  auto relative = core::CheckedPath({index}, "the snapshot's index names");
  if (!relative.ok()) return out;
  std::error_code error;
  const auto root = std::filesystem::path(output_dir) / *relative;
  for (auto it = std::filesystem::recursive_directory_iterator(root, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (!it->is_regular_file() || it->path().extension() != ".ndjson") continue;
    std::ifstream in(it->path());
    std::string action, source;
    while (std::getline(in, action) && std::getline(in, source)) {
      boost::system::error_code ec;
      json::value parsed = json::parse(action, ec);
      if (ec || !parsed.is_object() || parsed.as_object().empty()) continue;
      const json::value& meta = parsed.as_object().begin()->value();
      ++out.count;
      if (const json::value* id = meta.is_object() ? meta.as_object().if_contains("_id") : nullptr;
          id != nullptr && id->is_string() && wanted.contains(std::string(id->as_string()))) {
        out.sources[std::string(id->as_string())] = source;
      }
    }
  }
  return out;
}

bool SameJson(const std::string& a, const std::string& b) {
  boost::system::error_code ea, eb;
  const json::value va = json::parse(a, ea);
  const json::value vb = json::parse(b, eb);
  return !ea && !eb && va == vb;
}

}  // namespace

// The highest round begun, joined unless it is reported; else the next one, begun here.
absl::StatusOr<int> AllPhaseWorker::PickRound() {
  int highest = 0;
  while (true) {
    RFS_ASSIGN_OR_RETURN(auto begun, records_->GetWorkItem(RoundRecord(highest + 1)));
    if (!begun) break;
    ++highest;
  }
  if (highest > 0) {
    RFS_ASSIGN_OR_RETURN(auto done, records_->GetWorkItem(RoundDoneRecord(highest)));
    if (!done || !done->completed()) return highest;
  }
  // Created, never leased: two workers beginning it at once both join it.
  RFS_RETURN_IF_ERROR(records_->CreateUnassignedWorkItem(RoundRecord(highest + 1), 0).status());
  return highest + 1;
}

// A full run's phase 5 verifies in one round, the first of its workers to get here decides which.
absl::StatusOr<int> AllPhaseWorker::RunRound() {
  for (int attempt = 0; attempt < 2; ++attempt) {
    RFS_ASSIGN_OR_RETURN(auto recorded, records_->GetWorkItem(kVerifyRunRoundRecord));
    if (recorded && recorded->completed() && recorded->progress &&
        recorded->progress->next_cursor > 0) {
      return static_cast<int>(recorded->progress->next_cursor);
    }
    if (attempt > 0) break;
    RFS_ASSIGN_OR_RETURN(int round, PickRound());
    RFS_RETURN_IF_ERROR(coordination::RecordCompletedItem(*records_, clock_, kVerifyRunRoundRecord,
                                                          options_.record_lease,
                                                          static_cast<uint64_t>(round)));
  }
  return absl::InternalError(StrCat("record ", kVerifyRunRoundRecord, " holds no round"));
}

std::optional<FailedDocumentStreamOptions> AllPhaseWorker::RoundStream(int round) const {
  if (!options_.documents.failed_document_stream) return std::nullopt;
  FailedDocumentStreamOptions stream = *options_.documents.failed_document_stream;
  const std::string base = !stream.session_id.empty() ? stream.session_id
                           : !options_.documents.session_name.empty()
                               ? options_.documents.session_name
                               : std::string("rfs");
  stream.session_id = StrCat(base, "-verify-round-", round);
  stream.worker_id = result_.worker_id;
  return stream;
}

absl::StatusOr<std::unique_ptr<reindex::IFailedDocumentSink>> AllPhaseWorker::OpenRoundSink(
    int round, std::string* location) {
  if (auto stream = RoundStream(round)) {
    auto opened = S3FailedDocumentStream::Open(*std::move(stream));
    if (!opened.ok()) return opened.status();
    *location = (*opened)->location();
    return std::unique_ptr<reindex::IFailedDocumentSink>(*std::move(opened));
  }
  *location = RoundFolder(round);
  // The folder comes with the first record: a round that finds every document equal leaves
  // none behind.
  auto opened = reindex::GzipFailedDocumentSink::Open(
      *location, StrCat("verify-round-", round, "-", result_.worker_id),
      reindex::FolderCreation::kWithFirstRecord);
  if (!opened.ok()) return opened.status();
  return std::unique_ptr<reindex::IFailedDocumentSink>(*std::move(opened));
}

// The options of a round's items: the migration's own (rebuild, transforms, splitting, trial
// limits), over every document of the snapshot (a delta's too), nothing asked of the target
// but the documents.
DocumentMigrationOptions AllPhaseWorker::VerifyMigrationOptions() const {
  DocumentMigrationOptions migration = options_.documents.migration;
  migration.previous_snapshot_name.clear();
  migration.single_work_item = false;
  migration.max_item_attempts = AttemptLimit();
  migration.target_indices = nullptr;
  migration.target_tuning = nullptr;  // a verification changes no setting of the target
  migration.no_auto_create_indices = false;
  migration.counters = nullptr;
  return migration;
}

// The client of the verifying sinks: `_mget` and searches are safe to send twice, so passing
// faults are resent at once; as many connections as batches in flight.
absl::Status AllPhaseWorker::OpenVerifyClient() {
  if (verify_client_) return absl::OkStatus();
  auto transport = internal::OpenPatientTransport(
      *options_.documents.target,
      options_.documents.migration.reindexer.max_concurrent_batches + 2);
  if (!transport.ok()) return transport.status();
  verify_transport_ = *std::move(transport);
  verify_client_ = std::make_unique<opensearch::OpenSearchClient>(*verify_transport_);
  return absl::OkStatus();
}

// Takes the round's items until every one is complete (by this worker or others).
absl::Status AllPhaseWorker::VerifyRoundItems(int round) {
  const std::string item = StrCat("verify round ", round);
  Emit(WorkerPhase::kVerify, "started", item, "every document against the target");
  int exit_code = core::kExitFailure;
  auto items = internal::OpenCoordinator(options_.documents, wiring_, result_.worker_id,
                                         internal::ItemSpace::kVerify, &exit_code, round);
  if (!items.ok()) {
    exit_code_override_ = exit_code;
    return items.status();
  }
  std::string location;
  RFS_ASSIGN_OR_RETURN(auto failed_sink, OpenRoundSink(round, &location));
  RFS_RETURN_IF_ERROR(OpenVerifyClient());
  internal::VerifyingSinkOptions sink_options;
  sink_options.round = round;
  sink_options.preserve_version = options_.documents.migration.preserve_version;
  sink_options.action_options = wiring_.cluster_sink->action_options();
  auto sink = std::make_shared<internal::VerifyingSink>(*verify_client_, verify_tally_,
                                                        std::move(sink_options));
  SinkFactory sinks = [sink](std::string_view, std::string_view)
      -> absl::StatusOr<std::shared_ptr<reindex::IDocumentSink>> { return sink; };
  while (true) {
    if (!options_.verify_only) RFS_RETURN_IF_ERROR(CheckFailed());
    DocumentMigrationWorker worker(*wiring_.repository, **items, sinks, failed_sink.get(), clock_,
                                   VerifyMigrationOptions());
    auto run = worker.Run();
    if (!run.ok()) {
      if (IsItemOverAttempts(run.status())) {
        if (options_.verify_only) return run.status();
        return MarkFailed(WorkerPhase::kVerify, item, std::string(run.status().message()));
      }
      if (IsSnapshotReadFailure(run.status())) {
        exit_code_override_ = core::kExitSnapshotUnreadable;
        return run.status();
      }
      if (IsStoreMismatch(run.status()) || IsSourcelessIndex(run.status()) ||
          IsPreserveVersionRefusal(run.status())) {
        exit_code_override_ = core::kExitUsage;
        return run.status();
      }
      if (core::IsRetryable(run.status()) && !StopRequested()) {
        Backoff();
        continue;
      }
      return run.status();
    }
    if (run->outcome == WorkerOutcome::kStopped) {
      stopped_ = true;
      return absl::OkStatus();
    }
    if (run->outcome == WorkerOutcome::kNoWorkLeft) break;
    Emit(WorkerPhase::kVerify, "waiting", item, "remaining shards are held by other workers");
    Backoff(std::chrono::milliseconds(3000));
  }
  if (options_.documents.migration.preserve_version) {
    RFS_RETURN_IF_ERROR(RecordNewerCounts(round));
  }
  return absl::OkStatus();
}

// --preserve-version: this worker's already-newer counts per index, each in a slot record of
// its own ("verify_round_newer__N__<index>__K", the count as its value): the first free K.
absl::Status AllPhaseWorker::RecordNewerCounts(int round) {
  std::vector<std::pair<std::string, uint64_t>> counts;
  {
    std::lock_guard lock(verify_tally_.mu);
    for (const auto& [index, tally] : verify_tally_.by_index) {
      const uint64_t newer = tally->already_newer.exchange(0);
      if (newer > 0) counts.emplace_back(index, newer);
    }
  }
  for (const auto& [index, newer] : counts) {
    for (int slot = 1;; ++slot) {
      const std::string id = NewerRecord(round, index, slot);
      RFS_ASSIGN_OR_RETURN(bool created, records_->CreateUnassignedWorkItem(id, 0));
      if (!created) continue;
      RFS_RETURN_IF_ERROR(
          coordination::RecordCompletedItem(*records_, clock_, id, options_.record_lease, newer));
      break;
    }
  }
  return absl::OkStatus();
}

// The documents the round's items delivered: each item's recorded count and its successors'.
absl::StatusOr<uint64_t> AllPhaseWorker::DeliveredBy(IWorkCoordinator& items,
                                                     const std::string& root) {
  uint64_t docs = 0;
  std::vector<std::string> pending{root};
  while (!pending.empty()) {
    const std::string id = std::move(pending.back());
    pending.pop_back();
    RFS_ASSIGN_OR_RETURN(auto state, items.GetWorkItem(id));
    if (!state) {
      return absl::FailedPreconditionError(
          StrCat("the verification's work item ", id, " is not in its store"));
    }
    if (!state->completed()) {
      return absl::UnavailableError(
          StrCat("the verification's work item ", id, " is not complete yet"));
    }
    if (state->progress) docs += state->progress->docs;
    for (const std::string& successor : state->successor_ids) pending.push_back(successor);
  }
  return docs;
}

// The round's records, by (index, id): the last error type seen (a document verified twice,
// by a worker that died and its successor, counts once).
absl::StatusOr<std::map<std::pair<std::string, std::string>, std::string>>
AllPhaseWorker::ReadRoundRecords(int round) {
  std::map<std::pair<std::string, std::string>, std::string> out;
  std::shared_ptr<snapshot::ISourceRepo> source;
  if (auto stream = RoundStream(round)) {
    auto opened = OpenFailedDocumentStore(*stream, StrCat("session=", stream->session_id, "/"));
    if (!opened.ok()) return opened.status();
    source = *std::move(opened);
  } else {
    std::error_code error;
    if (!std::filesystem::is_directory(RoundFolder(round), error)) return out;
    auto opened = snapshot::FileSystemRepo::Open(RoundFolder(round));
    if (!opened.ok()) return opened.status();
    source = *std::move(opened);
  }
  auto blobs = source->ListBlobsBelow("");
  if (absl::IsNotFound(blobs.status())) return out;
  if (!blobs.ok()) return blobs.status();
  for (const std::string& path : *blobs) {
    if (!path.ends_with(".ndjson.gz")) continue;
    auto bytes = source->ReadBlob(path);
    if (!bytes.ok()) return bytes.status();
    if (bytes->empty()) continue;  // a worker killed before its first record
    auto records = ParseFailedDocumentRecords(
        std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()), path);
    if (!records.ok()) {
      // A file cut by a worker killed mid-record: its batch was never acknowledged, so the
      // item was verified again and recorded anew elsewhere.
      Emit(WorkerPhase::kVerify, "warning", path, StrCat("skipped: ", records.status().message()));
      continue;
    }
    for (RedriveRecord& record : *records) {
      out[{record.doc.index, record.doc.id}] = std::move(record.error_type);
    }
  }
  return out;
}

// The round's report: per index, what its items delivered, what its records say was not
// equal, and the target's count after a refresh.
absl::StatusOr<VerifyReport> AllPhaseWorker::RoundReport(int round) {
  VerifyReport report;
  report.round = round;
  if (auto stream = RoundStream(round)) {
    std::string prefix = stream->prefix;
    if (!prefix.empty() && prefix.back() != '/') prefix += '/';
    report.records = StrCat(stream->scheme, "://", stream->bucket, "/", prefix,
                            "session=", stream->session_id, "/");
  } else if (std::error_code error; std::filesystem::is_directory(RoundFolder(round), error)) {
    // Made with its first record (OpenRoundSink): without one, no records to name.
    report.records = RoundFolder(round);
  }
  RFS_RETURN_IF_ERROR(OpenRequestClient());
  RFS_RETURN_IF_ERROR(request_client_->Refresh());
  std::map<std::string, size_t> row_of;
  auto row_for = [&](const std::string& name) -> IndexVerification& {
    auto [it, added] = row_of.emplace(name, report.indices.size());
    if (added) {
      report.indices.emplace_back();
      report.indices.back().index = name;
    }
    return report.indices[it->second];
  };
  RFS_RETURN_IF_ERROR(CountExpected(round, row_for));
  RFS_ASSIGN_OR_RETURN(auto records, ReadRoundRecords(round));
  for (const auto& [key, type] : records) {
    // An earlier report's scan (its writer died before the round was marked reported): the
    // scan below counts them again.
    if (type == internal::kVerifyExtra) continue;
    IndexVerification& row = row_for(key.first);
    if (type == internal::kVerifyMissing) {
      ++row.missing;
    } else if (type == internal::kVerifyDifferent) {
      ++row.different;
    } else if (type == internal::kVerifyNotComparable) {
      ++row.not_comparable;
    } else {
      // Not delivered to the verifying sink (no `_source`, a transform failed on it): read
      // but never compared.
      ++row.not_comparable;
      ++row.expected;
    }
  }
  std::optional<internal::ExtraScanResult> scanned;
  if (options_.verify_scan_extra) {
    RFS_ASSIGN_OR_RETURN(scanned, ScanExtra(round, report));
  }
  for (IndexVerification& row : report.indices) {
    if (!row.excluded) RFS_RETURN_IF_ERROR(CompleteRow(round, scanned, row));
  }
  RFS_RETURN_IF_ERROR(RecordVerifyRows(report));
  return report;
}

// The documents each selected index of the snapshot delivered in round `round`'s work items,
// into its row (`row_for` finds or adds the row of a target name).
template <typename RowFor>
absl::Status AllPhaseWorker::CountExpected(int round, RowFor& row_for) {
  int exit_code = core::kExitFailure;
  auto items = internal::OpenCoordinator(options_.documents, wiring_, result_.worker_id,
                                         internal::ItemSpace::kVerify, &exit_code, round);
  if (!items.ok()) return items.status();
  coordination::RetryingWorkCoordinator retrying(**items, clock_, CoordinatorRetries());
  const DocumentMigrationOptions migration = VerifyMigrationOptions();
  for (const std::string& index : wiring_.repository->IndicesIn(*snapshot_)) {
    const snapshot::DataStream* stream = snapshot::DataStreamOf(data_streams_, index);
    IndexVerification& row =
        row_for(migration.target_index_prefix + (stream != nullptr ? stream->name : index));
    row.excluded = !Selected(index);
    if (row.excluded) continue;
    auto metadata = wiring_.repository->ReadIndexMetadata(*snapshot_, index);
    if (!metadata.ok()) return MarkSnapshotReadFailure(metadata.status());
    for (int shard = 0; shard < metadata->number_of_shards; ++shard) {
      auto roots =
          internal::ShardWorkItems(*wiring_.repository, *snapshot_, migration, false, index, shard);
      if (!roots.ok()) return roots.status();
      for (const coordination::WorkItemId& root : *roots) {
        RFS_ASSIGN_OR_RETURN(uint64_t docs, DeliveredBy(retrying, root.ToString()));
        row.expected += docs;
      }
    }
  }
  return absl::OkStatus();
}

// A selected index's row finished: documents already newer on the target, equal ones, the
// target's count and what it holds beyond the source; reported as progress.
absl::Status AllPhaseWorker::CompleteRow(int round,
                                         const std::optional<internal::ExtraScanResult>& scanned,
                                         IndexVerification& row) {
  if (options_.documents.migration.preserve_version) {
    for (int slot = 1;; ++slot) {
      RFS_ASSIGN_OR_RETURN(auto counted,
                           records_->GetWorkItem(NewerRecord(round, row.index, slot)));
      if (!counted) break;
      if (counted->completed() && counted->progress) {
        row.already_newer += counted->progress->next_cursor;
      }
    }
  }
  const uint64_t not_equal = row.missing + row.different + row.not_comparable + row.already_newer;
  row.equal = row.expected > not_equal ? row.expected - not_equal : 0;
  auto count = request_client_->Count(row.index);
  if (absl::IsNotFound(count.status())) {
    row.migrated = 0;
    row.note = "not on the target";
  } else if (!count.ok()) {
    return count.status();
  } else {
    row.migrated = *count;
  }
  // Documents that could not be compared may well be there: not counted as extra.
  const uint64_t accounted = row.equal + row.different + row.already_newer + row.not_comparable;
  row.extra = row.migrated > accounted ? row.migrated - accounted : 0;
  if (scanned) {
    // Named one by one rather than counted.
    row.extra = scanned->extra.contains(row.index) ? scanned->extra.at(row.index) : 0;
    if (auto named = scanned->named.find(row.index); named != scanned->named.end()) {
      Emit(WorkerPhase::kVerify, "progress", StrCat("index ", row.index),
           StrCat("extra on the target, not in the source: ", absl::StrJoin(named->second, ", "),
                  row.extra > named->second.size() ? ", ..." : ""));
    }
  }
  Emit(WorkerPhase::kVerify, "progress", StrCat("index ", row.index),
       StrCat(row.expected, " expected, ", row.equal, " equal, ", row.missing, " missing, ",
              row.different, " different, ", row.not_comparable, " not comparable, ",
              row.already_newer, " already newer, ", row.extra, " extra (round ", round, ")"));
  return absl::OkStatus();
}

// --verify-scan-extra: the target's ids of every reported index against the source's.
absl::StatusOr<internal::ExtraScanResult> AllPhaseWorker::ScanExtra(int round,
                                                                    const VerifyReport& report) {
  internal::ExtraScanOptions scan;
  scan.round = round;
  scan.migration = VerifyMigrationOptions();
  for (const IndexVerification& row : report.indices) {
    if (!row.excluded) scan.indices.push_back(row.index);
  }
  scan.scratch_store =
      (std::filesystem::temp_directory_path() /
       StrCat("rfs-verify-scan-", round, "-", ::getpid(), "-", result_.worker_id, ".sqlite"))
          .string();
  Emit(WorkerPhase::kVerify, "started", StrCat("verify round ", round),
       StrCat("scanning the ids of ", scan.indices.size(), " target indices for extra documents"));
  std::string location;
  RFS_ASSIGN_OR_RETURN(auto records, OpenRoundSink(round, &location));
  RFS_RETURN_IF_ERROR(OpenVerifyClient());
  return internal::ScanExtraDocuments(*wiring_.repository, *verify_client_, *records, clock_, scan);
}

// Each index's result, in a record of the workers' space whose creator carries it (as the
// FAILED record's reason), so that the console's status shows it per index.
absl::Status AllPhaseWorker::RecordVerifyRows(const VerifyReport& report) {
  for (const IndexVerification& index : report.indices) {
    if (index.excluded) continue;
    coordination::VerifyIndexRow row;
    row.round = report.round;
    row.index = index.index;
    row.expected = index.expected;
    row.equal = index.equal;
    row.missing = index.missing;
    row.different = index.different;
    row.not_comparable = index.not_comparable;
    row.already_newer = index.already_newer;
    row.extra = index.extra;
    row.target_count = index.migrated;
    row.note = index.note;
    int exit_code = core::kExitFailure;
    auto writer = internal::OpenCoordinator(options_.documents, wiring_, row.ToText(),
                                            internal::ItemSpace::kWorkerRecords, &exit_code);
    if (!writer.ok()) return writer.status();
    coordination::RetryingWorkCoordinator retrying(**writer, clock_, CoordinatorRetries());
    // A report written again (its first writer died before the round was marked reported)
    // finds the record there: the same round's figures.
    RFS_RETURN_IF_ERROR(retrying.CreateUnassignedWorkItem(row.RecordId(), 0).status());
  }
  return absl::OkStatus();
}

// --verify-only --verify-all: one round, joined or begun, then its report.
RfsWorkerResult AllPhaseWorker::VerifyAllOnly() {
  int exit_code = core::kExitFailure;
  if (auto status = OpenRecords(&exit_code); !status.ok()) return Finish(status, exit_code);
  auto round = PickRound();
  if (!round.ok()) return Finish(round.status(), core::kExitFailure);
  absl::Status items = VerifyRoundItems(*round);
  if (stopped_) return Finish(absl::OkStatus(), core::kExitHandoffOrStopped);
  if (!items.ok()) return Finish(items, exit_code_override_.value_or(core::kExitFailure));
  auto report = RoundReport(*round);
  if (!report.ok()) {
    return Finish(report.status(), IsSnapshotReadFailure(report.status())
                                       ? core::kExitSnapshotUnreadable
                                       : core::kExitFailure);
  }
  result_.verify = *report;
  if (auto done = coordination::RecordCompletedItem(*records_, clock_, RoundDoneRecord(*round),
                                                    options_.record_lease);
      !done.ok()) {
    return Finish(done, core::kExitFailure);
  }
  if (!report->ok()) return Finish(PhaseFailed(MissingReason(*report)), core::kExitPhaseFailed);
  return Finish(absl::OkStatus(), 0);
}

// A full run's phase 5 with --verify-all: every worker that gets here takes the round's items
// (no record is held meanwhile), then one of them reports under the phase's record.
absl::Status AllPhaseWorker::VerifyAllPhase() {
  const std::string record = PhaseRecord(WorkerPhase::kVerify);
  RFS_ASSIGN_OR_RETURN(auto state, records_->GetWorkItem(record));
  if (state && state->completed()) return absl::OkStatus();
  RFS_ASSIGN_OR_RETURN(int round, RunRound());
  RFS_RETURN_IF_ERROR(VerifyRoundItems(round));
  if (stopped_) return absl::OkStatus();
  return RunOnce(WorkerPhase::kVerify, record, "verify", true,
                 [&]() -> absl::Status {
                   auto report = RoundReport(round);
                   if (!report.ok()) {
                     return IsSnapshotReadFailure(report.status())
                                ? report.status()
                                : core::WithContext(report.status(), "the verification's report");
                   }
                   result_.verify = *report;
                   RFS_RETURN_IF_ERROR(coordination::RecordCompletedItem(
                       *records_, clock_, RoundDoneRecord(round), options_.record_lease));
                   if (!report->ok()) {
                     return MarkFailed(WorkerPhase::kVerify, "verify", MissingReason(*report));
                   }
                   return absl::OkStatus();
                 })
      .status();
}

std::string AllPhaseWorker::MissingReason(const VerifyReport& report) {
  std::string reason;
  for (const auto& index : report.indices) {
    if (index.excluded) continue;
    if (index.missing > 0) {
      reason += StrCat(reason.empty() ? "" : "; ", "index ", index.index, ": ", index.missing,
                       " of ", index.expected, " documents missing");
    }
    if (report.round > 0) {
      for (auto [count, words] : {std::pair{index.different, "different"},
                                  {index.not_comparable, "not comparable"},
                                  {index.extra, "extra on the target"}}) {
        if (count == 0) continue;
        reason += StrCat(reason.empty() ? "" : "; ", "index ", index.index, ": ", count,
                         " documents ", words);
      }
    }
    if (!index.sample_mismatches.empty()) {
      reason += StrCat(reason.empty() ? "" : "; ", "index ", index.index, ": ",
                       index.sample_mismatches.size(), " sampled documents differ (",
                       index.sample_mismatches[0], ")");
    }
  }
  return reason;
}

absl::StatusOr<VerifyReport> AllPhaseWorker::Verify() {
  VerifyReport report;
  const FailedDocuments failed = CountFailedDocuments(wiring_.failed_documents_dir);
  RFS_RETURN_IF_ERROR(OpenRequestClient());
  if (request_client_) {
    if (auto refreshed = request_client_->Refresh(); !refreshed.ok()) return refreshed;
  }
  const std::vector<std::string> in_snapshot = wiring_.repository->IndicesIn(*snapshot_);
  std::set<std::string> streams_done;
  for (const std::string& index : in_snapshot) {
    // A data stream is checked as one: its backing indices' documents against the stream's.
    const snapshot::DataStream* stream = snapshot::DataStreamOf(data_streams_, index);
    if (stream != nullptr && !streams_done.insert(stream->name).second) continue;
    IndexVerification row;
    // A trial's documents are in its prefixed indices.
    row.index = options_.documents.migration.target_index_prefix +
                (stream != nullptr ? stream->name : index);
    row.excluded = !Selected(index);
    if (row.excluded) {
      // Not read: an excluded (often system) index may not even be readable.
      report.indices.push_back(std::move(row));
      continue;
    }
    std::vector<std::string> sources{index};
    if (stream != nullptr) {
      sources.clear();
      for (const std::string& backing : stream->backing_indices) {
        if (std::binary_search(in_snapshot.begin(), in_snapshot.end(), backing)) {
          sources.push_back(backing);
        }
      }
    }
    RFS_ASSIGN_OR_RETURN(SnapshotIndexDocs docs, ReadSourceSide(sources));
    row.expected = docs.count;
    Emit(WorkerPhase::kVerify, "progress", StrCat("index ", row.index),
         StrCat(row.expected, " documents in the snapshot"));
    if (auto it = failed.counts.find(row.index); it != failed.counts.end()) {
      row.failed = it->second;
    }
    RFS_ASSIGN_OR_RETURN(TargetCopies copies, ReadTargetSide(row, stream != nullptr, docs));
    const uint64_t accounted = row.migrated + row.failed;
    row.missing = row.expected > accounted ? row.expected - accounted : 0;
    const auto failed_ids = failed.ids.find(row.index);
    CompareSample(docs, copies, failed_ids != failed.ids.end() ? &failed_ids->second : nullptr,
                  row);
    report.indices.push_back(std::move(row));
  }
  return report;
}

// The documents of `indices` in the snapshot: their count and a random sample.
absl::StatusOr<SnapshotIndexDocs> AllPhaseWorker::ReadSourceSide(
    const std::vector<std::string>& indices) {
  SnapshotIndexDocs docs;
  for (const std::string& source_index : indices) {
    const uint64_t limit = options_.documents.migration.max_docs_per_shard;
    auto read = ReadIndexDocs(
        *wiring_.repository, *snapshot_, source_index, static_cast<size_t>(options_.verify_sample),
        rng_, limit > 0 ? limit : UINT64_MAX, options_.documents.migration.preserve_version,
        options_.documents.migration.enable_sourceless_migrations);
    if (!read.ok()) {
      return core::IsRetryable(read.status()) ? read.status()
                                              : MarkSnapshotReadFailure(read.status());
    }
    docs.count += read->count;
    for (auto& sampled : read->sample) docs.sample.push_back(std::move(sampled));
  }
  return docs;
}

// The target's document count into row.migrated, and its copies of the sample: by GET, by an
// ids search for a data stream (it serves no GET by _id: its documents are in backing
// indices), or from the output directory of the embedded default.
absl::StatusOr<AllPhaseWorker::TargetCopies> AllPhaseWorker::ReadTargetSide(
    IndexVerification& row, bool data_stream, const SnapshotIndexDocs& docs) {
  TargetCopies copies;
  if (!request_client_) {
    std::set<std::string> wanted;
    for (const auto& [id, routing, source, version] : docs.sample) wanted.insert(id);
    DirectoryIndex directory = ReadDirectoryIndex(options_.documents.output_dir, row.index, wanted);
    row.migrated = directory.count;
    copies.sources = std::move(directory.sources);
    return copies;
  }
  auto count = request_client_->Count(row.index);
  if (absl::IsNotFound(count.status())) {
    row.migrated = 0;
  } else if (!count.ok()) {
    return count.status();
  } else {
    row.migrated = *count;
  }
  if (data_stream) {
    if (docs.sample.empty()) return copies;
    json::array ids;
    for (const auto& sampled : docs.sample) ids.emplace_back(sampled.id);
    const size_t wanted = ids.size();
    auto found = request_client_->Search(
        row.index,
        json::object{{"size", wanted},
                     {"query", json::object{{"ids", json::object{{"values", std::move(ids)}}}}}});
    if (!found.ok()) return found.status();
    for (auto& hit : found->hits) copies.sources[hit.id] = std::move(hit.source);
    return copies;
  }
  for (const auto& [id, routing, source, version] : docs.sample) {
    auto stored = request_client_->GetDocument(row.index, id, routing);
    if (!stored.ok()) return stored.status();
    if (*stored) {
      copies.sources[id] = (*stored)->source;
      copies.versions[id] = (*stored)->version.version;
    }
  }
  return copies;
}

// Each sampled document against the target's copy (`failed_ids`: the index's documents
// recorded as failed, accounted for already).
void AllPhaseWorker::CompareSample(const SnapshotIndexDocs& docs, const TargetCopies& copies,
                                   const std::set<std::string>* failed_ids,
                                   IndexVerification& row) {
  for (const auto& [id, routing, source, version] : docs.sample) {
    ++row.sampled;
    auto it = copies.sources.find(id);
    if (it == copies.sources.end() && failed_ids != nullptr && failed_ids->contains(id)) {
      continue;  // recorded as failed: accounted for (and counted in row.failed)
    }
    if (it == copies.sources.end()) {
      row.sample_mismatches.push_back(StrCat(id, ": not on the target"));
    } else if (!SameJson(it->second, source)) {
      const auto target_version = copies.versions.find(id);
      if (options_.documents.migration.preserve_version &&
          target_version != copies.versions.end() && target_version->second > version) {
        ++row.sample_newer;  // written on the target since, in a higher version: kept
        continue;
      }
      row.sample_mismatches.push_back(StrCat(id, ": _source differs"));
    }
  }
}

}  // namespace rfs::migration::internal

namespace rfs::migration {

using core::StrCat;

namespace json = boost::json;

bool VerifyReport::ok() const {
  for (const auto& index : indices) {
    if (index.excluded) continue;
    if (index.missing > 0 || !index.sample_mismatches.empty()) return false;
    if (index.different > 0 || index.not_comparable > 0 || index.extra > 0) return false;
  }
  return true;
}

std::string VerifyReport::ToText() const {
  if (round > 0) {
    std::string out = StrCat("Verification of every document (round ", round,
                             "): index, expected, equal, missing, different, not comparable, "
                             "already newer, extra, target count\n");
    for (const auto& index : indices) {
      if (index.excluded) {
        out += StrCat("  ", index.index, ": excluded by the allowlist (or a system index)\n");
        continue;
      }
      out +=
          StrCat("  ", index.index, ": expected ", index.expected, ", equal ", index.equal,
                 ", missing ", index.missing, ", different ", index.different, ", not comparable ",
                 index.not_comparable, ", already newer ", index.already_newer, ", extra ",
                 index.extra, ", target count ", index.migrated, index.note.empty() ? "" : " (",
                 index.note, index.note.empty() ? "" : ")", "\n");
    }
    if (ok()) {
      out += "Verification: every document is on the target as the migration sends it\n";
    } else if (records.empty()) {
      out +=
          "Verification: documents are MISSING or differ; none was recorded (documents the "
          "target holds beyond the snapshot's are counted, and named only with "
          "--verify-scan-extra)\n";
    } else {
      out += StrCat(
          "Verification: documents are MISSING or differ; their records (for "
          "--redrive-failed-documents): ",
          records, "\n");
    }
    return out;
  }
  std::string out = "Verification: index, expected, migrated, failed, missing, sample\n";
  for (const auto& index : indices) {
    if (index.excluded) {
      out += StrCat("  ", index.index, ": excluded by the allowlist (or a system index)\n");
      continue;
    }
    out += StrCat("  ", index.index, ": expected ", index.expected, ", migrated ", index.migrated,
                  ", failed ", index.failed, ", missing ", index.missing, ", sample ",
                  index.sampled - index.sample_mismatches.size() - index.sample_newer, "/",
                  index.sampled, " identical",
                  index.sample_newer > 0 ? StrCat(", ", index.sample_newer,
                                                  " newer on the target (--preserve-version)")
                                         : std::string(),
                  "\n");
    for (const auto& mismatch : index.sample_mismatches) out += StrCat("    ", mismatch, "\n");
  }
  out += ok() ? "Verification: every document is accounted for\n"
              : "Verification: documents are MISSING or differ\n";
  return out;
}

json::object VerifyReport::ToJson() const {
  json::array rows;
  for (const auto& index : indices) {
    json::array mismatches;
    for (const auto& m : index.sample_mismatches) mismatches.emplace_back(m);
    rows.push_back(json::object{{"index", index.index},
                                {"excluded", index.excluded},
                                {"expected", index.expected},
                                {"migrated", index.migrated},
                                {"failed", index.failed},
                                {"missing", index.missing},
                                {"sampled", index.sampled},
                                {"sample_mismatches", std::move(mismatches)},
                                {"sample_newer", index.sample_newer}});
    if (round > 0) {
      json::object& row = rows.back().as_object();
      row["equal"] = index.equal;
      row["different"] = index.different;
      row["not_comparable"] = index.not_comparable;
      row["already_newer"] = index.already_newer;
      row["extra"] = index.extra;
      if (!index.note.empty()) row["note"] = index.note;
    }
  }
  json::object out{{"ok", ok()}, {"indices", std::move(rows)}};
  if (round > 0) {
    out["round"] = round;
    out["records"] = records;
  }
  return out;
}

}  // namespace rfs::migration
