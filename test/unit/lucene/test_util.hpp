// Helpers shared by the rfs::lucene tests: corpus location, Java
// .properties parsing, field formatting in the fixture manifests' notation.
#pragma once

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "rfs/lucene/stored_fields.hpp"

namespace rfs::lucene::testing {

inline std::filesystem::path CorpusDir() {
  return std::filesystem::path(RFS_SOURCE_DIR) / ".." / "shared" / "corpus";
}

/// True when the shared corpus is present; otherwise prints the skip marker.
inline bool HaveCorpus() {
  if (std::filesystem::exists(CorpusDir() / "lucene-10.5-fixture-indexes")) {
    return true;
  }
  std::printf("RFS-SKIPPED: shared corpus not found at %s\n", CorpusDir().string().c_str());
  return false;
}

/// key=value lines; no escapes are used by the fixture manifests.
inline std::map<std::string, std::string> ReadProperties(const std::filesystem::path& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

/// Java's Double.toString for the simple values the manifests use.
inline std::string JavaDouble(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e7) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.1f", v);
    return buf;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  // Shortest round-trip representation.
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

/// "name:type:value" as in the fixture manifests.
inline std::string FormatField(const std::string& name, const StoredField& f) {
  static const char* kHex = "0123456789abcdef";
  switch (f.type) {
    case StoredFieldType::kString:
      return name + ":string:" + std::string(f.string_value());
    case StoredFieldType::kBytes: {
      std::string hex;
      for (uint8_t b : f.bytes) {
        hex.push_back(kHex[b >> 4]);
        hex.push_back(kHex[b & 15]);
      }
      return name + ":binary:" + hex;
    }
    case StoredFieldType::kInt:
      return name + ":int:" + std::to_string(f.long_value);
    case StoredFieldType::kLong:
      return name + ":long:" + std::to_string(f.long_value);
    case StoredFieldType::kFloat:
      return name + ":float:" + JavaDouble(f.double_value);
    case StoredFieldType::kDouble:
      return name + ":double:" + JavaDouble(f.double_value);
  }
  return "";
}

}  // namespace rfs::lucene::testing
