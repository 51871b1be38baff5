#include "rfs/core/str_cat.hpp"

#include "user_regex_internal.hpp"

namespace rfs::transform::internal {

namespace {

// Longer patterns are no real allowlist; RE2 bounds its own memory too (max_mem, 8 MiB).
constexpr size_t kMaxPatternBytes = 16 << 10;

}  // namespace

absl::StatusOr<std::shared_ptr<const re2::RE2>> CompileUserRegex(std::string_view pattern,
                                                                 std::string_view what) {
  if (pattern.size() > kMaxPatternBytes) {
    return absl::InvalidArgumentError(
        core::StrCat(what, ": the pattern is longer than ", kMaxPatternBytes, " bytes"));
  }
  re2::RE2::Options options;
  options.set_log_errors(false);
  auto compiled =
      std::make_shared<const re2::RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!compiled->ok()) {
    std::string reason = compiled->error();
    if (compiled->error_code() == re2::RE2::ErrorBadEscape ||
        compiled->error_code() == re2::RE2::ErrorBadPerlOp) {
      reason += " (RE2 has no backreferences, lookaround or possessive quantifiers)";
    }
    return absl::InvalidArgumentError(
        core::StrCat(what, ": not a valid regular expression: ", reason));
  }
  return compiled;
}

}  // namespace rfs::transform::internal
