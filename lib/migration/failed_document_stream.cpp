// S3FailedDocumentStream (see failed_document_stream.hpp). The key layout and record fields
// follow opensearch-migrations' S3FailedDocumentStreamSink and FailedDocumentStreamRecord.
#include "rfs/migration/failed_document_stream.hpp"

#include <cstdio>
#include <ctime>
#include <map>

#include <boost/json.hpp>

#include "rfs/core/json_text.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/encoding.hpp"
#include "rfs/net/gzip.hpp"

namespace rfs::migration {
namespace {

using core::StrCat;

std::string Utc(std::chrono::system_clock::time_point now, const char* format) {
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[40];
  std::strftime(buffer, sizeof(buffer), format, &tm);
  return buffer;
}

// As Java's Instant.toString() prints a time: "2026-12-03T10:15:30.123Z", to the millisecond
// here, and without a fraction on a whole second.
std::string JavaInstant(std::chrono::system_clock::time_point now) {
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  if (millis == 0) return Utc(now, "%Y-%m-%dT%H:%M:%SZ");
  char fraction[8];
  std::snprintf(fraction, sizeof(fraction), ".%03dZ", static_cast<int>(millis));
  return Utc(now, "%Y-%m-%dT%H:%M:%S") + fraction;
}

}  // namespace

std::string FailedDocumentStreamRecord(const reindex::FailedDocument& doc,
                                       const FailedDocumentStreamOptions& options,
                                       std::chrono::system_clock::time_point now) {
  // The action sent, {"index": {"_index":..,"_id":..,"routing":..}}: its key is the operation and
  // its object the operation's metadata, as the Java record's requestItem holds them. A document
  // that failed before it was sent has no action: it would have been indexed under its own id.
  std::string operation_type = "index";
  std::string response_key = "index";  // the bulk response keys an item by the action run
  boost::json::object operation{{"_id", doc.id}, {"_index", doc.index}};
  bool action_read = doc.action.empty();
  if (auto action = net::ParseJson(doc.action); action && action->is_object() &&
                                                action->as_object().size() == 1 &&
                                                action->as_object().begin()->value().is_object()) {
    const auto& [op, meta] = *action->as_object().begin();
    operation = meta.as_object();
    response_key = std::string(op);
    if (op == "create") {
      operation["op_type"] = "create";  // Java's IndexOp with an op_type override
    } else {
      operation_type = std::string(op);
    }
    action_read = true;
  }
  const bool with_document = operation_type != "delete";
  boost::json::object request{{"schema", "rfs-opensearch-bulk-v1"},
                              {"operation", operation},
                              {"operation_type", operation_type},
                              {"include_document", with_document}};
  // An action that is no bulk action line is kept as it was, so a redrive refuses the record
  // instead of indexing the document under its id.
  if (!action_read) request["rfs_unreadable_action"] = doc.action;
  // The target's answer for the item, as a bulk response holds it.
  boost::json::object item{{"_index", doc.index}, {"_id", doc.id}, {"status", doc.status}};
  if (!doc.error_type.empty() || !doc.reason.empty()) {
    item["error"] = boost::json::object{{"type", doc.error_type}, {"reason", doc.reason}};
  }
  boost::json::value failure_type = nullptr;
  if (!doc.error_type.empty()) failure_type = doc.error_type;
  boost::json::object record{{"sessionId", options.session_id},
                             {"workerId", options.worker_id},
                             {"workItemId", nullptr},
                             {"targetIndex", doc.index},
                             {"documentId", doc.id},
                             {"failureType", std::move(failure_type)},
                             {"failureClass", "NON_RETRYABLE"},
                             {"timestamp", JavaInstant(now)},
                             {"responseItem", boost::json::object{{response_key, std::move(item)}}},
                             {"cursor", doc.cursor},
                             {"requestItem", std::move(request)}};
  std::string text = core::JsonText(record);
  if (!with_document) return text;
  // The document goes last, from where it lies: its own text when it is one line of JSON (a
  // parsed and re-printed source is not the document that failed), else as a JSON string.
  text.resize(text.size() - 2);  // the closing braces of requestItem and the record
  const std::string_view source = doc.SourceText();
  text += ",\"document\":";
  if (reindex::IsRecordableAsIs(source)) {
    text.reserve(text.size() + source.size() + 2);
    text += source;
  } else {
    text +=
        core::JsonText(boost::json::value(boost::json::string_view(source.data(), source.size())));
  }
  text += "}}";
  return text;
}

absl::StatusOr<std::shared_ptr<cloud::RangedObjectRepo>> OpenFailedDocumentStore(
    const FailedDocumentStreamOptions& options, std::string_view below) {
  std::string prefix = options.prefix;
  if (!prefix.empty() && !prefix.ends_with('/')) prefix += "/";
  const std::string uri = StrCat(options.scheme, "://", options.bucket, "/", prefix, below);
  if (options.scheme == "s3") return s3::S3Repo::Open(uri, options.s3);
  if (options.scheme == "gs") return cloud::GcsRepo::Open(uri, options.gcs);
  if (options.scheme == "az") return cloud::AzureRepo::Open(uri, options.azure);
  return absl::InvalidArgumentError(
      StrCat("the failed-document stream goes to s3, gs or az, not ", options.scheme));
}

absl::StatusOr<std::unique_ptr<S3FailedDocumentStream>> S3FailedDocumentStream::Open(
    FailedDocumentStreamOptions options) {
  if (options.bucket.empty()) {
    return absl::InvalidArgumentError("the failed-document stream needs a bucket");
  }
  if (!options.prefix.empty() && !options.prefix.ends_with('/')) options.prefix += "/";
  if (options.session_id.empty()) options.session_id = StrCat("worker-", options.worker_id);
  RFS_ASSIGN_OR_RETURN(auto bucket, OpenFailedDocumentStore(options));
  return std::unique_ptr<S3FailedDocumentStream>(
      new S3FailedDocumentStream(std::move(options), std::move(bucket)));
}

std::string S3FailedDocumentStream::location() const {
  return StrCat(options_.scheme, "://", options_.bucket, "/", options_.prefix,
                "session=", options_.session_id, "/");
}

uint64_t S3FailedDocumentStream::objects_written() const { return objects_.load(); }

absl::Status S3FailedDocumentStream::Record(std::span<const reindex::FailedDocument> docs) {
  const auto now = std::chrono::system_clock::now();
  // One object per target index (and per max_object_bytes of records).
  std::map<std::string, std::vector<std::string>> by_index;
  for (const auto& doc : docs) {
    by_index[doc.index.empty() ? "unknown-index" : doc.index].push_back(
        FailedDocumentStreamRecord(doc, options_, now));
  }
  for (const auto& [index, records] : by_index) {
    std::string lines;
    auto flush = [&]() -> absl::Status {
      if (lines.empty()) return absl::OkStatus();
      RFS_ASSIGN_OR_RETURN(std::string gz, net::GzipCompress(lines, /*level=*/6));
      const std::string key =
          StrCat("session=", options_.session_id, "/index=", index, "/worker=", options_.worker_id,
                 "/failed-document-stream-", Utc(now, "%Y%m%dT%H%M%SZ"), "-",
                 sequence_.fetch_add(1), ".ndjson.gz");
      RFS_RETURN_IF_ERROR(bucket_->PutObject(key, std::move(gz), "application/gzip"));
      objects_.fetch_add(1);
      lines.clear();
      return absl::OkStatus();
    };
    for (const auto& record : records) {
      if (!lines.empty() && lines.size() + record.size() + 1 > options_.max_object_bytes) {
        RFS_RETURN_IF_ERROR(flush());
      }
      lines.append(record).push_back('\n');
    }
    RFS_RETURN_IF_ERROR(flush());
  }
  return absl::OkStatus();
}

}  // namespace rfs::migration
