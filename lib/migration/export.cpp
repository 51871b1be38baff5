// NDJSON export of a snapshot's documents (see export.hpp).
#include "rfs/migration/export.hpp"

#include <algorithm>
#include <cerrno>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "rfs/content/source_json.hpp"
#include "rfs/core/file_util.hpp"
#include "rfs/core/json_string.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/parallel_reader.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/migration/tools.hpp"

#include "migration/document_pipeline_internal.hpp"

namespace rfs::migration {
namespace {

using core::AppendJsonString;
using core::StrCat;

// A huge source goes out a piece at a time, so its line is never held whole next to the decoded
// chunk; the parallel path leaves such documents to the writing thread.
constexpr size_t kPiece = size_t{1} << 20;

// Where one shard's documents go.
struct ShardTarget {
  const std::string& index;
  const std::optional<std::string>& mapping_type;
  int shard = 0;
};

// Appends `doc`'s NDJSON line to `out` and counts it. A document that has no JSON form is
// counted and described in `skipped` instead (`out` is left as it was). `flush`, when set, is
// called between the pieces of a large source, so `out` can be written out and emptied.
absl::Status AppendLine(const lucene::Document& doc, const ShardTarget& target, std::string& out,
                        ExportTotals& totals, std::vector<std::string>& skipped,
                        const std::function<void()>& flush) {
  if (!doc.has_source) {
    ++totals.without_source;
    skipped.push_back(StrCat("document ", target.index, "/", doc.id, " (shard ", target.shard,
                             ", cursor ", doc.cursor, ") has no _source; not written"));
    return absl::OkStatus();
  }
  const size_t line_start = out.size();
  out += "{\"_index\":";
  AppendJsonString(target.index, out);
  if (doc.type || target.mapping_type) {
    out += ",\"_type\":";
    AppendJsonString(doc.type ? *doc.type : *target.mapping_type, out);
  }
  out += ",\"_id\":";
  AppendJsonString(doc.id, out);
  if (doc.routing) {
    out += ",\"_routing\":";
    AppendJsonString(*doc.routing, out);
  }
  out += ",\"_source\":";
  if (doc.source_format == content::SourceFormat::kJson) {
    for (size_t offset = 0; offset < doc.source.size(); offset += kPiece) {
      const size_t piece = std::min(kPiece, doc.source.size() - offset);
      core::AppendJsonOneLine(
          std::string_view(reinterpret_cast<const char*>(doc.source.data()) + offset, piece), out);
      if (flush && out.size() > kPiece) flush();
    }
  } else if (auto converted = content::AppendSourceAsJson(doc.source, doc.source_format, out,
                                                          StrCat("_source of ", doc.id));
             !converted.ok()) {
    out.resize(line_start);
    if (!absl::IsUnimplemented(converted)) return converted;
    ++totals.unconvertible;
    skipped.push_back(
        StrCat("document ", target.index, "/", doc.id, ": ", converted.message(), "; not written"));
    return absl::OkStatus();
  }
  out += "}\n";
  ++totals.docs;
  totals.source_bytes += doc.source.size();
  return absl::OkStatus();
}

// The lines of one range of cursors, made on the thread that decoded it.
struct NdjsonRange final : lucene::ScannedRange {
  std::string text;
  ExportTotals totals;
  std::vector<std::string> skipped;
  // Large JSON sources left to the writing thread: where their line goes in `text`, and their
  // cursor. The decoding thread then drops its cursor, so the huge chunk is held by one thread
  // at a time.
  std::vector<std::pair<size_t, uint64_t>> deferred;
};

void Add(ExportTotals& into, const ExportTotals& delta) {
  into.docs += delta.docs;
  into.source_bytes += delta.source_bytes;
  into.without_source += delta.without_source;
  into.unconvertible += delta.unconvertible;
}

class ShardExporter {
 public:
  ShardExporter(const ExportOptions& options, std::FILE* out, ExportTotals& totals)
      : options_(options), out_(out), totals_(totals) {}
  ~ShardExporter() { Flush(); }

  void Flush() {
    Write(buffer_);
    buffer_.clear();
    if (std::fflush(out_) != 0 && write_status_.ok()) {
      write_status_ = core::ErrnoStatus("write", "the standard output", errno);
    }
  }

  /// The first failed write (a full disk, a closed pipe): the output is incomplete.
  const absl::Status& write_status() const { return write_status_; }

  absl::Status Export(const snapshot::SnapshotRepository& repository,
                      const snapshot::SnapshotEntry& snapshot, const snapshot::IndexMetadata& index,
                      int shard, uint64_t from_cursor) {
    // Opened as the worker opens it (the pipeline's first stage); the lines are the export's own.
    RFS_ASSIGN_OR_RETURN(
        const lucene::ShardReaderOptions reader_options,
        internal::ShardReaderOptionsFor(index, options_.enable_sourceless_migrations));
    auto reader =
        lucene::OpenSnapshotShard(repository, snapshot, index.name, shard, reader_options);
    if (!reader.ok()) return reader.status();
    const auto mapping_type = lucene::IndexMappingType(index);
    const ShardTarget target{index.name, mapping_type, shard};
    if (options_.reader_threads > 0) {
      return ExportParallel(**reader, target, from_cursor);
    }
    auto cursor = (*reader)->OpenAt(from_cursor);
    if (!cursor.ok()) return cursor.status();
    lucene::Document doc;
    while (true) {
      auto more = (*cursor)->Next(doc);
      if (!more.ok()) return more.status();
      if (!*more) return absl::OkStatus();
      RFS_RETURN_IF_ERROR(AppendLine(doc, target, buffer_, totals_, skipped_, flush_));
      ReportSkipped();
      if (buffer_.size() > kPiece) {
        Flush();
        RFS_RETURN_IF_ERROR(write_status_);
      }
    }
  }

 private:
  // Decoding and formatting run on the reader threads; this thread writes the ranges in order.
  absl::Status ExportParallel(const lucene::ShardReader& reader, const ShardTarget& target,
                              uint64_t from_cursor) {
    lucene::ParallelReadOptions parallel;
    parallel.threads = options_.reader_threads;
    auto scan = lucene::ParallelShardScan::Open(
        reader, from_cursor, parallel, [] { return std::make_unique<NdjsonRange>(); },
        [&target](lucene::Document& doc, lucene::ScannedRange& scanned) -> absl::Status {
          auto& range = static_cast<NdjsonRange&>(scanned);
          if (doc.has_source && doc.source_format == content::SourceFormat::kJson &&
              doc.source.size() > kPiece) {
            range.deferred.emplace_back(range.text.size(), doc.cursor);
          } else {
            RFS_RETURN_IF_ERROR(
                AppendLine(doc, target, range.text, range.totals, range.skipped, nullptr));
          }
          range.bytes = range.text.size();
          return absl::OkStatus();
        },
        [](lucene::ScannedRange& scanned) {
          return !static_cast<NdjsonRange&>(scanned).deferred.empty();
        });
    if (!scan.ok()) return scan.status();
    Flush();
    std::unique_ptr<lucene::DocumentCursor> huge;  // reads the deferred documents
    lucene::Document doc;
    while (true) {
      auto next = (*scan)->Next();
      if (!next.ok()) return next.status();
      if (*next == nullptr) return absl::OkStatus();
      auto& range = static_cast<NdjsonRange&>(**next);
      Add(totals_, range.totals);
      skipped_ = std::move(range.skipped);
      ReportSkipped();
      size_t written = 0;
      for (const auto& [offset, cursor] : range.deferred) {
        Write(std::string_view(range.text).substr(written, offset - written));
        written = offset;
        if (!huge) {
          auto opened = reader.OpenAt(cursor);
          if (!opened.ok()) return opened.status();
          huge = *std::move(opened);
        } else {
          RFS_RETURN_IF_ERROR(huge->SeekTo(cursor));
        }
        auto more = huge->Next(doc);
        if (!more.ok()) return more.status();
        if (!*more || doc.cursor != cursor) {
          return absl::InternalError(StrCat("document at cursor ", cursor, " of shard ",
                                            target.shard, " of ", target.index,
                                            " was not found again"));
        }
        RFS_RETURN_IF_ERROR(AppendLine(doc, target, buffer_, totals_, skipped_, flush_));
        ReportSkipped();
        Flush();
        huge.reset();  // its chunk is as large as the document
      }
      Write(std::string_view(range.text).substr(written));
      RFS_RETURN_IF_ERROR(write_status_);
    }
  }

  void Write(std::string_view bytes) {
    if (bytes.empty() || !write_status_.ok()) return;
    if (std::fwrite(bytes.data(), 1, bytes.size(), out_) != bytes.size()) {
      write_status_ = core::ErrnoStatus("write", "the standard output", errno);
    }
  }

  void ReportSkipped() {
    for (const auto& message : skipped_) {
      if (options_.on_skipped) options_.on_skipped(message);
    }
    skipped_.clear();
  }

  const ExportOptions& options_;
  std::FILE* out_;
  ExportTotals& totals_;
  std::string buffer_;
  absl::Status write_status_;
  std::vector<std::string> skipped_;
  const std::function<void()> flush_ = [this] {
    Write(buffer_);
    buffer_.clear();
  };
};

ExportResult Done(ExportResult result, absl::Status status, int exit_code) {
  result.status = std::move(status);
  result.exit_code = exit_code;
  return result;
}

}  // namespace

ExportResult ExportDocumentsAsNdjson(const ExportOptions& options, std::FILE* out) {
  ExportResult result;
  if (options.from_cursor > 0 && (!options.index || !options.shard)) {
    return Done(std::move(result),
                absl::InvalidArgumentError("--from-cursor needs --index and --shard"),
                core::kExitUsage);
  }
  auto repository = OpenSnapshotRepository({.uri = options.repository,
                                            .s3 = options.s3,
                                            .gcs = options.gcs,
                                            .azure = options.azure,
                                            .solr = options.solr});
  if (!repository.ok()) {
    return Done(std::move(result), repository.status(),
                absl::IsInvalidArgument(repository.status()) ? core::kExitUsage
                                                             : core::kExitSnapshotUnreadable);
  }
  auto snapshot = (*repository)->FindSnapshot(options.snapshot_name);
  if (!snapshot.ok())
    return Done(std::move(result), snapshot.status(), core::kExitSnapshotUnreadable);
  std::vector<std::string> indices = (*repository)->IndicesIn(**snapshot);
  if (options.index) indices = {*options.index};
  // Indices without a complete _source stop the export before any output unless rebuilding.
  if (!options.enable_sourceless_migrations) {
    for (const auto& name : indices) {
      auto meta = (*repository)->ReadIndexMetadata(**snapshot, name);
      if (!meta.ok()) return Done(std::move(result), meta.status(), core::kExitSnapshotUnreadable);
      const lucene::SourceStorage storage = lucene::DescribeIndexSource(*meta).storage;
      if (storage.incomplete()) {
        return Done(std::move(result),
                    absl::FailedPreconditionError(StrCat(
                        "index ", name, " keeps no complete _source (", storage.Describe(),
                        "): run with --enable-sourceless-migrations to rebuild its documents "
                        "from doc values and stored fields")),
                    core::kExitUsage);
      }
    }
  }
  ShardExporter exporter(options, out, result.totals);
  for (const auto& name : indices) {
    auto meta = (*repository)->ReadIndexMetadata(**snapshot, name);
    if (!meta.ok()) return Done(std::move(result), meta.status(), core::kExitSnapshotUnreadable);
    int first = 0;
    int last = meta->number_of_shards - 1;
    if (options.shard) {
      first = last = *options.shard;
      if (first >= meta->number_of_shards) {
        return Done(
            std::move(result),
            absl::InvalidArgumentError(StrCat("--shard ", first, " is out of range: index ", name,
                                              " has ", meta->number_of_shards, " shard(s)")),
            core::kExitUsage);
      }
    }
    for (int shard = first; shard <= last; ++shard) {
      auto status = exporter.Export(**repository, **snapshot, *meta, shard, options.from_cursor);
      if (!exporter.write_status().ok()) {
        return Done(std::move(result), exporter.write_status(), core::kExitFailure);
      }
      if (!status.ok())
        return Done(std::move(result), std::move(status), core::kExitSnapshotUnreadable);
    }
  }
  exporter.Flush();
  if (!exporter.write_status().ok()) {
    return Done(std::move(result), exporter.write_status(), core::kExitFailure);
  }
  return result;
}

}  // namespace rfs::migration
