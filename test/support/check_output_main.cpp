// rfs-check-output: compares what DocumentsFromSnapshotMigration wrote into an --output-dir
// (the embedded default target) with the fixture generator's expected-docs.ndjson: every
// expected document present once per (index, id) with an equal `_source` (compared as JSON
// values, since bulk files carry each source on one line) and the same routing, and nothing else.
//
//   rfs-check-output --expected-docs FILE --output-dir DIR
//
// Exit 0 when everything matches, 1 with the first differences listed otherwise, 64 on usage.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

struct Doc {
  json::value source;
  std::optional<std::string> routing;
};

using Key = std::pair<std::string, std::string>;  // index, id

std::optional<std::string> StringAt(const json::object& object, std::string_view key) {
  if (const auto* value = object.if_contains(key); value && value->is_string()) {
    return std::string(value->as_string());
  }
  return std::nullopt;
}

bool ReadExpected(const std::string& path, std::map<Key, Doc>& docs) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "rfs-check-output: cannot read " << path << "\n";
    return false;
  }
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    boost::system::error_code error;
    json::value value = json::parse(line, error);
    if (error || !value.is_object()) {
      std::cerr << "rfs-check-output: " << path << " line " << number << " is not a document\n";
      return false;
    }
    const auto& object = value.as_object();
    auto index = StringAt(object, "_index");
    auto id = StringAt(object, "_id");
    if (!index || !id || !object.contains("_source")) {
      std::cerr << "rfs-check-output: " << path << " line " << number << " lacks _index/_id\n";
      return false;
    }
    docs[{*index, *id}] = Doc{object.at("_source"), StringAt(object, "_routing")};
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string expected_path;
  std::string output_dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--expected-docs") {
      expected_path = argv[i + 1];
    } else if (flag == "--output-dir") {
      output_dir = argv[i + 1];
    }
  }
  if (expected_path.empty() || output_dir.empty()) {
    std::cerr << "usage: rfs-check-output --expected-docs FILE --output-dir DIR\n";
    return 64;
  }
  std::map<Key, Doc> expected;
  if (!ReadExpected(expected_path, expected)) return 1;

  std::map<Key, Doc> written;
  uint64_t lines = 0;
  uint64_t rewrites = 0;
  std::vector<std::string> problems;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(output_dir, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (it->is_directory() && it->path().filename() == ".rfs") {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || it->path().extension() != ".ndjson") continue;
    std::ifstream in(it->path());
    std::string action_line;
    std::string source_line;
    while (std::getline(in, action_line)) {
      if (!std::getline(in, source_line)) {
        problems.push_back(it->path().string() + ": action without a source line");
        break;
      }
      ++lines;
      boost::system::error_code parse_error;
      json::value action = json::parse(action_line, parse_error);
      json::value source = json::parse(source_line, parse_error);
      if (parse_error || !action.is_object() || !action.as_object().contains("index")) {
        problems.push_back(it->path().string() + ": malformed bulk pair");
        continue;
      }
      const auto& meta = action.as_object().at("index").as_object();
      Key key{StringAt(meta, "_index").value_or(""), StringAt(meta, "_id").value_or("")};
      auto routing = StringAt(meta, "routing");
      if (!routing) routing = StringAt(meta, "_routing");
      rewrites += written.count(key);
      written[key] = Doc{std::move(source), routing};
    }
  }
  if (error) {
    std::cerr << "rfs-check-output: cannot list " << output_dir << ": " << error.message() << "\n";
    return 1;
  }
  uint64_t matched = 0;
  for (const auto& [key, doc] : expected) {
    auto it = written.find(key);
    if (it == written.end()) {
      problems.push_back("missing " + key.first + "/" + key.second);
    } else if (it->second.source != doc.source) {
      problems.push_back("different _source for " + key.first + "/" + key.second);
    } else if (it->second.routing != doc.routing) {
      problems.push_back("different routing for " + key.first + "/" + key.second);
    } else {
      ++matched;
    }
  }
  for (const auto& [key, doc] : written) {
    if (!expected.count(key)) problems.push_back("unexpected " + key.first + "/" + key.second);
  }
  std::printf(
      "rfs-check-output: %llu expected documents, %llu written (%llu bulk lines, %llu "
      "rewritten by resumed work), %llu match\n",
      static_cast<unsigned long long>(expected.size()),
      static_cast<unsigned long long>(written.size()), static_cast<unsigned long long>(lines),
      static_cast<unsigned long long>(rewrites), static_cast<unsigned long long>(matched));
  for (size_t i = 0; i < problems.size() && i < 20; ++i) std::printf("  %s\n", problems[i].c_str());
  if (!problems.empty()) {
    std::printf("rfs-check-output: %zu problems\n", problems.size());
    return 1;
  }
  return 0;
}
