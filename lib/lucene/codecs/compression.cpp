#include <cstring>
#include <optional>
#include <string>

#include <zlib.h>

#include "rfs/core/errors.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/codecs/compression_internal.hpp"
#include <zstd.h>
#include <zstd_errors.h>

namespace rfs::lucene::internal {

using core::StrCat;

// LZ4 block format (docs/formats.md C.8.1; Lucene util/compress/LZ4.java): token
// (literal length << 4 | match length - 4), extension bytes while 255,
// literals, 2-byte LE offset, match. Lucene's decoder stops right after the
// literals or after a match once the expected length is reached.
namespace {

// Adds LZ4 length extension bytes (each 0..255, continuing while 255) to
// `len`. False when the input ends first.
inline bool ExtendLength(const uint8_t*& ip, const uint8_t* iend, size_t& len) {
  uint8_t b;
  do {
    if (ip >= iend) return false;
    b = *ip++;
    len += b;
  } while (b == 255 && len < (size_t{1} << 31));
  return true;
}

// One block being decoded: where its input and output stand.
struct Lz4Stream {
  const uint8_t* ibase;
  const uint8_t* ip;
  const uint8_t* iend;
  uint8_t* hist;
  uint8_t* op;
  uint8_t* oend;
  uint8_t* cap;
};

Lz4Stream StartStream(const core::ByteReader& in, std::span<uint8_t> buf, size_t history_start,
                      size_t out_pos, size_t out_len) {
  const std::span<const uint8_t> src = in.data();
  return {src.data(),
          src.data() + in.position(),
          src.data() + src.size(),
          buf.data() + history_start,
          buf.data() + out_pos,
          buf.data() + out_pos + out_len,
          buf.data() + buf.size()};
}

// Most sequences (in JSON, nearly all) have fewer than 15 literals and a match shorter than 19
// bytes. Far from the ends of input and output, such a sequence needs no length checks: 16
// literal bytes and 16 match bytes (16 + 16 for a match longer than 16) are copied whatever the
// lengths (the slack past the output takes the excess), and only the offset is checked. Decodes
// one such sequence, or returns false with the stream unmoved when the next one is not such (or
// its offset is out of range) for CheckedSequence to decode or to report.
[[gnu::always_inline]] inline bool ShortSequence(Lz4Stream& s) {
  if (s.iend - s.ip < 32 || s.oend - s.op < 32) return false;
  const uint8_t token = *s.ip;
  const size_t lit = token >> 4;
  const size_t short_match = token & 15;
  if (lit == 15 || short_match == 15) return false;
  std::memcpy(s.op, s.ip + 1, 16);
  uint8_t* op = s.op + lit;
  const uint8_t* ip = s.ip + 1 + lit;
  const size_t offset = size_t{ip[0]} | (size_t{ip[1]} << 8);
  if (offset == 0 || offset > static_cast<size_t>(op - s.hist)) return false;
  const size_t mlen = short_match + 4;  // at most 18, and oend - op >= 18 here
  const uint8_t* m = op - offset;
  if (offset >= 16) {
    // Steps of 16: the second reads only bytes the first has written or that were there before
    // (offset >= 16).
    std::memcpy(op, m, 16);
    if (mlen > 16) std::memcpy(op + 16, m + 16, 16);
  } else if (offset >= 8) {
    std::memcpy(op, m, 8);
    std::memcpy(op + 8, m + 8, 8);
    if (mlen > 16) std::memcpy(op + 16, m + 16, 8);
  } else {
    for (size_t i = 0; i < mlen; ++i) op[i] = m[i];
  }
  s.ip = ip + 2;
  s.op = op + mlen;
  return true;
}

// Why a block is malformed: the byte where it shows, and what (with the offset for
// "match offset N out of range").
struct Lz4Failure {
  const uint8_t* at = nullptr;
  const char* what = "";
  std::optional<size_t> offset;
};

// Decodes one sequence of any shape, every length checked: false with `failure` set when the
// block is malformed. The block is complete when s.op reaches s.oend (after the literals or
// after the match). Inline, and without a Status on the way, so that two streams interleave.
[[gnu::always_inline]] inline bool CheckedSequence(Lz4Stream& s, Lz4Failure& failure) {
  auto fail = [&](const uint8_t* at, const char* what) {
    failure.at = at;
    failure.what = what;
    return false;
  };
  const uint8_t* ip = s.ip;
  uint8_t* op = s.op;
  const uint8_t* const iend = s.iend;
  uint8_t* const oend = s.oend;
  uint8_t* const cap = s.cap;
  const uint8_t* const seq = ip;
  if (ip >= iend) return fail(ip, "truncated");
  const uint8_t token = *ip++;
  size_t lit = token >> 4;
  if (lit == 15 && !ExtendLength(ip, iend, lit)) return fail(seq, "truncated literal length");
  if (lit > static_cast<size_t>(iend - ip)) return fail(seq, "literals run past the input");
  if (lit > static_cast<size_t>(oend - op)) {
    return fail(seq, "literals overflow the expected length");
  }
  if (lit <= 16 && iend - ip >= 16 && cap - op >= 16) {
    std::memcpy(op, ip, 16);
  } else if (lit <= 32 && iend - ip >= 32 && cap - op >= 32) {
    std::memcpy(op, ip, 32);
  } else {
    std::memcpy(op, ip, lit);
  }
  op += lit;
  ip += lit;
  if (op == oend) {
    s.ip = ip;
    s.op = op;
    return true;
  }
  if (iend - ip < 2) return fail(ip, "truncated match offset");
  const size_t offset = size_t{ip[0]} | (size_t{ip[1]} << 8);
  ip += 2;
  if (offset == 0 || offset > static_cast<size_t>(op - s.hist)) {
    failure.offset = offset;
    return fail(ip - 2, "match offset out of range");
  }
  size_t mlen = token & 15;
  if (mlen == 15 && !ExtendLength(ip, iend, mlen)) return fail(seq, "truncated match length");
  mlen += 4;
  if (mlen > static_cast<size_t>(oend - op)) {
    return fail(seq, "match overflows the expected length");
  }
  const uint8_t* m = op - offset;
  uint8_t* const mend = op + mlen;
  if (offset >= 16 && cap - mend >= 16) {
    // Non-overlapping 16-byte steps (each source step is already written).
    do {
      std::memcpy(op, m, 16);
      op += 16;
      m += 16;
    } while (op < mend);
  } else if (offset >= 8 && cap - mend >= 8) {
    // Short offsets (common in text): 8-byte steps never read bytes not yet written.
    do {
      std::memcpy(op, m, 8);
      op += 8;
      m += 8;
    } while (op < mend);
  } else if (offset >= mlen) {
    std::memcpy(op, m, mlen);
  } else {
    for (uint8_t* d = op; d < mend; ++d) *d = *m++;
  }
  s.ip = ip;
  s.op = mend;
  return true;
}

// One sequence of either kind.
[[gnu::always_inline]] inline bool NextSequence(Lz4Stream& s, Lz4Failure& failure) {
  return ShortSequence(s) || CheckedSequence(s, failure);
}

}  // namespace

absl::Status Lz4Decompress(core::ByteReader& in, std::span<uint8_t> buf, size_t history_start,
                           size_t out_pos, size_t out_len) {
  Lz4Stream s = StartStream(in, buf, history_start, out_pos, out_len);
  Lz4Failure failure;
  do {
    if (!NextSequence(s, failure)) {
      const std::string what =
          failure.offset ? StrCat("match offset ", *failure.offset, " out of range") : failure.what;
      return in.ErrorAt(static_cast<size_t>(failure.at - s.ibase),
                        StrCat("corrupt LZ4 block: ", what));
    }
  } while (s.op != s.oend);
  return in.Seek(static_cast<size_t>(s.ip - s.ibase));
}

bool Lz4DecompressPair(core::ByteReader& in_a, std::span<uint8_t> buf_a, size_t out_pos_a,
                       size_t out_len_a, core::ByteReader& in_b, std::span<uint8_t> buf_b,
                       size_t out_pos_b, size_t out_len_b) {
  Lz4Stream a = StartStream(in_a, buf_a, 0, out_pos_a, out_len_a);
  Lz4Stream b = StartStream(in_b, buf_b, 0, out_pos_b, out_len_b);
  Lz4Failure failure;  // not reported: the caller decodes a malformed block alone
  // A sequence of each in turn: decoding one waits on loads of the one before it, and the two
  // blocks' waits overlap.
  bool more_a = true;
  bool more_b = true;
  while (more_a && more_b) {
    if (!NextSequence(a, failure) || !NextSequence(b, failure)) return false;
    more_a = a.op != a.oend;
    more_b = b.op != b.oend;
  }
  for (Lz4Stream* rest : {&a, &b}) {  // the one not done yet, alone
    while (rest->op != rest->oend) {
      if (!NextSequence(*rest, failure)) return false;
    }
  }
  // Each block must end where its stored length says (the caller's readers hold exactly one).
  if (a.ip != a.iend || b.ip != b.iend) return false;
  return in_a.Seek(static_cast<size_t>(a.ip - a.ibase)).ok() &&
         in_b.Seek(static_cast<size_t>(b.ip - b.ibase)).ok();
}

struct Inflater::State {
  z_stream stream{};
  bool ready = false;
};

Inflater::Inflater() : state_(std::make_unique<State>()) {
  state_->ready = inflateInit2(&state_->stream, -15) == Z_OK;
}

Inflater::~Inflater() {
  if (state_->ready) inflateEnd(&state_->stream);
}

absl::Status Inflater::Inflate(std::span<const uint8_t> compressed, std::span<uint8_t> out,
                               std::span<const uint8_t> dictionary, std::string_view source,
                               uint64_t offset) {
  if (!state_->ready) {
    return absl::ResourceExhaustedError("zlib inflateInit2 failed");
  }
  z_stream& zs = state_->stream;
  if (inflateReset(&zs) != Z_OK) {
    return absl::InternalError("zlib inflateReset failed");
  }
  if (!dictionary.empty() &&
      inflateSetDictionary(&zs, dictionary.data(), static_cast<uInt>(dictionary.size())) != Z_OK) {
    return absl::InternalError("zlib inflateSetDictionary failed");
  }
  zs.next_in = const_cast<Bytef*>(compressed.data());
  zs.avail_in = static_cast<uInt>(compressed.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&zs, Z_FINISH);
  if (rc == Z_STREAM_END && zs.avail_out == 0) return absl::OkStatus();
  if (rc == Z_STREAM_END) {
    return core::DataLossAt(source, offset,
                            StrCat("DEFLATE block inflated to ", out.size() - zs.avail_out,
                                   " bytes, expected ", out.size()));
  }
  return core::DataLossAt(source, offset,
                          StrCat("corrupt DEFLATE block (zlib ", rc,
                                 zs.msg != nullptr ? StrCat(": ", zs.msg) : std::string(),
                                 zs.avail_out == 0 ? ", longer than expected" : "", ")"));
}

struct ZstdDecoder::State {
  ZSTD_DCtx* dctx = nullptr;
  ~State() { ZSTD_freeDCtx(dctx); }
};

ZstdDecoder::ZstdDecoder() : state_(std::make_unique<State>()) {}
ZstdDecoder::~ZstdDecoder() = default;

absl::Status ZstdDecoder::Decompress(std::span<const uint8_t> compressed, std::span<uint8_t> out,
                                     std::span<const uint8_t> dictionary, std::string_view source,
                                     uint64_t offset) {
  if (state_->dctx == nullptr) {
    state_->dctx = ZSTD_createDCtx();
    if (state_->dctx == nullptr) return absl::ResourceExhaustedError("ZSTD_createDCtx failed");
  }
  // ZSTD_decompress_usingDict decodes every frame in `compressed` (and skips
  // skippable ones), auto-detecting the dictionary's kind like ZSTD_createDDict.
  const size_t n = ZSTD_decompress_usingDict(
      state_->dctx, out.data(), out.size(), compressed.data(), compressed.size(),
      dictionary.empty() ? nullptr : dictionary.data(), dictionary.size());
  if (ZSTD_isError(n)) {
    const bool too_long = ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall;
    return core::DataLossAt(
        source, offset,
        StrCat(
            "corrupt zstd block (", ZSTD_getErrorName(n),
            too_long ? StrCat(", longer than the expected ", out.size(), " bytes") : std::string(),
            ")"));
  }
  if (n != out.size()) {
    return core::DataLossAt(
        source, offset, StrCat("zstd block decompressed to ", n, " bytes, expected ", out.size()));
  }
  return absl::OkStatus();
}

}  // namespace rfs::lucene::internal
