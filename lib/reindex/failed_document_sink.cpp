// GzipFailedDocumentSink (see failed_document_sink.hpp).
#include "rfs/reindex/failed_document_sink.hpp"

#include <atomic>
#include <chrono>
#include <filesystem>

#include <boost/json.hpp>

#include "rfs/core/file_util.hpp"
#include "rfs/core/json_string.hpp"
#include "rfs/core/json_text.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/encoding.hpp"
#include "rfs/net/gzip.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace rfs::reindex {
namespace {

namespace json = boost::json;
using core::StrCat;

// The value itself when `text` is JSON, otherwise the text as a JSON string, so a record stays
// one valid line even for a source that failed because it is not JSON.
json::value JsonOrString(std::string_view text) {
  // As deep as the engines' own parser goes.
  if (auto v = net::ParseJson(text, /*max_depth=*/1000)) return *std::move(v);
  return json::string(json::string_view(text.data(), text.size()));
}

json::string_view View(std::string_view s) { return {s.data(), s.size()}; }

// A record as three pieces, so a huge source is written from where it is: everything before the
// source, the source, and the closing brace. The source is the document's own text when it is
// one line of JSON (a parsed and re-printed source would not be the document that failed: 959.3
// prints as 9.593E2, 1e400 as an infinity), otherwise as JsonOrString gives it.
struct RecordPieces {
  std::string head;
  std::string rewritten;  // the source when it is not used as it is
  std::string_view original;
  bool use_rewritten = false;
  // Made where it is used: a view into `rewritten` would not survive the struct being moved.
  std::string_view source() const { return use_rewritten ? std::string_view(rewritten) : original; }
};

RecordPieces Pieces(const FailedDocument& doc) {
  json::object record{{"index", View(doc.index)},
                      {"id", View(doc.id)},
                      {"cursor", doc.cursor},
                      {"status", doc.status},
                      {"error_type", View(doc.error_type)},
                      {"reason", View(doc.reason)},
                      {"action", JsonOrString(doc.action)}};
  RecordPieces pieces;
  pieces.head = core::JsonText(record);
  pieces.head.pop_back();  // the closing brace: "source" goes last, as written
  pieces.head += ",\"source\":";
  const std::string_view text = doc.SourceText();
  if (IsRecordableAsIs(text)) {
    pieces.original = text;
  } else {
    pieces.rewritten = core::JsonText(JsonOrString(text));
    pieces.use_rewritten = true;
  }
  return pieces;
}

// Records holding this many source bytes or more are compressed as they are laid out (igzip,
// level 1) and written as they are compressed, instead of being copied into one buffer first and
// compressed harder: of a huge document, neither a copy nor its whole compressed form is held.
constexpr size_t kStreamedRecordBytes = size_t{16} << 20;
// How much of a streamed record's source is compressed at a time, and how much compressed output
// is held before it is written: at most about the two together.
constexpr size_t kStreamSliceBytes = size_t{1} << 20;
constexpr size_t kStreamWriteBytes = size_t{4} << 20;

size_t TotalSourceBytes(std::span<const FailedDocument> docs) {
  size_t bytes = 0;
  for (const FailedDocument& doc : docs) bytes += doc.SourceText().size();
  return bytes;
}

absl::StatusOr<std::string> GzipRecords(std::span<const FailedDocument> docs) {
  std::string lines;
  for (const FailedDocument& doc : docs) {
    lines += FailedDocumentToJson(doc);
    lines.push_back('\n');
  }
  return net::GzipCompress(lines, /*level=*/6);
}

// Compresses `docs` into one gzip member written to `fd` as it is made.
absl::Status WriteStreamedRecords(std::span<const FailedDocument> docs, int fd,
                                  const std::string& path) {
  net::GzipStream gzip(kStreamWriteBytes + kStreamSliceBytes);
  auto write_pending = [&](size_t at_least) -> absl::Status {
    if (gzip.pending().size() < at_least) return absl::OkStatus();
    RFS_RETURN_IF_ERROR(core::WriteAll(fd, gzip.pending(), path));
    gzip.TakePending();
    return absl::OkStatus();
  };
  for (const FailedDocument& doc : docs) {
    const RecordPieces pieces = Pieces(doc);
    RFS_RETURN_IF_ERROR(gzip.Append(pieces.head));
    const std::string_view source = pieces.source();
    for (size_t at = 0; at < source.size(); at += kStreamSliceBytes) {
      RFS_RETURN_IF_ERROR(gzip.Append(source.substr(at, kStreamSliceBytes)));
      RFS_RETURN_IF_ERROR(write_pending(kStreamWriteBytes));
    }
    RFS_RETURN_IF_ERROR(gzip.Append("}\n"));
  }
  RFS_ASSIGN_OR_RETURN(std::string rest, gzip.Finish());
  return core::WriteAll(fd, rest, path);
}

}  // namespace

bool IsRecordableAsIs(std::string_view source) {
  return core::FindLineBreak(source) == source.size() && net::IsJson(source);
}

std::string FailedDocumentToJson(const FailedDocument& doc) {
  RecordPieces pieces = Pieces(doc);
  std::string out = std::move(pieces.head);
  out.reserve(out.size() + pieces.source().size() + 1);
  out += pieces.source();
  out += '}';
  return out;
}

absl::StatusOr<std::unique_ptr<GzipFailedDocumentSink>> GzipFailedDocumentSink::Open(
    const std::string& directory, const std::string& file_prefix, FolderCreation folder_creation) {
  const bool at_open = folder_creation == FolderCreation::kAtOpen;
  if (at_open) {
    if (absl::Status s = core::CreateDirectories(directory, /*sync=*/true); !s.ok()) return s;
  }
  // Unique per process and sink: pid, start time and a counter.
  static std::atomic<uint64_t> counter{0};
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const std::string path = StrCat(
      directory, "/", file_prefix, "-", static_cast<uint64_t>(::getpid()), "-",
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(now).count()),
      "-", counter.fetch_add(1), ".ndjson.gz");
  return std::unique_ptr<GzipFailedDocumentSink>(
      new GzipFailedDocumentSink(directory, path, !at_open));
}

GzipFailedDocumentSink::~GzipFailedDocumentSink() {
  if (fd_ >= 0) ::close(fd_);
}

uint64_t GzipFailedDocumentSink::recorded() const {
  std::lock_guard lock(mu_);
  return recorded_;
}

absl::Status GzipFailedDocumentSink::Record(std::span<const FailedDocument> docs) {
  if (docs.empty()) return absl::OkStatus();
  // Small records are compressed before the lock; streamed ones are compressed and written under
  // it (a record of a huge document holds other threads' records back for its time).
  const bool streamed = TotalSourceBytes(docs) >= kStreamedRecordBytes;
  std::string member;
  if (!streamed) {
    RFS_ASSIGN_OR_RETURN(member, GzipRecords(docs));
  }

  std::lock_guard lock(mu_);
  bool created = false;
  if (fd_ < 0) {
    if (make_directory_) {
      if (absl::Status s = core::CreateDirectories(directory_, /*sync=*/true); !s.ok()) return s;
    }
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) return core::ErrnoStatus("open", path_, errno);
    created = true;
  }
  // A member is appended whole or the file is cut back, so a failed append leaves no torn
  // member in front of the next one.
  const off_t before = ::lseek(fd_, 0, SEEK_END);
  absl::Status status =
      streamed ? WriteStreamedRecords(docs, fd_, path_) : core::WriteAll(fd_, member, path_);
  if (status.ok() && ::fsync(fd_) != 0) status = core::ErrnoStatus("fsync", path_, errno);
  if (!status.ok()) {
    if (before >= 0 && ::ftruncate(fd_, before) != 0) {
      // Nothing more to do: the status below already fails the batch.
    }
    return status;
  }
  if (created) {
    const std::string parent = std::filesystem::path(path_).parent_path().string();
    if (absl::Status s = core::SyncDirectory(parent.empty() ? "." : parent); !s.ok()) return s;
  }
  recorded_ += docs.size();
  return absl::OkStatus();
}

}  // namespace rfs::reindex
