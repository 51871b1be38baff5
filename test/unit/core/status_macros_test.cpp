#include "rfs/core/status_macros.hpp"

#include <catch2/catch.hpp>

#include "rfs/core/errors.hpp"

namespace {

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  RFS_ASSIGN_OR_RETURN(int half, Half(x));
  RFS_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

absl::Status CheckQuarter(int x) {
  RFS_RETURN_IF_ERROR(Quarter(x).status());
  return absl::OkStatus();
}

}  // namespace

TEST_CASE("status macros unwind the first error", "[core]") {
  CHECK(Quarter(8).value() == 2);
  CHECK(absl::IsInvalidArgument(Quarter(6).status()));
  CHECK(CheckQuarter(4).ok());
  CHECK_FALSE(CheckQuarter(2).ok());
}

TEST_CASE("error helpers keep codes and add context", "[core]") {
  auto loss = rfs::core::DataLossAt("indices/x/0/__a", 42, "bad magic");
  CHECK(absl::IsDataLoss(loss));
  CHECK(loss.message() == "indices/x/0/__a: bad magic at offset 42");
  auto wrapped = rfs::core::WithContext(loss, "shard 0");
  CHECK(absl::IsDataLoss(wrapped));
  CHECK(wrapped.message() == "shard 0: indices/x/0/__a: bad magic at offset 42");
  CHECK(rfs::core::WithContext(absl::OkStatus(), "x").ok());
  CHECK(rfs::core::IsRetryable(absl::UnavailableError("x")));
  CHECK(rfs::core::IsRetryable(absl::ResourceExhaustedError("429")));
  CHECK_FALSE(rfs::core::IsRetryable(absl::DataLossError("x")));
  CHECK(absl::IsUnimplemented(rfs::core::UnsupportedIn("_0.si", "codec Lucene99SegmentInfo")));
}
