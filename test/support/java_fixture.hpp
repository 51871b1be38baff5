// Fixtures written by Java programs (Lucene's own IndexWriter) at test time, kept outside the
// clone so that every clone of the machine reuses them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

namespace rfs::test {

/// Where fixtures written by Java Lucene are kept: in the download cache outside the clone
/// (RFS_JAVA_FIXTURE_CACHE, beside the Maven repository the jars come from), under `dir`'s name and
/// a hash of everything that decides their bytes (the writer's source, the Lucene jar, the Java),
/// so that a fresh clone on the same machine reuses them and any change to a writer makes new ones.
inline std::filesystem::path CachedFixtureDir(const std::filesystem::path& dir,
                                              const std::vector<std::string>& files,
                                              const std::vector<std::string>& words) {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a
  auto mix = [&hash](std::string_view bytes) {
    for (unsigned char c : bytes) hash = (hash ^ c) * 1099511628211ull;
    hash = (hash ^ 0xff) * 1099511628211ull;
  };
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    mix(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  }
  for (const auto& word : words) mix(word);
  char suffix[17];
  std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(hash));
  const std::filesystem::path cached =
      std::filesystem::path(RFS_JAVA_FIXTURE_CACHE) / (dir.filename().string() + "-" + suffix);
  std::filesystem::create_directories(cached.parent_path());
  return cached;
}

/// The folder that the single-file Java program `source` fills when run by `java` with `jar` (a
/// class path: jars joined by ':') and `args` after the folder, generated once per machine
/// (CachedFixtureDir, keyed also by the contents of the files in `inputs`) and complete once it
/// holds `produced`. Java and the jars are installed by scripts/install-deps: their absence, or a
/// program that fails, throws (a broken fixture, never a skip).
inline std::filesystem::path JavaWrittenFixture(const std::filesystem::path& build_dir,
                                                const std::string& java, const std::string& jar,
                                                const std::string& source,
                                                const std::vector<std::string>& args,
                                                const std::string& produced,
                                                const std::vector<std::string>& inputs = {}) {
  if (jar.empty())
    throw std::runtime_error("no jar given (run scripts/install-deps, then reconfigure)");
  for (size_t start = 0; start <= jar.size();) {
    const size_t colon = std::min(jar.find(':', start), jar.size());
    const std::string one = jar.substr(start, colon - start);
    if (!std::filesystem::exists(one)) {
      throw std::runtime_error("no jar '" + one + "' (run scripts/install-deps, then reconfigure)");
    }
    start = colon + 1;
  }
  std::vector<std::string> words = {java, jar};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<std::string> files = {source};
  files.insert(files.end(), inputs.begin(), inputs.end());
  const std::filesystem::path dir = CachedFixtureDir(build_dir, files, words);
  if (std::filesystem::exists(dir / "DONE")) return dir;
  // Written into a private folder, then renamed: test processes may race.
  const std::filesystem::path tmp = dir.string() + ".tmp." + std::to_string(::getpid());
  std::filesystem::remove_all(tmp);
  const std::string log = tmp.string() + ".log";
  std::string command = "'" + java + "' -cp '" + jar + "' '" + source + "' '" + tmp.string() + "'";
  for (const std::string& arg : args) command += " '" + arg + "'";
  command += " 2>'" + log + "'";
  if (std::system(command.c_str()) != 0 || !std::filesystem::exists(tmp / produced)) {
    throw std::runtime_error("the Java program failed (see " + log + "): " + command);
  }
  std::filesystem::remove(log);
  std::ofstream(tmp / "DONE") << "ok\n";
  std::error_code ec;
  std::filesystem::rename(tmp, dir, ec);
  if (ec) std::filesystem::remove_all(tmp);  // another process won the race
  return dir;
}

}  // namespace rfs::test
