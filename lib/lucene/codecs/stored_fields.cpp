// Stored fields: formats, chunk decoding and sequential chunk access
// (docs/formats.md C.7, C.8; Lucene CompressingStoredFieldsReader.java,
// Lucene90CompressingStoredFieldsReader.java, StoredFieldsInts.java,
// LZ4WithPresetDictCompressionMode.java,
// DeflateWithPresetDictCompressionMode.java).
#include <algorithm>
#include <cstring>
#include <functional>

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/codecs/format_util_internal.hpp"
#include "lucene/codecs/stored_fields_internal.hpp"
#include "lucene/codecs/stored_fields_reader_internal.hpp"

namespace rfs::lucene {
namespace internal {

using core::ByteOrder;
using core::ByteReader;
using core::StrCat;

namespace {

constexpr std::string_view kFdtNames[] = {
    "Lucene50StoredFieldsFastData", "Lucene50StoredFieldsHighData", "Lucene87StoredFieldsFastData",
    "Lucene87StoredFieldsHighData", "Lucene90StoredFieldsFastData", "Lucene90StoredFieldsHighData",
    // Lucene90CompressingStoredFieldsFormat with other compression modes: the
    // `.fdt` codec name is the format name as given, the `.fdm`/`.fdx` keep
    // Lucene90FieldsIndex*. Elasticsearch 8.14+:
    // server/src/main/java/org/elasticsearch/index/codec/zstd/Zstd814StoredFieldsFormat.java
    // ("ZstdStoredFields814", BEST_SPEED level 0 / 14 KiB blocks / 128 docs,
    // BEST_COMPRESSION level 3 / 240 KiB / 2048 docs; the mode attribute is
    // informational). OpenSearch custom-codecs, the same names in every
    // Lucene container (Lucene95/99/912/101/103/104CustomStoredFieldsFormat,
    // codecs ZSTD, ZSTD99, ZSTD912, ZSTD101, ZSTD103, ZSTD104 and the
    // ZSTDNODICT twins):
    // src/main/java/org/opensearch/index/codec/customcodecs/Lucene104CustomStoredFieldsFormat.java
    "ZstdStoredFields814", "CustomStoredFieldsZstd", "CustomStoredFieldsZstdNoDict"};
// Lucene 4.0 stored fields (Lucene40StoredFieldsFormat, uncompressed); not
// read.
constexpr std::string_view kFdtLegacyNames[] = {"Lucene40StoredFieldsData"};
// Lucene41StoredFieldsFormat = CompressingStoredFieldsFormat("Lucene41StoredFields",
// FAST, 1 << 14): `.fdt` codec formatName + "Data" with a plain codec header.
// CompressingStoredFieldsWriter (branch_4x): VERSION_START = 0,
// VERSION_BIG_CHUNKS = 1 (chunkSize in the header, sliced big chunks),
// VERSION_CHECKSUM = 2 (footer).
constexpr std::string_view kFdtLucene41 = "Lucene41StoredFieldsData";
constexpr int32_t kLucene41BigChunks = 1;
constexpr int32_t kLucene41Checksum = 2;
constexpr int32_t kLucene41ChunkSize = 1 << 14;
constexpr std::string_view kFdmNames[] = {"Lucene85FieldsIndexMeta", "Lucene90FieldsIndexMeta"};

// CompressingStoredFieldsWriter (8.x): VERSION_META = 3 moved chunkSize and
// the fields index to `.fdm`; VERSION_NUM_DIRTY_DOCS = 4 added the dirty bit.
constexpr int32_t kVersionMeta = 3;
constexpr int32_t kVersionDirtyBit = 4;
// Upper bound on a chunk's decoded size: Lucene stores lengths as ints.
constexpr uint64_t kMaxChunkBytes = 0x7FFFFFFF;
// Compressed bytes consumed between two hints that a mapped `.fdt` may drop them.
constexpr uint64_t kDropPagesEvery = uint64_t{8} << 20;
// Window read at a time when the `.fdt` is not contiguous in memory.
constexpr size_t kMinWindow = size_t{1} << 20;
constexpr size_t kMaxStartWindow = size_t{8} << 20;
// Copied past a held block's end for a chunk that crosses it (more if the chunk needs it).
constexpr size_t kCrossingWindow = size_t{128} << 10;

absl::StatusOr<int32_t> ReadPositiveVInt(ByteReader& in, std::string_view what, uint32_t max) {
  const size_t at = in.position();
  RFS_ASSIGN_OR_RETURN(uint32_t v, in.ReadVInt());
  if (v > max) return in.ErrorAt(at, StrCat("invalid ", what, " ", v));
  return static_cast<int32_t>(v);
}

// The start of a preset-dictionary compression block (C.8.2 / C.8.3): VInt
// dictLength, VInt blockLength; ceil((len - dict) / block) blocks follow the
// dictionary.
struct DictLayout {
  uint32_t dict_len = 0;
  uint32_t block_len = 0;
  size_t num_blocks = 0;
};

absl::StatusOr<DictLayout> ReadDictLayout(ByteReader& in, size_t len) {
  const size_t at = in.position();
  DictLayout out;
  RFS_ASSIGN_OR_RETURN(out.dict_len, in.ReadVInt());
  RFS_ASSIGN_OR_RETURN(out.block_len, in.ReadVInt());
  if (out.dict_len > len || (len > out.dict_len && out.block_len == 0)) {
    return in.ErrorAt(at, StrCat("invalid dictionary/block lengths ", out.dict_len, "/",
                                 out.block_len, " for ", len, " bytes"));
  }
  const size_t rest = len - out.dict_len;
  out.num_blocks = rest == 0 ? 0 : (rest + out.block_len - 1) / out.block_len;
  // Every block takes at least one byte of input.
  if (out.num_blocks > in.remaining()) {
    return in.ErrorAt(at, StrCat("invalid block count ", out.num_blocks));
  }
  return out;
}

// OpenSearch zstd_no_dict: VInt blockLength, then ceil(len / blockLength)
// sub-blocks.
struct NoDictLayout {
  uint32_t block_len = 0;
  size_t num_blocks = 0;
};

absl::StatusOr<NoDictLayout> ReadNoDictLayout(ByteReader& in, size_t len) {
  const size_t at = in.position();
  NoDictLayout out;
  RFS_ASSIGN_OR_RETURN(out.block_len, in.ReadVInt());
  if (len > 0 && out.block_len == 0) {
    return in.ErrorAt(at, StrCat("invalid block length 0 for ", len, " bytes"));
  }
  out.num_blocks = len == 0 ? 0 : (len + out.block_len - 1) / out.block_len;
  if (out.num_blocks > in.remaining()) {
    return in.ErrorAt(at, StrCat("invalid block count ", out.num_blocks));
  }
  return out;
}

}  // namespace

absl::StatusOr<StoredFieldsFormat> FormatForHeader(std::string_view codec, int32_t version,
                                                   std::string_view file) {
  StoredFieldsFormat f;
  f.codec = std::string(codec);
  f.version = version;
  int32_t min_version = 0, max_version = 0;
  if (codec == kFdtNames[0] || codec == kFdtNames[1]) {
    f.compression = codec == kFdtNames[0] ? Compression::kLz4 : Compression::kDeflate;
    min_version = 0;
    max_version = kVersionDirtyBit;
  } else if (codec == kFdtNames[2] || codec == kFdtNames[3]) {
    f.compression =
        codec == kFdtNames[2] ? Compression::kLz4WithDict : Compression::kDeflateWithDict;
    min_version = kVersionMeta;
    max_version = kVersionDirtyBit;
  } else if (codec == kFdtNames[4] || codec == kFdtNames[5] || codec == kFdtNames[6] ||
             codec == kFdtNames[7] || codec == kFdtNames[8]) {
    if (codec == kFdtNames[4]) {
      f.compression = Compression::kLz4WithDict;
    } else if (codec == kFdtNames[5]) {
      f.compression = Compression::kDeflateWithDict;
    } else if (codec == kFdtNames[6]) {
      f.compression = Compression::kZstd;
    } else if (codec == kFdtNames[7]) {
      f.compression = Compression::kZstdWithDict;
    } else {
      f.compression = Compression::kZstdNoDict;
    }
    f.order = ByteOrder::kLittle;
    f.lucene90_ints = true;
    // Lucene90CompressingStoredFieldsWriter: VERSION_START = VERSION_CURRENT
    // = 1 (Lucene 9.0 through 10.x).
    min_version = 1;
    max_version = 1;
  } else if (codec == kFdtLucene41) {
    f.compression = Compression::kLz4;
    f.lucene4 = true;
    min_version = 0;
    max_version = kLucene41Checksum;
  } else {
    return absl::UnimplementedError(
        StrCat(file, ": unsupported stored fields codec '", codec, "'"));
  }
  if (version < min_version || version > max_version) {
    return absl::UnimplementedError(StrCat(file, ": unsupported version ", version, " of codec '",
                                           codec, "' (supported ", min_version, "..", max_version,
                                           ")"));
  }
  f.token_dirty_bit = !f.lucene4 && (f.lucene90_ints || version >= kVersionDirtyBit);
  return f;
}

absl::Status ChunkDecoder::ReadInts(ByteReader& in, int32_t count, std::vector<uint32_t>& out,
                                    size_t out_offset) {
  uint32_t* values = out.data() + out_offset;
  const size_t at = in.position();
  if (format_.lucene90_ints) {
    // StoredFieldsInts: u8 bpv in {0, 8, 16, 32}; full blocks of 128 values
    // as LE longs, values of a block interleaved across the longs.
    RFS_ASSIGN_OR_RETURN(uint8_t bpv, in.ReadByte());
    if (bpv == 0) {
      RFS_ASSIGN_OR_RETURN(uint32_t v, in.ReadVInt());
      std::fill(values, values + count, v);
      return absl::OkStatus();
    }
    if (bpv != 8 && bpv != 16 && bpv != 32) {
      return in.ErrorAt(at, StrCat("invalid bits per value ", int{bpv}));
    }
    const int per_long = 64 / bpv;
    const int longs = 128 / per_long;
    const uint64_t mask = bpv == 32 ? 0xFFFFFFFFu : (uint64_t{1} << bpv) - 1;
    int32_t k = 0;
    for (; k + 128 <= count; k += 128) {
      RFS_ASSIGN_OR_RETURN(auto block, in.ReadBytes(size_t(longs) * 8));
      for (int i = 0; i < longs; ++i) {
        uint64_t l;
        std::memcpy(&l, block.data() + i * 8, 8);
        if constexpr (std::endian::native == std::endian::big) {
          l = __builtin_bswap64(l);
        }
        for (int j = 0; j < per_long; ++j) {
          // Value k + i + j*longs sits in the j-th field from the top.
          values[k + i + j * longs] = static_cast<uint32_t>((l >> (64 - bpv * (j + 1))) & mask);
        }
      }
    }
    for (; k < count; ++k) {
      if (bpv == 8) {
        RFS_ASSIGN_OR_RETURN(values[k], in.ReadByte());
      } else if (bpv == 16) {
        RFS_ASSIGN_OR_RETURN(values[k], in.ReadLeU16());
      } else {
        RFS_ASSIGN_OR_RETURN(values[k], in.ReadLeU32());
      }
    }
    return absl::OkStatus();
  }
  // Lucene <= 8 saveInts: VInt bpv; 0 -> one VInt for all; else PackedInts
  // PACKED, big-endian bit stream of ceil(count * bpv / 8) bytes.
  RFS_ASSIGN_OR_RETURN(uint32_t bpv, in.ReadVInt());
  if (bpv == 0) {
    RFS_ASSIGN_OR_RETURN(uint32_t v, in.ReadVInt());
    std::fill(values, values + count, v);
    return absl::OkStatus();
  }
  if (bpv > 32) return in.ErrorAt(at, StrCat("invalid bits per value ", bpv));
  const uint64_t nbytes = (uint64_t(count) * bpv + 7) / 8;
  RFS_ASSIGN_OR_RETURN(auto packed, in.ReadBytes(nbytes));
  const uint64_t mask = (uint64_t{1} << bpv) - 1;
  uint64_t acc = 0;
  uint32_t bits = 0;
  size_t bi = 0;
  for (int32_t i = 0; i < count; ++i) {
    while (bits < bpv) {
      acc = (acc << 8) | packed[bi++];
      bits += 8;
    }
    values[i] = static_cast<uint32_t>((acc >> (bits - bpv)) & mask);
    bits -= bpv;
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> ChunkDecoder::DecodeWaiting(DecodedChunk& chunk, size_t i, size_t limit) {
  // A decoded block out of its [dict | block] into the chunk's data.
  auto take = [&](const PendingBlock& block, const std::vector<uint8_t>& scratch) {
    std::memcpy(chunk.data.data() + block.start, scratch.data() + pending_dict_len_, block.len);
  };
  if (i + 1 < limit &&
      pair_scratch_.size() >= size_t{pending_dict_len_} + pending_[i + 1].len + kLz4Slack) {
    // Two blocks at once when two wait (about a fifth faster); a malformed one is decoded alone
    // below, so its error comes when a document reaches it, as it would one by one.
    const PendingBlock& first = pending_[i];
    const PendingBlock& second = pending_[i + 1];
    ByteReader in_first(first.compressed, pending_source_, first.source_offset);
    ByteReader in_second(second.compressed, pending_source_, second.source_offset);
    if (Lz4DecompressPair(in_first, scratch_, pending_dict_len_, first.len, in_second,
                          pair_scratch_, pending_dict_len_, second.len)) {
      take(first, scratch_);
      take(second, pair_scratch_);
      return 2;
    }
  }
  const PendingBlock& block = pending_[i];
  ByteReader sub(block.compressed, pending_source_, block.source_offset);
  RFS_RETURN_IF_ERROR(Lz4Decompress(sub, scratch_, 0, pending_dict_len_, block.len));
  if (!sub.at_end()) {
    return sub.Error(StrCat("LZ4 block ends ", sub.remaining(), " bytes before its stored length"));
  }
  take(block, scratch_);
  return 1;
}

bool ChunkDecoder::Undecoded(const DecodedChunk& chunk, size_t begin, size_t end) const {
  if (end > chunk.ready) return true;
  if (begin == end) return false;  // an empty document needs no bytes
  return hole_first_ < hole_end_ &&
         begin < pending_[hole_end_ - 1].start + pending_[hole_end_ - 1].len &&
         end > pending_[hole_first_].start;
}

absl::Status ChunkDecoder::EnsureDecoded(DecodedChunk& chunk, size_t begin, size_t end) {
  if (hole_first_ < hole_end_ && Undecoded(chunk, begin, std::min(end, chunk.ready))) {
    // A document of the blocks passed over, asked for after all (a cursor moved back).
    for (size_t i = hole_first_; i < hole_end_;) {
      RFS_ASSIGN_OR_RETURN(const size_t decoded, DecodeWaiting(chunk, i, hole_end_));
      i += decoded;
    }
    hole_first_ = hole_end_ = 0;
  }
  while (chunk.ready < end && next_pending_ < pending_.size()) {
    const PendingBlock& block = pending_[next_pending_];
    if (block.start + block.len <= begin &&
        (hole_first_ == hole_end_ || hole_end_ == next_pending_)) {
      // Wholly before the document: passed over (a cursor sent into the chunk, or past deleted
      // documents, reads none of it), and decoded only if one of its documents is asked for.
      if (hole_first_ == hole_end_) hole_first_ = next_pending_;
      hole_end_ = ++next_pending_;
      chunk.ready = block.start + block.len;
      continue;
    }
    RFS_ASSIGN_OR_RETURN(const size_t decoded,
                         DecodeWaiting(chunk, next_pending_, pending_.size()));
    next_pending_ += decoded;
    chunk.ready = pending_[next_pending_ - 1].start + pending_[next_pending_ - 1].len;
  }
  if (chunk.ready < end) {
    return core::DataLossAt(pending_source_, chunk.file_offset,
                            StrCat("chunk data ends at ", chunk.ready, ", before byte ", end));
  }
  return absl::OkStatus();
}

absl::Status ChunkDecoder::DecompressBlock(ByteReader& in, uint8_t* base, size_t capacity,
                                           size_t pos, size_t len, bool whole_chunk) {
  const std::span<uint8_t> buf(base, capacity);
  switch (format_.compression) {
    case Compression::kLz4:
      return Lz4Decompress(in, buf, pos, pos, len);
    case Compression::kDeflate: {
      const size_t at = in.position();
      RFS_ASSIGN_OR_RETURN(uint32_t clen, in.ReadVInt());
      if (clen == 0) {
        if (len != 0) {
          return in.ErrorAt(at, StrCat("empty DEFLATE block, expected ", len, " bytes"));
        }
        return absl::OkStatus();
      }
      const uint64_t offset = in.source_offset();
      RFS_ASSIGN_OR_RETURN(auto compressed, in.ReadBytes(clen));
      return inflater_.Inflate(compressed, buf.subspan(pos, len), {}, in.source(), offset);
    }
    case Compression::kZstd:
      // Zstd814StoredFieldsFormat.ZstdCompressor writes nothing for an empty
      // block, else VInt compressedLength and the frames.
      if (len == 0) return absl::OkStatus();
      return DecompressZstd(in, buf.subspan(pos, len), {}, /*allow_empty=*/false);
    case Compression::kZstdNoDict: {
      // ZstdNoDictCompressionMode: VInt blockLength = ceil(len / 10), then
      // the sub-blocks (custom-codecs
      // src/main/java/org/opensearch/index/codec/customcodecs/ZstdNoDictCompressionMode.java).
      RFS_ASSIGN_OR_RETURN(const NoDictLayout layout, ReadNoDictLayout(in, len));
      for (size_t i = 0; i < layout.num_blocks; ++i) {
        const size_t start = i * layout.block_len;
        const size_t n = std::min<size_t>(layout.block_len, len - start);
        RFS_RETURN_IF_ERROR(DecompressZstd(in, std::span<uint8_t>(base + pos + start, n), {},
                                           /*allow_empty=*/false));
      }
      return absl::OkStatus();
    }
    case Compression::kLz4WithDict:
    case Compression::kDeflateWithDict:
    case Compression::kZstdWithDict:
      break;
  }
  // Preset-dictionary modes (C.8.2 / C.8.3): VInt dictLength, VInt
  // blockLength, then the dictionary and ceil((len - dict) / block) blocks,
  // each compressed against the dictionary only.
  RFS_ASSIGN_OR_RETURN(const DictLayout layout, ReadDictLayout(in, len));
  const uint32_t dict_len = layout.dict_len;
  const uint32_t block_len = layout.block_len;
  const size_t num_blocks = layout.num_blocks;
  uint8_t* const dict = base + pos;
  if (format_.compression == Compression::kZstdWithDict) {
    // ZstdCompressionMode (custom-codecs
    // src/main/java/org/opensearch/index/codec/customcodecs/ZstdCompressionMode.java): the
    // dictionary part compressed alone (VInt 0 when empty), then each
    // sub-block compressed with the dictionary loaded as a ZstdDictDecompress.
    RFS_RETURN_IF_ERROR(
        DecompressZstd(in, std::span<uint8_t>(dict, dict_len), {}, /*allow_empty=*/true));
    for (size_t i = 0; i < num_blocks; ++i) {
      const size_t start = dict_len + i * block_len;
      const size_t n = std::min<size_t>(block_len, len - start);
      RFS_RETURN_IF_ERROR(DecompressZstd(in, std::span<uint8_t>(dict + start, n),
                                         std::span<const uint8_t>(dict, dict_len),
                                         /*allow_empty=*/false));
    }
    return absl::OkStatus();
  }
  if (format_.compression == Compression::kDeflateWithDict) {
    const size_t dict_at = in.position();
    RFS_ASSIGN_OR_RETURN(uint32_t clen, in.ReadVInt());
    if (clen == 0) {
      if (dict_len != 0) return in.ErrorAt(dict_at, "missing dictionary");
    } else {
      const uint64_t offset = in.source_offset();
      RFS_ASSIGN_OR_RETURN(auto compressed, in.ReadBytes(clen));
      RFS_RETURN_IF_ERROR(inflater_.Inflate(compressed, std::span<uint8_t>(dict, dict_len), {},
                                            in.source(), offset));
    }
    for (size_t i = 0; i < num_blocks; ++i) {
      const size_t block_at = in.position();
      const size_t start = dict_len + i * block_len;
      const size_t n = std::min<size_t>(block_len, len - start);
      RFS_ASSIGN_OR_RETURN(uint32_t blen, in.ReadVInt());
      if (blen == 0) return in.ErrorAt(block_at, "empty DEFLATE block");
      const uint64_t offset = in.source_offset();
      RFS_ASSIGN_OR_RETURN(auto compressed, in.ReadBytes(blen));
      RFS_RETURN_IF_ERROR(inflater_.Inflate(compressed, std::span<uint8_t>(dict + start, n),
                                            std::span<const uint8_t>(dict, dict_len), in.source(),
                                            offset));
    }
    return absl::OkStatus();
  }
  // LZ4: compressed lengths of the dictionary and of every block first.
  RFS_ASSIGN_OR_RETURN(uint32_t dict_clen, in.ReadVInt());
  lengths_.resize(num_blocks);
  for (size_t i = 0; i < num_blocks; ++i) {
    RFS_ASSIGN_OR_RETURN(lengths_[i], in.ReadVInt());
  }
  auto decode_exact = [&](uint32_t clen, std::span<uint8_t> out_buf, size_t history, size_t out_pos,
                          size_t n) -> absl::Status {
    const uint64_t offset = in.source_offset();
    RFS_ASSIGN_OR_RETURN(auto compressed, in.ReadBytes(clen));
    ByteReader sub(compressed, in.source(), offset);
    RFS_RETURN_IF_ERROR(Lz4Decompress(sub, out_buf, history, out_pos, n));
    if (!sub.at_end()) {
      return sub.Error(
          StrCat("LZ4 block ends ", sub.remaining(), " bytes before its stored length"));
    }
    return absl::OkStatus();
  };
  RFS_RETURN_IF_ERROR(decode_exact(dict_clen, buf, pos, pos, dict_len));
  // In a lazily decoded chunk of several blocks, every block waits for its documents and is
  // decoded by EnsureDecoded, two at a time, passed over when the documents read start after it.
  const bool blocks_wait = lazy_ && whole_chunk && num_blocks > 1;
  if (num_blocks > 1) {
    // Blocks after the first cannot be decoded in place (their history must
    // be the dictionary alone), so they go through [dict | block] scratch.
    scratch_.resize(std::max<size_t>(scratch_.size(), size_t{dict_len} + block_len + kLz4Slack));
    std::memcpy(scratch_.data(), dict, dict_len);
    if (blocks_wait) {
      // Blocks that wait are decoded two at a time, the second in its own [dict | block].
      pair_scratch_.resize(scratch_.size());
      std::memcpy(pair_scratch_.data(), dict, dict_len);
    }
  }
  for (size_t i = 0; i < num_blocks; ++i) {
    const size_t start = dict_len + i * block_len;
    const size_t n = std::min<size_t>(block_len, len - start);
    if (blocks_wait) {
      const uint64_t offset = in.source_offset();
      RFS_ASSIGN_OR_RETURN(auto compressed, in.ReadBytes(lengths_[i]));
      pending_.push_back({compressed, offset, start, n});
      pending_source_ = in.source();
      pending_dict_len_ = dict_len;
    } else if (i == 0) {
      RFS_RETURN_IF_ERROR(decode_exact(lengths_[i], buf, pos, pos + start, n));
    } else {
      RFS_RETURN_IF_ERROR(decode_exact(lengths_[i], scratch_, 0, dict_len, n));
      std::memcpy(dict + start, scratch_.data() + dict_len, n);
    }
  }
  return absl::OkStatus();
}

absl::Status ChunkDecoder::DecompressZstd(ByteReader& in, std::span<uint8_t> out,
                                          std::span<const uint8_t> dictionary, bool allow_empty) {
  const size_t at = in.position();
  RFS_ASSIGN_OR_RETURN(uint32_t clen, in.ReadVInt());
  if (clen == 0) {
    if (allow_empty && out.empty()) return absl::OkStatus();
    return in.ErrorAt(at, StrCat("empty zstd block, expected ", out.size(), " bytes"));
  }
  const uint64_t offset = in.source_offset();
  RFS_ASSIGN_OR_RETURN(auto compressed, in.ReadBytes(clen));
  return zstd_.Decompress(compressed, out, dictionary, in.source(), offset);
}

absl::Status ChunkDecoder::SkipBlock(ByteReader& in, size_t len) {
  switch (format_.compression) {
    case Compression::kLz4:
      // No stored length: decoding is the only way to find the end.
      scratch_.resize(std::max(scratch_.size(), len + kLz4Slack));
      return Lz4Decompress(in, scratch_, 0, 0, len);
    case Compression::kDeflate: {
      RFS_ASSIGN_OR_RETURN(uint32_t clen, in.ReadVInt());
      return in.Skip(clen);
    }
    case Compression::kZstd: {
      if (len == 0) return absl::OkStatus();
      RFS_ASSIGN_OR_RETURN(uint32_t clen, in.ReadVInt());
      return in.Skip(clen);
    }
    case Compression::kZstdNoDict: {
      RFS_ASSIGN_OR_RETURN(const NoDictLayout layout, ReadNoDictLayout(in, len));
      for (size_t i = 0; i < layout.num_blocks; ++i) {
        RFS_ASSIGN_OR_RETURN(uint32_t clen, in.ReadVInt());
        RFS_RETURN_IF_ERROR(in.Skip(clen));
      }
      return absl::OkStatus();
    }
    case Compression::kLz4WithDict:
    case Compression::kDeflateWithDict:
    case Compression::kZstdWithDict:
      break;
  }
  RFS_ASSIGN_OR_RETURN(const DictLayout layout, ReadDictLayout(in, len));
  const size_t num_blocks = layout.num_blocks;
  if (format_.compression != Compression::kLz4WithDict) {
    // DEFLATE and zstd: every part carries its compressed length.
    for (size_t i = 0; i <= num_blocks; ++i) {
      RFS_ASSIGN_OR_RETURN(uint32_t clen, in.ReadVInt());
      RFS_RETURN_IF_ERROR(in.Skip(clen));
    }
    return absl::OkStatus();
  }
  uint64_t skip = 0;
  for (size_t i = 0; i <= num_blocks; ++i) {
    RFS_ASSIGN_OR_RETURN(uint32_t clen, in.ReadVInt());
    skip += clen;
  }
  if (skip > in.remaining()) return in.Error("compressed blocks run past the end");
  return in.Skip(skip);
}

absl::Status ChunkDecoder::Decode(ByteReader& in, int32_t max_docs, int32_t want_doc,
                                  DecodedChunk& out) {
  const size_t start = in.position();
  large_hold_.reset();  // the chunk before, and its document, are done with
  out.file_offset = in.source_offset();
  out.decompressed = false;
  out.ready = 0;
  pending_.clear();
  next_pending_ = 0;
  hole_first_ = hole_end_ = 0;
  RFS_ASSIGN_OR_RETURN(uint32_t doc_base, in.ReadVInt());
  RFS_ASSIGN_OR_RETURN(uint32_t token, in.ReadVInt());
  const uint32_t chunk_docs = format_.lucene4 ? token : token >> (format_.token_dirty_bit ? 2 : 1);
  if (doc_base > 0x7FFFFFFF || chunk_docs == 0 ||
      chunk_docs > static_cast<uint32_t>(std::max(max_docs, 0))) {
    return in.ErrorAt(start, StrCat("invalid chunk header (docBase ", doc_base, ", chunkDocs ",
                                    chunk_docs, ", ", max_docs, " docs left)"));
  }
  out.doc_base = static_cast<int32_t>(doc_base);
  out.chunk_docs = static_cast<int32_t>(chunk_docs);
  out.sliced = (token & 1) != 0;
  out.num_fields.resize(chunk_docs);
  out.offsets.resize(chunk_docs + 1);
  out.offsets[0] = 0;
  if (chunk_docs == 1) {
    RFS_ASSIGN_OR_RETURN(out.num_fields[0], in.ReadVInt());
    RFS_ASSIGN_OR_RETURN(out.offsets[1], in.ReadVInt());
  } else {
    RFS_RETURN_IF_ERROR(ReadInts(in, out.chunk_docs, out.num_fields, 0));
    RFS_RETURN_IF_ERROR(ReadInts(in, out.chunk_docs, out.offsets, 1));
  }
  uint64_t total = 0;
  for (uint32_t i = 0; i < chunk_docs; ++i) {
    total += out.offsets[i + 1];
    if (total > kMaxChunkBytes) {
      return in.ErrorAt(start, "chunk length overflows");
    }
    out.offsets[i + 1] = static_cast<uint32_t>(total);
  }
  out.total = total;
  if (format_.lucene4) {
    // 4.x stores no sliced bit: CompressingStoredFieldsReader decides by
    // size (VERSION_BIG_CHUNKS and later).
    out.sliced = format_.version >= kLucene41BigChunks &&
                 total >= 2 * static_cast<uint64_t>(format_.chunk_size);
  }
  const bool decompress =
      want_doc < 0 || (want_doc >= out.doc_base && want_doc - out.doc_base < out.chunk_docs);
  const size_t chunk_size = static_cast<size_t>(format_.chunk_size);
  if (out.sliced && chunk_size == 0) {
    return in.ErrorAt(start, "sliced chunk without a chunk size");
  }
  if (decompress) {
    // Cap the allocation by what the input could possibly expand to (LZ4 and
    // DEFLATE both stay well under 1:1100; zstd at most 1:32768, a 4-byte RLE
    // block, 3 bytes of header and 1 of content, per 128 KiB: RFC 8878 3.1.1.2),
    // so corrupt lengths cannot demand gigabytes. The buffer is not zero-filled
    // (ChunkBytes), so what a claim below the cap costs is what gets decoded.
    const bool zstd = format_.compression == Compression::kZstd ||
                      format_.compression == Compression::kZstdWithDict ||
                      format_.compression == Compression::kZstdNoDict;
    const uint64_t max_ratio = zstd ? uint64_t{1} << 15 : 1100;
    if (input_refill_ && total > (in.remaining() + 64) * max_ratio) {
      // A window of the file holds only part of what a huge chunk may take.
      RFS_RETURN_IF_ERROR(input_refill_(in, total / max_ratio + 1));
    }
    if (total > (in.remaining() + 64) * max_ratio) {
      return core::DataLossAt(
          in.source(), out.file_offset,
          StrCat("chunk claims ", total, " bytes from ", in.remaining(), " bytes of input"));
    }
    if (total >= kLargeChunkBytes && large_chunk_gate_) {
      RFS_ASSIGN_OR_RETURN(large_hold_, large_chunk_gate_(total));
    }
    if (out.data.size() > kLargeChunkBytes && out.data.size() > 2 * (total + kLz4Slack)) {
      // The buffer of a huge document's chunk is not kept for the small chunks after it.
      ChunkBytes().swap(out.data);
    }
    if (out.data.size() < total + kLz4Slack) {
      out.data.resize(total + kLz4Slack);
    }
    if (out.sliced) {
      for (size_t pos = 0; pos < total; pos += chunk_size) {
        if (input_refill_) RFS_RETURN_IF_ERROR(input_refill_(in, SliceInputBound(chunk_size)));
        RFS_RETURN_IF_ERROR(DecompressBlock(in, out.data.data(), out.data.size(), pos,
                                            std::min(chunk_size, total - pos)));
      }
      out.ready = total;
    } else {
      RFS_RETURN_IF_ERROR(DecompressBlock(in, out.data.data(), out.data.size(), 0, total,
                                          /*whole_chunk=*/true));
      out.ready = pending_.empty() ? total : pending_.front().start;
    }
    out.decompressed = true;
  } else if (out.sliced) {
    for (size_t pos = 0; pos < total; pos += chunk_size) {
      if (input_refill_) RFS_RETURN_IF_ERROR(input_refill_(in, SliceInputBound(chunk_size)));
      RFS_RETURN_IF_ERROR(SkipBlock(in, std::min(chunk_size, total - pos)));
    }
  } else {
    RFS_RETURN_IF_ERROR(SkipBlock(in, total));
  }
  return absl::OkStatus();
}

namespace {

// chunkSize and the packed-ints version (none for Lucene90 ints): in the `.fdm` from its first
// version on, else in the `.fdt` right after its header (`in`).
absl::Status ReadChunkSize(const core::IDirectory& segment_dir, const SegmentCommitInfo& segment,
                           ByteReader& in, StoredFieldsFormat& format) {
  if (format.lucene90_ints || format.version >= kVersionMeta) {
    const std::string fdm_name = SegmentFileName(segment.name, "", "fdm");
    RFS_ASSIGN_OR_RETURN(FileBytes fdm, FileBytes::Open(segment_dir, fdm_name));
    ByteReader meta = fdm.Reader();
    RFS_RETURN_IF_ERROR(
        ReadFileHeader(meta, {kFdmNames, 0, format.version}, &segment.id, "", true).status());
    RFS_ASSIGN_OR_RETURN(format.chunk_size, ReadPositiveVInt(meta, "chunk size", 1u << 30));
    if (!format.lucene90_ints) {
      RFS_RETURN_IF_ERROR(ReadPositiveVInt(meta, "packed ints version", 2).status());
    }
    return absl::OkStatus();
  }
  RFS_ASSIGN_OR_RETURN(format.chunk_size, ReadPositiveVInt(in, "chunk size", 1u << 30));
  return ReadPositiveVInt(in, "packed ints version", 2).status();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChunkCursor>> ChunkCursor::Open(const core::IDirectory& segment_dir,
                                                               const SegmentCommitInfo& segment,
                                                               bool verify_checksum) {
  const std::string fdt_name = SegmentFileName(segment.name, "", "fdt");
  auto file_or = segment_dir.OpenFile(fdt_name);
  if (!file_or.ok()) {
    return core::WithContext(file_or.status(), StrCat("segment ", segment.name));
  }
  std::shared_ptr<const core::IRandomAccessFile> file = std::move(file_or).value();
  const uint64_t size = file->size();
  // The header (and chunkSize for old versions) sits in the first bytes; the
  // footer structure is checked without hashing the whole data file, as
  // Lucene's reader does (CodecUtil.retrieveChecksum).
  std::vector<uint8_t> head;
  std::span<const uint8_t> head_view;
  auto view = file->ContiguousView();
  if (view.has_value()) {
    head_view = *view;
  } else {
    if (size < codec::kFooterLength) {
      return core::DataLossAt(fdt_name, 0, "file too short");
    }
    const uint64_t head_len = std::min<uint64_t>(size - codec::kFooterLength, 512);
    RFS_ASSIGN_OR_RETURN(head, core::ReadRange(*file, 0, head_len));
    RFS_ASSIGN_OR_RETURN(auto footer,
                         core::ReadRange(*file, size - codec::kFooterLength, codec::kFooterLength));
    head.insert(head.end(), footer.begin(), footer.end());
    head_view = head;
  }
  {
    ByteReader peek(head_view, file->name());
    auto any = codec::ReadCodecHeader(peek, "", INT32_MIN, INT32_MAX);
    if (any.ok() && any->codec == kFdtLucene41) {
      return OpenLucene4(std::move(file), segment, verify_checksum);
    }
  }
  ByteReader in(head_view, file->name());
  auto header =
      ReadFileHeader(in, {kFdtNames, 0, kVersionDirtyBit, kFdtLegacyNames}, &segment.id, "", false);
  if (!header.ok()) {
    return core::WithContext(header.status(), StrCat("segment ", segment.name));
  }
  auto format_or = FormatForHeader(header->header.codec, header->header.version, file->name());
  if (!format_or.ok()) {
    return core::WithContext(format_or.status(), StrCat("segment ", segment.name));
  }
  StoredFieldsFormat format = std::move(format_or).value();
  if (verify_checksum) {
    if (auto status = VerifyFileChecksum(*file); !status.ok()) {
      return core::WithContext(status, StrCat("segment ", segment.name));
    }
    // Hashing touched every page; decoding reads them back as it goes.
    file->DropCachedPages(0, size);
  }
  RFS_RETURN_IF_ERROR(ReadChunkSize(segment_dir, segment, in, format));
  if (format.chunk_size <= 0) {
    return core::DataLossAt(file->name(), in.position(), "chunk size 0");
  }
  const uint64_t data_start = in.position();
  if (size < data_start + codec::kFooterLength) {
    return core::DataLossAt(file->name(), data_start, "file too short");
  }
  auto cursor = std::unique_ptr<ChunkCursor>(
      new ChunkCursor(file, format, segment.max_doc(), data_start, size - codec::kFooterLength));
  if (view.has_value()) {
    cursor->view_ = view->first(size - codec::kFooterLength);
    cursor->contiguous_ = true;
    cursor->MapSlices();
  } else {
    cursor->StreamSlices();
    // `head` holds the file's first bytes (up to 512), then its footer.
    if (data_start <= std::min<uint64_t>(size - codec::kFooterLength, 512)) {
      cursor->head_.assign(head.begin(), head.begin() + static_cast<ptrdiff_t>(data_start));
    }
  }
  return cursor;
}

absl::StatusOr<std::unique_ptr<ChunkCursor>> ChunkCursor::OpenLucene4(
    std::shared_ptr<const core::IRandomAccessFile> file, const SegmentCommitInfo& segment,
    bool verify_checksum) {
  const uint64_t size = file->size();
  auto view = file->ContiguousView();
  std::vector<uint8_t> head;
  std::span<const uint8_t> head_view;
  if (view.has_value()) {
    head_view = *view;
  } else {
    RFS_ASSIGN_OR_RETURN(head, core::ReadRange(*file, 0, std::min<uint64_t>(size, 512)));
    head_view = head;
  }
  ByteReader in(head_view, file->name());
  auto header = codec::ReadCodecHeader(in, kFdtLucene41, 0, kLucene41Checksum);
  if (!header.ok()) return core::WithContext(header.status(), StrCat("segment ", segment.name));
  RFS_ASSIGN_OR_RETURN(StoredFieldsFormat format,
                       FormatForHeader(header->codec, header->version, file->name()));
  const bool has_footer = format.version >= kLucene41Checksum;
  uint64_t data_end = size;
  if (has_footer) {
    if (verify_checksum) {
      if (auto status = VerifyFileChecksum(*file); !status.ok()) {
        return core::WithContext(status, StrCat("segment ", segment.name));
      }
    } else {
      if (size < codec::kFooterLength) return core::DataLossAt(file->name(), 0, "file too short");
      RFS_ASSIGN_OR_RETURN(
          auto footer, core::ReadRange(*file, size - codec::kFooterLength, codec::kFooterLength));
      ByteReader fin(footer, file->name(), size - codec::kFooterLength);
      RFS_ASSIGN_OR_RETURN(uint32_t magic, fin.ReadBeU32());
      if (magic != codec::kFooterMagic) return fin.ErrorAt(0, "codec footer magic mismatch");
    }
    data_end = size - codec::kFooterLength;
  }
  if (format.version >= kLucene41BigChunks) {
    RFS_ASSIGN_OR_RETURN(format.chunk_size, ReadPositiveVInt(in, "chunk size", 1u << 30));
    if (format.chunk_size <= 0) return in.Error("chunk size 0");
  } else {
    // Version 0 never slices chunks, so the size only has to be positive.
    format.chunk_size = kLucene41ChunkSize;
  }
  RFS_RETURN_IF_ERROR(ReadPositiveVInt(in, "packed ints version", 2).status());
  const uint64_t data_start = in.position();
  if (data_end < data_start) return core::DataLossAt(file->name(), data_start, "file too short");
  auto cursor = std::unique_ptr<ChunkCursor>(
      new ChunkCursor(file, format, segment.max_doc(), data_start, data_end));
  if (view.has_value()) {
    cursor->view_ = view->first(data_end);
    cursor->contiguous_ = true;
    cursor->MapSlices();
  } else {
    cursor->StreamSlices();
  }
  return cursor;
}

absl::Status ChunkCursor::DecodeNext(int32_t want_doc) {
  if (next_doc_ >= max_doc_) {
    return core::DataLossAt(file_->name(), next_offset_,
                            "no chunk left for the requested document");
  }
  const int32_t left = max_doc_ - next_doc_;
  const uint64_t chunk_start = next_offset_;
  if (contiguous_) {
    ByteReader in(view_, file_->name());
    RFS_RETURN_IF_ERROR(in.Seek(next_offset_));
    piece_start_ = chunk_start;
    RFS_RETURN_IF_ERROR(decoder_.Decode(in, left, want_doc, chunk_));
    next_offset_ = in.position();
    if (observer_ && next_offset_ > piece_start_) {
      observer_(file_, piece_start_, view_.subspan(piece_start_, next_offset_ - piece_start_));
    }
    // The compressed bytes behind the cursor are not needed again (a backward move reads them
    // back), so a mapped `.fdt` does not stay resident whole. A chunk whose later blocks are
    // still to be decoded keeps its own bytes.
    const uint64_t done = chunk_.ready == chunk_.total ? next_offset_ : chunk_.file_offset;
    if (done > dropped_until_ && done - dropped_until_ >= kDropPagesEvery) {
      file_->DropCachedPages(dropped_until_, done - dropped_until_);
      dropped_until_ = done;
    }
  } else {
    // A window holds several chunks: a chunk that starts inside it is decoded from it, and the
    // file is read again only when the chunk runs past the window's end (re-reading a window at
    // every chunk copied each compressed byte several times). Starting from the last window's
    // size saves retries in a segment of large chunks, but at most kMaxStartWindow: one huge
    // document's chunk must not make every later read as large.
    size_t want = std::clamp(window_.size(), kMinWindow, kMaxStartWindow);
    size_t need = 1;
    bool read = next_offset_ < window_start_ || next_offset_ >= window_start_ + window_.size() ||
                (window_copied_ && file_holds_blocks_);
    for (;;) {
      if (read) {
        // The last chunk's blocks still to be decoded point into the window: a failed read
        // leaves that chunk to be decoded again rather than from a window that moved.
        chunk_.decompressed = false;
        RFS_RETURN_IF_ERROR(ReadWindow(next_offset_, need, want));
      }
      ByteReader in(window_, file_->name(), window_start_);
      RFS_RETURN_IF_ERROR(in.Seek(next_offset_ - window_start_));
      piece_start_ = chunk_start;
      absl::Status status = decoder_.Decode(in, left, want_doc, chunk_);
      if (status.ok()) {
        next_offset_ = window_start_ + in.position();
        PassPieceToObserver(next_offset_);
        if (chunk_.total >= ChunkDecoder::kLargeChunkBytes) {
          // A huge document's compressed bytes are not read again: a remote file's blocks of
          // them go now, not beside the document while it is converted and sent.
          file_->DropCachedPages(chunk_start, next_offset_ - chunk_start);
        }
        break;
      }
      // A chunk past the window's end: read again from its start, then a longer window (past
      // the end of a block the file held, or twice as long) until the window reaches the end
      // of the data, where the error is real.
      // Each retry holds more of the chunk than the last (`need` grows past what was held), so
      // the loop ends. A sliced chunk that failed after a refill had all each slice can take.
      if (!absl::IsDataLoss(status)) return status;
      const uint64_t reached = window_start_ + window_.size();
      if (reached >= data_end_ || (chunk_.sliced && window_start_ > next_offset_)) return status;
      need = std::max<size_t>(need, static_cast<size_t>(reached - next_offset_) + 1);
      if (need > want) want = std::max(want * 2, need);
      read = true;
    }
  }
  if (chunk_.doc_base != next_doc_) {
    return core::DataLossAt(file_->name(), chunk_.file_offset,
                            StrCat("chunk docBase ", chunk_.doc_base, ", expected ", next_doc_));
  }
  next_doc_ += chunk_.chunk_docs;
  have_chunk_ = true;
  return absl::OkStatus();
}

absl::Status ChunkCursor::ReleaseSlicesBehind(const ByteReader& in) {
  const uint64_t at = in.position();
  if (at < piece_start_ + kDropPagesEvery) return absl::OkStatus();
  if (observer_) observer_(file_, piece_start_, view_.subspan(piece_start_, at - piece_start_));
  piece_start_ = at;
  if (at > dropped_until_) {
    file_->DropCachedPages(dropped_until_, at - dropped_until_);
    dropped_until_ = at;
  }
  return absl::OkStatus();
}

void ChunkCursor::PassPieceToObserver(uint64_t until) {
  if (observer_ && until > piece_start_) {
    observer_(file_, piece_start_,
              std::span<const uint8_t>(window_).subspan(piece_start_ - window_start_,
                                                        until - piece_start_));
  }
  piece_start_ = until;
}

absl::Status ChunkCursor::RefillWindow(ByteReader& in, size_t at_least) {
  const uint64_t at = in.source_offset();
  if (in.remaining() >= at_least || at + in.remaining() >= data_end_) return absl::OkStatus();
  PassPieceToObserver(at);
  RFS_RETURN_IF_ERROR(ReadWindow(at, at_least, std::max(at_least, kMinWindow)));
  in = ByteReader(window_, file_->name(), window_start_);
  return absl::OkStatus();
}

absl::Status ChunkCursor::ReadWindow(uint64_t at, size_t need, size_t want) {
  size_t length = static_cast<size_t>(std::min<uint64_t>(data_end_ - at, want));
  // A block the file holds already (a remote file's) is decoded where it lies: copying each
  // window out of it cost a tenth of a read from S3.
  RFS_ASSIGN_OR_RETURN(std::optional<core::IRandomAccessFile::HeldBytes> held,
                       file_->ViewAt(at, std::min(need, length), length));
  if (held.has_value()) {
    window_ = held->bytes;
    window_owner_ = std::move(held->owner);
    window_start_ = at;
    window_copied_ = false;
    file_holds_blocks_ = true;
    return absl::OkStatus();
  }
  // Otherwise the window is copied into window_bytes_, which is kept (a new buffer for each
  // window was zero-filled and faulted in again). The bytes from `at` that the window holds now
  // (a chunk or slice that ran past its end) move to its front instead of being read again.
  // Windows over kMaxStartWindow (a huge chunk's) start empty: the old one goes first, as
  // holding it beside one twice its size costs half as much again.
  // From a file that holds blocks, a copy is only for a chunk that crosses a block's end: it
  // takes a little past the end, and the chunks after it are decoded in the next block.
  if (file_holds_blocks_) {
    need = std::min(need, length);
    length = std::min(length, std::max(need + kCrossingWindow, 2 * need));
  }
  const uint64_t window_end = window_start_ + window_.size();
  size_t kept = at >= window_start_ && at < window_end
                    ? static_cast<size_t>(std::min<uint64_t>(window_end - at, length))
                    : 0;
  if (length > kMaxStartWindow) kept = 0;
  const uint8_t* from = kept > 0 ? window_.data() + (at - window_start_) : nullptr;
  const bool from_buffer =
      kept > 0 && window_owner_ == nullptr &&
      std::less_equal<const uint8_t*>()(window_bytes_.data(), from) &&
      std::less<const uint8_t*>()(from, window_bytes_.data() + window_bytes_.size());
  if (from_buffer && window_bytes_.capacity() >= length) {
    std::memmove(window_bytes_.data(), from, kept);
    window_bytes_.resize(length);
  } else if (from_buffer) {
    std::vector<uint8_t> grown;
    grown.reserve(length);
    grown.insert(grown.end(), from, from + kept);
    grown.resize(length);
    window_bytes_.swap(grown);
  } else {
    if (kept == 0) {
      window_ = {};
      window_owner_.reset();
    }
    if (window_bytes_.capacity() > kMaxStartWindow) std::vector<uint8_t>().swap(window_bytes_);
    window_bytes_.resize(length);
    if (kept > 0) std::memcpy(window_bytes_.data(), from, kept);  // out of a held block
  }
  window_owner_.reset();
  window_ = std::span<const uint8_t>(window_bytes_.data(), length);
  window_start_ = at;
  window_copied_ = true;
  absl::Status status =
      file_->ReadAt(at + kept, std::span<uint8_t>(window_bytes_.data() + kept, length - kept));
  if (!status.ok()) window_ = {};  // never a window of bytes that were not read
  return status;
}

absl::StatusOr<const DecodedChunk*> ChunkCursor::ChunkFor(int32_t doc) {
  if (doc < 0 || doc >= max_doc_) {
    return absl::OutOfRangeError(
        StrCat(file_->name(), ": doc ", doc, " out of range [0, ", max_doc_, ")"));
  }
  if (have_chunk_ && doc < chunk_.doc_base) {
    next_offset_ = data_start_;
    next_doc_ = 0;
    have_chunk_ = false;
  }
  while (!have_chunk_ || doc >= chunk_.doc_base + chunk_.chunk_docs) {
    RFS_RETURN_IF_ERROR(DecodeNext(doc));
  }
  if (!chunk_.decompressed) {
    // Only possible when a previous call skipped this chunk: re-read it.
    next_offset_ = chunk_.file_offset;
    next_doc_ = chunk_.doc_base;
    RFS_RETURN_IF_ERROR(DecodeNext(doc));
  }
  const size_t index = static_cast<size_t>(doc - chunk_.doc_base);
  const size_t begin = chunk_.offsets[index];
  const size_t end = chunk_.offsets[index + 1];
  if (decoder_.Undecoded(chunk_, begin, end)) {
    RFS_RETURN_IF_ERROR(decoder_.EnsureDecoded(chunk_, begin, end));
  }
  return &chunk_;
}

absl::Status DecodeAllChunksForFuzzing(std::span<const uint8_t> body,
                                       const StoredFieldsFormat& format, int32_t max_doc) {
  // Three times: each chunk decoded whole; as the cursor decodes it (lazily, the blocks of an LZ4
  // preset-dictionary chunk in pairs as EnsureDecoded decodes them); and lazily from its middle
  // document to its end, then the documents before (the blocks before the middle passed over,
  // then decoded).
  enum class Pass { kWhole, kInOrder, kFromMiddle };
  for (const Pass pass : {Pass::kWhole, Pass::kInOrder, Pass::kFromMiddle}) {
    const bool lazy = pass != Pass::kWhole;
    ChunkDecoder decoder(format);
    decoder.set_lazy(lazy);
    // A worker admits a large chunk through its memory budget (AdmitLargeChunks); here the
    // budget is 64 MiB, and a chunk that could never fit it is refused rather than waited for.
    // (Larger claims are tested by the unit tests: under AddressSanitizer each would cost a run
    // the shadow memory of its size, and the runs a second would fall from thousands to tens.)
    decoder.set_large_chunk_gate(
        [](size_t decoded_bytes) -> absl::StatusOr<core::MemoryBudget::LargeDocumentHold> {
          if (decoded_bytes > (size_t{64} << 20)) {
            return absl::ResourceExhaustedError(StrCat("chunk of ", decoded_bytes, " bytes"));
          }
          return nullptr;
        });
    DecodedChunk chunk;
    ByteReader in(body, "fuzz.fdt");
    int32_t next = 0;
    while (next < max_doc) {
      RFS_RETURN_IF_ERROR(decoder.Decode(in, max_doc - next, -1, chunk));
      if (chunk.doc_base != next) return in.Error("docBase mismatch");
      const int32_t middle = pass == Pass::kFromMiddle ? chunk.chunk_docs / 2 : 0;
      for (int32_t k = 0; k < chunk.chunk_docs; ++k) {
        const int32_t i = (middle + k) % chunk.chunk_docs;
        if (lazy && chunk.decompressed) {
          RFS_RETURN_IF_ERROR(decoder.EnsureDecoded(chunk, chunk.offsets[i], chunk.offsets[i + 1]));
        }
        size_t n = 0;
        if (!ParseFields(
                chunk.doc_bytes(i), chunk.num_fields[i], format.order,
                [&](const StoredField&) {
                  ++n;
                  return true;
                },
                format.lucene4)) {
          return in.Error("malformed document");
        }
      }
      next += chunk.chunk_docs;
    }
  }
  return absl::OkStatus();
}

}  // namespace internal

StoredFieldsReader::StoredFieldsReader(std::unique_ptr<internal::ChunkCursor> cursor)
    : cursor_(std::move(cursor)) {}
StoredFieldsReader::~StoredFieldsReader() = default;

absl::StatusOr<std::unique_ptr<StoredFieldsReader>> StoredFieldsReader::Open(
    const core::IDirectory& segment_dir, const SegmentCommitInfo& segment, bool verify_checksum) {
  RFS_ASSIGN_OR_RETURN(auto cursor,
                       internal::ChunkCursor::Open(segment_dir, segment, verify_checksum));
  return std::unique_ptr<StoredFieldsReader>(new StoredFieldsReader(std::move(cursor)));
}

int32_t StoredFieldsReader::max_doc() const { return cursor_->max_doc(); }
const std::string& StoredFieldsReader::format_name() const { return cursor_->format().codec; }
int32_t StoredFieldsReader::format_version() const { return cursor_->format().version; }
int32_t StoredFieldsReader::chunk_size() const { return cursor_->format().chunk_size; }

absl::Status StoredFieldsReader::Document(int32_t doc, std::vector<StoredField>& fields) {
  RFS_ASSIGN_OR_RETURN(const internal::DecodedChunk* chunk, cursor_->ChunkFor(doc));
  fields.clear();
  const int32_t index = doc - chunk->doc_base;
  if (!internal::ParseFields(
          chunk->doc_bytes(index), chunk->num_fields[index], cursor_->format().order,
          [&](const StoredField& f) {
            fields.push_back(f);
            return true;
          },
          cursor_->format().lucene4)) {
    return core::DataLossAt(
        cursor_->file_name(), chunk->file_offset,
        core::StrCat("malformed stored fields of doc ", doc, " in the chunk at this offset"));
  }
  return absl::OkStatus();
}

}  // namespace rfs::lucene
