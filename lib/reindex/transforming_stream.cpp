#include "rfs/reindex/transforming_stream.hpp"

#include <algorithm>
#include <map>
#include <string_view>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/reindex/bulk_format.hpp"

#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"

namespace rfs::reindex {

namespace json = boost::json;
using core::StrCat;

namespace {

// Stands in for an unparsed source in the transformer's input; a NUL keeps it from meeting a
// real string by chance.
constexpr std::string_view kSourcePlaceholder{"\0rfs-source:", 12};

}  // namespace

TransformingDocumentStream::TransformingDocumentStream(IDocumentStream& input,
                                                       transform::IJsonTransformer& transformer,
                                                       IFailedDocumentSink* failed_sink,
                                                       DocumentTransformOptions options)
    : input_(input),
      transformer_(transformer),
      failed_sink_(failed_sink),
      options_(options),
      parse_sources_(transformer.ReadsDocumentSource()) {}

absl::StatusOr<std::optional<SourceDocument>> TransformingDocumentStream::Next() {
  while (ready_.empty()) {
    if (input_done_) return std::optional<SourceDocument>();
    RFS_RETURN_IF_ERROR(Refill());
  }
  SourceDocument doc = std::move(ready_.front());
  ready_.pop_front();
  return std::optional<SourceDocument>(std::move(doc));
}

absl::Status TransformingDocumentStream::Refill() {
  std::vector<SourceDocument> batch;
  size_t bytes = 0;
  while (batch.size() < std::max<size_t>(1, options_.max_batch_docs) &&
         (batch.empty() || bytes < options_.max_batch_bytes)) {
    auto next = input_.Next();
    if (!next.ok()) return next.status();
    if (!next->has_value()) {
      input_done_ = true;
      break;
    }
    SourceDocument& doc = **next;
    if (doc.op == BulkOp::kDelete) {
      // Deletes have no source to transform: they go out in order, after the documents before
      // them.
      docs_in_ += batch.size() + 1;
      if (!batch.empty()) RFS_RETURN_IF_ERROR(TransformBatch(batch));
      docs_out_ += 1;
      ready_.push_back(std::move(doc));
      return absl::OkStatus();
    }
    // Checked before the source is taken out of its laid-out lines: a document too large to
    // transform is recorded from where it lies, never copied.
    const size_t size = SourceSize(doc);
    if (parse_sources_ && options_.transform_memory_bytes > 0 &&
        kTransformFootprint * size > options_.transform_memory_bytes) {
      docs_in_ += 1;
      RFS_RETURN_IF_ERROR(
          RecordFailure(doc, transform::TooLargeToTransform(size, kTransformFootprint * size,
                                                            options_.transform_memory_bytes)));
      continue;
    }
    // Transforms work on the source itself: lines laid out for a sink are of no use.
    if (doc.rendered) {
      doc.source = std::string(SourceBytes(doc));
      doc.rendered.reset();
    }
    bytes += size;
    batch.push_back(std::move(doc));
  }
  docs_in_ += batch.size();
  if (batch.empty()) return absl::OkStatus();
  return TransformBatch(batch);
}

namespace {

// Holds `bytes` of the shared budget for as long as it lives, once there is room for them (or
// nothing else is charged). The budget is released by the reindexer's senders and never by the
// thread waiting here, so the wait ends.
class BudgetHold {
 public:
  BudgetHold(core::MemoryBudget* budget, size_t bytes) : budget_(budget), bytes_(bytes) {
    if (budget_ == nullptr) return;
    budget_->WaitForRoom(bytes_);
    budget_->Charge(bytes_);
  }
  BudgetHold(const BudgetHold&) = delete;
  BudgetHold& operator=(const BudgetHold&) = delete;
  ~BudgetHold() {
    if (budget_ != nullptr) budget_->Release(bytes_);
  }

 private:
  core::MemoryBudget* const budget_;
  const size_t bytes_;
};

}  // namespace

absl::Status TransformingDocumentStream::TransformBatch(std::vector<SourceDocument>& batch) {
  size_t source_bytes = 0;
  for (const auto& doc : batch) source_bytes += doc.source.size();
  const BudgetHold hold(parse_sources_ ? options_.memory_budget : nullptr,
                        kTransformFootprint * source_bytes);
  std::vector<SourceDocument*> all;
  for (auto& doc : batch) all.push_back(&doc);
  auto outputs = Apply(all, batch.back().cursor);
  if (outputs.ok()) {
    docs_out_ += outputs->size();
    if (outputs->size() < batch.size()) docs_dropped_ += batch.size() - outputs->size();
    for (auto& out : *outputs) ready_.push_back(std::move(out));
    return absl::OkStatus();
  }
  // A stop interrupted the program: nothing failed, the work goes back unfinished.
  if (absl::IsAborted(outputs.status())) return outputs.status();
  if (transform::IsTransformBudgetExceeded(outputs.status())) {
    // The batch as a whole went over its time or memory: its documents fail together (retried
    // one by one, each could take the whole budget again).
    for (auto& doc : batch) RFS_RETURN_IF_ERROR(RecordFailure(doc, outputs.status()));
    return absl::OkStatus();
  }
  if (batch.size() > 1) {
    // Find the documents at fault: one by one, each keeping its own cursor.
    for (auto& doc : batch) {
      auto one = Apply({&doc}, doc.cursor);
      if (one.ok()) {
        docs_out_ += one->size();
        if (one->empty()) ++docs_dropped_;
        for (auto& out : *one) ready_.push_back(std::move(out));
        continue;
      }
      if (absl::IsAborted(one.status())) return one.status();
      RFS_RETURN_IF_ERROR(RecordFailure(doc, one.status()));
    }
    return absl::OkStatus();
  }
  return RecordFailure(batch.front(), outputs.status());
}

absl::Status TransformingDocumentStream::RecordFailure(SourceDocument& doc,
                                                       const absl::Status& error) {
  ++docs_failed_;
  if (failed_sink_ == nullptr) return absl::OkStatus();
  FailedDocument failed;
  failed.index = doc.index;
  failed.id = doc.id;
  failed.cursor = doc.cursor;
  failed.error_type = transform::IsTransformBudgetExceeded(error) ? "transform_budget_exceeded"
                                                                  : "transform_exception";
  failed.reason = std::string(error.message());
  if (doc.rendered) {
    failed.borrowed_source = SourceBytes(doc);
    failed.source_owner = std::move(doc.rendered);
  } else {
    failed.source = std::move(doc.source);
  }
  return failed_sink_->Record(std::span<const FailedDocument>(&failed, 1));
}

namespace {

// The transformers' input: each document's map, its source parsed, or a placeholder for it
// when the transformers leave sources alone (`parse_sources` false).
absl::StatusOr<json::array> TransformerInput(const std::vector<SourceDocument*>& docs,
                                             bool parse_sources) {
  json::array input;
  input.reserve(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) {
    const SourceDocument& doc = *docs[i];
    json::value source;
    if (parse_sources) {
      boost::system::error_code ec;
      // Real documents nest deeper than Boost.JSON's default of 32; 1000 is what the engines'
      // own parser (Jackson's StreamReadConstraints) allows.
      json::parse_options options;
      options.max_depth = 1000;
      source = json::parse(doc.source, ec, {}, options);
      if (ec) {
        return absl::InvalidArgumentError(
            StrCat("the _source of ", doc.index, "/", doc.id, " is not JSON: ", ec.message()));
      }
    } else {
      source = json::string(StrCat(kSourcePlaceholder, i));
    }
    input.push_back(transform::MakeDocumentMap(
        transform::DocumentOperation{doc.index, doc.id, doc.type, doc.routing}, std::move(source)));
  }
  return input;
}

// The transformers' outputs, one level of arrays flattened: a transform may map each document to
// a list, as the Java type-mapping script does.
std::vector<const json::value*> Flatten(const json::array& output) {
  std::vector<const json::value*> items;
  for (const json::value& item : output) {
    if (item.is_array()) {
      for (const json::value& inner : item.as_array()) items.push_back(&inner);
    } else {
      items.push_back(&item);
    }
  }
  return items;
}

// Source versions (--preserve-version) go to the outputs that keep an input's `_id` (a
// transform that renames the index or splits by type); an output with a new `_id` is another
// document, written without one.
void CarryVersions(const std::vector<SourceDocument*>& docs, std::vector<SourceDocument>& out) {
  if (std::any_of(docs.begin(), docs.end(), [](const SourceDocument* d) { return d->version; })) {
    std::map<std::string_view, int64_t> versions;
    for (const SourceDocument* d : docs) {
      if (d->version) versions.emplace(d->id, *d->version);
    }
    for (SourceDocument& doc : out) {
      if (doc.op != BulkOp::kIndex) continue;
      if (auto it = versions.find(doc.id); it != versions.end()) doc.version = it->second;
    }
  }
}

}  // namespace

absl::StatusOr<std::vector<SourceDocument>> TransformingDocumentStream::Apply(
    std::vector<SourceDocument*> docs, uint64_t cursor) {
  RFS_ASSIGN_OR_RETURN(json::array input, TransformerInput(docs, parse_sources_));
  RFS_ASSIGN_OR_RETURN(json::value output, transformer_.Transform(json::value(std::move(input))));
  if (!output.is_array()) {
    return absl::InvalidArgumentError(StrCat("the transformers returned ",
                                             json::serialize(output).substr(0, 100),
                                             " instead of an array of documents"));
  }
  std::vector<SourceDocument> out;
  // (output, input) pairs of sources passed through, filled in once every output is valid: the
  // inputs stay intact for the one-by-one retry if this group fails.
  std::vector<std::pair<size_t, size_t>> source_of;
  out.reserve(output.as_array().size());
  const std::vector<const json::value*> items = Flatten(output.as_array());
  for (const json::value* item : items) {
    RFS_ASSIGN_OR_RETURN(transform::DocumentOperation op, transform::ReadDocumentOperation(*item));
    const json::value* document = item->as_object().if_contains("document");
    if (document == nullptr || document->is_null()) {
      return absl::InvalidArgumentError(StrCat("the transformed document ", op.index, "/", op.id,
                                               " has no \"document\" (its source)"));
    }
    SourceDocument doc;
    doc.index = std::move(op.index);
    doc.id = std::move(op.id);
    doc.type = std::move(op.type);
    doc.routing = std::move(op.routing);
    doc.cursor = cursor;
    // The documents of one stream share their action (a data stream's backing index: create).
    doc.op = docs.front()->op;
    const json::string* text = document->if_string();
    if (!parse_sources_ && text != nullptr && text->size() > kSourcePlaceholder.size() &&
        std::string_view(*text).substr(0, kSourcePlaceholder.size()) == kSourcePlaceholder) {
      size_t k = 0;
      for (char c : std::string_view(*text).substr(kSourcePlaceholder.size())) {
        k = k * 10 + static_cast<size_t>(c - '0');
      }
      if (k >= docs.size()) return absl::InternalError("source placeholder out of range");
      source_of.emplace_back(out.size(), k);
    } else if (document->is_object()) {
      doc.source = transform::SerializeJson(*document);
    } else {
      return absl::InvalidArgumentError(StrCat("the transformed document ", doc.index, "/", doc.id,
                                               " has a \"document\" that is not an object"));
    }
    out.push_back(std::move(doc));
  }
  CarryVersions(docs, out);
  // Each input's source moves to its first output; a split's further outputs copy it.
  std::vector<size_t> holder(docs.size(), SIZE_MAX);
  for (auto [output, input] : source_of) {
    if (holder[input] == SIZE_MAX) {
      out[output].source = std::move(docs[input]->source);
      holder[input] = output;
    } else {
      out[output].source = out[holder[input]].source;
    }
  }
  return out;
}

}  // namespace rfs::reindex
