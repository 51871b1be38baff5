// Regular expressions users give (allowlist `regex:` entries, type-mapping patterns), on RE2:
// matching takes time linear in the input and no recursion, so no pattern can blow the stack or
// backtrack for ever. RE2's syntax is Java's (and ECMAScript's) without backreferences,
// lookaround, possessive quantifiers or atomic groups (README "Regular expressions").
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include <re2/re2.h>

namespace rfs::transform::internal {

/// `pattern` compiled, or InvalidArgument naming `what` and RE2's reason.
absl::StatusOr<std::shared_ptr<const re2::RE2>> CompileUserRegex(std::string_view pattern,
                                                                 std::string_view what);

}  // namespace rfs::transform::internal
