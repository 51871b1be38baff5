// Internal stored-fields machinery (docs/formats.md C.7-C.8): the format
// description read from `.fdt`/`.fdm` headers, the chunk decoder, the
// sequential chunk cursor over a `.fdt`, and the per-document field parser.
//
// Hot path: ChunkCursor decodes a whole chunk once into reused buffers; each
// document is then a slice of the decoded bytes. No per-document allocation.
//
// Internal to rfs::lucene. Not thread-safe (one cursor per thread).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "rfs/core/byte_reader.hpp"
#include "rfs/core/memory_budget.hpp"
#include "rfs/core/random_access.hpp"
#include "rfs/lucene/segment_infos.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lucene/codecs/compression_internal.hpp"
#include "lucene/codecs/stored_fields_reader_internal.hpp"

namespace rfs::lucene::internal {

enum class Compression {
  kLz4,              // Lucene50 BEST_SPEED: LZ4, no stored length
  kDeflate,          // Lucene50 BEST_COMPRESSION: VInt length + raw DEFLATE
  kLz4WithDict,      // Lucene87/90 BEST_SPEED (C.8.2)
  kDeflateWithDict,  // Lucene87/90 BEST_COMPRESSION (C.8.3)
  /// Elasticsearch 8.14+ Zstd814StoredFieldsFormat, both modes: per block a
  /// VInt compressed length and zstd frames; nothing for an empty block.
  kZstd,
  /// OpenSearch custom-codecs `zstd`: VInt dictLength, VInt blockLength, the
  /// dictionary's frames, then up to 10 sub-blocks decompressed with the
  /// dictionary as raw content; each part a VInt compressed length + frames.
  kZstdWithDict,
  /// OpenSearch custom-codecs `zstd_no_dict`: VInt blockLength, then
  /// ceil(len / blockLength) sub-blocks, each a VInt compressed length + frames.
  kZstdNoDict
};

struct StoredFieldsFormat {
  std::string codec;  ///< .fdt header codec name
  int32_t version = 0;
  Compression compression = Compression::kLz4;
  /// Byte order of fixed-width parts of numeric fields (C.7.4).
  core::ByteOrder order = core::ByteOrder::kBig;
  /// Lucene90: StoredFieldsInts (C.7.3) instead of PackedInts.
  bool lucene90_ints = false;
  /// v4 and Lucene90: chunk token carries a dirty bit (docs = token >>> 2).
  bool token_dirty_bit = false;
  /// Lucene41StoredFields (Lucene 4.x CompressingStoredFieldsFormat): the
  /// chunk token is the doc count alone, a chunk is sliced when it holds at
  /// least 2 * chunkSize bytes (version >= 1), and numeric fields are
  /// fixed-width big-endian (C.7.4 describes the 5.x+ variable encodings).
  bool lucene4 = false;
  int32_t chunk_size = 0;
};

/// Maps a `.fdt` header codec name and version to a format (chunk_size left
/// 0). Unimplemented for unknown names or versions.
absl::StatusOr<StoredFieldsFormat> FormatForHeader(std::string_view codec, int32_t version,
                                                   std::string_view file);

/// An allocator whose resize leaves new bytes uninitialised: a chunk's buffer is sized from
/// lengths the file claims before a byte is decoded, and zero-filling it would make a corrupt
/// claim cost its whole size in memory before the decoder finds the lie. The decoder writes every
/// byte below `DecodedChunk::ready` (but those of blocks it passed over, which ChunkCursor decodes
/// before they are read) before anything reads it.
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <typename U, typename... Args>
  void construct(U* at, Args&&... args) {
    if constexpr (sizeof...(Args) == 0) {
      ::new (static_cast<void*>(at)) U;
    } else {
      ::new (static_cast<void*>(at)) U(std::forward<Args>(args)...);
    }
  }
};
using ChunkBytes = std::vector<uint8_t, DefaultInitAllocator<uint8_t>>;

/// One decoded chunk. `data` has slack past `total` for the LZ4 decoder.
struct DecodedChunk {
  int32_t doc_base = 0;
  int32_t chunk_docs = 0;
  bool sliced = false;
  uint64_t file_offset = 0;  ///< where the chunk starts in the .fdt
  std::vector<uint32_t> num_fields;
  std::vector<uint32_t> offsets;  ///< chunk_docs + 1 entries
  ChunkBytes data;
  size_t total = 0;
  bool decompressed = false;
  /// Bytes of `data` decoded so far: `total`, except for a lazily decoded chunk (see
  /// ChunkDecoder::set_lazy), whose later blocks wait for EnsureDecoded. Such a chunk may also
  /// have blocks below `ready` passed over (ChunkDecoder::Undecoded says which bytes).
  size_t ready = 0;

  std::span<const uint8_t> doc_bytes(int32_t index) const {
    return std::span<const uint8_t>(data.data() + offsets[index],
                                    offsets[index + 1] - offsets[index]);
  }
};

/// Decodes chunks of one format. Holds scratch buffers and an Inflater.
class ChunkDecoder {
 public:
  explicit ChunkDecoder(const StoredFieldsFormat& format) : format_(format) {}

  /// Decodes the chunk at `in`'s cursor and advances past it. The payload
  /// is decompressed when `want_doc` < 0 or lies in the chunk; otherwise it
  /// is skipped (decoded into scratch only when the format stores no
  /// compressed length). `max_docs` bounds chunk_docs (docs left in the
  /// segment).
  absl::Status Decode(core::ByteReader& in, int32_t max_docs, int32_t want_doc, DecodedChunk& out);

  const StoredFieldsFormat& format() const { return format_; }

  /// LZ4 preset-dictionary chunks (Lucene 8.7+ BEST_SPEED, ~600 KB of ~60 KB blocks) are then
  /// decoded a block at a time as their documents are read, so each document is used while its
  /// block is still in the CPU cache (a whole chunk does not fit in a core's L2). The chunk's
  /// compressed bytes must stay valid until the next Decode.
  void set_lazy(bool lazy) { lazy_ = lazy; }

  /// Whether bytes [begin, end) of the chunk last decoded into `chunk` still wait to be decoded.
  bool Undecoded(const DecodedChunk& chunk, size_t begin, size_t end) const;
  /// Decodes the waiting blocks of the chunk last decoded into `chunk` that bytes [begin, end) of
  /// its data lie in. Blocks that wait wholly before `begin` are passed over, and decoded only if
  /// bytes of theirs are asked for later.
  absl::Status EnsureDecoded(DecodedChunk& chunk, size_t begin, size_t end);

  /// Called with a chunk's decoded size before a chunk of at least kLargeChunkBytes is
  /// decompressed (a huge document's), so the caller can wait for memory; an error stops the read.
  /// What it returns is kept until the next chunk is decoded (the huge one's document has been
  /// used by then).
  using LargeChunkGate =
      std::function<absl::StatusOr<core::MemoryBudget::LargeDocumentHold>(size_t decoded_bytes)>;
  static constexpr size_t kLargeChunkBytes = size_t{4} << 20;
  void set_large_chunk_gate(LargeChunkGate gate) { large_chunk_gate_ = std::move(gate); }

  /// For input that is a window of a file not held in memory: called before each slice of a
  /// sliced chunk (a huge document's) with the most bytes the slice can take, it makes `in`
  /// hold at least that many from its position (fewer only at the end of the data), keeping the
  /// position in the file. So a huge document's compressed bytes are streamed a slice at a time
  /// instead of read whole.
  using InputRefill = std::function<absl::Status(core::ByteReader& in, size_t at_least)>;
  void set_input_refill(InputRefill refill) { input_refill_ = std::move(refill); }
  /// The most compressed bytes one slice of `chunk_size` decoded bytes can take, with room for
  /// every format's worst case (stored blocks, per-block headers) and its lengths.
  static size_t SliceInputBound(size_t chunk_size) {
    return chunk_size + chunk_size / 16 + (size_t{64} << 10);
  }

 private:
  // A block of a lazily decoded chunk, waiting.
  struct PendingBlock {
    std::span<const uint8_t> compressed;
    uint64_t source_offset = 0;  // of `compressed` in the file, for errors
    size_t start = 0;            // in the chunk's data
    size_t len = 0;
  };

  absl::Status ReadInts(core::ByteReader& in, int32_t count, std::vector<uint32_t>& out,
                        size_t out_offset);
  // `whole_chunk`: the block is the chunk's whole data (not one slice of a sliced chunk), so its
  // later sub-blocks may wait (lazy_).
  absl::Status DecompressBlock(core::ByteReader& in, uint8_t* dst_base, size_t dst_capacity,
                               size_t pos, size_t len, bool whole_chunk = false);
  absl::Status SkipBlock(core::ByteReader& in, size_t len);
  // Decodes waiting block `i` into `chunk`, with block i + 1 beside it when it is below `limit`;
  // returns how many it decoded.
  absl::StatusOr<size_t> DecodeWaiting(DecodedChunk& chunk, size_t i, size_t limit);

  absl::Status DecompressZstd(core::ByteReader& in, std::span<uint8_t> out,
                              std::span<const uint8_t> dictionary, bool allow_empty);

  StoredFieldsFormat format_;
  Inflater inflater_;
  ZstdDecoder zstd_;
  std::vector<uint8_t> scratch_;
  // A second [dict | block] for the block decoded beside scratch_'s (Lz4DecompressPair).
  std::vector<uint8_t> pair_scratch_;
  std::vector<uint32_t> lengths_;
  LargeChunkGate large_chunk_gate_;
  core::MemoryBudget::LargeDocumentHold large_hold_;
  InputRefill input_refill_;
  bool lazy_ = false;
  std::vector<PendingBlock> pending_;  // in order; decoded up to next_pending_
  size_t next_pending_ = 0;
  // Waiting blocks [hole_first_, hole_end_) were passed over, not decoded (EnsureDecoded).
  size_t hole_first_ = 0;
  size_t hole_end_ = 0;
  std::string_view pending_source_;  // the file the pending blocks come from
  uint32_t pending_dict_len_ = 0;
};

/// Sequential access to the chunks of one segment's `.fdt`.
class ChunkCursor {
 public:
  /// Opens `<seg>.fdt` (+ `.fdm` when the version keeps chunkSize there) in
  /// `segment_dir`, checking headers against the segment id.
  /// With `verify_checksum` the CRC-32 of the whole `.fdt` is checked first
  /// (otherwise only its footer structure, as Lucene's reader does).
  static absl::StatusOr<std::unique_ptr<ChunkCursor>> Open(const core::IDirectory& segment_dir,
                                                           const SegmentCommitInfo& segment,
                                                           bool verify_checksum);

  ChunkCursor(const ChunkCursor&) = delete;  // the decoder's refill points at this cursor
  ChunkCursor& operator=(const ChunkCursor&) = delete;

  const StoredFieldsFormat& format() const { return decoder_.format(); }
  int32_t max_doc() const { return max_doc_; }
  /// The decoded chunk's bytes may be given away by a consumer (Document::source_releasable):
  /// a later ChunkFor for a document of it decodes it again from the file.
  void ForgetChunkBytes() { chunk_.decompressed = false; }
  const std::string& file_name() const { return file_->name(); }

  /// Called with the compressed bytes of each chunk decoded (their file and offset) while they
  /// are still in cache, so a caller can hash the file from what is read anyway.
  using ChunkBytesObserver =
      std::function<void(const std::shared_ptr<const core::IRandomAccessFile>& file,
                         uint64_t offset, std::span<const uint8_t> bytes)>;
  /// A file not held in memory passes its header (read at open) at once: hashing it from the file
  /// after the last chunk would fetch its first block again.
  void set_chunk_bytes_observer(ChunkBytesObserver observer) {
    observer_ = std::move(observer);
    if (observer_ && !head_.empty()) observer_(file_, 0, head_);
  }
  void set_large_chunk_gate(ChunkDecoder::LargeChunkGate gate) {
    decoder_.set_large_chunk_gate(std::move(gate));
  }

  /// Makes the chunk holding `doc` current (decompressed) and returns it.
  /// Forward moves skip chunks without decompressing when possible; a
  /// backward move restarts from the first chunk.
  absl::StatusOr<const DecodedChunk*> ChunkFor(int32_t doc);

 private:
  ChunkCursor(std::shared_ptr<const core::IRandomAccessFile> file, const StoredFieldsFormat& format,
              int32_t max_doc, uint64_t data_start, uint64_t data_end)
      : file_(std::move(file)),
        decoder_(format),
        max_doc_(max_doc),
        data_start_(data_start),
        data_end_(data_end),
        next_offset_(data_start),
        dropped_until_(data_start) {
    decoder_.set_lazy(true);
  }

  absl::Status DecodeNext(int32_t want_doc);
  // Hands the observer the chunk's bytes in window_ from piece_start_ to `until`, which then
  // starts the next piece.
  void PassPieceToObserver(uint64_t until);
  // The decoder's InputRefill over window_ (see ChunkDecoder::set_input_refill).
  absl::Status RefillWindow(core::ByteReader& in, size_t at_least);
  // Makes window_ hold the data from `at` on: at least `need` bytes and up to `want` (fewer only
  // at the data's end), as the file holds them or read into window_bytes_.
  absl::Status ReadWindow(uint64_t at, size_t need, size_t want);
  void StreamSlices() {
    decoder_.set_input_refill(
        [this](core::ByteReader& in, size_t at_least) { return RefillWindow(in, at_least); });
  }
  // Over a mapped file: as a huge chunk's slices are decoded, the observer is handed the bytes
  // behind them and their pages are offered back, so the compressed chunk (as large as the
  // document when it does not compress) is never resident whole beside the decoded one.
  absl::Status ReleaseSlicesBehind(const core::ByteReader& in);
  void MapSlices() {
    decoder_.set_input_refill(
        [this](core::ByteReader& in, size_t) { return ReleaseSlicesBehind(in); });
  }
  // Lucene41StoredFieldsData (plain codec header, optional footer).
  static absl::StatusOr<std::unique_ptr<ChunkCursor>> OpenLucene4(
      std::shared_ptr<const core::IRandomAccessFile> file, const SegmentCommitInfo& segment,
      bool verify_checksum);

  std::shared_ptr<const core::IRandomAccessFile> file_;
  std::span<const uint8_t> view_;  // whole file when contiguous
  bool contiguous_ = false;
  // Otherwise a window of the file: bytes the file holds (kept alive by window_owner_) or read
  // into window_bytes_.
  std::span<const uint8_t> window_;
  std::shared_ptr<const void> window_owner_;
  std::vector<uint8_t> window_bytes_;
  bool window_copied_ = false;  // window_ is in window_bytes_
  // The file gave a view of a block it holds (ViewAt): a window is copied only for a chunk that
  // crosses a block's end.
  bool file_holds_blocks_ = false;
  std::vector<uint8_t> head_;  // and its bytes before the first chunk
  uint64_t window_start_ = 0;
  // Where the part of the chunk being decoded that the observer has not seen yet starts (a
  // window refilled inside a chunk passes the part it held first).
  uint64_t piece_start_ = 0;
  ChunkDecoder decoder_;
  int32_t max_doc_;
  uint64_t data_start_;
  uint64_t data_end_;  // start of the footer
  uint64_t next_offset_;
  uint64_t dropped_until_;  // pages before this offset were offered back
  int32_t next_doc_ = 0;
  DecodedChunk chunk_;
  bool have_chunk_ = false;
  ChunkBytesObserver observer_;
};

/// Parses `num_fields` serialized fields (C.7.4) of one document. Calls
/// `visit(const StoredField&)` for each; the visitor returns false to stop.
/// Returns false on malformed bytes (the caller reports DataLoss with the
/// chunk's file offset).
/// With `fixed_numbers` (Lucene 4.x) numeric values are plain big-endian
/// ints and longs.
template <typename Visitor>
bool ParseFields(std::span<const uint8_t> bytes, uint32_t num_fields, core::ByteOrder order,
                 Visitor&& visit, bool fixed_numbers = false);

/// The fuzz entry: decodes every chunk of a `.fdt` body given the format,
/// checking doc bases and visiting each document's fields.
absl::Status DecodeAllChunksForFuzzing(std::span<const uint8_t> body,
                                       const StoredFieldsFormat& format, int32_t max_doc);

// ---- implementation of ParseFields ----

namespace detail {

struct FastReader {
  const uint8_t* p;
  const uint8_t* end;

  bool Byte(uint8_t& v) {
    if (p >= end) return false;
    v = *p++;
    return true;
  }
  bool VLong(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 63; shift += 7) {
      if (p >= end) return false;
      const uint8_t b = *p++;
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  bool VInt(uint32_t& v) {
    uint64_t wide;
    if (!VLong(wide) || wide > 0xFFFFFFFFu) return false;
    v = static_cast<uint32_t>(wide);
    return true;
  }
  template <typename T>
  bool Fixed(T& v, core::ByteOrder order) {
    if (static_cast<size_t>(end - p) < sizeof(T)) return false;
    T raw;
    std::memcpy(&raw, p, sizeof(T));
    p += sizeof(T);
    if (order == core::ByteOrder::kBig) {
      if constexpr (sizeof(T) == 2) raw = __builtin_bswap16(raw);
      if constexpr (sizeof(T) == 4) raw = __builtin_bswap32(raw);
      if constexpr (sizeof(T) == 8) raw = __builtin_bswap64(raw);
    }
    v = raw;
    return true;
  }
};

}  // namespace detail

template <typename Visitor>
bool ParseFields(std::span<const uint8_t> bytes, uint32_t num_fields, core::ByteOrder order,
                 Visitor&& visit, bool fixed_numbers) {
  detail::FastReader in{bytes.data(), bytes.data() + bytes.size()};
  StoredField field;
  for (uint32_t i = 0; i < num_fields; ++i) {
    uint64_t info;
    if (!in.VLong(info)) return false;
    // infoAndBits = fieldNumber << TYPE_BITS(3) | type
    // (Lucene90CompressingStoredFieldsWriter.java).
    const uint64_t number = info >> 3;
    const auto type = static_cast<uint8_t>(info & 7);
    if (number > 0x7FFFFFFF) return false;
    field.number = static_cast<int32_t>(number);
    field.long_value = 0;
    field.double_value = 0;
    field.bytes = {};
    if (fixed_numbers && type >= 2 && type <= 5) {
      // CompressingStoredFieldsWriter.writeField in 4.x: writeInt for ints
      // and Float.floatToIntBits, writeLong for longs and doubles.
      if (type == 2 || type == 3) {
        uint32_t bits;
        if (!in.Fixed(bits, core::ByteOrder::kBig)) return false;
        if (type == 2) {
          field.type = StoredFieldType::kInt;
          field.long_value = static_cast<int32_t>(bits);
        } else {
          float f;
          std::memcpy(&f, &bits, 4);
          field.type = StoredFieldType::kFloat;
          field.double_value = f;
        }
      } else {
        uint64_t bits;
        if (!in.Fixed(bits, core::ByteOrder::kBig)) return false;
        if (type == 4) {
          field.type = StoredFieldType::kLong;
          field.long_value = static_cast<int64_t>(bits);
        } else {
          double d;
          std::memcpy(&d, &bits, 8);
          field.type = StoredFieldType::kDouble;
          field.double_value = d;
        }
      }
      if (!visit(static_cast<const StoredField&>(field))) return true;
      continue;
    }
    switch (type) {
      case 0:    // STRING
      case 1: {  // BYTE_ARR
        uint32_t len;
        if (!in.VInt(len) || len > static_cast<size_t>(in.end - in.p)) {
          return false;
        }
        field.type = type == 0 ? StoredFieldType::kString : StoredFieldType::kBytes;
        field.bytes = std::span<const uint8_t>(in.p, len);
        in.p += len;
        break;
      }
      case 2: {  // INT: ZInt
        uint32_t raw;
        if (!in.VInt(raw)) return false;
        field.type = StoredFieldType::kInt;
        field.long_value = static_cast<int32_t>((raw >> 1) ^ (~(raw & 1) + 1));
        break;
      }
      case 3: {  // FLOAT: ZFloat
        uint8_t b;
        if (!in.Byte(b)) return false;
        uint32_t bits;
        field.type = StoredFieldType::kFloat;
        if (b == 0xFF) {
          if (!in.Fixed(bits, order)) return false;
        } else if (b & 0x80) {
          field.double_value = static_cast<int>(b & 0x7F) - 1;
          break;
        } else {
          uint16_t mid;
          uint8_t low;
          if (!in.Fixed(mid, order) || !in.Byte(low)) return false;
          bits = uint32_t{b} << 24 | uint32_t{mid} << 8 | low;
        }
        float f;
        std::memcpy(&f, &bits, 4);
        field.double_value = f;
        break;
      }
      case 4: {  // LONG: TLong
        uint8_t h;
        if (!in.Byte(h)) return false;
        uint64_t bits = h & 0x1F;
        if (h & 0x20) {
          uint64_t more;
          if (!in.VLong(more)) return false;
          bits |= more << 5;
        }
        int64_t v = static_cast<int64_t>((bits >> 1) ^ (~(bits & 1) + 1));
        // SECOND_ENCODING 0x40, HOUR_ENCODING 0x80, DAY_ENCODING 0xC0.
        static constexpr int64_t kMultiplier[] = {1, 1000, 3600000, 86400000};
        field.type = StoredFieldType::kLong;
        field.long_value = static_cast<int64_t>(static_cast<uint64_t>(v) *
                                                static_cast<uint64_t>(kMultiplier[h >> 6]));
        break;
      }
      case 5: {  // DOUBLE: ZDouble
        uint8_t b;
        if (!in.Byte(b)) return false;
        field.type = StoredFieldType::kDouble;
        if (b == 0xFF) {
          uint64_t bits;
          if (!in.Fixed(bits, order)) return false;
          double d;
          std::memcpy(&d, &bits, 8);
          field.double_value = d;
        } else if (b == 0xFE) {
          uint32_t bits;
          if (!in.Fixed(bits, order)) return false;
          float f;
          std::memcpy(&f, &bits, 4);
          field.double_value = f;
        } else if (b & 0x80) {
          field.double_value = static_cast<int>(b & 0x7F) - 1;
        } else {
          uint32_t mid32;
          uint16_t mid16;
          uint8_t low;
          if (!in.Fixed(mid32, order) || !in.Fixed(mid16, order) || !in.Byte(low)) {
            return false;
          }
          const uint64_t bits =
              uint64_t{b} << 56 | uint64_t{mid32} << 24 | uint64_t{mid16} << 8 | low;
          double d;
          std::memcpy(&d, &bits, 8);
          field.double_value = d;
        }
        break;
      }
      default:
        return false;
    }
    if (!visit(static_cast<const StoredField&>(field))) return true;
  }
  // A document's length covers exactly its fields.
  return in.p == in.end;
}

}  // namespace rfs::lucene::internal
