// Error constructors shared by every reader of untrusted bytes.
//
// rfs chooses absl::StatusCode by what the caller does next (see README "Error
// model"):
//   NotFound          a blob, snapshot or index that is not there
//   DataLoss          corrupt or truncated input: bad magic, checksum mismatch,
//   read past the end Unimplemented     a format, codec or version rfs does not
//   read (yet) InvalidArgument   bad configuration or arguments from the caller
//   Unavailable / DeadlineExceeded / ResourceExhausted   transient; worth
//   retrying Aborted / FailedPrecondition                         a lease was
//   lost or has expired
// Messages always name the source (blob, file, segment) and, for bytes, the
// offset.
#pragma once

#include <cstdint>
#include <string_view>

#include "rfs/core/str_cat.hpp"

#include "absl/status/status.h"
#include "absl/strings/cord.h"

namespace rfs::core {

/// Corrupt or truncated bytes in `source` at byte `offset`.
inline absl::Status DataLossAt(std::string_view source, uint64_t offset, std::string_view what) {
  return absl::DataLossError(StrCat(source, ": ", what, " at offset ", offset));
}

/// A format feature of `source` that rfs does not support, e.g. an unknown
/// codec version.
inline absl::Status UnsupportedIn(std::string_view source, std::string_view what) {
  return absl::UnimplementedError(StrCat(source, ": unsupported ", what));
}

/// Prefixes the message of a non-OK status with `context`, keeping its code and payloads.
inline absl::Status WithContext(const absl::Status& status, std::string_view context) {
  if (status.ok()) return status;
  absl::Status out(status.code(), StrCat(context, ": ", status.message()));
  status.ForEachPayload(
      [&](absl::string_view type, const absl::Cord& payload) { out.SetPayload(type, payload); });
  return out;
}

/// The payload of errors no retry can fix although their code is a transient one: a full disk
/// or quota (ResourceExhausted) is not freed by waiting out a lease. The run ends at once.
inline constexpr const char* kNotRetryablePayload = "rfs.core.not_retryable";

/// `status` marked as one no retry can fix.
inline absl::Status NotRetryable(absl::Status status) {
  if (!status.ok()) status.SetPayload(kNotRetryablePayload, absl::Cord("1"));
  return status;
}

/// True for the codes a caller may retry after backing off.
inline bool IsRetryable(const absl::Status& status) {
  if (status.GetPayload(kNotRetryablePayload).has_value()) return false;
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
         absl::IsResourceExhausted(status);
}

}  // namespace rfs::core
