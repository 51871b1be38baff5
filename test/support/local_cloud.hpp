// LocalCloud: an object-store emulator for tests (s3rver, fake-gcs-server or Azurite), started,
// filled and stopped through scripts/local-cloud, so the suite relies on that script's interface
// as users do: the eval-able lines it prints are parsed here into the tools' options and the
// environment. A missing emulator is an install-deps bug: the constructor throws, failing the
// test.
#pragma once

#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include <signal.h>

namespace rfs::test {

class LocalCloud {
 public:
  /// `kind`: "s3", "gcs" or "azure".
  explicit LocalCloud(const std::string& kind) : kind_(kind) {
    const int code = RunProcess({Script(), "start", "--dir", dir_.File("cloud"), "--kind", kind},
                                dir_.File("start.out"), dir_.File("start.err"));
    if (code != 0) {
      throw std::runtime_error("scripts/local-cloud start --kind " + kind + " failed (" +
                               std::to_string(code) + "): " + ReadTextFile(dir_.File("start.err")));
    }
    std::istringstream lines(ReadTextFile(dir_.File("start.out")));
    for (std::string line; std::getline(lines, line);) {
      bool exported = false;
      if (line.starts_with("export ")) {
        line = line.substr(7);
        exported = true;
      }
      const size_t equals = line.find('=');
      if (equals == std::string::npos) continue;
      std::string value = line.substr(equals + 1);
      if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') {
        value = value.substr(1, value.size() - 2);
      }
      (exported ? environment_ : variables_)[line.substr(0, equals)] = value;
    }
  }
  ~LocalCloud() {
    RunProcess({Script(), "stop", "--dir", dir_.File("cloud")}, dir_.File("stop.out"),
               dir_.File("stop.err"));
    // `stop` removes the pid file once the emulator is gone; one left is ended here.
    const std::string pid = ReadTextFile(dir_.File("cloud/emulator.pid"));
    if (!pid.empty() && std::stoi(pid) > 1) kill(std::stoi(pid), SIGKILL);
  }
  LocalCloud(const LocalCloud&) = delete;
  LocalCloud& operator=(const LocalCloud&) = delete;

  /// Copies `folder` into `bucket` under `prefix`; throws on failure.
  void Upload(const std::filesystem::path& folder, const std::string& bucket,
              const std::string& prefix) {
    const int code = RunProcess({Script(), "upload", "--dir", dir_.File("cloud"), "--bucket",
                                 bucket, "--from", folder.string(), "--prefix", prefix},
                                dir_.File("upload.out"), dir_.File("upload.err"));
    if (code != 0) {
      throw std::runtime_error("scripts/local-cloud upload failed: " +
                               ReadTextFile(dir_.File("upload.err")));
    }
  }

  /// A printed variable: LOCAL_CLOUD_ENDPOINT, LOCAL_CLOUD_REPO_OPTION, ...
  std::string Variable(const std::string& name) const {
    auto it = variables_.find(name);
    return it == variables_.end() ? "" : it->second;
  }
  /// The exported credentials, e.g. AZURE_STORAGE_KEY.
  const std::map<std::string, std::string>& environment() const { return environment_; }
  std::string endpoint() const { return Variable("LOCAL_CLOUD_ENDPOINT"); }

  /// The tools' arguments for bucket/prefix: $LOCAL_CLOUD_REPO_OPTION
  /// $LOCAL_CLOUD_URI_SCHEME://bucket/prefix $LOCAL_CLOUD_TOOL_OPTIONS.
  std::vector<std::string> ToolArguments(const std::string& bucket_and_prefix) const {
    std::vector<std::string> out = {Variable("LOCAL_CLOUD_REPO_OPTION"),
                                    Variable("LOCAL_CLOUD_URI_SCHEME") + "://" + bucket_and_prefix};
    std::istringstream words(Variable("LOCAL_CLOUD_TOOL_OPTIONS"));
    for (std::string word; words >> word;) out.push_back(word);
    return out;
  }

  /// Sets the exported credentials in this process (the tools it starts inherit them).
  void ExportEnvironment() const {
    for (const auto& [name, value] : environment_) setenv(name.c_str(), value.c_str(), 1);
  }
  void UnsetEnvironment() const {
    for (const auto& [name, value] : environment_) unsetenv(name.c_str());
  }

 private:
  static std::string Script() {
    return (std::filesystem::path(RFS_SOURCE_DIR) / "scripts" / "local-cloud").string();
  }

  std::string kind_;
  TempDir dir_{"rfs-local-cloud"};
  std::map<std::string, std::string> variables_;
  std::map<std::string, std::string> environment_;
};

}  // namespace rfs::test
