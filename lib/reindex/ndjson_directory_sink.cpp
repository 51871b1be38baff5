// NdjsonDirectorySink (see document_sink.hpp).
#include <algorithm>
#include <cstdio>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "rfs/core/checked_path.hpp"
#include "rfs/core/file_util.hpp"
#include "rfs/core/json_string.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/reindex/bulk_format.hpp"
#include "rfs/reindex/document_sink.hpp"

namespace rfs::reindex {

std::optional<std::string> InvalidIndexName(std::string_view name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > 255) return "index name is too long";
  if (name == "." || name == "..") return "must not be '.' or '..'";
  // The embedded target keeps its own state (store, metadata, failed documents) in OUT/.rfs.
  if (name == ".rfs") return "must not be '.rfs', the embedded target's own folder";
  // The folder rules every path built from a name follows (core::CheckedPath).
  if (auto problem = core::PathSegmentProblem(name)) return "must not be " + *problem;
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

namespace {

using core::StrCat;

// OpenSearch's rules for index names (MetadataCreateIndexService.validateIndexOrAliasName),
// which also keep every name a safe single folder name.
std::string CursorName(uint64_t cursor) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%020llu", static_cast<unsigned long long>(cursor));
  return buffer;
}

// Writes the bulk lines of `docs[positions]` to `file`, each piece from where it is (the kernel
// takes them with writev, or direct I/O copies them once into its aligned buffer):
// - lines a reader laid out (RenderedLines) are written as they are, a run of consecutive
//   documents' lines as one piece;
// - other documents get their action line made here and their source written from where it
//   is; a pretty-printed source is made one line in a copy, a piece of at most 1 MiB at a time,
//   so a huge one is never copied whole.
// Before a long piece, the action line is padded with spaces (which JSON and `_bulk` ignore) so
// that direct I/O writes the piece from where it is rather than copying it
// (AtomicFileWriter::PaddingForInPlace).
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
  uint64_t pending_bytes = 0;
  std::vector<std::string_view> views;
  auto add = [&](const std::string* in, size_t offset, size_t size) {
    pending.push_back({in, offset, size});
    pending_bytes += size;
  };
  auto flush = [&]() -> absl::Status {
    views.clear();
    for (const Piece& p : pending) views.emplace_back(p.in->data() + p.offset, p.size);
    RFS_RETURN_IF_ERROR(file.AppendAll(views));
    pending.clear();
    pending_bytes = 0;
    actions.clear();
    one_lined.clear();
    return absl::OkStatus();
  };
  // Adds the action line `action` (ending in '\n'), padded so that `next`, which follows it, is
  // written in place.
  auto add_action = [&](std::string_view action, std::string_view next) {
    const size_t start = actions.size();
    actions.append(action);
    if (auto padding = file.PaddingForInPlace(next, pending_bytes + action.size())) {
      actions.insert(actions.size() - 1, *padding, ' ');
    }
    add(&actions, start, actions.size() - start);
  };
  // The run of laid-out lines gathered so far: [run_begin, run_end) of *run_lines.
  const std::string* run_lines = nullptr;
  size_t run_begin = 0;
  size_t run_source = 0;  // where the first document's source line begins
  size_t run_end = 0;
  auto add_run = [&] {
    if (run_lines == nullptr) return;
    const std::string_view lines(*run_lines);
    const std::string_view rest = lines.substr(run_source, run_end - run_source);
    // Long enough to go in place: its first action line is copied to take the padding.
    if (file.PaddingForInPlace(rest, 0).has_value()) {
      add_action(lines.substr(run_begin, run_source - run_begin), rest);
      add(run_lines, run_source, run_end - run_source);
    } else {
      add(run_lines, run_begin, run_end - run_begin);
    }
    run_lines = nullptr;
  };
  std::string action;
  for (size_t i : positions) {
    const SourceDocument& doc = *docs[i];
    if (HasRenderedLines(doc, {})) {
      if (run_lines != &doc.rendered->bytes || run_end != doc.rendered_begin) {
        add_run();
        run_lines = &doc.rendered->bytes;
        run_begin = doc.rendered_begin;
        run_source = doc.rendered_source;
      }
      run_end = doc.rendered_end;
      continue;
    }
    add_run();
    const std::string_view source = SourceBytes(doc);
    action.clear();
    AppendBulkAction(doc, {}, action);
    if (doc.op == BulkOp::kDelete) {
      // A delete is its action line alone, in stream order with the documents around it, so a
      // replay of the files in order applies it where the run did.
      add_action(action, {});
      if (pending.size() >= kPiecesPerWrite) RFS_RETURN_IF_ERROR(flush());
      continue;
    }
    const size_t line_break = doc.one_line ? source.size() : core::FindLineBreak(source);
    if (source.empty()) {
      add_action(action, {});
      add(&kEmptySource, 0, kEmptySource.size());
    } else if (line_break == source.size()) {
      add_action(action, source);
      // Laid out with other action options: the source is still taken from its line.
      if (doc.rendered) {
        add(&doc.rendered->bytes, doc.rendered_source, source.size());
      } else {
        add(&doc.source, 0, doc.source.size());
      }
    } else {
      add_action(action, {});
      for (size_t offset = 0; offset < source.size(); offset += kPiece) {
        const size_t start = one_lined.size();
        const size_t n = std::min(kPiece, source.size() - offset);
        core::AppendJsonOneLine(source.substr(offset, n), one_lined);
        add(&one_lined, start, n);
        if (one_lined.size() >= kPiece) RFS_RETURN_IF_ERROR(flush());
      }
    }
    add(&kNewline, 0, 1);
    if (pending.size() >= kPiecesPerWrite) RFS_RETURN_IF_ERROR(flush());
  }
  add_run();
  return flush();
}

}  // namespace

absl::StatusOr<std::unique_ptr<NdjsonDirectorySink>> NdjsonDirectorySink::Open(
    NdjsonDirectorySinkOptions options) {
  if (options.directory.empty()) {
    return absl::InvalidArgumentError("NDJSON sink needs a directory");
  }
  // The label may name a data stream's backing index (from the snapshot): one checked segment.
  if (auto problem = core::PathSegmentProblem(options.shard)) {
    return absl::InvalidArgumentError(
        StrCat("bad shard label for the NDJSON sink: ", options.shard, " (", *problem, ")"));
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
  // Neighbours nearly always share their index: its name is checked and looked up once per run.
  std::string_view last_index;
  std::vector<size_t>* last_positions = nullptr;
  for (size_t i = 0; i < docs.size(); ++i) {
    const std::string_view index = docs[i]->index;
    if (last_positions != nullptr && index == last_index) {
      last_positions->push_back(i);
      continue;
    }
    if (auto reason = InvalidIndexName(index)) {
      failures.push_back({i, 400, "invalid_index_name_exception",
                          StrCat("Invalid index name [", index, "], ", *reason)});
      last_positions = nullptr;
      continue;
    }
    last_index = index;
    last_positions = &by_index[index];
    last_positions->push_back(i);
  }
  for (const auto& [index, positions] : by_index) {
    // Index names were checked (InvalidIndexName) when the batch came in; the one path
    // function checks them again with the shard label.
    RFS_ASSIGN_OR_RETURN(const std::string relative,
                         core::CheckedPath({index, options_.shard}, "the documents' index names"));
    const std::string folder = StrCat(options_.directory, "/", relative);
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
