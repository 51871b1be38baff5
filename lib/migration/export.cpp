// NDJSON export of a snapshot's documents (see export.hpp).
#include "rfs/migration/export.hpp"

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rfs/core/file_util.hpp"
#include "rfs/core/json_string.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/migration/tools.hpp"

#include "migration/document_pipeline_internal.hpp"

namespace rfs::migration {
namespace {

using core::StrCat;

// A JSON source over this size is left unconverted by the source (ConversionTarget::
// defer_json_over) and written from its decoded chunk this many bytes at a time; a converted
// source this large is written from where it lies, not copied into the buffer.
constexpr size_t kPiece = size_t{1} << 20;

// Writes one shard at a time through the pipeline's sources (document_pipeline_internal.hpp):
// with reader threads, each document's line is laid out by the thread that decoded it and the
// lines of a range are written at once; without, this thread converts and writes each one.
class ShardExporter {
 public:
  ShardExporter(const ExportOptions& options, std::FILE* out, ExportTotals& totals)
      : options_(options), out_(out), totals_(totals) {}
  ~ShardExporter() { Flush(); }

  void Flush() {
    WritePending();
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
    RFS_ASSIGN_OR_RETURN(
        const lucene::ShardReaderOptions reader_options,
        internal::ShardReaderOptionsFor(index, options_.enable_sourceless_migrations));
    auto reader =
        lucene::OpenSnapshotShard(repository, snapshot, index.name, shard, reader_options);
    if (!reader.ok()) return reader.status();
    // Every document under its own index and type, as the snapshot holds it.
    internal::IndexPlacement placement;
    placement.mapping_type = lucene::IndexMappingType(index);
    const internal::ConversionTarget target{.index = index.name,
                                            .placement = placement,
                                            .policy = transform::MultiTypePolicy::kUnion,
                                            .export_lines = true,
                                            .defer_json_over = kPiece};
    std::unique_ptr<internal::IConvertedSource> source;
    if (options_.reader_threads > 0) {
      RFS_ASSIGN_OR_RETURN(source, internal::OpenParallelSource(**reader, from_cursor, UINT64_MAX,
                                                                options_.reader_threads, target,
                                                                reindex::BulkActionOptions{}));
    } else {
      auto cursor = (*reader)->OpenAt(from_cursor);
      if (!cursor.ok()) return cursor.status();
      source = internal::OpenSerialSource(*std::move(cursor), target);
    }
    while (true) {
      RFS_ASSIGN_OR_RETURN(const internal::ConvertedDocument* converted, source->NextInPlace());
      if (converted == nullptr) break;
      if (converted->kind == internal::ConvertedDocument::Kind::kDeferred) {
        RFS_RETURN_IF_ERROR(WriteHuge(**reader, *source, converted->doc, index.name, shard));
      } else {
        RFS_RETURN_IF_ERROR(Take(*converted, index.name, shard));
      }
      RFS_RETURN_IF_ERROR(write_status_);
    }
    WritePending();
    return write_status_;
  }

 private:
  absl::Status Take(const internal::ConvertedDocument& converted, const std::string& index,
                    int shard) {
    const reindex::SourceDocument& doc = converted.doc;
    switch (converted.kind) {
      case internal::ConvertedDocument::Kind::kWithoutSource:
        ++totals_.without_source;
        Skipped(StrCat("document ", index, "/", doc.id, " (shard ", shard, ", cursor ", doc.cursor,
                       ") has no _source; not written"));
        return absl::OkStatus();
      case internal::ConvertedDocument::Kind::kUnconvertible:
        // A format without a JSON form is skipped and said; damaged bytes stop the export.
        if (converted.conversion_error == absl::StatusCode::kOk) {
          return absl::InternalError(
              StrCat("document ", index, "/", doc.id,
                     " could not be exported: ", converted.unconvertible->reason));
        }
        if (converted.conversion_error != absl::StatusCode::kUnimplemented) {
          return absl::Status(converted.conversion_error, converted.unconvertible->reason);
        }
        ++totals_.unconvertible;
        Skipped(StrCat("document ", index, "/", doc.id, ": ", converted.unconvertible->reason,
                       "; not written"));
        return absl::OkStatus();
      case internal::ConvertedDocument::Kind::kDeferred:
        return absl::InternalError("a deferred document reached the line writer");
      case internal::ConvertedDocument::Kind::kDocument:
        break;
    }
    ++totals_.docs;
    totals_.source_bytes += converted.stored_source_bytes;
    if (converted.line_owner) {
      // Lines laid out one after another in a range's buffer go out in one write.
      if (converted.line_owner != pending_owner_ || converted.line_begin != pending_end_) {
        WritePending();
        WriteBuffer();  // anything written before comes first
        pending_owner_ = converted.line_owner;
        pending_begin_ = converted.line_begin;
      }
      pending_end_ = converted.line_end;
      return absl::OkStatus();
    }
    WritePending();  // lines laid out before this one come first
    internal::AppendExportLineHead(doc, buffer_);
    const std::string_view text = doc.source.empty() ? std::string_view("{}") : doc.source;
    if (text.size() >= kPiece) {
      Write(buffer_);
      buffer_.clear();
      Write(text);
    } else {
      buffer_ += text;
    }
    buffer_ += "}\n";
    if (buffer_.size() > kPiece) {
      Write(buffer_);
      buffer_.clear();
    }
    return absl::OkStatus();
  }

  // A huge JSON document the source handed on unconverted (ConversionTarget::defer_json_over),
  // written from its decoded chunk a piece at a time, so that the chunk is its only copy: from
  // the source's own read when it reads on this thread, else read again here (a decoding thread
  // read it), the cursor dropped after it since its chunk is as large as the document.
  absl::Status WriteHuge(const lucene::ShardReader& reader,
                         const internal::IConvertedSource& source,
                         const reindex::SourceDocument& deferred, const std::string& index,
                         int shard) {
    WritePending();
    const lucene::Document* doc = source.last_read();
    std::unique_ptr<lucene::DocumentCursor> cursor;
    lucene::Document read_again;
    if (doc == nullptr || doc->cursor != deferred.cursor) {
      RFS_ASSIGN_OR_RETURN(cursor, reader.OpenAt(deferred.cursor));
      RFS_ASSIGN_OR_RETURN(const bool more, cursor->Next(read_again));
      if (!more || read_again.cursor != deferred.cursor || !read_again.has_source) {
        return absl::InternalError(StrCat("document at cursor ", deferred.cursor, " of shard ",
                                          shard, " of ", index, " was not found again"));
      }
      doc = &read_again;
    }
    ++totals_.docs;
    totals_.source_bytes += doc->source.size();
    internal::AppendExportLineHead(deferred, buffer_);
    const std::string_view json(reinterpret_cast<const char*>(doc->source.data()),
                                doc->source.size());
    for (size_t offset = 0; offset < json.size(); offset += kPiece) {
      core::AppendJsonOneLine(json.substr(offset, kPiece), buffer_);
      Write(buffer_);
      buffer_.clear();
    }
    buffer_ += "}\n";
    Write(buffer_);  // before the lines that follow, which go out from where they lie
    buffer_.clear();
    return absl::OkStatus();
  }

  void WriteBuffer() {
    Write(buffer_);
    buffer_.clear();
  }

  void WritePending() {
    if (!pending_owner_) return;
    Write(std::string_view(pending_owner_->bytes)
              .substr(pending_begin_, pending_end_ - pending_begin_));
    pending_owner_.reset();
  }

  void Write(std::string_view bytes) {
    if (bytes.empty() || !write_status_.ok()) return;
    if (std::fwrite(bytes.data(), 1, bytes.size(), out_) != bytes.size()) {
      write_status_ = core::ErrnoStatus("write", "the standard output", errno);
    }
  }

  void Skipped(const std::string& message) {
    if (options_.on_skipped) options_.on_skipped(message);
  }

  const ExportOptions& options_;
  std::FILE* out_;
  ExportTotals& totals_;
  std::string buffer_;
  absl::Status write_status_;
  // The lines not yet written: [pending_begin_, pending_end_) of a range's buffer.
  std::shared_ptr<const reindex::RenderedLines> pending_owner_;
  size_t pending_begin_ = 0;
  size_t pending_end_ = 0;
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
