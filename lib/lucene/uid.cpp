#include "rfs/core/str_cat.hpp"

#include "lucene/uid_internal.hpp"

namespace rfs::lucene {

namespace {

// Uid.java markers.
constexpr uint8_t kBase64Escape = 0xFD;
constexpr uint8_t kNumeric = 0xFE;
constexpr uint8_t kUtf8 = 0xFF;

void AppendBase64Url(std::span<const uint8_t> bytes, std::string& out) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = uint32_t{bytes[i]} << 16 | uint32_t{bytes[i + 1]} << 8 | bytes[i + 2];
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  const size_t rest = bytes.size() - i;
  if (rest == 1) {
    const uint32_t v = uint32_t{bytes[i]} << 16;
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
  } else if (rest == 2) {
    const uint32_t v = uint32_t{bytes[i]} << 16 | uint32_t{bytes[i + 1]} << 8;
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
  }
}

}  // namespace

absl::Status DecodeUid(std::span<const uint8_t> bytes, std::string& out) {
  out.clear();
  if (bytes.empty()) return absl::InvalidArgumentError("empty _id");
  switch (bytes[0]) {
    case kNumeric:
      for (size_t i = 1; i < bytes.size(); ++i) {
        const int hi = bytes[i] >> 4;
        const int lo = bytes[i] & 15;
        if (hi > 9) {
          return absl::InvalidArgumentError(
              core::StrCat("invalid numeric _id byte ", int{bytes[i]}));
        }
        out.push_back(static_cast<char>('0' + hi));
        if (lo == 15 && i + 1 == bytes.size()) break;  // odd-length end marker
        if (lo > 9) {
          return absl::InvalidArgumentError(
              core::StrCat("invalid numeric _id byte ", int{bytes[i]}));
        }
        out.push_back(static_cast<char>('0' + lo));
      }
      return absl::OkStatus();
    case kUtf8:
      out.assign(reinterpret_cast<const char*>(bytes.data()) + 1, bytes.size() - 1);
      return absl::OkStatus();
    case kBase64Escape:
      AppendBase64Url(bytes.subspan(1), out);
      return absl::OkStatus();
    default:
      AppendBase64Url(bytes, out);
      return absl::OkStatus();
  }
}

absl::Status SplitUid(std::string_view uid, std::string& type, std::string& id) {
  const size_t hash = uid.find('#');
  if (hash == std::string_view::npos) {
    return absl::InvalidArgumentError(core::StrCat("_uid without '#': ", uid.substr(0, 64)));
  }
  type.assign(uid.substr(0, hash));
  id.assign(uid.substr(hash + 1));
  return absl::OkStatus();
}

}  // namespace rfs::lucene
