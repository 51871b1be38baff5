// Elasticsearch's TSDB doc values (ES87TSDB, ES819TSDB): values cut into blocks of 128, each
// encoded on its own (docs/formats.md, "Elasticsearch TSDB doc values").
#pragma once

#include <array>
#include <cstdint>

#include "rfs/core/byte_reader.hpp"

#include "absl/status/status.h"

namespace rfs::lucene::internal {

inline constexpr int kTsdbBlockShift = 7;
inline constexpr int kTsdbBlockSize = 1 << kTsdbBlockShift;
using TsdbBlock = std::array<int64_t, kTsdbBlockSize>;

/// One block of numbers (TSDBDocValuesEncoder.decode): a VInt token (bits per value << 3 | the
/// gcd, offset and delta flags), the packed values, then the gcd, minimum and first value the
/// flags announce.
absl::Status DecodeTsdbNumbers(core::ByteReader& in, TsdbBlock& out);

/// One block of ordinals (TSDBDocValuesEncoder.decodeOrdinals) of a field whose ordinals take
/// `bits_per_ord` bits: one run, two runs, a repeated cycle, or packed values.
absl::Status DecodeTsdbOrdinals(core::ByteReader& in, int bits_per_ord, TsdbBlock& out);

}  // namespace rfs::lucene::internal
