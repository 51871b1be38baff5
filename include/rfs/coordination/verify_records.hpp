// The records and spaces of RfsWorker's full verification (--verify-all), so that every reader of
// the store (the workers, the console's status) tells which round runs and what it found.
//
// In the workers' record space:
//   verify_round__N            round N was begun
//   verify_round_done__N       round N was reported
//   phase_5_verify_round       the round of a full run's phase 5 (its value)
//   verify_round_newer__N__<index>__K   an already-newer count of one worker (--preserve-version)
//   verify_index__N__<index>   round N's result for one index, carried (as the FAILED record's
//                              reason is) by the record's creator: VerifyIndexRow's text
// Round N's work items live in a space of their own: the table or index "verify_items_N", or
// the console's space "verify-N".
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rfs/core/base64.hpp"
#include "rfs/core/str_cat.hpp"

namespace rfs::coordination {

inline constexpr std::string_view kVerifyRoundPrefix = "verify_round__";
inline constexpr std::string_view kVerifyRoundDonePrefix = "verify_round_done__";
inline constexpr std::string_view kVerifyRunRoundRecord = "phase_5_verify_round";
inline constexpr std::string_view kVerifyRoundNewerPrefix = "verify_round_newer__";
inline constexpr std::string_view kVerifyIndexPrefix = "verify_index__";
/// The console's item space of a round: "verify-N".
inline constexpr std::string_view kVerifyConsoleSpacePrefix = "verify-";

inline std::string VerifyItemsTable(int round) { return core::StrCat("verify_items_", round); }
inline std::string VerifyConsoleSpace(int round) {
  return core::StrCat(kVerifyConsoleSpacePrefix, round);
}
/// The round of a console space "verify-N" (N from 1 to 999999999); nullopt for another name.
inline std::optional<int> VerifyConsoleSpaceRound(std::string_view space) {
  if (!space.starts_with(kVerifyConsoleSpacePrefix)) return std::nullopt;
  const std::string_view digits = space.substr(kVerifyConsoleSpacePrefix.size());
  if (digits.empty() || digits.size() > 9 || digits.front() == '0') return std::nullopt;
  int round = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), round);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return round;
}

/// One index's result of a round, as kept in its verify_index__ record.
struct VerifyIndexRow {
  int round = 0;
  std::string index;
  uint64_t expected = 0, equal = 0, missing = 0, different = 0, not_comparable = 0,
           already_newer = 0, extra = 0, target_count = 0;
  /// e.g. "not on the target"; at most ~100 characters (the record's creator holds 256).
  std::string note;

  std::string RecordId() const {
    return core::StrCat(kVerifyIndexPrefix, round, "__", core::Base64UrlEncode(index));
  }
  /// "VERIFY expected=E equal=Q missing=M different=D not_comparable=C already_newer=N extra=X
  /// target=T[ note=...]"
  std::string ToText() const {
    std::string text =
        core::StrCat("VERIFY expected=", expected, " equal=", equal, " missing=", missing,
                     " different=", different, " not_comparable=", not_comparable,
                     " already_newer=", already_newer, " extra=", extra, " target=", target_count);
    if (!note.empty()) text += core::StrCat(" note=", note.substr(0, 100));
    return text;
  }
  /// The row of record `id` with creator `text`; nullopt for another record or text.
  static std::optional<VerifyIndexRow> FromRecord(std::string_view id, std::string_view text) {
    if (!id.starts_with(kVerifyIndexPrefix) || !text.starts_with("VERIFY ")) return std::nullopt;
    VerifyIndexRow row;
    std::string_view rest = id.substr(kVerifyIndexPrefix.size());
    const size_t separator = rest.find("__");
    if (separator == std::string_view::npos) return std::nullopt;
    if (std::from_chars(rest.data(), rest.data() + separator, row.round).ec != std::errc()) {
      return std::nullopt;
    }
    auto decoded = core::Base64Decode(rest.substr(separator + 2));
    if (!decoded.ok()) return std::nullopt;
    row.index.assign(decoded->begin(), decoded->end());
    text.remove_prefix(7);
    if (const size_t note = text.find(" note="); note != std::string_view::npos) {
      row.note = std::string(text.substr(note + 6));
      text = text.substr(0, note);
    }
    while (!text.empty()) {
      const size_t end = text.find(' ');
      const std::string_view field = text.substr(0, end);
      text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
      const size_t equals = field.find('=');
      if (equals == std::string_view::npos) return std::nullopt;
      const std::string_view name = field.substr(0, equals);
      const std::string_view digits = field.substr(equals + 1);
      uint64_t value = 0;
      if (std::from_chars(digits.data(), digits.data() + digits.size(), value).ec != std::errc()) {
        return std::nullopt;
      }
      if (name == "expected") row.expected = value;
      if (name == "equal") row.equal = value;
      if (name == "missing") row.missing = value;
      if (name == "different") row.different = value;
      if (name == "not_comparable") row.not_comparable = value;
      if (name == "already_newer") row.already_newer = value;
      if (name == "extra") row.extra = value;
      if (name == "target") row.target_count = value;
    }
    return row;
  }
};

}  // namespace rfs::coordination
