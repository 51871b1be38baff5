// Elasticsearch document ids as stored in Lucene (docs/formats.md D.2, D.3).
//
// ES 6+ stores `_id` Uid-encoded (ES index/mapper/Uid.java): 0xFE numeric
// (two decimal digits per byte, 0xF end marker), 0xFF UTF-8, 0xFD escaped
// base64url, otherwise the raw bytes of a canonical unpadded base64url id.
// ES 5 stores `_uid` as "type#id".
//
// Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace rfs::lucene {

/// Decodes a stored `_id` into `out` (replacing its content). InvalidArgument
/// for an empty array or a bad numeric digit.
absl::Status DecodeUid(std::span<const uint8_t> bytes, std::string& out);

/// Splits an ES 5 `_uid` at the first '#': type before, id after.
/// InvalidArgument when there is no '#'.
absl::Status SplitUid(std::string_view uid, std::string& type, std::string& id);

}  // namespace rfs::lucene
