// Snapshot repositories written at test time by the real-Lucene fixture generator
// (test/fixtures, Java against Debian's Lucene 8.8.1). Each distinct option list is generated
// once into the build tree per version of the generator (its script and jar) and reused; a lock
// file keeps parallel ctest processes from generating the same repository twice.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>

#include "support/skip.hpp"
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace rfs::test {

struct GeneratedRepo {
  std::filesystem::path dir;  // holds repo/, expected.json, expected-docs.ndjson
  std::filesystem::path repo() const { return dir / "repo"; }
  std::filesystem::path expected() const { return dir / "expected.json"; }
};

inline std::string ReadWholeFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// What identifies the generator itself: its wrapper script and the jar the script runs, so that
/// a changed generator never reuses repositories an older one wrote.
inline const std::string& GeneratorIdentity(const std::string& script) {
  static const std::string identity = [&] {
    std::string text = ReadWholeFile(script);
    std::string out = text;
    if (const size_t cp = text.find("-cp \""); cp != std::string::npos) {
      const size_t start = cp + 5;
      const size_t end = text.find_first_of(":\"", start);
      out += ReadWholeFile(text.substr(start, end - start));
    }
    return std::to_string(std::hash<std::string>{}(out));
  }();
  return identity;
}

/// Generates (or reuses) a repository for `args` (generator options, e.g. "--docs 100"). Skips the
/// test when the generator could not be built here; throws (failing the test) when it fails.
/// The optional is never empty; it stays for the callers' `if (!generated) return;`.
inline std::optional<GeneratedRepo> Generate(const std::string& args) {
  const std::string generator = RFS_GENERATE_SNAPSHOT;
  if (generator.empty()) {
    SkipTest("the Java fixture generator is unavailable (no JDK or Lucene jars)");
  }
  // RFS_GENERATED_DIR: share the fixtures of another build (the ThreadSanitizer build reuses
  // the main build's; they are keyed by the generator and its arguments).
  const char* shared = std::getenv("RFS_GENERATED_DIR");
  const auto base = shared != nullptr && *shared != '\0'
                        ? std::filesystem::path(shared)
                        : std::filesystem::path(RFS_BINARY_DIR) / "generated";
  std::filesystem::create_directories(base);
  const GeneratedRepo out{
      base / std::to_string(std::hash<std::string>{}(GeneratorIdentity(generator) + "\n" + args))};
  const int lock = ::open((out.dir.string() + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock >= 0) ::flock(lock, LOCK_EX);
  if (!std::filesystem::exists(out.expected())) {
    std::filesystem::remove_all(out.dir);
    const std::string command = generator + " --out '" + out.dir.string() + "' " + args + " > '" +
                                out.dir.string() + ".log' 2>&1";
    if (std::system(command.c_str()) != 0) {
      if (lock >= 0) ::close(lock);
      std::ifstream log(out.dir.string() + ".log");
      std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
      if (text.size() > 4000) text = text.substr(text.size() - 4000);
      throw std::runtime_error("fixture generator failed: " + command + "\n" + text);
    }
  }
  if (lock >= 0) ::close(lock);
  return out;
}

}  // namespace rfs::test
