#include "rfs/migration/redrive.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <thread>

#include "rfs/coordination/opensearch_work_coordinator.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/json_text.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/encoding.hpp"
#include "rfs/net/gzip.hpp"
#include "rfs/reindex/transforming_stream.hpp"

#include "boost/json.hpp"
#include "migration/document_pipeline_internal.hpp"

namespace rfs::migration {

namespace json = boost::json;
using core::StrCat;

namespace {

constexpr std::string_view kSetupItem = "redrive_setup";
// Refused records named one by one (the rest are counted).
constexpr size_t kRefusalsNamed = 20;
using internal::kSourceConversionError;
// Records whose source is the document as read, before transforms.
bool SourceAsRead(std::string_view error_type) {
  return error_type.starts_with("transform") || error_type == kSourceConversionError;
}

// A record of a source that could not be made JSON when it was read keeps its bytes in base64
// until an operator mends it into a JSON object; sent as it is, the target would only refuse it.
bool UnmendedSource(const RedriveRecord& record) {
  if (record.error_type != kSourceConversionError) return false;
  const size_t first = record.doc.source.find_first_not_of(" \t\r\n");
  return first == std::string::npos || record.doc.source[first] != '{';
}

std::string Text(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

// {"index": {"_index":..,"_id":..,"routing":..}} -> the document's operation, index, id, routing.
// Only the operations a redrive carries out: `index` and `create`, and a `delete` of the very
// document the record is about (rfs records a delta's delete the target refused that way). Any
// other action is refused: `refusal` says why (false is returned when `action` is no bulk action
// line at all).
bool ApplyAction(const json::value& action, reindex::SourceDocument& doc, std::string& refusal) {
  if (!action.is_object() || action.as_object().size() != 1) return false;
  const auto& [op, meta] = *action.as_object().begin();
  if (!meta.is_object()) return false;
  const json::object& m = meta.as_object();
  if (op == "index") {
    doc.op = reindex::BulkOp::kIndex;
  } else if (op == "create") {
    doc.op = reindex::BulkOp::kCreate;
  } else if (op == "delete") {
    // A record of another document's delete (or of one without an id) is no record rfs made.
    if (Text(m, "_index") != doc.index || Text(m, "_id") != doc.id || doc.id.empty()) {
      refusal = StrCat("a delete of ", Text(m, "_index"), "/", Text(m, "_id"), " in the record of ",
                       doc.index, "/", doc.id,
                       ": only deletes of the record's own document are redriven");
      return true;
    }
    doc.op = reindex::BulkOp::kDelete;
  } else {
    refusal = StrCat("the action '", std::string_view(op),
                     "': a redrive sends only index and create (and rfs's own deletes)");
    return true;
  }
  if (std::string index = Text(m, "_index"); !index.empty()) doc.index = std::move(index);
  if (std::string id = Text(m, "_id"); !id.empty()) doc.id = std::move(id);
  if (std::string routing = Text(m, "routing"); !routing.empty()) doc.routing = std::move(routing);
  if (std::string type = Text(m, "_type"); !type.empty()) doc.type = std::move(type);
  // A document sent with its source version (--preserve-version) goes again with it, so that a
  // redrive never overwrites a newer copy the target got since.
  if (const json::value* version = m.if_contains("version");
      doc.op == reindex::BulkOp::kIndex && version != nullptr && version->is_int64() &&
      Text(m, "version_type") == "external") {
    doc.version = version->as_int64();
  }
  return true;
}

// The indices rfs keeps its own state in (coordination, redrive, RfsWorker's records).
bool IsStateIndex(std::string_view index) {
  return index.starts_with(coordination::kWorkingStateIndex);
}

// Where the JSON value starting at `at` in `text` (valid JSON) ends.
size_t ValueEnd(std::string_view text, size_t at) {
  int depth = 0;
  for (size_t i = at; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      if (depth == 0) return i + 1;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return i;  // the end of the enclosing object
      if (--depth == 0) return i + 1;
    } else if (c == ',' && depth == 0) {
      return i;
    }
  }
  return text.size();
}

// The text of requestItem's "document" in a record line, as it was written. A key's quotes are
// never escaped, and a '"' inside a string always is, so the first `"document":` after
// `"requestItem":{` is the key of requestItem itself (its other members, the operation's
// metadata, hold no object with that key); the caller checks that the text is the value.
std::optional<std::string_view> RawDocumentText(std::string_view line) {
  const size_t item = line.find("\"requestItem\":{");
  if (item == std::string_view::npos) return std::nullopt;
  const size_t key = line.find("\"document\":", item);
  if (key == std::string_view::npos) return std::nullopt;
  const size_t begin = key + 11;
  return line.substr(begin, ValueEnd(line, begin) - begin);
}

// requestItem as rfs wrote it before it followed the Java record: the bulk lines as sent, the
// action line (when there was one) and the source.
void ParseRequestLines(const std::string& request, RedriveRecord& record) {
  const size_t newline = request.find('\n');
  std::string first = request.substr(0, newline);
  std::string rest = newline == std::string::npos ? "" : request.substr(newline + 1);
  while (!rest.empty() && rest.back() == '\n') rest.pop_back();
  if (rest.empty()) {
    record.doc.source = std::move(first);  // no action line: the source alone
  } else {
    // Two lines: the first is the action sent, whatever it looks like.
    auto action = net::ParseJson(first);
    if (!action || !ApplyAction(*action, record.doc, record.refusal)) {
      record.refusal = StrCat("its first line is no bulk action: ", first.substr(0, 200));
    }
    record.doc.source = std::move(rest);
  }
}

// requestItem as the Java tool writes it (OpenSearchClient.emitFailedDocumentStreamRecord, a
// BulkOperationSpec): {"schema":..,"operation_type":"index","operation":{"_id","_index",..},
// "include_document":true,"document":{..}}. The operation is the bulk action's metadata.
void ParseRequestItem(const json::object& item, std::string_view line, RedriveRecord& record) {
  const std::string type = Text(item, "operation_type");
  const json::value* operation = item.if_contains("operation");
  if (operation != nullptr && operation->is_object()) {
    json::object meta = operation->as_object();
    std::string op = type.empty() ? std::string("index") : type;
    if (op == "index" && Text(meta, "op_type") == "create") op = "create";
    meta.erase("op_type");
    const json::value action = json::object{{op, std::move(meta)}};
    if (!ApplyAction(action, record.doc, record.refusal) && record.refusal.empty()) {
      record.refusal = StrCat("its requestItem holds no bulk operation: ",
                              core::JsonText(*operation).substr(0, 200));
    }
  } else {
    record.refusal = "its requestItem holds no operation";
  }
  if (const json::value* unreadable = item.if_contains("rfs_unreadable_action")) {
    record.refusal =
        StrCat("its action is no bulk action line: ", core::JsonText(*unreadable).substr(0, 200));
  }
  const json::value* document = item.if_contains("document");
  if (document == nullptr || document->is_null()) {
    record.doc.source.clear();
  } else if (document->is_string()) {
    record.doc.source = std::string(document->as_string());  // a source that was no JSON
  } else if (auto text = RawDocumentText(line); text && net::ParseJson(*text, 1000) == *document) {
    record.doc.source = std::string(*text);  // as it was written: a re-print may change numbers
  } else {
    record.doc.source = core::JsonText(*document);
  }
}

absl::StatusOr<RedriveRecord> ParseRecord(std::string_view line, std::string_view file,
                                          size_t number) {
  // A document nests as deep as the engines' parser allows, two levels below the record's own.
  auto parsed = net::ParseJson(line, /*max_depth=*/1002);
  if (!parsed || !parsed->is_object()) {
    return absl::DataLossError(StrCat(file, ": line ", number, " is not a JSON object"));
  }
  const json::object& o = parsed->as_object();
  RedriveRecord record;
  record.doc.cursor = number;
  if (o.contains("requestItem")) {
    // The failed-document stream (the Java tool's record).
    record.doc.index = Text(o, "targetIndex");
    record.doc.id = Text(o, "documentId");
    record.error_type = Text(o, "failureType");
    if (const json::value& item = o.at("requestItem"); item.is_object()) {
      ParseRequestItem(item.as_object(), line, record);
    } else {
      ParseRequestLines(Text(o, "requestItem"), record);
    }
  } else {
    record.doc.index = Text(o, "index");
    record.doc.id = Text(o, "id");
    record.error_type = Text(o, "error_type");
    // An empty action (a document that failed before it was sent) leaves the record's index
    // operation; any other must be a bulk action line.
    if (const json::value* action = o.if_contains("action");
        action != nullptr && !action->is_null() &&
        !(action->is_string() && action->as_string().empty())) {
      std::optional<json::value> inner;
      if (action->is_string()) {
        if (auto parsed = net::ParseJson(action->as_string())) inner = *std::move(parsed);
      } else {
        inner = *action;
      }
      if (!inner || !ApplyAction(*inner, record.doc, record.refusal)) {
        record.refusal =
            StrCat("its action is no bulk action line: ", core::JsonText(*action).substr(0, 200));
      }
    }
    const json::value* source = o.if_contains("source");
    if (source == nullptr || source->is_null()) {
      record.doc.source.clear();
    } else if (source->is_string()) {
      // Written as a string when it was no JSON (or held line breaks): its text as it was.
      record.doc.source = std::string(source->as_string());
    } else {
      record.doc.source = core::JsonText(*source);
    }
  }
  if (record.doc.index.empty() ||
      (record.doc.id.empty() && record.doc.op != reindex::BulkOp::kIndex)) {
    return absl::DataLossError(StrCat(file, ": line ", number, " names no index or id"));
  }
  if (record.refusal.empty() && IsStateIndex(record.doc.index)) {
    record.refusal = StrCat("it writes into ", record.doc.index, ", where rfs keeps its own state");
  }
  if (!record.refusal.empty()) {
    record.refusal = StrCat(file, ": line ", number, " (", record.doc.index, "/", record.doc.id,
                            ") is refused: ", record.refusal);
  }
  record.needs_transform = SourceAsRead(record.error_type);
  record.has_source = !record.doc.source.empty() || record.doc.op == reindex::BulkOp::kDelete;
  return record;
}

// A work item id for a file: its path when that is a valid id, else a hash of it (found again by
// listing).
std::string ItemIdFor(const std::string& path) {
  if (coordination::ValidateWorkItemId(path).ok() && path != kSetupItem) return path;
  return StrCat("file-", std::hash<std::string>{}(path));
}

absl::Status ListRecordFiles(const snapshot::ISourceRepo& source, std::vector<std::string>& out) {
  RFS_ASSIGN_OR_RETURN(auto blobs, source.ListBlobsBelow(""));
  for (std::string& blob : blobs) {
    if (blob.ends_with(".ndjson.gz")) out.push_back(std::move(blob));
  }
  return absl::OkStatus();
}

class Redriver {
 public:
  Redriver(const snapshot::ISourceRepo& source, coordination::IWorkCoordinator& coordinator,
           const SinkFactory& sinks, reindex::IFailedDocumentSink& failed_sink,
           transform::IJsonTransformer* transformer, core::IClock& clock,
           const RedriveOptions& options)
      : source_(source),
        coordinator_(coordinator),
        sinks_(sinks),
        failed_sink_(failed_sink),
        transformer_(transformer),
        clock_(clock),
        options_(options) {}

  const RedriveSummary& summary() const { return summary_; }

  absl::StatusOr<RedriveSummary> Run() {
    RFS_RETURN_IF_ERROR(coordinator_.Setup());
    RFS_RETURN_IF_ERROR(SetUpItems());
    while (true) {
      RFS_ASSIGN_OR_RETURN(auto outcome, coordinator_.AcquireNextWorkItem(options_.initial_lease));
      if (std::holds_alternative<coordination::NoAvailableWork>(outcome)) break;
      if (auto* busy = std::get_if<coordination::AllLeasedElsewhere>(&outcome)) {
        // Others hold the rest: wait for them to finish (or for a lease of one that died).
        clock_.SleepFor(std::clamp<coordination::Duration>(
            busy->retry_after, std::chrono::milliseconds(200), std::chrono::seconds(5)));
        continue;
      }
      if (!std::holds_alternative<coordination::Acquired>(outcome)) continue;
      const coordination::Lease lease = std::get<coordination::Acquired>(outcome).lease;
      if (absl::Status redriven = RedriveItem(lease); !redriven.ok()) {
        // Given back at once for the next redrive (best effort: else its lease runs out).
        coordinator_.ReleaseWorkItem(lease).IgnoreError();
        return redriven;
      }
      absl::Status completed = coordinator_.CompleteWorkItem(lease);
      if (!completed.ok() && !coordination::IsLeaseLost(completed)) return completed;
    }
    return summary_;
  }

 private:
  // The first worker lists the files and creates one item each; the others wait for it.
  absl::Status SetUpItems() {
    while (true) {
      RFS_ASSIGN_OR_RETURN(auto outcome,
                           coordinator_.AcquireWorkItem(kSetupItem, options_.initial_lease));
      if (std::holds_alternative<coordination::AlreadyCompleted>(outcome)) return absl::OkStatus();
      if (auto* busy = std::get_if<coordination::AllLeasedElsewhere>(&outcome)) {
        clock_.SleepFor(std::clamp<coordination::Duration>(
            busy->retry_after, std::chrono::milliseconds(100), std::chrono::seconds(2)));
        continue;
      }
      const coordination::Lease lease = std::get<coordination::Acquired>(outcome).lease;
      std::vector<std::string> files;
      RFS_RETURN_IF_ERROR(ListRecordFiles(source_, files));
      for (const std::string& file : files) {
        RFS_RETURN_IF_ERROR(coordinator_.CreateUnassignedWorkItem(ItemIdFor(file), 0).status());
      }
      Progress(StrCat("redrive of ", options_.source_description, ": ", files.size(),
                      " failed-document files"));
      return coordinator_.CompleteWorkItem(lease);
    }
  }

  absl::StatusOr<std::string> PathOf(const std::string& id) {
    if (!id.starts_with("file-")) return id;
    std::vector<std::string> files;
    RFS_RETURN_IF_ERROR(ListRecordFiles(source_, files));
    for (const std::string& file : files) {
      if (ItemIdFor(file) == id) return file;
    }
    return absl::NotFoundError(StrCat("no failed-document file for work item ", id));
  }

  // A file that cannot be read or parsed (a writer killed before its first record leaves an
  // empty .gz, one killed mid-write a cut one) is named and skipped: the rest go on. Errors a
  // retry may fix (the store, the network) end the run instead.
  absl::Status SkipBadFile(const std::string& path, const absl::Status& why) {
    if (core::IsRetryable(why)) return why;
    std::string_view reason(why.message().data(), why.message().size());
    if (reason.starts_with(path) && reason.substr(path.size()).starts_with(": ")) {
      reason.remove_prefix(path.size() + 2);  // the path is said once
    }
    summary_.bad_files.push_back({path, std::string(reason)});
    Progress(StrCat(path, ": skipped, it cannot be read: ", reason));
    return absl::OkStatus();
  }

  absl::Status RedriveItem(const coordination::Lease& lease) {
    auto found = PathOf(lease.work_item_id);
    if (!found.ok()) return SkipBadFile(lease.work_item_id, found.status());
    const std::string& path = *found;
    auto bytes = source_.ReadBlob(path);
    if (!bytes.ok()) return SkipBadFile(path, bytes.status());
    if (bytes->empty()) {
      return SkipBadFile(path, absl::DataLossError(
                                   "the file is empty (a writer killed before its first record?)"));
    }
    auto parsed = ParseFailedDocumentRecords(
        std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()), path);
    if (!parsed.ok()) return SkipBadFile(path, parsed.status());
    std::vector<RedriveRecord>& records = *parsed;
    // By target index (each has its sink), in file order; records that need the transforms
    // apart from those that do not.
    std::map<std::pair<std::string, bool>, std::vector<reindex::SourceDocument>> groups;
    std::vector<reindex::FailedDocument> unsendable;
    uint64_t refused = 0;
    for (RedriveRecord& record : records) {
      ++summary_.records;
      ++summary_.by_index[record.doc.index].records;
      if (!record.refusal.empty()) {
        // Never sent; named (the first few) and counted.
        ++refused;
        ++summary_.refused;
        ++summary_.by_index[record.doc.index].refused;
        if (summary_.refusals.size() < kRefusalsNamed) {
          summary_.refusals.push_back(record.refusal);
          Progress(record.refusal);
        }
        continue;
      }
      if (!record.has_source || UnmendedSource(record)) {
        reindex::FailedDocument again;
        again.index = record.doc.index;
        again.id = record.doc.id;
        again.cursor = record.doc.cursor;
        again.error_type = record.error_type;
        if (record.has_source) {
          again.reason =
              "redrive: the source could not be made JSON when it was read; the record keeps its "
              "bytes in base64 until its source is mended into a JSON object";
          again.source = std::move(record.doc.source);
        } else {
          again.reason = "redrive: the record holds no source to send";
        }
        unsendable.push_back(std::move(again));
        continue;
      }
      const bool transform = record.needs_transform && transformer_ != nullptr;
      groups[{record.doc.index, transform}].push_back(std::move(record.doc));
    }
    if (!unsendable.empty()) {
      RFS_RETURN_IF_ERROR(failed_sink_.Record(unsendable));
      summary_.still_failed += unsendable.size();
      for (const auto& f : unsendable) ++summary_.by_index[f.index].still_failed;
    }
    uint64_t accepted = 0, failed = 0;
    for (auto& [key, docs] : groups) {
      RFS_RETURN_IF_ERROR(
          SendGroup(key.first, key.second, std::move(docs), lease, path, accepted, failed));
    }
    ++summary_.files;
    Progress(StrCat(path, ": ", records.size(), " records, ", accepted, " accepted, ",
                    failed + unsendable.size(), " still failed",
                    refused > 0 ? StrCat(", ", refused, " refused") : std::string()));
    return absl::OkStatus();
  }

  // One group of a file's records to `index`'s sink (through the transforms when `transform`),
  // the lease renewed at half of it as acknowledgements come; counted into the summary and into
  // `accepted` and `failed` as the group ends.
  absl::Status SendGroup(const std::string& index, bool transform,
                         std::vector<reindex::SourceDocument> docs,
                         const coordination::Lease& lease, const std::string& path,
                         uint64_t& accepted, uint64_t& failed) {
    RFS_ASSIGN_OR_RETURN(auto sink, sinks_(index, "redrive"));
    reindex::VectorDocumentStream input(std::move(docs));
    std::optional<reindex::TransformingDocumentStream> transformed;
    if (transform) {
      transformed.emplace(input, *transformer_, &failed_sink_, options_.transform_batch);
    }
    reindex::DocumentReindexer reindexer(*sink, &failed_sink_, clock_, options_.reindexer);
    // A long file keeps its lease: renewed at half of it as acknowledgements come.
    coordination::Lease current = lease;
    auto renew_at = clock_.Now() + (lease.local_deadline() - lease.local_start) / 2;
    auto on_progress = [&](const reindex::AcknowledgedProgress&) -> absl::Status {
      if (clock_.Now() < renew_at) return absl::OkStatus();
      RFS_ASSIGN_OR_RETURN(current, coordinator_.RenewLease(current, {}));
      renew_at = clock_.Now() + (current.local_deadline() - current.local_start) / 2;
      return absl::OkStatus();
    };
    auto result = transformed ? reindexer.Reindex(*transformed, on_progress)
                              : reindexer.Reindex(input, on_progress);
    if (!result.ok()) return core::WithContext(result.status(), StrCat("redriving ", path));
    const uint64_t transform_failed = transformed ? transformed->docs_failed() : 0;
    // A document the target holds in a newer version (409 to a versioned write) is where it
    // should be: accepted.
    const uint64_t group_accepted =
        result->docs_written + result->docs_allowed_errors + result->docs_already_newer;
    const uint64_t group_failed = result->docs_failed + transform_failed;
    // Counted as each group is done, so a run that ends in an error still says what went.
    accepted += group_accepted;
    failed += group_failed;
    summary_.accepted += group_accepted;
    summary_.still_failed += group_failed;
    summary_.by_index[index].accepted += group_accepted;
    summary_.by_index[index].still_failed += group_failed;
    if (transformed) summary_.dropped += transformed->docs_dropped();
    return absl::OkStatus();
  }

  void Progress(const std::string& line) {
    if (options_.on_progress) options_.on_progress(line);
  }

  const snapshot::ISourceRepo& source_;
  coordination::IWorkCoordinator& coordinator_;
  const SinkFactory& sinks_;
  reindex::IFailedDocumentSink& failed_sink_;
  transform::IJsonTransformer* transformer_;
  core::IClock& clock_;
  const RedriveOptions& options_;
  RedriveSummary summary_;
};

}  // namespace

absl::StatusOr<std::vector<RedriveRecord>> ParseFailedDocumentRecords(std::string_view gzip_bytes,
                                                                      std::string_view file) {
  auto text = net::GzipDecompress(gzip_bytes);
  if (!text.ok()) return core::WithContext(text.status(), file);
  std::vector<RedriveRecord> out;
  size_t number = 0;
  std::string_view rest = *text;
  while (!rest.empty()) {
    const size_t newline = rest.find('\n');
    std::string_view line = rest.substr(0, newline);
    rest = newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);
    ++number;
    if (line.empty()) continue;
    RFS_ASSIGN_OR_RETURN(RedriveRecord record, ParseRecord(line, file, number));
    out.push_back(std::move(record));
  }
  return out;
}

absl::StatusOr<RedriveSummary> RedriveFailedDocuments(
    const snapshot::ISourceRepo& source, coordination::IWorkCoordinator& coordinator,
    const SinkFactory& sinks, reindex::IFailedDocumentSink& failed_sink,
    transform::IJsonTransformer* transformer, core::IClock& clock, const RedriveOptions& options,
    RedriveSummary* so_far) {
  Redriver redriver(source, coordinator, sinks, failed_sink, transformer, clock, options);
  auto summary = redriver.Run();
  if (so_far != nullptr) *so_far = redriver.summary();
  return summary;
}

}  // namespace rfs::migration
