#include "progress.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include <boost/json.hpp>

#include "rfs/core/json_text.hpp"
#include "rfs/core/str_cat.hpp"

#include "common/text.hpp"

namespace rfs::apps {

namespace json = boost::json;

double Megabytes(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

void PrintWorkerSummary(const char* program, const migration::DocumentsToolResult& result) {
  if (result.redrive) {
    // A redrive: its own account, per index.
    const migration::RedriveSummary& r = *result.redrive;
    std::printf(
        "%s %s: redrive %s; %llu files, %llu records: %llu accepted, %llu failed again, %llu "
        "dropped by transforms, %llu refused; %zu files unreadable\n",
        program, result.worker_id.c_str(), result.status.ok() ? "done" : "error",
        static_cast<unsigned long long>(r.files), static_cast<unsigned long long>(r.records),
        static_cast<unsigned long long>(r.accepted),
        static_cast<unsigned long long>(r.still_failed), static_cast<unsigned long long>(r.dropped),
        static_cast<unsigned long long>(r.refused), r.bad_files.size());
    for (const auto& [index, counts] : r.by_index) {
      std::printf("  %-40s records %8llu  accepted %8llu  failed again %8llu  refused %8llu\n",
                  index.c_str(), static_cast<unsigned long long>(counts.records),
                  static_cast<unsigned long long>(counts.accepted),
                  static_cast<unsigned long long>(counts.still_failed),
                  static_cast<unsigned long long>(counts.refused));
    }
    for (const auto& bad : r.bad_files) {
      std::printf("%s: skipped %s (cannot be read: %s)\n", program, bad.path.c_str(),
                  bad.reason.c_str());
    }
    for (const auto& refusal : r.refusals) std::printf("%s: %s\n", program, refusal.c_str());
    if (r.refused > r.refusals.size()) {
      std::printf("%s: and %llu more records refused\n", program,
                  static_cast<unsigned long long>(r.refused - r.refusals.size()));
    }
    if (r.still_failed > 0 && !result.failed_documents_path.empty()) {
      std::printf("%s: documents that failed again are recorded in %s\n", program,
                  result.failed_documents_path.c_str());
    }
    return;
  }
  const migration::WorkerSummary& summary = result.summary;
  const double seconds = std::chrono::duration<double>(summary.elapsed).count();
  const uint64_t docs = summary.docs_written + summary.docs_allowed_errors;
  const uint64_t failed = summary.docs_failed + summary.docs_without_source;
  const std::string outcome =
      result.status.ok() ? std::string(migration::ToString(summary.outcome)) : "error";
  std::printf(
      "%s %s: %s; %llu docs, %.1f MB of _source, %llu failed docs, %.1f s, %.1f MB/s; "
      "items: %llu completed, %llu handed on, %llu lost; %llu lease renewals\n",
      program, result.worker_id.c_str(), outcome.c_str(), static_cast<unsigned long long>(docs),
      Megabytes(summary.source_bytes), static_cast<unsigned long long>(failed), seconds,
      seconds > 0 ? Megabytes(summary.source_bytes) / seconds : 0.0,
      static_cast<unsigned long long>(summary.items_completed),
      static_cast<unsigned long long>(summary.items_checkpointed),
      static_cast<unsigned long long>(summary.items_lost),
      static_cast<unsigned long long>(summary.lease_renewals));
  if (summary.docs_rebuilt > 0) {
    std::printf(
        "%s: %llu documents rebuilt from doc values and stored fields (no stored _source; "
        "see docs/sourceless.md for what is exact)\n",
        program, static_cast<unsigned long long>(summary.docs_rebuilt));
    for (const auto& [index, counts] : summary.by_index) {
      if (counts.rebuilt == 0) continue;
      std::printf(
          "%s:   %s: %llu rebuilt, %llu of them with a value that may differ from the one "
          "indexed (an array sorted, a value rounded or normalized)\n",
          program, index.c_str(), static_cast<unsigned long long>(counts.rebuilt),
          static_cast<unsigned long long>(counts.rebuilt_inexact));
      for (const std::string& field : counts.fields_not_migrated) {
        std::printf("%s:   %s: not migrated, kept in no form that can be read back: %s\n", program,
                    index.c_str(), field.c_str());
      }
    }
  }
  if (summary.docs_deleted > 0) {
    std::printf("%s: of those, %llu deletes of documents gone since the previous snapshot\n",
                program, static_cast<unsigned long long>(summary.docs_deleted));
  }
  if (summary.by_index.size() > 0) {
    std::printf(
        "%s: per index: read, written, rejected by the target, not convertible, failed "
        "in a transform, dropped by a transform\n",
        program);
    for (const auto& [index, a] : summary.by_index) {
      std::printf(
          "%s:   %s: %llu read, %llu written, %llu rejected, %llu not convertible, %llu "
          "transform failures, %llu dropped\n",
          program, index.c_str(), static_cast<unsigned long long>(a.read),
          static_cast<unsigned long long>(a.written), static_cast<unsigned long long>(a.rejected),
          static_cast<unsigned long long>(a.not_convertible),
          static_cast<unsigned long long>(a.transform_failed),
          static_cast<unsigned long long>(a.transform_dropped));
    }
  }
  if (summary.docs_already_newer > 0) {
    std::printf(
        "%s: %llu documents already newer on the target (--preserve-version: it holds them in an "
        "equal or higher version; left as they are, not failures)\n",
        program, static_cast<unsigned long long>(summary.docs_already_newer));
    for (const auto& [index, a] : summary.by_index) {
      if (a.already_newer == 0) continue;
      std::printf("%s:   %s: %llu already newer\n", program, index.c_str(),
                  static_cast<unsigned long long>(a.already_newer));
    }
  }
  if (!summary.data_streams_without_versions.empty()) {
    std::string names;
    for (const auto& stream : summary.data_streams_without_versions) {
      names += (names.empty() ? "" : ", ") + stream;
    }
    std::printf(
        "%s: WARNING: --preserve-version does not apply to data streams, which take only create "
        "with internal versions; their documents went without their source versions: %s\n",
        program, names.c_str());
  }
  if (!summary.trial.empty()) {
    std::printf("%s: TRIAL run: %s\n", program, summary.trial.c_str());
  }
  if (summary.stale_temp_files_removed > 0) {
    std::printf(
        "%s: removed %llu temporary files that killed workers had left in the output "
        "folder\n",
        program, static_cast<unsigned long long>(summary.stale_temp_files_removed));
  }
  if (!summary.indices_only_in_previous.empty()) {
    std::string names;
    for (const auto& index : summary.indices_only_in_previous) {
      names += (names.empty() ? "" : ", ") + index;
    }
    std::printf(
        "%s: %zu indices of the previous snapshot are gone from this one and were left as they "
        "are on the target (delete them there if they are meant to go): %s\n",
        program, summary.indices_only_in_previous.size(), names.c_str());
  }
  if (!summary.indices_created_by_target.empty()) {
    std::string names;
    for (const auto& index : summary.indices_created_by_target) {
      names += (names.empty() ? "" : ", ") + index;
    }
    std::printf(
        "%s: WARNING: %zu indices were not on the target and the target created them at their "
        "first documents, with its default settings and dynamic mappings rather than the "
        "source's (run MetadataMigration first, or --no-auto-create-indices to refuse): %s\n",
        program, summary.indices_created_by_target.size(), names.c_str());
  }
  if (summary.docs_dropped_by_transform > 0) {
    std::printf("%s: %llu documents dropped by the document transformers, as configured\n", program,
                static_cast<unsigned long long>(summary.docs_dropped_by_transform));
  }
  if (failed > 0) {
    std::printf(
        "%s: %llu documents could not be migrated (%llu rejected by the target or failed in a "
        "transform, %llu without _source); they are in %s\n",
        program, static_cast<unsigned long long>(failed),
        static_cast<unsigned long long>(summary.docs_failed),
        static_cast<unsigned long long>(summary.docs_without_source),
        result.failed_documents_path.c_str());
  }
  std::fflush(stdout);
}

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

double Seconds(std::chrono::milliseconds elapsed) {
  return std::chrono::duration<double>(elapsed).count();
}

void WorkerProgress::OnEvent(const migration::WorkerEvent& event) {
  std::lock_guard lock(mu_);
  if (live_) {
    RenderLive(event);
  } else {
    json::object line{{"ts", NowIso8601()},
                      {"worker", worker_id_},
                      {"event", std::string(migration::ToString(event.kind))}};
    if (!event.work_item.empty()) {
      line["work_item"] = event.work_item;
      line["index"] = event.index;
      line["shard"] = event.shard;
      line["starting_cursor"] = event.starting_cursor;
      line["cursor"] = event.cursor;
      line["max_cursor"] = event.max_cursor;
      line["docs"] = event.docs;
      line["source_bytes"] = event.source_bytes;
      line["failed_docs"] = event.failed_docs;
      if (event.concurrency > 0) line["concurrency"] = event.concurrency;
      line["elapsed_s"] = std::chrono::duration<double>(event.elapsed).count();
    }
    if (!event.message.empty()) line["message"] = event.message;
    std::cerr << rfs::core::JsonText(line) << "\n" << std::flush;
  }
}

void WorkerProgress::Account(const migration::WorkerSummary& summary, bool run_ok) {
  std::lock_guard lock(mu_);
  if (live_) return;
  uint64_t findings = 0;
  for (const auto& [index, a] : summary.by_index) {
    json::object line{{"ts", NowIso8601()},
                      {"worker", worker_id_},
                      {"event", "index_account"},
                      {"index", index},
                      {"read", a.read},
                      {"written", a.written},
                      {"rejected", a.rejected},
                      {"not_convertible", a.not_convertible},
                      {"transform_failed", a.transform_failed},
                      {"transform_dropped", a.transform_dropped},
                      {"rebuilt", a.rebuilt},
                      {"rebuilt_inexact", a.rebuilt_inexact}};
    if (a.already_newer > 0) line["already_newer"] = a.already_newer;
    if (!a.fields_not_migrated.empty()) {
      json::array fields;
      for (const std::string& field : a.fields_not_migrated) fields.emplace_back(field);
      line["fields_not_migrated"] = std::move(fields);
    }
    findings += a.rejected + a.not_convertible + a.transform_failed;
    std::cerr << rfs::core::JsonText(line) << "\n";
  }
  const bool with_findings = findings > 0 || summary.docs_failed + summary.docs_without_source > 0;
  json::object line{{"ts", NowIso8601()},
                    {"worker", worker_id_},
                    {"event", "run_account"},
                    {"outcome", !run_ok         ? "FAILED"
                                : with_findings ? "COMPLETED_WITH_FINDINGS"
                                                : "COMPLETED"},
                    {"indices", summary.by_index.size()},
                    {"documents_written", summary.docs_written + summary.docs_allowed_errors},
                    {"documents_failed", summary.docs_failed + summary.docs_without_source},
                    {"documents_dropped_by_transform", summary.docs_dropped_by_transform}};
  if (summary.docs_already_newer > 0) {
    line["documents_already_newer"] = summary.docs_already_newer;
  }
  if (!summary.trial.empty()) line["trial"] = summary.trial;
  if (!summary.indices_created_by_target.empty()) {
    json::array created;
    for (const auto& index : summary.indices_created_by_target) created.emplace_back(index);
    line["indices_created_by_target"] = std::move(created);
  }
  std::cerr << rfs::core::JsonText(line) << "\n" << std::flush;
}

void WorkerProgress::Finish() {
  std::lock_guard lock(mu_);
  if (live_ && line_open_) std::cerr << "\n";
  line_open_ = false;
}

void WorkerProgress::RenderLive(const migration::WorkerEvent& event) {
  const double seconds = std::chrono::duration<double>(event.elapsed).count();
  const double rate = seconds > 0 ? Megabytes(event.source_bytes) / seconds : 0;
  std::string eta = "-";
  const uint64_t span = event.max_cursor - event.starting_cursor;
  const uint64_t done =
      event.cursor > event.starting_cursor ? event.cursor - event.starting_cursor : 0;
  if (event.kind == migration::WorkerEvent::Kind::kProgress && span > 0 && done > 0 &&
      seconds > 0) {
    const double remaining =
        seconds * static_cast<double>(span - std::min(done, span)) / static_cast<double>(done);
    eta = core::StrCat(static_cast<int64_t>(remaining), "s");
  }
  char text[256];
  switch (event.kind) {
    case migration::WorkerEvent::Kind::kProgress:
      std::snprintf(text, sizeof(text),
                    "[%s] %s/%d: %llu docs, %.1f MB, %.1f MB/s, ETA %s, %zu bulks in flight",
                    worker_id_.c_str(), event.index.c_str(), event.shard,
                    static_cast<unsigned long long>(event.docs), Megabytes(event.source_bytes),
                    rate, eta.c_str(), event.concurrency);
      std::cerr << "\r\033[K" << text << std::flush;
      line_open_ = true;
      return;
    case migration::WorkerEvent::Kind::kAcquired:
      std::snprintf(text, sizeof(text), "[%s] %s/%d: started at cursor %llu", worker_id_.c_str(),
                    event.index.c_str(), event.shard,
                    static_cast<unsigned long long>(event.cursor));
      std::cerr << "\r\033[K" << text << std::flush;
      line_open_ = true;
      return;
    case migration::WorkerEvent::Kind::kCompleted:
      std::snprintf(text, sizeof(text), "[%s] %s/%d: done, %llu docs, %.1f MB in %.1f s",
                    worker_id_.c_str(), event.index.c_str(), event.shard,
                    static_cast<unsigned long long>(event.docs), Megabytes(event.source_bytes),
                    seconds);
      break;
    default:
      std::snprintf(text, sizeof(text), "[%s] %s%s%s", worker_id_.c_str(),
                    std::string(migration::ToString(event.kind)).c_str(),
                    event.message.empty() ? "" : ": ", event.message.c_str());
      break;
  }
  std::cerr << "\r\033[K" << text << "\n" << std::flush;
  line_open_ = false;
}

void SnapshotProgressReporter::OnProgress(const opensearch::SnapshotProgress& p) {
  const std::string state(opensearch::SnapshotStateName(p.state));
  if (live_) {
    char text[256];
    std::snprintf(
        text, sizeof(text), "[%s] %s: %lld/%lld shards%s, %s / %s (%.0f%%), %.1f s",
        snapshot_.c_str(), state.c_str(), static_cast<long long>(p.shards_done),
        static_cast<long long>(p.shards_total),
        p.shards_failed > 0 ? core::StrCat(" (", p.shards_failed, " failed)").c_str() : "",
        HumanBytes(p.bytes_processed).c_str(), HumanBytes(p.bytes_total).c_str(),
        100.0 * p.fraction(), Seconds(p.elapsed));
    std::cerr << "\r\033[K" << text << std::flush;
    line_open_ = true;
    return;
  }
  json::object line{{"ts", NowIso8601()},
                    {"event", "snapshot_progress"},
                    {"repository", repository_},
                    {"snapshot", snapshot_},
                    {"poll", p.poll},
                    {"state", state},
                    {"cluster_state", p.raw_state},
                    {"shards_done", p.shards_done},
                    {"shards_failed", p.shards_failed},
                    {"shards_total", p.shards_total},
                    {"bytes_processed", p.bytes_processed},
                    {"bytes_total", p.bytes_total},
                    {"files_processed", p.files_processed},
                    {"files_total", p.files_total},
                    {"elapsed_ms", static_cast<int64_t>(p.elapsed.count())}};
  std::cerr << rfs::core::JsonText(line) << "\n" << std::flush;
}

void SnapshotProgressReporter::Finish() {
  if (live_ && line_open_) std::cerr << "\n" << std::flush;
  line_open_ = false;
}

}  // namespace rfs::apps
