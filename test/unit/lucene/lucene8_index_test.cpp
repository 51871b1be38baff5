// Real Lucene 8 (Debian: 8.8.1, codec Lucene87) indices written at test time
// (WriteLuceneIndex.java): every live document rfs reads must equal what Java Lucene read back
// (golden.jsonl), for LZ4/DEFLATE with and without preset dictionaries, compound and not, hard and
// soft deletes, tombstones, nested blocks, multi-MB (sliced) documents.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/core/crc32.hpp"
#include "rfs/lucene/shard_reader.hpp"

#include "lucene/codecs/compound_internal.hpp"
#include "lucene/codecs/stored_fields_internal.hpp"
#include "lucene/codecs/stored_fields_reader_internal.hpp"
#include "support/temp_dir.hpp"
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

namespace {

// A folder whose files are not contiguous in memory, as a remote repository's are: readers go
// through ReadAt, whose bytes are counted per file; with `block_bytes` set, each file also holds
// its bytes in blocks of that size (ViewAt), as a remote file holds the blocks it fetched.
class BlockDirectory final : public rfs::core::IDirectory {
 public:
  BlockDirectory(std::shared_ptr<const rfs::core::IDirectory> base, uint64_t block_bytes)
      : base_(std::move(base)), block_bytes_(block_bytes) {}
  const std::string& description() const override { return base_->description(); }
  std::vector<std::string> ListFiles() const override { return base_->ListFiles(); }
  absl::StatusOr<std::shared_ptr<const rfs::core::IRandomAccessFile>> OpenFile(
      std::string_view name) const override {
    auto file = base_->OpenFile(name);
    if (!file.ok()) return file.status();
    return std::make_shared<File>(*std::move(file), this);
  }
  // Bytes read with ReadAt from the files whose names end in `suffix`.
  uint64_t read_bytes(std::string_view suffix) const {
    std::lock_guard lock(mu_);
    uint64_t sum = 0;
    for (const auto& [name, bytes] : read_) sum += name.ends_with(suffix) ? bytes : 0;
    return sum;
  }
  uint64_t viewed_bytes() const {
    std::lock_guard lock(mu_);
    return viewed_;
  }

 private:
  class File final : public rfs::core::IRandomAccessFile {
   public:
    File(std::shared_ptr<const rfs::core::IRandomAccessFile> base, const BlockDirectory* dir)
        : base_(std::move(base)), dir_(dir) {}
    const std::string& name() const override { return base_->name(); }
    uint64_t size() const override { return base_->size(); }
    absl::Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
      {
        std::lock_guard lock(dir_->mu_);
        dir_->read_[std::filesystem::path(name()).filename().string()] += out.size();
        fprintf(stderr, "read %s %lu %zu\n", name().c_str(), (unsigned long)offset, out.size());
      }
      return base_->ReadAt(offset, out);
    }
    absl::StatusOr<std::optional<HeldBytes>> ViewAt(uint64_t offset, uint64_t min_length,
                                                    uint64_t max_length) const override {
      if (dir_->block_bytes_ == 0 || offset >= size()) return std::nullopt;
      const uint64_t block_end =
          std::min(size(), (offset / dir_->block_bytes_ + 1) * dir_->block_bytes_);
      if (block_end - offset < min_length) return std::nullopt;
      // A copy of the block's part, owned by the view: a view that outlived its owner would read
      // freed memory under AddressSanitizer.
      auto bytes = std::make_shared<std::vector<uint8_t>>(std::min(block_end - offset, max_length));
      if (auto status = base_->ReadAt(offset, *bytes); !status.ok()) return status;
      {
        std::lock_guard lock(dir_->mu_);
        dir_->viewed_ += bytes->size();
      }
      return HeldBytes{std::span<const uint8_t>(*bytes), bytes};
    }

   private:
    std::shared_ptr<const rfs::core::IRandomAccessFile> base_;
    const BlockDirectory* dir_;
  };

  std::shared_ptr<const rfs::core::IDirectory> base_;
  const uint64_t block_bytes_;
  mutable std::mutex mu_;
  mutable std::map<std::string, uint64_t> read_;
  mutable uint64_t viewed_ = 0;
};

uint64_t FdtBytes(const std::filesystem::path& folder) {
  uint64_t sum = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() == ".fdt") sum += entry.file_size();
  }
  return sum;
}

}  // namespace

TEST_CASE("Stored fields not held in memory are read once, from windows or from held blocks",
          "[lucene][lucene8]") {
  // Java Lucene's own BEST_SPEED index of several segments, some documents of several MB among
  // them. A file that is not contiguous in memory is decoded a window at a time: each window
  // used to be read again at every chunk (1 MiB copied per chunk of a few dozen KB). Each
  // segment's .fdt is now read once; the serial reader reads it a second time first, whole, to
  // check its checksum. A file that holds its bytes in blocks (a remote file) is decoded in
  // them, a window copied only where a chunk crosses a block's end. Every document is the one
  // Lucene read back.
  auto root = rfs::lucene::testing::Lucene8Indexes();
  if (!root) return;
  const auto path = *root / "speed_multi";
  auto golden = ReadLines(path / "golden.jsonl");
  REQUIRE(golden.size() > 1);
  golden.pop_back();  // the stats line
  const uint64_t fdt_bytes = FdtBytes(path);
  REQUIRE(fdt_bytes > (uint64_t{1} << 20));

  for (const bool verify : {false, true}) {
    for (const uint64_t block_bytes :
         {uint64_t{0}, uint64_t{64} << 10, uint64_t{256} << 10, uint64_t{4} << 20}) {
      INFO("verify checksums " << verify << ", blocks of " << block_bytes);
      auto local = rfs::core::LocalDirectory::Open(path.string());
      REQUIRE(local.ok());
      auto dir = std::make_shared<BlockDirectory>(
          std::shared_ptr<const rfs::core::IDirectory>(*std::move(local)), block_bytes);
      rfs::lucene::ShardReaderOptions options;
      options.verify_checksums = verify;
      auto reader = ShardReader::Open(dir, std::move(options));
      REQUIRE(reader.ok());
      const auto lines = ReadAll(**reader, 0);
      CHECK(lines == golden);
      const uint64_t read = dir->read_bytes(".fdt");
      INFO(".fdt " << fdt_bytes << " bytes, " << read << " read, " << dir->viewed_bytes()
                   << " viewed");
      const uint64_t decode_reads = verify ? read - std::min(read, fdt_bytes) : read;
      if (block_bytes == 0) {
        // The decoding's windows: the file once, and each file's head and footer read at open.
        CHECK(decode_reads <= fdt_bytes + (64 << 10));
        CHECK(decode_reads >= fdt_bytes / 2);
      } else if (block_bytes > fdt_bytes) {
        CHECK(decode_reads <= (64 << 10));  // each file in one block
      } else {
        // Copied: the chunks that cross a block's end, with a little past it. Blocks of 64 KiB
        // are crossed by most chunks of the largest file, so fewer bytes are read in place.
        CHECK(dir->viewed_bytes() > fdt_bytes / (block_bytes < (256 << 10) ? 8 : 2));
        CHECK(decode_reads + dir->viewed_bytes() < 3 * fdt_bytes);
      }
    }
  }
}

namespace {

// Where the LZ4 blocks of one preset-dictionary chunk (Lucene87 BEST_SPEED) sit in its `.fdt`:
// each block's compressed bytes and the part of the chunk's data it decodes to.
struct ChunkBlocks {
  struct Block {
    uint64_t file_start = 0;
    uint64_t file_end = 0;
    size_t data_start = 0;
    size_t data_end = 0;
  };
  std::vector<Block> blocks;
};

// Reads the chunk header at `chunk.file_offset` as Lucene87's writer lays it out
// (CompressingStoredFieldsWriter.flush, LZ4WithPresetDictCompressionMode): docBase, chunkDocs
// with the sliced and dirty bits, the field counts and lengths (PackedInts or one VInt each),
// then the dictionary's and the blocks' lengths, compressed lengths and bytes.
ChunkBlocks LayOutChunk(const std::vector<uint8_t>& fdt,
                        const rfs::lucene::internal::DecodedChunk& chunk) {
  rfs::core::ByteReader in(fdt, "fdt");
  REQUIRE(in.Seek(chunk.file_offset).ok());
  auto vint = [&in] {
    auto v = in.ReadVInt();
    REQUIRE(v.ok());
    return *v;
  };
  vint();  // docBase
  vint();  // chunkDocs << 2 | dirty << 1 | sliced
  if (chunk.chunk_docs == 1) {
    vint();
    vint();
  } else {
    for (int ints = 0; ints < 2; ++ints) {
      const uint32_t bits = vint();
      if (bits == 0) {
        vint();
      } else {
        REQUIRE(in.Skip((uint64_t{static_cast<uint32_t>(chunk.chunk_docs)} * bits + 7) / 8).ok());
      }
    }
  }
  const size_t dict_len = vint();
  const size_t block_len = vint();
  REQUIRE(block_len > 0);
  const size_t num_blocks = (chunk.total - dict_len + block_len - 1) / block_len;
  const uint32_t dict_clen = vint();
  std::vector<uint32_t> clens(num_blocks);
  for (auto& clen : clens) clen = vint();
  ChunkBlocks out;
  uint64_t at = in.position() + dict_clen;
  for (size_t i = 0; i < num_blocks; ++i) {
    const size_t start = dict_len + i * block_len;
    out.blocks.push_back({at, at + clens[i], start, std::min(start + block_len, chunk.total)});
    at += clens[i];
  }
  return out;
}

// The first chunk (not sliced) of `segment` of the index at `dir` with more than `min_blocks`
// blocks, laid out from the `.fdt` bytes `fdt`: its blocks, first document and the end of each
// of its documents in its data.
struct ChunkOfBlocks {
  ChunkBlocks layout;
  int32_t first_doc = 0;
  std::vector<size_t> doc_ends;
};

ChunkOfBlocks FindChunkOfBlocks(const std::filesystem::path& dir,
                                const rfs::lucene::SegmentCommitInfo& segment,
                                const std::vector<uint8_t>& fdt, size_t min_blocks) {
  ChunkOfBlocks out;
  auto local = rfs::core::LocalDirectory::Open(dir.string());
  REQUIRE(local.ok());
  auto chunks = rfs::lucene::internal::ChunkCursor::Open(**local, segment, false);
  REQUIRE(chunks.ok());
  int32_t doc = 0;
  while (doc < (*chunks)->max_doc() && out.layout.blocks.size() <= min_blocks) {
    auto chunk = (*chunks)->ChunkFor(doc);
    REQUIRE(chunk.ok());
    if (!(*chunk)->sliced) {
      out.layout = LayOutChunk(fdt, **chunk);
      out.first_doc = (*chunk)->doc_base;
      out.doc_ends.assign((*chunk)->offsets.begin() + 1, (*chunk)->offsets.end());
    }
    doc = (*chunk)->doc_base + (*chunk)->chunk_docs;
  }
  REQUIRE(out.layout.blocks.size() > min_blocks);
  // The layout read holds together: its last block ends where the next chunk starts, or the
  // file's footer (16 bytes, Lucene87 keeping its chunk counts in the .fdm).
  if (doc < (*chunks)->max_doc()) {
    auto next = (*chunks)->ChunkFor(doc);
    REQUIRE(next.ok());
    CHECK(out.layout.blocks.back().file_end == (*next)->file_offset);
  } else {
    CHECK(out.layout.blocks.back().file_end == fdt.size() - 16);
  }
  return out;
}

std::vector<uint8_t> ReadFile(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(file),
                              std::istreambuf_iterator<char>());
}

// Overwrites the second half of `block`'s compressed bytes in `fdt` and writes the file.
void DamageBlock(std::vector<uint8_t>& fdt, const ChunkBlocks::Block& block,
                 const std::filesystem::path& path) {
  const uint64_t from = block.file_start + (block.file_end - block.file_start) / 2;
  std::fill(fdt.begin() + static_cast<std::ptrdiff_t>(from),
            fdt.begin() + static_cast<std::ptrdiff_t>(block.file_end), uint8_t{0xFF});
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(fdt.data()), static_cast<std::streamsize>(fdt.size()));
}

}  // namespace

TEST_CASE("A damaged LZ4 block decoded beside another fails where a document reaches it",
          "[lucene][lucene8]") {
  // A chunk's blocks are decoded two at a time as documents reach them. When either of a pair is
  // malformed, each is decoded alone, so the documents of the sound first block are still read and
  // the error names the damaged block's bytes. Here the second half of the second or the fourth
  // block of a chunk of Java Lucene's own BEST_SPEED index is overwritten (checksums off, as a
  // reader that skips them would see it): every document before that block is read as Lucene read
  // it, then the error.
  const size_t damaged_index = GENERATE(size_t{1}, size_t{3});
  INFO("damaged block " << damaged_index);
  auto root = rfs::lucene::testing::Lucene8Indexes();
  if (!root) return;
  rfs::test::TempDir copy("rfs-lz4-pair");
  std::filesystem::copy(*root / "speed_multi", copy.path());
  auto golden = ReadLines(copy.path() / "golden.jsonl");
  golden.pop_back();  // the stats line

  // The first chunk of the first segment with more blocks than the damaged one's index.
  uint64_t second_segment_base = 0;
  rfs::lucene::SegmentCommitInfo segment;
  {
    auto reader = OpenIndex(copy.path());
    segment = reader->segments().front();
    REQUIRE(reader->segment_base(0) == 0);  // its cursors are its doc ids
    REQUIRE(reader->segments().size() > 1);
    second_segment_base = reader->segment_base(1);
  }
  REQUIRE(!segment.info.is_compound);
  const std::string fdt_name = segment.name + ".fdt";
  std::vector<uint8_t> fdt = ReadFile(copy.path() / fdt_name);
  const ChunkOfBlocks found = FindChunkOfBlocks(copy.path(), segment, fdt, damaged_index);
  const ChunkBlocks& layout = found.layout;
  const int32_t first_doc = found.first_doc;
  const std::vector<size_t>& doc_ends = found.doc_ends;
  const ChunkBlocks::Block damaged = layout.blocks[damaged_index];
  DamageBlock(fdt, damaged, copy.path() / fdt_name);

  // The documents Lucene read whose bytes end before the damaged block's, some of them in the
  // block decoded beside it.
  size_t sound = 0;
  size_t sound_in_partner = 0;
  for (const std::string& line : golden) {
    const uint64_t cursor = std::stoull(line.substr(10, line.find(',') - 10));
    if (cursor >= second_segment_base) break;
    const auto doc = static_cast<int64_t>(cursor) - first_doc;
    if (doc >= 0) {
      if (doc >= static_cast<int64_t>(doc_ends.size())) break;
      const size_t end = doc_ends[static_cast<size_t>(doc)];
      if (end > damaged.data_start) break;
      if (end > layout.blocks[damaged_index - 1].data_start) ++sound_in_partner;
    }
    ++sound;
  }
  REQUIRE(sound_in_partner > 0);

  rfs::lucene::ShardReaderOptions options;
  options.verify_checksums = false;
  auto damaged_reader = OpenIndex(copy.path(), std::move(options));
  auto docs = damaged_reader->OpenAt(0);
  REQUIRE(docs.ok());
  std::vector<std::string> read;
  Document doc;
  absl::Status error;
  for (;;) {
    auto more = (*docs)->Next(doc);
    if (!more.ok()) {
      error = more.status();
      break;
    }
    REQUIRE(*more);  // the damage is met before the end
    read.push_back(GoldenLine(doc));
  }
  INFO(error.ToString());
  REQUIRE(absl::IsDataLoss(error));
  CHECK(read == std::vector<std::string>(golden.begin(),
                                         golden.begin() + static_cast<std::ptrdiff_t>(sound)));
  const std::string message(error.message());
  CHECK_THAT(message, Catch::Contains(fdt_name));
  CHECK_THAT(message, Catch::Contains("LZ4"));
  // At a byte of the damaged block.
  const size_t at = message.rfind(" at offset ");
  REQUIRE(at != std::string::npos);
  const uint64_t offset = std::stoull(message.substr(at + 11));
  CHECK(offset >= damaged.file_start);
  CHECK(offset <= damaged.file_end);
}

TEST_CASE("A cursor sent into a chunk decodes its blocks from its document's on",
          "[lucene][lucene8]") {
  // A reader sent to a document inside a chunk (each thread of a parallel scan starts its ranges
  // so) needs none of the blocks wholly before that document: they are passed over, and decoded
  // only if a document of theirs is asked for after all. On Java Lucene's own BEST_SPEED index: a
  // document of a passed-over block, asked for afterwards, reads exactly; and with the second
  // block damaged (checksums off), a document of the fourth block or later reads as before the
  // damage, the error coming only when a document of the damaged block is asked for.
  auto root = rfs::lucene::testing::Lucene8Indexes();
  if (!root) return;
  rfs::test::TempDir copy("rfs-lz4-seek");
  std::filesystem::copy(*root / "speed_multi", copy.path());
  rfs::lucene::SegmentCommitInfo segment;
  {
    auto reader = OpenIndex(copy.path());
    segment = reader->segments().front();
  }
  REQUIRE(!segment.info.is_compound);
  const std::string fdt_name = segment.name + ".fdt";
  std::vector<uint8_t> fdt = ReadFile(copy.path() / fdt_name);
  const ChunkOfBlocks found = FindChunkOfBlocks(copy.path(), segment, fdt, 3);
  const auto& blocks = found.layout.blocks;
  // A document wholly in the second block, and the first that starts in the fourth or later.
  std::optional<int32_t> early, late;
  for (size_t i = 0; i < found.doc_ends.size(); ++i) {
    const size_t begin = i == 0 ? 0 : found.doc_ends[i - 1];
    const size_t end = found.doc_ends[i];
    if (!early && begin >= blocks[1].data_start && end <= blocks[1].data_end && end > begin) {
      early = static_cast<int32_t>(i);
    }
    if (!late && begin >= blocks[3].data_start && end > begin) late = static_cast<int32_t>(i);
  }
  REQUIRE(early.has_value());
  REQUIRE(late.has_value());

  auto local = rfs::core::LocalDirectory::Open(copy.str());
  REQUIRE(local.ok());
  using rfs::lucene::internal::ChunkCursor;
  auto bytes_of = [&](ChunkCursor& chunks, int32_t index) -> absl::StatusOr<std::vector<uint8_t>> {
    auto chunk = chunks.ChunkFor(found.first_doc + index);
    if (!chunk.ok()) return chunk.status();
    const auto bytes = (*chunk)->doc_bytes(index);
    return std::vector<uint8_t>(bytes.begin(), bytes.end());
  };
  std::vector<uint8_t> early_bytes, late_bytes;
  {
    // In order, every block decoded on the way.
    auto in_order = ChunkCursor::Open(**local, segment, false);
    REQUIRE(in_order.ok());
    auto e = bytes_of(**in_order, *early);
    auto l = bytes_of(**in_order, *late);
    REQUIRE(e.ok());
    REQUIRE(l.ok());
    early_bytes = *e;
    late_bytes = *l;
    // Sent to the late document first, then back to the early one.
    auto sent = ChunkCursor::Open(**local, segment, false);
    REQUIRE(sent.ok());
    auto l2 = bytes_of(**sent, *late);
    REQUIRE(l2.ok());
    CHECK(*l2 == late_bytes);
    auto e2 = bytes_of(**sent, *early);
    REQUIRE(e2.ok());
    CHECK(*e2 == early_bytes);
  }

  DamageBlock(fdt, blocks[1], copy.path() / fdt_name);
  auto damaged = ChunkCursor::Open(**local, segment, false);
  REQUIRE(damaged.ok());
  auto l3 = bytes_of(**damaged, *late);
  INFO(l3.status().ToString());
  REQUIRE(l3.ok());
  CHECK(*l3 == late_bytes);
  auto e3 = bytes_of(**damaged, *early);
  REQUIRE(!e3.ok());
  CHECK(absl::IsDataLoss(e3.status()));
  const std::string message(e3.status().message());
  CHECK_THAT(message, Catch::Contains(fdt_name));
  const size_t at = message.rfind(" at offset ");
  REQUIRE(at != std::string::npos);
  const uint64_t offset = std::stoull(message.substr(at + 11));
  CHECK(offset >= blocks[1].file_start);
  CHECK(offset <= blocks[1].file_end);
}
