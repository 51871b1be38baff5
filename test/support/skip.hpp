// Skipping a test honestly: "RFS-SKIPPED: <reason>" on stdout and exit code 77, which ctest
// reports as skipped (SKIP_RETURN_CODE in rfs_add_test). Each ctest case runs in its own process,
// so the exit ends only the case that skips. Call it before any check: the exit code, not a printed
// line, marks the skip, so a case that fails is never reported as skipped.
#pragma once

#include <cstdlib>
#include <iostream>
#include <string_view>

namespace rfs::test {

inline constexpr int kSkipExitCode = 77;

[[noreturn]] inline void SkipTest(std::string_view reason) {
  std::cout << "RFS-SKIPPED: " << reason << std::endl;
  std::exit(kSkipExitCode);
}

}  // namespace rfs::test
