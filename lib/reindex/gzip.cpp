// Gzip through zlib's deflate/inflate with the gzip wrapper (windowBits 16 + 15).
#include <zlib.h>

#include "rfs/core/str_cat.hpp"

#include "reindex/gzip_internal.hpp"

namespace rfs::reindex::internal {

absl::StatusOr<std::string> GzipCompress(std::string_view data, int level) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError("deflateInit2 failed");
  }
  std::string out;
  out.resize(deflateBound(&z, static_cast<uLong>(data.size())));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return absl::InternalError(core::StrCat("deflate failed: ", rc));
  return out;
}

absl::StatusOr<std::string> GzipDecompress(std::string_view data) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return absl::InternalError("inflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buffer[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof(buffer);
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof(buffer) - z.avail_out);
    // Concatenated members (appended batches) form one stream.
    if (rc == Z_STREAM_END && z.avail_in > 0) rc = inflateReset(&z);
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) {
    return absl::DataLossError(
        core::StrCat("corrupt or truncated gzip data at input offset ", data.size() - z.avail_in));
  }
  return out;
}

}  // namespace rfs::reindex::internal
