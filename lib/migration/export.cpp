// NDJSON export of a snapshot's documents (see export.hpp).
#include "rfs/migration/export.hpp"

#include <algorithm>
#include <cstring>
#include <span>

#include "rfs/core/json_string.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/parallel_reader.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/lucene/source_json.hpp"
#include "rfs/migration/tools.hpp"

namespace rfs::migration {
namespace {

using core::AppendJsonString;
using core::StrCat;

// Sources may be pretty-printed over lines; in valid JSON a raw CR or LF can only be whitespace
// between tokens, so replacing them with spaces keeps the document and makes it one line.
void AppendOneLine(std::span<const uint8_t> source, std::string& out) {
  const size_t start = out.size();
  out.append(reinterpret_cast<const char*>(source.data()), source.size());
  // Raw line breaks are rare (pretty-printed sources): memchr skips the rest at memory speed,
  // where a byte-by-byte loop cost more than decoding the shard.
  char* const begin = out.data() + start;
  char* const end = out.data() + out.size();
  for (const char c : {'\n', '\r'}) {
    for (char* p = begin; (p = static_cast<char*>(std::memchr(p, c, end - p))) != nullptr; ++p) {
      *p = ' ';
    }
  }
}

class ShardExporter {
 public:
  ShardExporter(const ExportOptions& options, std::FILE* out, ExportTotals& totals)
      : options_(options), out_(out), totals_(totals) {}
  ~ShardExporter() { Flush(); }

  void Flush() {
    std::fwrite(buffer_.data(), 1, buffer_.size(), out_);
    buffer_.clear();
    std::fflush(out_);
  }

  absl::Status Export(const snapshot::SnapshotRepository& repository,
                      const snapshot::SnapshotEntry& snapshot, const snapshot::IndexMetadata& index,
                      int shard, uint64_t from_cursor) {
    lucene::ShardReaderOptions reader_options;
    reader_options.pass_through_non_json_source = true;
    auto reader =
        lucene::OpenSnapshotShard(repository, snapshot, index.name, shard, reader_options);
    if (!reader.ok()) return reader.status();
    std::unique_ptr<lucene::IDocumentReader> cursor;
    if (options_.reader_threads > 0) {
      lucene::ParallelReadOptions parallel;
      parallel.threads = options_.reader_threads;
      auto opened = lucene::ParallelDocumentReader::Open(**reader, from_cursor, parallel);
      if (!opened.ok()) return opened.status();
      cursor = *std::move(opened);
    } else {
      auto opened = (*reader)->OpenAt(from_cursor);
      if (!opened.ok()) return opened.status();
      cursor = *std::move(opened);
    }
    const auto mapping_type = lucene::IndexMappingType(index);
    lucene::Document doc;
    while (true) {
      auto more = cursor->Next(doc);
      if (!more.ok()) return more.status();
      if (!*more) return absl::OkStatus();
      if (!doc.has_source) {
        ++totals_.without_source;
        Skipped(StrCat("document ", index.name, "/", doc.id, " (shard ", shard, ", cursor ",
                       doc.cursor, ") has no _source; not written"));
        continue;
      }
      const size_t line_start = buffer_.size();
      buffer_ += "{\"_index\":";
      AppendJsonString(index.name, buffer_);
      if (doc.type || mapping_type) {
        buffer_ += ",\"_type\":";
        AppendJsonString(doc.type ? *doc.type : *mapping_type, buffer_);
      }
      buffer_ += ",\"_id\":";
      AppendJsonString(doc.id, buffer_);
      if (doc.routing) {
        buffer_ += ",\"_routing\":";
        AppendJsonString(*doc.routing, buffer_);
      }
      buffer_ += ",\"_source\":";
      if (doc.source_format == lucene::SourceFormat::kJson) {
        // A huge source goes out a piece at a time (AppendOneLine works byte by byte), so the
        // line is never held whole next to the decoded chunk.
        constexpr size_t kPiece = size_t{1} << 20;
        for (size_t offset = 0; offset < doc.source.size(); offset += kPiece) {
          AppendOneLine(doc.source.subspan(offset, std::min(kPiece, doc.source.size() - offset)),
                        buffer_);
          if (buffer_.size() > kPiece) Flush();
        }
      } else if (auto converted = lucene::AppendSourceAsJson(doc.source, doc.source_format, buffer_,
                                                             StrCat("_source of ", doc.id));
                 !converted.ok()) {
        buffer_.resize(line_start);
        if (!absl::IsUnimplemented(converted)) return converted;
        ++totals_.unconvertible;
        Skipped(StrCat("document ", index.name, "/", doc.id, ": ", converted.message(),
                       "; not written"));
        continue;
      }
      buffer_ += "}\n";
      ++totals_.docs;
      totals_.source_bytes += doc.source.size();
      if (buffer_.size() > (1 << 20)) Flush();
    }
  }

 private:
  void Skipped(const std::string& message) {
    if (options_.on_skipped) options_.on_skipped(message);
  }

  const ExportOptions& options_;
  std::FILE* out_;
  ExportTotals& totals_;
  std::string buffer_;
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
                absl::InvalidArgumentError("--from-cursor needs --index and --shard"), kExitUsage);
  }
  auto repository = OpenSnapshotRepository({options.repository, options.s3});
  if (!repository.ok()) return Done(std::move(result), repository.status(), kExitSnapshot);
  auto snapshot = (*repository)->FindSnapshot(options.snapshot_name);
  if (!snapshot.ok()) return Done(std::move(result), snapshot.status(), kExitSnapshot);
  std::vector<std::string> indices = (*repository)->IndicesIn(**snapshot);
  if (options.index) indices = {*options.index};
  ShardExporter exporter(options, out, result.totals);
  for (const auto& name : indices) {
    auto meta = (*repository)->ReadIndexMetadata(**snapshot, name);
    if (!meta.ok()) return Done(std::move(result), meta.status(), kExitSnapshot);
    int first = 0;
    int last = meta->number_of_shards - 1;
    if (options.shard) {
      first = last = *options.shard;
      if (first >= meta->number_of_shards) {
        return Done(
            std::move(result),
            absl::InvalidArgumentError(StrCat("--shard ", first, " is out of range: index ", name,
                                              " has ", meta->number_of_shards, " shard(s)")),
            kExitUsage);
      }
    }
    for (int shard = first; shard <= last; ++shard) {
      auto status = exporter.Export(**repository, **snapshot, *meta, shard, options.from_cursor);
      if (!status.ok()) return Done(std::move(result), std::move(status), kExitSnapshot);
    }
  }
  exporter.Flush();
  return result;
}

}  // namespace rfs::migration
