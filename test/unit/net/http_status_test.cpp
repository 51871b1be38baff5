// The one HTTP-status mapping every client uses (rfs/net/http_status.hpp).
#include "rfs/net/http_status.hpp"

#include <catch2/catch.hpp>

#include "rfs/core/errors.hpp"

using rfs::net::StatusFromHttp;

TEST_CASE("HTTP statuses map to one error code each, retryable only when waiting helps", "[net]") {
  CHECK(StatusFromHttp(200, "ok").ok());
  CHECK(StatusFromHttp(201, "created").ok());
  const std::pair<int, absl::StatusCode> kTable[] = {
      {400, absl::StatusCode::kInvalidArgument},  {401, absl::StatusCode::kUnauthenticated},
      {403, absl::StatusCode::kPermissionDenied}, {404, absl::StatusCode::kNotFound},
      {408, absl::StatusCode::kDeadlineExceeded}, {409, absl::StatusCode::kAlreadyExists},
      {410, absl::StatusCode::kInvalidArgument},  {413, absl::StatusCode::kOutOfRange},
      {422, absl::StatusCode::kInvalidArgument},  {429, absl::StatusCode::kResourceExhausted},
      {500, absl::StatusCode::kUnavailable},      {502, absl::StatusCode::kUnavailable},
      {503, absl::StatusCode::kUnavailable},      {504, absl::StatusCode::kUnavailable},
      {301, absl::StatusCode::kInvalidArgument},  {418, absl::StatusCode::kInvalidArgument},
  };
  for (const auto& [status, code] : kTable) {
    INFO(status);
    const absl::Status mapped = StatusFromHttp(status, "PUT /x: HTTP " + std::to_string(status));
    CHECK(mapped.code() == code);
    CHECK(mapped.message() == "PUT /x: HTTP " + std::to_string(status));
    // Retried exactly when the server may answer otherwise later: busy, down or slow.
    CHECK(rfs::core::IsRetryable(mapped) ==
          (status == 408 || status == 429 || (status >= 500 && status < 600)));
    // Never read as a lost lease.
    CHECK_FALSE(absl::IsFailedPrecondition(mapped));
    CHECK_FALSE(absl::IsAborted(mapped));
  }
  // An API's own meanings come first.
  CHECK(absl::IsFailedPrecondition(
      StatusFromHttp(409, "lease", {{409, absl::StatusCode::kFailedPrecondition}})));
  CHECK(absl::IsPermissionDenied(
      StatusFromHttp(401, "token", {{401, absl::StatusCode::kPermissionDenied}})));
  CHECK(absl::IsNotFound(StatusFromHttp(404, "x", {{409, absl::StatusCode::kFailedPrecondition}})));
}
