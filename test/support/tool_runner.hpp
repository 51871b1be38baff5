// ToolRunner: runs the tools as child processes in a temporary folder of its own, one at a time,
// with their stdout and stderr kept in files of that folder, and fails the test on a hang.
#pragma once

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace rfs::test {

struct ToolRunner {
  explicit ToolRunner(const std::string& prefix = "rfs-tool") : dir(prefix) {}

  TempDir dir;
  int runs = 0;
  /// The last run's stdout (unless it went to a file of the caller's) and stderr.
  std::string out, err;

  /// Runs `argv` (argv[0] the program) to its end and returns its exit code; stdout goes to
  /// `stdout_path` when given. A run still going after `limit` is killed and fails the test.
  int Run(const std::vector<std::string>& argv, const std::string& stdout_path = "",
          std::chrono::seconds limit = std::chrono::seconds(120)) {
    const std::string name = "run" + std::to_string(++runs);
    const std::string own_stdout = dir.File(name + ".out");
    ChildProcess child(argv, stdout_path.empty() ? own_stdout : stdout_path,
                       dir.File(name + ".err"));
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!child.Exited()) {
      if (std::chrono::steady_clock::now() > deadline) {
        child.Kill();
        child.Wait();
        FAIL(argv[0] << " did not exit within " << limit.count() << " s (a hang)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    out = stdout_path.empty() ? ReadTextFile(own_stdout) : "";
    err = ReadTextFile(dir.File(name + ".err"));
    return child.Wait();
  }
};

}  // namespace rfs::test
