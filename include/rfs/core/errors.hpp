// Error constructors shared by every reader of untrusted bytes.
//
// rfs chooses absl::StatusCode by what the caller does next (README "Error model"):
// clang-format off
//
//   Code                Meaning                                  Caller does
//   ------------------  ---------------------------------------  ----------------------
//   NotFound            a blob, snapshot or index is absent      report it
//   DataLoss            corrupt or truncated bytes (bad magic,   report it; never retry
//                       checksum, read past the end)
//   Unimplemented       a format, codec or version not read yet  report it, naming it
//   InvalidArgument     bad configuration or arguments           fix the input
//   Unavailable,        transient                                retry with backoff
//   DeadlineExceeded,                                            (unless NotRetryable)
//   ResourceExhausted
//   ResourceExhausted   a budget used up: a full disk or quota,  report it; never retry
//    + NotRetryable     an item's attempts (max_item_attempts)
//   Aborted             a lease was lost or has expired          stop work on the item
//   FailedPrecondition  from a coordinator call: the lease was   stop work on the item
//                       lost (coordination::IsLeaseLost);
//                       elsewhere a state the call needs does    report it, naming what
//                       not hold (a snapshot still running, a    to change
//                       store set up for another run)
//   OutOfRange          too large for where it goes: a request   split it, or leave it
//                       for the target, a shard for this         to a worker with a
//                       worker's --max-shard-size-bytes          higher limit
//   AlreadyExists       a conflict (HTTP 409)                    per call site
//
// clang-format on
// Messages always name the source (blob, file, segment) and, for bytes, the offset.
#pragma once

#include <cstdint>
#include <string_view>

#include "rfs/core/status_payloads.hpp"
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

/// `status` marked as one no retry can fix.
inline absl::Status NotRetryable(absl::Status status) {
  if (!status.ok()) status.SetPayload(payload::kNotRetryable, absl::Cord("1"));
  return status;
}

/// True for the codes a caller may retry after backing off.
inline bool IsRetryable(const absl::Status& status) {
  if (status.GetPayload(payload::kNotRetryable).has_value()) return false;
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
         absl::IsResourceExhausted(status);
}

}  // namespace rfs::core
