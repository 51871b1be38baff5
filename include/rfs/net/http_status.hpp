// One mapping from an HTTP answer's status to the error every client of rfs returns for it (the
// OpenSearch client, S3, the console's client and its work coordinator), so that a status means
// the same thing wherever it comes from (rfs/core/errors.hpp says what callers do with each code):
//
//   status          code                the caller
//   --------------  ------------------  -----------------------------------------------------
//   2xx             OK
//   400, 422        InvalidArgument     fixes the request; never retried
//   401             Unauthenticated     reports the credentials
//   403             PermissionDenied    reports the missing permission
//   404             NotFound            reports it (or takes it as an answer)
//   408             DeadlineExceeded    retries with backoff
//   409             AlreadyExists       decides per call (a conflict)
//   413             OutOfRange          splits the request
//   429             ResourceExhausted   retries with backoff (the server is busy)
//   5xx             Unavailable         retries with backoff
//   any other       InvalidArgument     never retried; never Aborted or FailedPrecondition,
//                                       which callers read as a lost lease
//
// An API whose statuses mean something else passes overrides: the console's work API answers 409
// and 410 for a lease that is no longer the caller's (FailedPrecondition), S3 answers 301/307 for
// a bucket in another region.
#pragma once

#include <initializer_list>
#include <string>

#include "absl/status/status.h"

namespace rfs::net {

struct HttpStatusOverride {
  int status = 0;
  absl::StatusCode code = absl::StatusCode::kUnknown;
};

/// The error for an answer with `status` (OK for 2xx), carrying `message`.
absl::Status StatusFromHttp(int status, std::string message,
                            std::initializer_list<HttpStatusOverride> overrides = {});

}  // namespace rfs::net
