// Gzip for request bodies and failed-document files (libdeflate). Not installed.
// Thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::net {

/// Compresses `data` into one gzip member. Level 1 by default (igzip): bulk bodies are large and
/// compressed on the hot path, and level 1 already shrinks JSON several times over; levels 2-12
/// are libdeflate's.
absl::StatusOr<std::string> GzipCompress(std::string_view data, int level = 1);

/// Compresses `data` at level 1 into `out`, replacing its bytes but keeping its buffer: a caller
/// that compresses one body after another passes the same buffer back, whose pages stay
/// resident, instead of having a fresh one faulted in for each. `data` must not lie in `out`.
absl::Status GzipCompressInto(std::string_view data, std::string& out);

/// GzipCompressInto for data in pieces where they lie: one member, the pieces' bytes in order as
/// if they were one string. No piece may lie in `out`.
absl::Status GzipCompressInto(std::span<const std::string_view> pieces, std::string& out);

/// One gzip member built from pieces as they come (igzip, level 1), so a large body is never
/// held uncompressed in one buffer: the caller appends each document's bytes from where they
/// are. One member, because servers (OpenSearch's, through Netty) read only the first member of
/// a request body.
class GzipStream {
 public:
  /// `expected_output`: a first reservation for the compressed bytes.
  explicit GzipStream(size_t expected_output = 0);
  ~GzipStream();
  GzipStream(const GzipStream&) = delete;
  GzipStream& operator=(const GzipStream&) = delete;

  absl::Status Append(std::string_view data);
  /// The compressed bytes made so far and not yet taken. A caller that writes the member as it
  /// goes writes these, then calls TakePending, so the stream holds only what is new.
  std::string_view pending() const { return out_; }
  void TakePending() { out_.clear(); }
  /// Ends the member and returns it (what is still pending); the stream is then spent.
  absl::StatusOr<std::string> Finish();

 private:
  absl::Status Deflate(std::string_view data, bool finish);
  struct State;
  std::unique_ptr<State> state_;
  std::string out_;
  bool finished_ = false;
};

/// Inflates one gzip member a piece at a time (igzip), handing each piece, of at most
/// `piece_bytes`, to `take` in order; nothing larger than a piece is held, so a caller that needs
/// a few ranges of a large compressed body never holds all of it inflated. Stops at the first
/// error `take` returns; DataLoss on corrupt or truncated input.
absl::Status GzipInflatePieces(std::string_view member, size_t piece_bytes,
                               const std::function<absl::Status(std::string_view)>& take);

/// Inflates gzip data (one or more concatenated members). DataLoss on corrupt input.
absl::StatusOr<std::string> GzipDecompress(std::string_view data);

}  // namespace rfs::net
