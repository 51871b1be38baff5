// Catch2's main(), compiled once for all test executables. Beyond Catch's own, one rule: a test
// case that checks nothing (a loop that came out empty, a fixture that was missing) fails instead
// of passing. Catch2 v2 takes one -w option per run, and ctest already passes -w NoTests (a name
// that matches no case fails), so this listener plays the part of -w NoAssertions.
#define CATCH_CONFIG_RUNNER
#include <iostream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace {

std::vector<std::string>& CasesWithoutAssertions() {
  static std::vector<std::string> cases;
  return cases;
}

class NoAssertionsListener : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    if (stats.totals.assertions.total() == 0) {
      CasesWithoutAssertions().push_back(stats.testInfo.name);
    }
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(NoAssertionsListener)

int main(int argc, char* argv[]) {
  const int result = Catch::Session().run(argc, argv);
  if (result != 0) return result;
  for (const std::string& name : CasesWithoutAssertions()) {
    std::cerr << "test case checked nothing (no assertion ran): " << name << "\n";
  }
  return CasesWithoutAssertions().empty() ? 0 : 1;
}
