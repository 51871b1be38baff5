// S3FailedDocumentStream (see failed_document_stream.hpp). The key layout and record fields
// follow opensearch-migrations' S3FailedDocumentStreamSink and FailedDocumentStreamRecord.
#include "rfs/migration/failed_document_stream.hpp"

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

}  // namespace

std::string FailedDocumentStreamRecord(const reindex::FailedDocument& doc,
                                       const FailedDocumentStreamOptions& options,
                                       std::chrono::system_clock::time_point now) {
  boost::json::object response{{"status", doc.status}};
  if (!doc.error_type.empty() || !doc.reason.empty()) {
    response["error"] = boost::json::object{{"type", doc.error_type}, {"reason", doc.reason}};
  }
  boost::json::object record{
      {"sessionId", options.session_id},
      {"workerId", options.worker_id},
      {"workItemId", nullptr},
      {"targetIndex", doc.index},
      {"documentId", doc.id},
      {"failureType", doc.error_type},
      {"failureClass", "NON_RETRYABLE"},
      {"timestamp", Utc(now, "%Y-%m-%dT%H:%M:%SZ")},
      {"requestItem", StrCat(doc.action, doc.action.empty() ? "" : "\n", doc.SourceText(), "\n")},
      {"responseItem", std::move(response)},
      {"cursor", doc.cursor}};
  return core::JsonText(record);
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
