// The envelope around snapshot metadata blobs ("ChecksumBlobStoreFormat",
// docs/formats.md A.3) and the XContent body inside it.
//
// Since ES 2.x every snap-*.dat, meta-*.dat and shard index-<gen> blob is a
// Lucene codec header (codec "snapshot", "metadata", "index-metadata" or
// "snapshots", version 1), an XContent body and a 16-byte codec footer whose
// CRC-32 covers everything before it. The body is SMILE, or SMILE/JSON
// compressed with raw DEFLATE ("DFL\0"), zstd ("ZSTD\0", OpenSearch) or, in
// ES 1.x, LZF ("ZV"). ES 1.x blobs (snapshot-<name>, metadata-<name>) and root
// index-N / index files have no envelope at all: they are plain JSON (or LZF
// when the repository compresses). Compression is detected per blob, since a
// repository's `compress` setting may change over its life.
//
// Errors: corrupt, truncated or mis-checksummed bytes are DataLoss naming the
// blob and the offset (offsets inside a decompressed body are reported as
// offsets into the decompressed bytes, and the message says so); codec
// versions other than 1 are Unimplemented. Nothing throws.
// Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include <boost/json/value.hpp>

#include "absl/status/statusor.h"

namespace rfs::snapshot {

/// Decodes an XContent body, detecting its form from the first bytes: SMILE
/// (3A 29 0A), raw DEFLATE ("DFL\0"), LZF ("ZV"), zstd ("ZSTD\0",
/// OpenSearch 2.10+, frames with or without a content size) or JSON (first non-whitespace byte '{'
/// or '['). A decompressed body must itself be SMILE or JSON. Decompressed bodies larger than 1 GiB
/// are refused (DataLoss). `base_offset` is the offset of body[0] within the blob named `source`.
absl::StatusOr<boost::json::value> DecodeXContent(std::span<const uint8_t> body,
                                                  std::string_view source,
                                                  uint64_t base_offset = 0);

/// Decodes a whole metadata blob. When it starts with the Lucene codec magic
/// the codec header is read (its name must equal `expected_codec` unless that
/// is empty; the version must be 1), the footer is checked (with its CRC-32
/// when `verify_checksum`, which runs before anything else is parsed, so any
/// corruption is DataLoss) and the bytes between header and footer are decoded
/// with DecodeXContent. Without the magic (ES 1.x blobs, JSON index files) the
/// whole blob is decoded with DecodeXContent.
absl::StatusOr<boost::json::value> DecodeMetadataBlob(std::span<const uint8_t> blob,
                                                      std::string_view blob_name,
                                                      std::string_view expected_codec,
                                                      bool verify_checksum = true);

}  // namespace rfs::snapshot
