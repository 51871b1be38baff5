// IFailedDocumentSink: where documents that can never be indexed go (mapping conflicts, strict
// mappings, illegal arguments, ...), so one bad document does not fail its shard and an operator
// can inspect and replay it later.
//
// GzipFailedDocumentSink appends records to gzip NDJSON files, one JSON object per line:
//   {"index":..,"id":..,"cursor":..,"status":..,"error_type":..,"reason":..,
//    "action":{"index":{...}},"source":{...}}
// ("source" is the document as a JSON value, or a JSON string when it does not parse). Each
// Record call appends one complete gzip member and fsyncs the file before returning, so the
// reindexer acknowledges a failed document only once its record is durable; a file of
// concatenated members is one valid gzip stream (`zcat` reads it).
//
// Thread safety: Record may be called concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::reindex {

struct FailedDocument {
  std::string index;
  std::string id;
  uint64_t cursor = 0;
  int status = 0;
  std::string error_type;
  std::string reason;
  /// The bulk action line that was sent (one line, no newline).
  std::string action;
  /// The document's `_source` as sent; read it with SourceText().
  std::string source;
  /// Set instead of `source` when the source lies in a buffer the document shares (its laid-out
  /// bulk lines), so that recording a huge document does not copy it: `borrowed_source` points
  /// into what `source_owner` keeps alive.
  std::shared_ptr<const void> source_owner;
  std::string_view borrowed_source;

  std::string_view SourceText() const { return source_owner ? borrowed_source : source; }
};

/// Whether a failed document's source goes into a record as it is: one line of valid JSON (a
/// parsed and re-printed source would not be the document that failed: 959.30 prints as 959.3).
bool IsRecordableAsIs(std::string_view source);

class IFailedDocumentSink {
 public:
  virtual ~IFailedDocumentSink() = default;
  /// Durably records `docs` (non-empty). An error fails the batch that produced them.
  virtual absl::Status Record(std::span<const FailedDocument> docs) = 0;
};

/// When a GzipFailedDocumentSink makes its folder.
enum class FolderCreation {
  /// At Open: a folder that cannot be made fails before any work is done.
  kAtOpen,
  /// With the first record, so that a folder no record went to is never made (a verification
  /// round that found every document equal). For a folder below one already made.
  kWithFirstRecord,
};

class GzipFailedDocumentSink final : public IFailedDocumentSink {
 public:
  /// Creates `directory` when missing (see FolderCreation); records go to
  /// `<directory>/<file_prefix>-<unique suffix>.ndjson.gz`, a new file per sink, so several
  /// workers can share the folder.
  static absl::StatusOr<std::unique_ptr<GzipFailedDocumentSink>> Open(
      const std::string& directory, const std::string& file_prefix = "failed-documents",
      FolderCreation folder_creation = FolderCreation::kAtOpen);
  ~GzipFailedDocumentSink() override;
  GzipFailedDocumentSink(const GzipFailedDocumentSink&) = delete;
  GzipFailedDocumentSink& operator=(const GzipFailedDocumentSink&) = delete;

  absl::Status Record(std::span<const FailedDocument> docs) override;
  /// The file this sink appends to (created on the first record).
  const std::string& path() const { return path_; }
  /// Records written so far.
  uint64_t recorded() const;

 private:
  GzipFailedDocumentSink(std::string directory, std::string path, bool make_directory)
      : directory_(std::move(directory)), path_(std::move(path)), make_directory_(make_directory) {}
  const std::string directory_;
  const std::string path_;
  const bool make_directory_;  // made with the first record
  mutable std::mutex mu_;
  int fd_ = -1;            // guarded by mu_
  uint64_t recorded_ = 0;  // guarded by mu_
};

/// Serialises one record as the JSON line GzipFailedDocumentSink writes (without the newline).
std::string FailedDocumentToJson(const FailedDocument& doc);

}  // namespace rfs::reindex
