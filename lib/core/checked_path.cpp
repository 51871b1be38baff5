#include "rfs/core/checked_path.hpp"

#include "rfs/core/str_cat.hpp"

namespace rfs::core {

std::optional<std::string> PathSegmentProblem(std::string_view segment) {
  if (segment.empty()) return "an empty name";
  if (segment == "." || segment == "..") return StrCat("'", segment, "'");
  for (unsigned char c : segment) {
    if (c == '/' || c == '\\') return "a path separator";
    if (c < 0x20 || c == 0x7f) return "a control character";
  }
  return std::nullopt;
}

absl::StatusOr<std::string> CheckedPath(std::initializer_list<std::string_view> parts,
                                        std::string_view source) {
  std::string path;
  for (std::string_view part : parts) {
    if (!path.empty()) path += '/';
    path += part;
  }
  std::string_view rest = path;
  while (true) {
    const size_t slash = rest.find('/');
    const std::string_view segment = rest.substr(0, slash);
    if (auto problem = PathSegmentProblem(segment)) {
      // The name is untrusted: show it escaped and cut.
      std::string shown;
      for (unsigned char c : path.substr(0, 200)) {
        if (c < 0x20 || c == 0x7f) {
          shown += StrCat("\\x", "0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15]);
        } else {
          shown += static_cast<char>(c);
        }
      }
      return absl::InvalidArgumentError(StrCat("refusing the path '", shown, "' built from ",
                                               source, ": a segment is ", *problem));
    }
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  return path;
}

}  // namespace rfs::core
