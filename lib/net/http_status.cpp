#include "rfs/net/http_status.hpp"

#include <utility>

namespace rfs::net {

absl::Status StatusFromHttp(int status, std::string message,
                            std::initializer_list<HttpStatusOverride> overrides) {
  for (const HttpStatusOverride& entry : overrides) {
    if (entry.status == status) return absl::Status(entry.code, std::move(message));
  }
  if (status >= 200 && status < 300) return absl::OkStatus();
  absl::StatusCode code = absl::StatusCode::kInvalidArgument;
  switch (status) {
    case 401:
      code = absl::StatusCode::kUnauthenticated;
      break;
    case 403:
      code = absl::StatusCode::kPermissionDenied;
      break;
    case 404:
      code = absl::StatusCode::kNotFound;
      break;
    case 408:
      code = absl::StatusCode::kDeadlineExceeded;
      break;
    case 409:
      code = absl::StatusCode::kAlreadyExists;
      break;
    case 413:
      code = absl::StatusCode::kOutOfRange;
      break;
    case 429:
      code = absl::StatusCode::kResourceExhausted;
      break;
    default:
      if (status >= 500 && status < 600) code = absl::StatusCode::kUnavailable;
      break;
  }
  return absl::Status(code, std::move(message));
}

}  // namespace rfs::net
