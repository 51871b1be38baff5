// The payload tags of rfs's status values, all in one place and named one way:
// "rfs.<layer>.<what>". A payload marks an error whose code alone does not tell the caller what
// to do: a transient code no retry can fix, or a refusal that ends a tool with an exit code of its
// own. Each tag is set and tested by one pair of functions beside the code that raises it (e.g.
// core::NotRetryable / core::IsRetryable, migration::IsStoreMismatch); callers use those, not the
// tags.
#pragma once

namespace rfs::core::payload {

/// core::NotRetryable: a transient code (a full disk's ResourceExhausted) no retry can fix.
inline constexpr const char* kNotRetryable = "rfs.core.not_retryable";
/// transform::IsTransformBudgetExceeded: a program interrupted at its time or memory limit.
inline constexpr const char* kTransformBudget = "rfs.transform.budget";
/// migration::IsPreserveVersionRefusal: --preserve-version for an index whose versions cannot be
/// read.
inline constexpr const char* kPreserveVersion = "rfs.migration.preserve_version";
/// migration::IsSourcelessIndex: an index without a complete `_source`, sourceless runs off.
inline constexpr const char* kSourcelessIndex = "rfs.migration.sourceless_index";
/// migration::IsStoreMismatch: a coordination store set up for another snapshot or settings.
inline constexpr const char* kStoreMismatch = "rfs.migration.store_mismatch";
/// migration::IsDeltaOrderRefusal: a delta whose previous snapshot did not start before.
inline constexpr const char* kDeltaOrder = "rfs.migration.delta_order";
/// migration::IsItemOverAttempts: a work item acquired more than its attempts allow.
inline constexpr const char* kItemAttempts = "rfs.migration.item_attempts";
/// migration::IsSnapshotReadFailure: the snapshot repository could not be read (exit 5).
inline constexpr const char* kSnapshotRead = "rfs.migration.snapshot_read";
/// RfsWorker: the migration is FAILED in a phase (exit 7).
inline constexpr const char* kPhaseFailed = "rfs.migration.phase_failed";

}  // namespace rfs::core::payload
