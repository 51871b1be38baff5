// Unwinding macros for absl::Status / absl::StatusOr at rfs's public
// boundaries.
//
// Abseil ships no public macros for this, so rfs owns them (the shape of
// Arrow's ARROW_RETURN_NOT_OK / ARROW_ASSIGN_OR_RAISE). They are safe in any
// function that returns absl::Status or absl::StatusOr<T>.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define RFS_STATUS_CONCAT_INNER_(a, b) a##b
#define RFS_STATUS_CONCAT_(a, b) RFS_STATUS_CONCAT_INNER_(a, b)

/// Evaluates `expr` (an absl::Status) and returns it from the enclosing
/// function when not OK.
#define RFS_RETURN_IF_ERROR(expr)        \
  do {                                   \
    ::absl::Status rfs_status_ = (expr); \
    if (!rfs_status_.ok()) [[unlikely]]  \
      return rfs_status_;                \
  } while (false)

/// `RFS_ASSIGN_OR_RETURN(auto x, MakeX());` evaluates an absl::StatusOr<T>,
/// returns its status when not OK, and otherwise moves the value into the
/// declaration on the left.
#define RFS_ASSIGN_OR_RETURN(lhs, rexpr) \
  RFS_ASSIGN_OR_RETURN_IMPL_(RFS_STATUS_CONCAT_(rfs_statusor_, __LINE__), lhs, rexpr)

#define RFS_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                               \
  if (!statusor.ok()) [[unlikely]]                       \
    return std::move(statusor).status();                 \
  lhs = std::move(statusor).value()
