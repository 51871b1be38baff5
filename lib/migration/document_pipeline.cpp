// The document pipeline's stages (see document_pipeline_internal.hpp).
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "rfs/content/source_json.hpp"
#include "rfs/core/base64.hpp"
#include "rfs/core/json_string.hpp"
#include "rfs/core/json_text.hpp"
#include "rfs/core/memory_pages.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/core/string_pool.hpp"
#include "rfs/lucene/parallel_reader.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/migration/document_migration_worker.hpp"
#include "rfs/solr/documents.hpp"
#include "rfs/transform/type_policy.hpp"

#include "migration/data_stream_internal.hpp"
#include "migration/document_pipeline_internal.hpp"

namespace rfs::migration::internal {

using reindex::FailedDocument;
using reindex::SourceDocument;

absl::StatusOr<lucene::ShardReaderOptions> ShardReaderOptionsFor(
    const snapshot::IndexMetadata& index, bool enable_sourceless_migrations,
    bool preserve_version) {
  lucene::ShardReaderOptions options;
  options.read_versions = preserve_version;
  // A Solr collection keeps no source: every document is rebuilt as Solr returns it.
  RFS_ASSIGN_OR_RETURN(options.rebuild_plan, solr::RebuildPlanForBackupIndex(index));
  if (options.rebuild_plan != nullptr) return options;
  // SMILE, CBOR and YAML sources are converted to JSON in stage 2, per document.
  options.pass_through_non_json_source = true;
  if (enable_sourceless_migrations) {
    RFS_ASSIGN_OR_RETURN(options.rebuild_plan, lucene::RebuildPlanForIndex(index));
  }
  return options;
}

namespace {

// Documents follow their mapping: the values of `out` from `start` (one document's source) that
// the target's translated mapping takes in another form are rewritten
// (transform::DocumentValueConversions). A source with none of them stays byte for byte; one that
// does not parse goes as it is, for the target to say why.
void ConvertValues(const transform::DocumentValueConversions& values, std::string& out,
                   size_t start) {
  boost::system::error_code ec;
  boost::json::parse_options options;
  options.max_depth = 1000;  // as deep as the engines' own parser allows
  boost::json::value parsed =
      boost::json::parse(std::string_view(out).substr(start), ec, {}, options);
  if (ec || !parsed.is_object() || !values.Apply(parsed.as_object())) return;
  out.resize(start);
  core::AppendJsonText(parsed.as_object(), out);
}

absl::Status AppendOneLineJsonSourceAsIs(const lucene::Document& in, const ConversionTarget& target,
                                         std::string& out);

// Appends the source of `in` to `out` as one-line JSON, its values in the target's form.
absl::Status AppendOneLineJsonSource(const lucene::Document& in, const ConversionTarget& target,
                                     std::string& out) {
  const size_t start = out.size();
  RFS_RETURN_IF_ERROR(AppendOneLineJsonSourceAsIs(in, target, out));
  if (target.placement.values) ConvertValues(*target.placement.values, out, start);
  return absl::OkStatus();
}

absl::Status AppendOneLineJsonSourceAsIs(const lucene::Document& in, const ConversionTarget& target,
                                         std::string& out) {
  if (in.source_format == content::SourceFormat::kJson) {
    const std::string_view json(reinterpret_cast<const char*>(in.source.data()), in.source.size());
    if (in.source_releasable) {
      // A huge document: its decoded chunk goes as the copy grows, not after it.
      core::AppendJsonOneLineReleasing(json, out);
    } else {
      core::AppendJsonOneLine(json, out);
    }
    return absl::OkStatus();
  }
  const size_t start = out.size();
  RFS_RETURN_IF_ERROR(content::AppendSourceAsJson(
      in.source, in.source_format, out, core::StrCat("_source of ", target.index, "/", in.id)));
  if (core::FindLineBreak(std::string_view(out).substr(start)) != out.size() - start) {
    const std::string converted = out.substr(start);
    out.resize(start);
    core::AppendJsonOneLine(converted, out);
  }
  return absl::OkStatus();
}

// Lays out `in`'s export line at the end of `lines` (see ConvertedDocument::line_owner).
absl::Status AppendExportLine(const lucene::Document& in, const ConversionTarget& target,
                              const std::shared_ptr<reindex::RenderedLines>& lines,
                              ConvertedDocument& out) {
  std::string& bytes = lines->bytes;
  const size_t begin = bytes.size();
  AppendExportLineHead(out.doc, bytes);
  const size_t source = bytes.size();
  // Room for the closing "}\n" too: a huge document is not copied into twice its size for it.
  bytes.reserve(bytes.size() + in.source.size() + 2);
  if (absl::Status status = AppendOneLineJsonSource(in, target, bytes); !status.ok()) {
    bytes.resize(begin);
    return status;
  }
  if (bytes.size() == source) bytes.append("{}");
  bytes.append("}\n");
  out.line_owner = lines;
  out.line_begin = begin;
  out.line_end = bytes.size();
  return absl::OkStatus();
}

}  // namespace

void AppendExportLineHead(const SourceDocument& doc, std::string& out) {
  out += "{\"_index\":";
  core::AppendJsonString(doc.index, out);
  if (doc.type) {
    out += ",\"_type\":";
    core::AppendJsonString(*doc.type, out);
  }
  out += ",\"_id\":";
  core::AppendJsonString(doc.id, out);
  if (doc.routing) {
    out += ",\"_routing\":";
    core::AppendJsonString(*doc.routing, out);
  }
  out += ",\"_source\":";
}

namespace {

ConvertedDocument::Unconvertible& MarkUnconvertible(ConvertedDocument& out, std::string error_type,
                                                    std::string reason) {
  out.kind = ConvertedDocument::Kind::kUnconvertible;
  out.unconvertible = std::make_unique<ConvertedDocument::Unconvertible>();
  out.unconvertible->error_type = std::move(error_type);
  out.unconvertible->reason = std::move(reason);
  return *out.unconvertible;
}

}  // namespace

void ConvertDocument(lucene::Document& in, const ConversionTarget& target,
                     const std::shared_ptr<reindex::RenderedLines>* lines, ConvertedDocument& out) {
  SourceDocument& doc = out.doc;
  out.stored_source_bytes = in.source.size();
  out.conversion_error = absl::StatusCode::kOk;
  out.unconvertible.reset();
  out.line_owner.reset();
  out.line_begin = out.line_end = 0;
  doc.id = in.id;
  doc.routing = in.routing;
  doc.cursor = in.cursor;
  doc.type = in.type ? in.type : target.placement.mapping_type;
  const std::optional<std::string>& data_stream = target.placement.data_stream;
  doc.index = data_stream
                  ? *data_stream
                  : transform::TargetIndexForType(target.index, doc.type.value_or(""),
                                                  target.placement.type_count, target.policy);
  if (!target.placement.target_prefix.empty()) doc.index.insert(0, target.placement.target_prefix);
  doc.source.clear();
  doc.one_line = false;
  doc.rendered.reset();
  // A range's documents are used again (RangePool): nothing of an earlier document may stay.
  doc.rendered_begin = doc.rendered_source = doc.rendered_end = 0;
  doc.op = in.deleted    ? reindex::BulkOp::kDelete
           : data_stream ? reindex::BulkOp::kCreate
                         : reindex::BulkOp::kIndex;
  // Set before the lines are laid out: the action line carries it.
  if (target.preserve_version && doc.op == reindex::BulkOp::kIndex) {
    doc.version = in.version;
  } else {
    doc.version.reset();
  }
  out.rebuilt = in.rebuilt;
  out.rebuilt_inexact = in.rebuilt_inexact;
  if (in.deleted && data_stream) {
    // A data stream takes only `create`: a delete (or the delete half of an update) made
    // through a backing index cannot be sent to it.
    MarkUnconvertible(out, "data_stream_delete_not_applied",
                      core::StrCat("deleted from backing index ", target.index,
                                   " since the previous snapshot; data stream ", *data_stream,
                                   " accepts only create"));
    return;
  }
  if (in.deleted) {
    out.kind = ConvertedDocument::Kind::kDocument;
    return;
  }
  if (!in.has_source) {
    out.kind = ConvertedDocument::Kind::kWithoutSource;
    return;
  }
  out.kind = ConvertedDocument::Kind::kDocument;
  if (target.defer_json_over > 0 && in.source_format == content::SourceFormat::kJson &&
      in.source.size() > target.defer_json_over) {
    out.kind = ConvertedDocument::Kind::kDeferred;
    return;
  }
  // Sources are made one line here, where they are copied anyway (bulk lines need it; the
  // document does not change), so the sinks can send them as they are.
  absl::Status converted;
  if (lines != nullptr && target.export_lines) {
    converted = AppendExportLine(in, target, *lines, out);
  } else if (lines != nullptr) {
    converted = reindex::AppendRenderedLines(doc, *lines, [&](std::string& to) {
      // Room for the '\n' too: an append that only just fits grows the lines, and a huge
      // document would be copied into twice its size for that byte.
      to.reserve(to.size() + in.source.size() + 1);
      return AppendOneLineJsonSource(in, target, to);
    });
  } else {
    converted = AppendOneLineJsonSource(in, target, doc.source);
    doc.one_line = converted.ok();
  }
  if (!converted.ok()) {
    // One undecodable source must not stop the shard; it is kept (base64) for an operator.
    ConvertedDocument::Unconvertible& why = MarkUnconvertible(
        out, std::string(kSourceConversionError), std::string(converted.message()));
    out.conversion_error = converted.code();
    // For the failed-document record; the export names the document and goes on without it.
    if (!target.export_lines) why.recorded_source = core::Base64Encode(in.source);
    doc.source.clear();
    return;
  }
  if (data_stream &&
      !internal::HasTimestampField(SourceBytes(doc), target.placement.timestamp_field)) {
    MarkUnconvertible(out, "data_stream_timestamp_missing",
                      core::StrCat("no single value in ", target.placement.timestamp_field,
                                   ", which data stream ", *data_stream, " requires of a document"))
        .recorded_source = std::string(SourceBytes(doc));
    doc.source.clear();
  }
}

namespace {

// Decodes and converts on the calling thread.
class SerialConvertedSource final : public IConvertedSource {
 public:
  SerialConvertedSource(std::unique_ptr<lucene::IDocumentReader> cursor, ConversionTarget target)
      : cursor_(std::move(cursor)), target_(target) {}
  absl::StatusOr<bool> Next(ConvertedDocument& out) override {
    auto more = cursor_->Next(doc_);
    if (!more.ok() || !*more) return more;
    ConvertDocument(doc_, target_, nullptr, out);
    return true;
  }
  uint64_t position() const override { return cursor_->position(); }
  const lucene::Document* last_read() const override { return &doc_; }

 private:
  std::unique_ptr<lucene::IDocumentReader> cursor_;
  const ConversionTarget target_;
  lucene::Document doc_;
};

// Decodes and converts on the reader threads (lucene::ParallelShardScan), in cursor order.
class ParallelConvertedSource final : public IConvertedSource {
 public:
  /// With `render`, each range's documents have their bulk lines laid out with those options
  /// (reindex::RenderedLines) as they are converted.
  static absl::StatusOr<std::unique_ptr<ParallelConvertedSource>> Open(
      const lucene::ShardReader& reader, uint64_t start, uint64_t end, int threads,
      ConversionTarget target, std::optional<reindex::BulkActionOptions> render,
      core::MemoryBudget* budget) {
    auto source = std::unique_ptr<ParallelConvertedSource>(new ParallelConvertedSource(target));
    source->position_ = std::min(start, end);
    lucene::ParallelReadOptions options;
    options.threads = threads;
    options.end_cursor = end;
    // The reindexer holds up to its own in-flight bytes too: keep the read-ahead small (the
    // export, which writes its lines at once, measured the same speed with it).
    options.max_buffered_bytes = size_t{8} << 20;
    options.memory_budget = budget;
    ParallelConvertedSource* self = source.get();
    source->render_ = render;
    auto new_range = [self] {
      std::unique_ptr<Range> range = self->range_pool_->Take();
      // Room for as many documents as the last range held: a growing vector would move each
      // document several times.
      range->docs.reserve(self->docs_hint_.load(std::memory_order_relaxed));
      if (self->render_) self->StartLines(*range);
      return range;
    };
    auto scan = lucene::ParallelShardScan::Open(
        reader, start, options, std::move(new_range),
        [self](lucene::Document& doc, lucene::ScannedRange& scanned) {
          auto& range = static_cast<Range&>(scanned);
          // Lines past the limit (a huge document) are not grown further: growing copies them
          // into a buffer twice their size.
          if (range.lines && range.lines->bytes.size() >= kLinesLimit) self->StartLines(range);
          if (range.count == range.docs.size()) range.docs.emplace_back();
          ConvertedDocument& converted = range.docs[range.count++];
          ConvertDocument(doc, self->target_, range.lines ? &range.lines : nullptr, converted);
          const size_t bytes =
              converted.doc.rendered_end - converted.doc.rendered_begin + converted.line_end -
              converted.line_begin + converted.doc.source.size() +
              (converted.unconvertible ? converted.unconvertible->recorded_source.size() : 0) + 128;
          range.bytes += bytes;
          // Sources not laid out in the range's lines (a data stream's, a sink's that makes its
          // own) and large documents go with their own bulks (NextHeld).
          if (bytes >= kLargeDocumentBytes || !converted.doc.source.empty()) {
            range.hand_on_alone = true;
          }
          return absl::OkStatus();
        },
        [self](lucene::ScannedRange& scanned) {
          auto& range = static_cast<Range&>(scanned);
          self->docs_hint_.store(range.count, std::memory_order_relaxed);
          if (range.lines) {
            const size_t used = range.lines->bytes.size();
            self->lines_hint_.store(std::min(used + used / 8, kLinesLimit),
                                    std::memory_order_relaxed);
            // Its documents hold the lines they are in; a large one's go with it (NextHeld).
            if (range.hand_on_alone) range.lines.reset();
          }
          return false;
        });
    if (!scan.ok()) return scan.status();
    source->scan_ = *std::move(scan);
    return source;
  }

  absl::StatusOr<bool> Next(ConvertedDocument& out) override {
    RFS_ASSIGN_OR_RETURN(ConvertedDocument * next, Advance());
    if (next == nullptr) return false;
    out = std::move(*next);
    return true;
  }
  absl::StatusOr<const ConvertedDocument*> NextInPlace() override { return Advance(); }
  absl::StatusOr<ConvertedDocument*> NextHeld(reindex::DocumentHolder& holder) override {
    RFS_ASSIGN_OR_RETURN(ConvertedDocument * next, Advance());
    if (next == nullptr) return nullptr;
    if (current_->hand_on_alone) {
      // Each document of such a range goes alone, moved out: a huge document (and the lines the
      // documents before it share with it) or a source of its own is freed once its own bulk is
      // written, not when the range's last bulk is (the memory budget has its bytes back then).
      auto held = std::make_shared<ConvertedDocument>(std::move(*next));
      next = held.get();
      holder = std::move(held);
      return next;
    }
    // The range holds its documents: one copy of it per range, not per document.
    if (holder.get() != current_.get()) holder = current_;
    return next;
  }
  uint64_t position() const override { return position_; }

 private:
  struct Range final : lucene::ScannedRange {
    // The range's documents are [0, count); those past it are kept from an earlier use of this
    // range (RangePool), so that their strings keep their buffers.
    std::vector<ConvertedDocument> docs;
    size_t count = 0;
    std::shared_ptr<reindex::RenderedLines> lines;  // with `render`
    // A document of kLargeDocumentBytes or more, or one whose source is not in `lines`.
    bool hand_on_alone = false;
  };
  explicit ParallelConvertedSource(ConversionTarget target) : target_(target) {}

  // The next document in its range (the next range once one is done), or nullptr at the end.
  absl::StatusOr<ConvertedDocument*> Advance() {
    while (!current_ || next_ >= current_->count) {
      if (current_) position_ = std::max(position_, current_->end);
      current_.reset();
      auto next = scan_->Next();
      if (!next.ok()) return next.status();
      if (*next == nullptr) return nullptr;
      // Back to the pool when the last bulk holding one of its documents is written (on the
      // sender's thread), maybe after this source is gone: the deleter shares the pool.
      current_ = std::shared_ptr<Range>(static_cast<Range*>(next->release()),
                                        [pool = range_pool_](Range* range) { pool->Give(range); });
      next_ = 0;
    }
    ConvertedDocument* out = &current_->docs[next_++];
    position_ = out->doc.cursor + 1;
    return out;
  }

  // Ranges kept for reuse. A range freed and allocated anew cost its vector's fresh pages and
  // each document's strings (an `_id` is longer than a string holds in place) once more: 1-5% of
  // the user CPU of an export or of `SnapshotInspector docs`, on the threads that free them (the
  // senders') and those that allocate them (the decoding threads, the export's critical path).
  // A few are kept, none with more documents than a range usually holds.
  class RangePool {
   public:
    // Room for every range kept: Give runs in a holder's deleter, where nothing may throw.
    RangePool() { free_.reserve(kMaxKeptRanges); }
    std::unique_ptr<Range> Take() {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!free_.empty()) {
          std::unique_ptr<Range> range = std::move(free_.back());
          free_.pop_back();
          return range;
        }
      }
      return std::make_unique<Range>();
    }
    void Give(Range* range) {
      std::unique_ptr<Range> owned(range);
      if (owned->docs.size() > kMaxKeptDocuments) return;
      // What the documents share or hold alone goes now; their strings stay for the next use,
      // unless one is large (a source not laid out, a long routing value).
      auto keep_small = [](std::string& s) {
        if (s.capacity() > kMaxKeptStringBytes) std::string().swap(s);
      };
      for (size_t i = 0; i < owned->count; ++i) {
        ConvertedDocument& doc = owned->docs[i];
        doc.doc.rendered.reset();
        doc.line_owner.reset();
        doc.unconvertible.reset();
        keep_small(doc.doc.source);
        keep_small(doc.doc.id);
        keep_small(doc.doc.index);
        if (doc.doc.routing) keep_small(*doc.doc.routing);
        if (doc.doc.type) keep_small(*doc.doc.type);
      }
      owned->count = 0;
      owned->lines.reset();
      owned->hand_on_alone = false;
      owned->bytes = 0;
      owned->end = 0;
      owned->stats = {};
      std::lock_guard<std::mutex> lock(mu_);
      if (free_.size() < kMaxKeptRanges) free_.push_back(std::move(owned));
    }

   private:
    static constexpr size_t kMaxKeptRanges = 4;
    static constexpr size_t kMaxKeptDocuments = 4096;
    static constexpr size_t kMaxKeptStringBytes = 4096;
    std::mutex mu_;
    std::vector<std::unique_ptr<Range>> free_;  // guarded by mu_
  };

  // Gives the range's next documents new lines, sized like the last range's, so they are
  // rarely regrown (and copied) as they fill.
  void StartLines(Range& range) const {
    // Rounded up, so a pooled buffer fits the next range too (ranges differ by a few KB).
    constexpr size_t kStep = size_t{64} << 10;
    std::string bytes = lines_pool_->Take(
        (lines_hint_.load(std::memory_order_relaxed) + kStep - 1) / kStep * kStep);
    // Back to the pool once the last document laid out in them is written (on the sender's
    // thread), maybe after this source is gone: the deleter shares the pool.
    range.lines = std::shared_ptr<reindex::RenderedLines>(
        new reindex::RenderedLines{*render_, std::move(bytes)},
        [pool = lines_pool_](reindex::RenderedLines* lines) {
          pool->Give(std::move(lines->bytes));
          delete lines;
        });
  }

  // The most one RenderedLines holds before the next document starts another (and the most a
  // new one reserves): a range with a huge document does not double that document's copy.
  static constexpr size_t kLinesLimit = size_t{16} << 20;
  // A document this large is handed on alone, with the others of its range (NextHeld).
  static constexpr size_t kLargeDocumentBytes = size_t{1} << 20;

  const ConversionTarget target_;
  std::optional<reindex::BulkActionOptions> render_;
  std::atomic<size_t> lines_hint_{0};
  // Lines buffers kept for the next ranges (core::StringPool): a range's lines (a few MB)
  // allocated afresh had their pages faulted in and zeroed again whenever the allocator had given
  // them back meanwhile, 3-4% of an export's CPU. None large enough to matter beside a huge
  // document's is kept.
  const std::shared_ptr<core::StringPool> lines_pool_ =
      std::make_shared<core::StringPool>(size_t{4} << 20, SIZE_MAX, 6);
  const std::shared_ptr<RangePool> range_pool_ = std::make_shared<RangePool>();
  std::atomic<size_t> docs_hint_{0};
  std::unique_ptr<lucene::ParallelShardScan> scan_;
  std::shared_ptr<Range> current_;  // shared with the documents handed on in place
  size_t next_ = 0;
  uint64_t position_ = 0;
};

}  // namespace

std::unique_ptr<IConvertedSource> OpenSerialSource(std::unique_ptr<lucene::IDocumentReader> cursor,
                                                   ConversionTarget target) {
  return std::make_unique<SerialConvertedSource>(std::move(cursor), target);
}

void AdmitLargeChunks(lucene::DocumentCursor& cursor, core::MemoryBudget& budget) {
  // Twice the chunk: the decoded chunk and the document's converted copy live together for a
  // moment. The bulks in flight always finish (or fail), so the wait ends.
  cursor.set_large_chunk_gate(
      [&budget](size_t decoded_bytes) -> absl::StatusOr<core::MemoryBudget::LargeDocumentHold> {
        budget.WaitForRoom(2 * decoded_bytes);
        return budget.HoldLargeDocument();
      });
}

absl::StatusOr<std::unique_ptr<IConvertedSource>> OpenParallelSource(
    const lucene::ShardReader& reader, uint64_t start, uint64_t end, int threads,
    ConversionTarget target, std::optional<reindex::BulkActionOptions> render,
    core::MemoryBudget* budget) {
  RFS_ASSIGN_OR_RETURN(auto source, ParallelConvertedSource::Open(reader, start, end, threads,
                                                                  target, render, budget));
  return std::unique_ptr<IConvertedSource>(std::move(source));
}

ShardDocumentStream::ShardDocumentStream(
    IConvertedSource& source, uint64_t end, std::function<bool()> stop_reading,
    reindex::IFailedDocumentSink* failed_sink,
    std::function<void(const reindex::SourceDocument&)> report_without_source)
    : source_(source),
      end_(end),
      stop_reading_(std::move(stop_reading)),
      failed_sink_(failed_sink),
      report_without_source_(std::move(report_without_source)) {}

template <typename Read>
absl::StatusOr<ConvertedDocument*> ShardDocumentStream::NextToHandOn(Read read) {
  while (true) {
    // Checked once per document (a coarse clock read and two atomics): cheap next to decoding
    // one.
    if (stop_reading_()) {
      stopped_early_ = true;
      return nullptr;
    }
    absl::StatusOr<ConvertedDocument*> next = read();
    if (!next.ok()) {
      read_failed_ = true;
      return MarkSnapshotReadFailure(next.status());
    }
    ConvertedDocument* converted = *next;
    if (converted == nullptr) return nullptr;
    SourceDocument& out = converted->doc;
    if (out.cursor >= end_) return nullptr;
    if (docs_read_ >= max_docs_) return nullptr;  // a trial's limit
    if (converted->kind == ConvertedDocument::Kind::kWithoutSource) {
      RFS_RETURN_IF_ERROR(RecordUnmigratable(out, "document_without_source",
                                             "the document has no stored _source", ""));
      ++without_source_;
      if (report_without_source_) report_without_source_(out);
      continue;
    }
    if (converted->kind == ConvertedDocument::Kind::kDeferred) {
      return absl::InternalError("a deferred document reached the worker's stream");
    }
    if (converted->kind == ConvertedDocument::Kind::kUnconvertible) {
      ConvertedDocument::Unconvertible& why = *converted->unconvertible;
      RFS_RETURN_IF_ERROR(
          RecordUnmigratable(out, why.error_type, why.reason, std::move(why.recorded_source)));
      ++conversion_failures_;
      continue;
    }
    const size_t source_bytes = reindex::SourceSize(out);
    ++docs_read_;
    if (converted->rebuilt) ++rebuilt_;
    if (converted->rebuilt_inexact) ++rebuilt_inexact_;
    if (out.op == reindex::BulkOp::kDelete) ++deletes_;
    bytes_read_ += source_bytes;
    if (counters_ != nullptr) {
      counters_->documents_read.Add();
      counters_->source_bytes_read.Add(source_bytes);
    }
    return converted;
  }
}

absl::StatusOr<std::optional<SourceDocument>> ShardDocumentStream::Next() {
  RFS_ASSIGN_OR_RETURN(ConvertedDocument * next,
                       NextToHandOn([this]() -> absl::StatusOr<ConvertedDocument*> {
                         RFS_ASSIGN_OR_RETURN(const bool more, source_.Next(converted_));
                         return more ? &converted_ : nullptr;
                       }));
  if (next == nullptr) return std::optional<SourceDocument>();
  return std::optional<SourceDocument>(std::move(next->doc));
}

absl::StatusOr<const SourceDocument*> ShardDocumentStream::NextInPlace(
    reindex::DocumentHolder& holder) {
  RFS_ASSIGN_OR_RETURN(ConvertedDocument * next,
                       NextToHandOn([&] { return source_.NextHeld(holder); }));
  return next == nullptr ? nullptr : &next->doc;
}

absl::Status ShardDocumentStream::RecordUnmigratable(const SourceDocument& doc,
                                                     std::string_view type, std::string_view reason,
                                                     std::string source) {
  if (failed_sink_ == nullptr) return absl::OkStatus();
  FailedDocument failed;
  failed.index = doc.index;
  failed.id = doc.id;
  failed.cursor = doc.cursor;
  failed.error_type = std::string(type);
  failed.reason = std::string(reason);
  failed.source = std::move(source);
  return failed_sink_->Record(std::span<const FailedDocument>(&failed, 1));
}

}  // namespace rfs::migration::internal
