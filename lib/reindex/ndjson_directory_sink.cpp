// NdjsonDirectorySink (see document_sink.hpp).
#include <algorithm>
#include <cstdio>
#include <map>

#include "rfs/core/file_util.hpp"
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
    // Written in pieces of about 1 MiB: a batch's body is never held whole beside its documents.
    constexpr size_t kPiece = size_t{1} << 20;
    auto file = core::AtomicFileWriter::Create(path, options_.sync);
    if (!file.ok()) return file.status();
    std::string body;
    body.reserve(kPiece + 4096);
    for (size_t i : positions) {
      AppendBulkAction(*docs[i], {}, body);
      const std::string_view source = docs[i]->source;
      if (source.size() <= kPiece) {
        AppendSourceLine(source, body);
      } else {
        // A huge source goes out a piece at a time (as AppendSourceLine would write it: one
        // line), never copied whole.
        for (size_t offset = 0; offset < source.size(); offset += kPiece) {
          const size_t start = body.size();
          body.append(source.substr(offset, kPiece));
          std::replace(body.begin() + static_cast<std::ptrdiff_t>(start), body.end(), '\n', ' ');
          std::replace(body.begin() + static_cast<std::ptrdiff_t>(start), body.end(), '\r', ' ');
          if (absl::Status s = file->Append(body); !s.ok()) return s;
          body.clear();
        }
        body.push_back('\n');
      }
      if (body.size() >= kPiece) {
        if (absl::Status s = file->Append(body); !s.ok()) return s;
        body.clear();
      }
    }
    if (absl::Status s = file->Append(body); !s.ok()) return s;
    if (absl::Status s = file->Commit(); !s.ok()) return s;
  }
  return failures;
}

}  // namespace rfs::reindex
