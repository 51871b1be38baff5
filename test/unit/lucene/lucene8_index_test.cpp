// Real Lucene 8 (Debian: 8.8.1, codec Lucene87) indices written at test time
// (WriteLuceneIndex.java): every live document rfs reads must equal what Java Lucene read back
// (golden.jsonl), for LZ4/DEFLATE with and without preset dictionaries, compound and not, hard and
// soft deletes, tombstones, nested blocks, multi-MB (sliced) documents.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/core/crc32.hpp"
#include "rfs/lucene/shard_reader.hpp"

#include "lucene/codecs/compound_internal.hpp"
#include "lucene/codecs/stored_fields_reader_internal.hpp"
#include "unit/lucene/test_util.hpp"

namespace {

using rfs::lucene::Document;
using rfs::lucene::ShardReader;

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

// The golden line format of WriteLuceneIndex.writeGolden.
std::string GoldenLine(const Document& doc) {
  std::string line = "{\"cursor\":" + std::to_string(doc.cursor) + ",\"id\":" + JsonString(doc.id);
  line += ",\"routing\":" + (doc.routing ? JsonString(*doc.routing) : std::string("null"));
  if (!doc.has_source) {
    line += ",\"source_len\":-1,\"source_crc32\":0}";
  } else {
    line += ",\"source_len\":" + std::to_string(doc.source.size()) +
            ",\"source_crc32\":" + std::to_string(rfs::core::Crc32(doc.source)) + "}";
  }
  return line;
}

std::vector<std::string> ReadLines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::unique_ptr<ShardReader> OpenIndex(const std::filesystem::path& path,
                                       rfs::lucene::ShardReaderOptions options = {}) {
  auto dir = rfs::core::LocalDirectory::Open(path.string());
  REQUIRE(dir.ok());
  auto reader = ShardReader::Open(
      std::shared_ptr<const rfs::core::IDirectory>(std::move(dir).value()), std::move(options));
  INFO(reader.status().ToString());
  REQUIRE(reader.ok());
  return std::move(reader).value();
}

// Reads from `cursor` to the end, as golden lines.
std::vector<std::string> ReadAll(const ShardReader& reader, uint64_t cursor,
                                 rfs::lucene::ReaderStats* stats = nullptr) {
  auto docs = reader.OpenAt(cursor);
  REQUIRE(docs.ok());
  std::vector<std::string> lines;
  Document doc;
  for (;;) {
    auto more = (*docs)->Next(doc);
    INFO(more.status().ToString());
    REQUIRE(more.ok());
    if (!*more) break;
    lines.push_back(GoldenLine(doc));
  }
  if (stats != nullptr) *stats = (*docs)->stats();
  return lines;
}

void CheckAgainstGolden(const std::string& name, const std::string& fdt_codec) {
  auto root = rfs::lucene::testing::Lucene8Indexes();
  if (!root) return;
  const auto path = *root / name;
  auto reader = OpenIndex(path);
  CHECK(reader->segment_infos().format == 10);
  CHECK(reader->segment_infos().written_by.major == 8);  // Debian ships 8.8.1 as 8.7.0
  // Every segment's stored fields use the expected format.
  {
    auto dir = rfs::core::LocalDirectory::Open(path.string());
    REQUIRE(dir.ok());
    std::shared_ptr<const rfs::core::IDirectory> shared(std::move(dir).value());
    const auto& seg = reader->segments().front();
    std::shared_ptr<const rfs::core::IDirectory> seg_dir = shared;
    if (seg.info.is_compound) {
      auto cfs = rfs::lucene::CompoundDirectory::Open(shared, seg.name, seg.id);
      REQUIRE(cfs.ok());
      seg_dir = *cfs;
    }
    auto sf = rfs::lucene::StoredFieldsReader::Open(*seg_dir, seg);
    REQUIRE(sf.ok());
    CHECK((*sf)->format_name() == fdt_codec);
  }
  auto golden = ReadLines(path / "golden.jsonl");
  REQUIRE(!golden.empty());
  const std::string stats_line = golden.back();
  golden.pop_back();
  rfs::lucene::ReaderStats stats;
  auto lines = ReadAll(*reader, 0, &stats);
  REQUIRE(lines.size() == golden.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    INFO("line " << i);
    CHECK(lines[i] == golden[i]);
  }
  const std::string expected_stats =
      "{\"stats\":true,\"docs_emitted\":" + std::to_string(stats.docs_emitted) +
      ",\"deleted_skipped\":" + std::to_string(stats.deleted_skipped) +
      ",\"nested_skipped\":" + std::to_string(stats.nested_skipped) +
      ",\"no_source_docs\":" + std::to_string(stats.no_source_docs) +
      ",\"segments\":" + std::to_string(reader->segments().size()) + "}";
  CHECK(expected_stats == stats_line);
}

}  // namespace

TEST_CASE("Lucene 8 BEST_SPEED, multi-segment, deletes, big docs", "[lucene][lucene8]") {
  CheckAgainstGolden("speed_multi", "Lucene87StoredFieldsFastData");
}

TEST_CASE("Lucene 8 BEST_COMPRESSION, compound", "[lucene][lucene8]") {
  CheckAgainstGolden("compression_compound", "Lucene87StoredFieldsHighData");
}

TEST_CASE("Lucene50 LZ4 stored fields (no preset dictionary)", "[lucene][lucene8]") {
  CheckAgainstGolden("lucene50_fast", "Lucene50StoredFieldsFastData");
}

TEST_CASE("Lucene50 DEFLATE stored fields (no preset dictionary), compound", "[lucene][lucene8]") {
  CheckAgainstGolden("lucene50_high", "Lucene50StoredFieldsHighData");
}

TEST_CASE("Lucene 8 40 small segments in name order", "[lucene][lucene8]") {
  CheckAgainstGolden("resume_small", "Lucene87StoredFieldsFastData");
}

TEST_CASE("Resuming at every cursor yields the tail of the full read", "[lucene][lucene8]") {
  auto root = rfs::lucene::testing::Lucene8Indexes();
  if (!root) return;
  auto reader = OpenIndex(*root / "resume_small");
  const auto full = ReadAll(*reader, 0);
  REQUIRE(full.size() > 100);
  std::vector<uint64_t> cursors;
  for (const auto& line : full) {
    cursors.push_back(std::stoull(line.substr(10, line.find(',') - 10)));
  }
  for (uint64_t c = 0; c <= reader->max_cursor() + 1; ++c) {
    const size_t first = std::lower_bound(cursors.begin(), cursors.end(), c) - cursors.begin();
    const std::vector<std::string> tail(full.begin() + first, full.end());
    INFO("cursor " << c);
    REQUIRE(ReadAll(*reader, c) == tail);
  }
  // SeekTo on a live cursor: backwards and forwards.
  auto docs = reader->OpenAt(0);
  REQUIRE(docs.ok());
  Document doc;
  for (int i = 0; i < 50; ++i) REQUIRE(*(*docs)->Next(doc));
  REQUIRE((*docs)->SeekTo(cursors[3]).ok());
  CHECK((*docs)->position() == cursors[3]);
  REQUIRE(*(*docs)->Next(doc));
  CHECK(GoldenLine(doc) == full[3]);
  REQUIRE((*docs)->SeekTo(cursors[120]).ok());
  REQUIRE(*(*docs)->Next(doc));
  CHECK(GoldenLine(doc) == full[120]);
  REQUIRE((*docs)->SeekTo(reader->max_cursor()).ok());
  CHECK_FALSE(*(*docs)->Next(doc));
  // The optional-returning Next agrees.
  auto again = reader->OpenAt(cursors[7]);
  REQUIRE(again.ok());
  auto first = (*again)->Next();
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  CHECK(GoldenLine(**first) == full[7]);
}

TEST_CASE("Documents without _source can be skipped", "[lucene][lucene8]") {
  auto root = rfs::lucene::testing::Lucene8Indexes();
  if (!root) return;
  rfs::lucene::ShardReaderOptions options;
  options.skip_documents_without_source = true;
  auto reader = OpenIndex(*root / "speed_multi", options);
  rfs::lucene::ReaderStats stats;
  auto lines = ReadAll(*reader, 0, &stats);
  CHECK(stats.no_source_docs > 0);
  CHECK(lines.size() == stats.docs_emitted);
  for (const auto& line : lines) CHECK(line.find("\"source_len\":-1") == std::string::npos);
}

namespace {

// A local directory that records the prefetch hints it is given and the files opened after them.
class RecordingDirectory final : public rfs::core::IDirectory {
 public:
  explicit RecordingDirectory(std::unique_ptr<rfs::core::LocalDirectory> dir)
      : dir_(std::move(dir)) {}
  const std::string& description() const override { return dir_->description(); }
  std::vector<std::string> ListFiles() const override { return dir_->ListFiles(); }
  absl::StatusOr<std::shared_ptr<const rfs::core::IRandomAccessFile>> OpenFile(
      std::string_view name) const override {
    std::lock_guard lock(mu_);
    opened_.emplace_back(name);
    return dir_->OpenFile(name);
  }
  void Prefetch(std::span<const std::string> names) const override {
    std::lock_guard lock(mu_);
    hints_.emplace_back(names.begin(), names.end());
    opened_.clear();
  }
  std::vector<std::vector<std::string>> hints() const {
    std::lock_guard lock(mu_);
    return hints_;
  }
  std::vector<std::string> opened() const {
    std::lock_guard lock(mu_);
    return opened_;
  }

 private:
  std::unique_ptr<rfs::core::LocalDirectory> dir_;
  mutable std::mutex mu_;
  mutable std::vector<std::vector<std::string>> hints_;
  mutable std::vector<std::string> opened_;
};

}  // namespace

TEST_CASE("A shard reader names the files it will read before it opens them, the commit first",
          "[lucene][lucene8]") {
  auto root = rfs::lucene::testing::Lucene8Indexes();
  REQUIRE(root.has_value());
  for (const char* name : {"speed_multi", "compression_compound"}) {
    INFO(name);
    auto local = rfs::core::LocalDirectory::Open((*root / name).string());
    REQUIRE(local.ok());
    auto dir = std::make_shared<RecordingDirectory>(std::move(local).value());
    auto reader = ShardReader::Open(dir, {});
    REQUIRE(reader.ok());
    CHECK(ReadAll(**reader, 0).size() == ReadLines(*root / name / "golden.jsonl").size() - 1);
    const auto hints = dir->hints();
    REQUIRE(hints.size() == 1);
    const std::vector<std::string>& hint = hints.front();
    REQUIRE(!hint.empty());
    CHECK(hint.front().starts_with("segments_"));
    // Every file the read opened was named in the hint, and the hint names only files the read
    // opened: a remote directory fetches nothing for nothing.
    const auto opened = dir->opened();
    REQUIRE(!opened.empty());
    for (const auto& file : opened) {
      INFO(file);
      CHECK(std::find(hint.begin(), hint.end(), file) != hint.end());
    }
    for (const auto& file : hint) {
      INFO(file);
      CHECK(std::find(opened.begin(), opened.end(), file) != opened.end());
    }
    // Doc-values updates (soft deletes) and newer field infos are among them.
    CHECK(std::any_of(hint.begin(), hint.end(), [](const std::string& f) {
      return f.ends_with(".dvd") && std::count(f.begin(), f.end(), '_') == 4;
    }));
  }
}
