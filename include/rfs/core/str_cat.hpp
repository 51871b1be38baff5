// StrCat for error messages: concatenates strings, string views, characters and
// numbers.
//
// Debian's Abseil is built with its own absl::string_view (not
// std::string_view), so absl::StrCat does not accept std::string_view; rfs code
// uses std::string_view throughout and builds messages with this instead.
#pragma once

#include <concepts>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/string_view.h"

namespace rfs::core {

namespace detail {

inline void AppendPiece(std::string& out, std::string_view piece) { out.append(piece); }
inline void AppendPiece(std::string& out, absl::string_view piece) {
  out.append(piece.data(), piece.size());
}
inline void AppendPiece(std::string& out, const char* piece) { out.append(piece); }
inline void AppendPiece(std::string& out, const std::string& piece) { out.append(piece); }
inline void AppendPiece(std::string& out, char piece) { out.push_back(piece); }
template <typename T>
requires(std::integral<T> && !std::same_as<T, char> &&
         !std::same_as<T, bool>) void AppendPiece(std::string& out, T piece) {
  out.append(std::to_string(piece));
}
// Other string-view types (e.g. boost::json keys) convert through std::string_view.
template <typename T>
requires(std::is_convertible_v<const T&, std::string_view> && !std::is_pointer_v<T> &&
         !std::is_array_v<T>) void AppendPiece(std::string& out, const T& piece) {
  out.append(static_cast<std::string_view>(piece));
}
inline void AppendPiece(std::string& out, bool piece) { out.append(piece ? "true" : "false"); }
inline void AppendPiece(std::string& out, double piece) { out.append(std::to_string(piece)); }

}  // namespace detail

template <typename... Pieces>
std::string StrCat(const Pieces&... pieces) {
  std::string out;
  (detail::AppendPiece(out, pieces), ...);
  return out;
}

/// std::string_view -> absl::string_view (the two are distinct types in
/// Debian's Abseil).
inline absl::string_view ToAbsl(std::string_view s) { return {s.data(), s.size()}; }

}  // namespace rfs::core
