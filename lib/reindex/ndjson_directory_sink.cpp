// NdjsonDirectorySink (see document_sink.hpp).
#include <algorithm>
#include <cstdio>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "rfs/core/file_util.hpp"
#include "rfs/core/json_string.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/reindex/document_sink.hpp"

namespace rfs::reindex {
namespace {

using core::StrCat;

// OpenSearch's rules for index names (MetadataCreateIndexService.validateIndexOrAliasName),
// which also keep every name a safe single folder name.
std::optional<std::string> InvalidIndexName(std::string_view name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > 255) return "index name is too long";
  if (name == "." || name == "..") return "must not be '.' or '..'";
  if (name[0] == '_' || name[0] == '-' || name[0] == '+') {
    return "must not start with '_', '-', or '+'";
  }
  for (unsigned char c : name) {
    if (c == '\\' || c == '/' || c == '*' || c == '?' || c == '"' || c == '<' || c == '>' ||
        c == '|' || c == ' ' || c == ',' || c == '#' || c == ':' || c == '\0') {
      return R"(must not contain the following characters [ , ", *, \, <, |, ,, >, /, ?])";
    }
    if (c >= 'A' && c <= 'Z') return "must be lowercase";
  }
  return std::nullopt;
}

std::string CursorName(uint64_t cursor) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%020llu", static_cast<unsigned long long>(cursor));
  return buffer;
}

// Writes the bulk lines of `docs[positions]` to `file`: action lines built here, each one-line
// source written from where it is (no copy into a body; the kernel takes it with writev), a
// pretty-printed source made one line in a copy first, a huge pretty one a piece at a time.
absl::Status WriteBulkLines(std::span<const SourceDocument* const> docs,
                            const std::vector<size_t>& positions, core::AtomicFileWriter& file) {
  constexpr size_t kPiece = size_t{1} << 20;
  constexpr size_t kPiecesPerWrite = 3 * 1024;
  static const std::string kEmptySource = "{}";
  static const std::string kNewline = "\n";
  std::string actions;    // the action lines of the pending pieces
  std::string one_lined;  // sources copied to remove their line breaks
  // A piece is a range of a string: `actions` and `one_lined` may grow (and move) while pieces
  // are gathered, so views are made only when the pieces are written.
  struct Piece {
    const std::string* in;
    size_t offset;
    size_t size;
  };
  std::vector<Piece> pending;
  pending.reserve(kPiecesPerWrite + 3);
  std::vector<std::string_view> views;
  auto flush = [&]() -> absl::Status {
    views.clear();
    for (const Piece& p : pending) views.emplace_back(p.in->data() + p.offset, p.size);
    RFS_RETURN_IF_ERROR(file.AppendAll(views));
    pending.clear();
    actions.clear();
    one_lined.clear();
    return absl::OkStatus();
  };
  for (size_t i : positions) {
    const SourceDocument& doc = *docs[i];
    const size_t action_start = actions.size();
    AppendBulkAction(doc, {}, actions);
    pending.push_back({&actions, action_start, actions.size() - action_start});
    const size_t line_break = doc.one_line ? doc.source.size() : core::FindLineBreak(doc.source);
    if (doc.source.empty()) {
      pending.push_back({&kEmptySource, 0, kEmptySource.size()});
    } else if (line_break == doc.source.size()) {
      pending.push_back({&doc.source, 0, doc.source.size()});
    } else {
      // A pretty-printed source is made one line in a copy, a piece of at most 1 MiB at a time,
      // so a huge one is never copied whole.
      for (size_t offset = 0; offset < doc.source.size(); offset += kPiece) {
        const size_t start = one_lined.size();
        const size_t n = std::min(kPiece, doc.source.size() - offset);
        core::AppendJsonOneLine(std::string_view(doc.source).substr(offset, n), one_lined);
        pending.push_back({&one_lined, start, n});
        if (one_lined.size() >= kPiece) RFS_RETURN_IF_ERROR(flush());
      }
    }
    pending.push_back({&kNewline, 0, 1});
    if (pending.size() >= kPiecesPerWrite) RFS_RETURN_IF_ERROR(flush());
  }
  return flush();
}

}  // namespace

absl::StatusOr<std::unique_ptr<NdjsonDirectorySink>> NdjsonDirectorySink::Open(
    NdjsonDirectorySinkOptions options) {
  if (options.directory.empty()) {
    return absl::InvalidArgumentError("NDJSON sink needs a directory");
  }
  if (options.shard.empty() || options.shard == "." || options.shard == ".." ||
      options.shard.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(
        StrCat("bad shard label for the NDJSON sink: ", options.shard));
  }
  if (absl::Status s = core::CreateDirectories(options.directory, options.sync); !s.ok()) {
    return s;
  }
  return std::unique_ptr<NdjsonDirectorySink>(new NdjsonDirectorySink(std::move(options)));
}

std::string NdjsonDirectorySink::description() const {
  return StrCat("NDJSON directory ", options_.directory);
}

absl::StatusOr<std::vector<ItemFailure>> NdjsonDirectorySink::Write(
    std::span<const SourceDocument* const> docs) {
  std::vector<ItemFailure> failures;
  // Group positions by index, keeping stream order within each file.
  std::map<std::string_view, std::vector<size_t>> by_index;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (auto reason = InvalidIndexName(docs[i]->index)) {
      failures.push_back({i, 400, "invalid_index_name_exception",
                          StrCat("Invalid index name [", docs[i]->index, "], ", *reason)});
      continue;
    }
    by_index[docs[i]->index].push_back(i);
  }
  for (const auto& [index, positions] : by_index) {
    const std::string folder = StrCat(options_.directory, "/", index, "/", options_.shard);
    if (absl::Status s = core::CreateDirectories(folder, options_.sync); !s.ok()) return s;
    const std::string path = StrCat(folder, "/", CursorName(docs[positions.front()]->cursor), "-",
                                    CursorName(docs[positions.back()]->cursor), ".ndjson");
    // Bulk files are large and written once: direct I/O spares the kernel copying them into its
    // cache and writing them back on fsync, which cost more CPU than reading the shard.
    auto file = core::AtomicFileWriter::Create(
        path, options_.sync,
        options_.sync ? core::FileCaching::kDirect : core::FileCaching::kPageCache);
    if (!file.ok()) return file.status();
    if (absl::Status s = WriteBulkLines(docs, positions, *file); !s.ok()) return s;
    if (absl::Status s = file->Commit(); !s.ok()) return s;
  }
  return failures;
}

}  // namespace rfs::reindex
