// The failed-document stream in S3, as the Java DocumentsFromSnapshotMigration writes it
// (--failed-document-stream-s3-*), or in GCS or Azure Blob Storage the same way
// (--failed-document-stream-gcs-*, -azure-*): gzip NDJSON objects under
//   <prefix>session=<session>/index=<index>/worker=<worker>/
//       failed-document-stream-<yyyyMMdd'T'HHmmss'Z'>-<seq>.ndjson.gz
// one JSON record per line with the Java record's fields (sessionId, workerId, workItemId,
// targetIndex, documentId, failureType, failureClass, timestamp, requestItem, responseItem) in
// the shapes its code gives them (docs/tools.md: requestItem the bulk operation with its
// "operation" metadata and "document", responseItem the bulk response's item), plus rfs's
// "cursor". Each Record call (one batch) is uploaded before it returns, so a batch is
// acknowledged only once its failed documents are in S3; an upload that fails after its retries
// fails the batch, and the work item is redone by a successor (at least once, as in Java).
// Thread safety: Record may be called concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "rfs/cloud/azure_repo.hpp"
#include "rfs/cloud/gcs_repo.hpp"
#include "rfs/reindex/failed_document_sink.hpp"
#include "rfs/s3/s3_repo.hpp"

#include "absl/status/statusor.h"

namespace rfs::migration {

struct FailedDocumentStreamOptions {
  /// The store: "s3" (default), "gs" (--failed-document-stream-gcs-*, with `gcs`'s endpoint and
  /// credentials) or "az" (--failed-document-stream-azure-*, with `azure`'s account, endpoint
  /// and credentials).
  std::string scheme = "s3";
  /// --failed-document-stream-s3-bucket (-gcs-bucket, -azure-container); required.
  std::string bucket;
  /// --failed-document-stream-s3-prefix; a trailing '/' is added when missing.
  std::string prefix = "rfs-failed-document-stream/";
  /// Region and endpoint (--failed-document-stream-s3-region/-endpoint, falling back to the
  /// snapshot's --s3-region/--s3-endpoint); credentials come from the AWS chain.
  s3::S3Options s3;
  cloud::GcsOptions gcs;
  cloud::AzureOptions azure;
  /// --failed-document-stream-session-id (default ARGO_WORKFLOW_UID, then "worker-<worker id>").
  std::string session_id;
  std::string worker_id;
  /// --failed-document-stream-max-buffer-bytes: an object holds at most this much NDJSON
  /// before compression (a larger batch is split into several objects).
  uint64_t max_object_bytes = uint64_t{64} << 20;
};

/// The stream's bucket or container, below `options.prefix` and then `below` ("" or ending in
/// '/'), opened with the store's options.
absl::StatusOr<std::shared_ptr<cloud::RangedObjectRepo>> OpenFailedDocumentStore(
    const FailedDocumentStreamOptions& options, std::string_view below = "");

/// The stream in S3, GCS or Azure (by FailedDocumentStreamOptions::scheme).
class S3FailedDocumentStream final : public reindex::IFailedDocumentSink {
 public:
  static absl::StatusOr<std::unique_ptr<S3FailedDocumentStream>> Open(
      FailedDocumentStreamOptions options);
  absl::Status Record(std::span<const reindex::FailedDocument> docs) override;
  /// "s3://bucket/prefix/session=<session>/" (gs://, az://), for messages.
  std::string location() const;
  uint64_t objects_written() const;

 private:
  S3FailedDocumentStream(FailedDocumentStreamOptions options,
                         std::shared_ptr<cloud::RangedObjectRepo> bucket)
      : options_(std::move(options)), bucket_(std::move(bucket)) {}
  const FailedDocumentStreamOptions options_;
  const std::shared_ptr<cloud::RangedObjectRepo> bucket_;
  std::atomic<uint64_t> sequence_{0};
  std::atomic<uint64_t> objects_{0};
};

/// One record as the stream writes it (without the newline); `now` formats "timestamp".
std::string FailedDocumentStreamRecord(const reindex::FailedDocument& doc,
                                       const FailedDocumentStreamOptions& options,
                                       std::chrono::system_clock::time_point now);

}  // namespace rfs::migration
