#include "rfs/coordination/work_coordinator.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>

#include "rfs/core/base64.hpp"
#include "rfs/core/json_string.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/aws_sigv4.hpp"

namespace rfs::coordination {
namespace {

using core::StrCat;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

constexpr std::string_view kSeparator = "__";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Splits the trailing run of decimal digits off `text`.
std::string_view TakeTrailingDigits(std::string_view& text) {
  size_t start = text.size();
  while (start > 0 && IsDigit(text[start - 1])) --start;
  std::string_view digits = text.substr(start);
  text.remove_suffix(digits.size());
  return digits;
}

bool TakeSeparatorSuffix(std::string_view& text) {
  if (!text.ends_with(kSeparator)) return false;
  text.remove_suffix(kSeparator.size());
  return true;
}

template <typename T>
bool ParseDecimal(std::string_view digits, T& out) {
  if (digits.empty()) return false;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  return ec == std::errc() && end == digits.data() + digits.size();
}

}  // namespace

std::string WorkItemId::ToString() const {
  std::string id =
      StrCat(core::Base64UrlEncode(index_name), kSeparator, shard, kSeparator, starting_cursor);
  if (ending_cursor) id += StrCat("-", *ending_cursor);
  return id;
}

absl::StatusOr<WorkItemId> WorkItemId::Parse(std::string_view id) {
  auto invalid = [id](std::string_view why) {
    return absl::InvalidArgumentError(StrCat("work item id '", id, "': ", why));
  };
  // Parse from the right: the cursor and the shard are digits, which never contain '_', while
  // the base64url index name may hold '_' (even "__"), so only this direction is unambiguous.
  std::string_view rest = id;
  std::string_view cursor_digits = TakeTrailingDigits(rest);
  std::optional<std::string_view> end_digits;
  if (!rest.empty() && rest.back() == '-') {  // a part: <start>-<end>
    rest.remove_suffix(1);
    end_digits = cursor_digits;
    cursor_digits = TakeTrailingDigits(rest);
  }
  if (!TakeSeparatorSuffix(rest)) return invalid("expected <index>__<shard>__<cursor>");
  const std::string_view shard_digits = TakeTrailingDigits(rest);
  if (!TakeSeparatorSuffix(rest)) return invalid("expected <index>__<shard>__<cursor>");
  WorkItemId out;
  if (!ParseDecimal(cursor_digits, out.starting_cursor)) return invalid("bad cursor");
  if (end_digits) {
    uint64_t end = 0;
    if (!ParseDecimal(*end_digits, end) || end <= out.starting_cursor) {
      return invalid("bad ending cursor (it must follow the starting cursor)");
    }
    out.ending_cursor = end;
  }
  if (!ParseDecimal(shard_digits, out.shard)) return invalid("bad shard number");
  if (rest.empty()) return invalid("empty index name");
  for (char c : rest) {
    const bool url_safe =
        IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
    if (!url_safe) return invalid("index name is not unpadded base64url");
  }
  auto bytes = core::Base64Decode(rest);
  if (!bytes.ok()) {
    const absl::string_view why = bytes.status().message();
    return invalid(std::string_view(why.data(), why.size()));
  }
  out.index_name.assign(bytes->begin(), bytes->end());
  // Only the canonical spelling is an id: no leading zeros, no non-zero trailing base64 bits.
  if (out.ToString() != id) return invalid("not in canonical form");
  return out;
}

std::optional<WorkItemId> WorkItemId::ParseForJson(std::string_view id) {
  auto parsed = Parse(id);
  if (!parsed.ok() || !core::IsValidUtf8(parsed->index_name)) return std::nullopt;
  return *std::move(parsed);
}

absl::Status ValidateWorkItemId(std::string_view id) {
  if (id.empty() || id.size() > kMaxWorkItemIdLength) {
    return absl::InvalidArgumentError(
        StrCat("work item id must be 1 to ", kMaxWorkItemIdLength, " bytes, got ", id.size()));
  }
  for (char c : id) {
    if (c == ',' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError(
          StrCat("work item id '", id, "' holds a ',' or a control character"));
    }
  }
  return absl::OkStatus();
}

Duration LeaseDurationFor(Duration initial_lease, int exponent) {
  if (initial_lease <= Duration::zero()) return Duration::zero();
  const int e = std::clamp(exponent, 0, kMaxLeaseExponent);
  // Compare before multiplying so that a huge initial lease cannot overflow.
  if (initial_lease > kMaxLeaseDuration / (int64_t{1} << e)) return kMaxLeaseDuration;
  return initial_lease * (int64_t{1} << e);
}

Duration EarlyCheckpointDelay(Duration lease) {
  // RFS design "early checkpoint": a quarter of the lease, but no more than 4.5 minutes, is left
  // for writing the successor and completing before the lease runs out.
  constexpr Duration kCheckpointMargin = std::chrono::seconds(270);
  return std::max<Duration>(lease * 3 / 4, lease - kCheckpointMargin);
}

int SuccessorLeaseExponent(int lease_exponent, Duration setup_time, Duration lease) {
  // Thresholds of the RFS design (RfsMigrateDocuments): setup is the share of a lease spent before
  // the first document; 2.5% and 10% bound the share considered "about right".
  const int e = std::clamp(lease_exponent, 0, kMaxLeaseExponent);
  if (lease <= Duration::zero()) return e;
  const double share = static_cast<double>(setup_time.count()) / lease.count();
  if (share < 0.025) return std::max(e - 1, 0);
  if (share > 0.10) return std::min(e + 1, kMaxLeaseExponent);
  return e;
}

absl::Status CheckClockSkew(TimePoint worker_now, TimePoint store_now, Duration tolerance) {
  const Duration skew = store_now - worker_now;
  if (skew > tolerance || -skew > tolerance) {
    return absl::FailedPreconditionError(
        StrCat("clock guard: this worker's clock is ", duration_cast<milliseconds>(skew).count(),
               " ms behind the coordination store's (tolerance ",
               duration_cast<milliseconds>(tolerance).count(),
               " ms); fix the host's time synchronisation before taking work"));
  }
  return absl::OkStatus();
}

absl::Status RunOneTimeSetup(IWorkCoordinator& coordinator, core::IClock& clock,
                             std::string_view item_id,
                             const std::function<absl::Status(const Lease&)>& setup,
                             const OneTimeSetupOptions& options) {
  Duration backoff = std::max<Duration>(options.initial_backoff, milliseconds(1));
  while (true) {
    RFS_ASSIGN_OR_RETURN(AcquireOutcome outcome,
                         coordinator.AcquireWorkItem(item_id, options.initial_lease));
    if (std::holds_alternative<AlreadyCompleted>(outcome)) return absl::OkStatus();
    if (auto* acquired = std::get_if<Acquired>(&outcome)) {
      absl::Status status = setup(acquired->lease);
      if (!status.ok()) {
        // Let another worker retry at once instead of waiting out the lease; if the release
        // fails too, the lease simply expires.
        coordinator.ReleaseWorkItem(acquired->lease).IgnoreError();
        return status;
      }
      return coordinator.CompleteWorkItem(acquired->lease);
    }
    if (auto* elsewhere = std::get_if<AllLeasedElsewhere>(&outcome)) {
      // Poll with backoff, but wake no later than the holder's expiry so that a dead holder is
      // replaced promptly.
      clock.SleepFor(
          std::min(backoff, std::max<Duration>(elsewhere->retry_after, milliseconds(1))));
      backoff = std::min(backoff * 2, std::max(options.max_backoff, options.initial_backoff));
      continue;
    }
    return absl::InternalError(
        StrCat("AcquireWorkItem('", item_id, "') reported no available work"));
  }
}

absl::Status RecordCompletedItem(IWorkCoordinator& coordinator, core::IClock& clock,
                                 std::string_view id, Duration lease, uint64_t value) {
  for (int attempt = 0;; ++attempt) {
    // Fixed: a writer killed before completing it must not make the next writer's lease longer.
    auto outcome = coordinator.AcquireFixedLease(id, lease);
    if (!outcome.ok()) return outcome.status();
    if (const auto* acquired = std::get_if<Acquired>(&*outcome)) {
      auto renewed = coordinator.RenewLease(acquired->lease, ItemProgress(value, 0, 0));
      if (!renewed.ok()) return renewed.status();
      return coordinator.CompleteWorkItem(*renewed);
    }
    if (std::holds_alternative<AlreadyCompleted>(*outcome)) return absl::OkStatus();
    // Another worker holds it (recording it, or giving it back): look again shortly.
    if (attempt >= 600) {
      return absl::UnavailableError(
          core::StrCat("work item ", id, " stays leased by another worker"));
    }
    clock.SleepFor(std::chrono::milliseconds(100));
  }
}

uint64_t SettingsHash(std::string_view text) {
  return std::stoull(net::Sha256Hex(text).substr(0, 13), nullptr, 16);
}

absl::Status RecordSetupDescription(IWorkCoordinator& coordinator, core::IClock& clock,
                                    uint64_t hash, std::string_view description, Duration lease) {
  // The text first, completed, so that the record naming it never names an item to work on.
  const std::string text_id =
      StrCat(kSetupDescriptionPrefix,
             core::Base64UrlEncode(description.substr(0, kMaxSetupDescriptionBytes)));
  RFS_RETURN_IF_ERROR(RecordCompletedItem(coordinator, clock, text_id, lease));
  const std::string record_id = StrCat(kSetupDescribedPrefix, hash);
  for (int attempt = 0;; ++attempt) {
    RFS_ASSIGN_OR_RETURN(auto outcome, coordinator.AcquireFixedLease(record_id, lease));
    if (std::holds_alternative<AlreadyCompleted>(outcome)) return absl::OkStatus();
    if (const auto* acquired = std::get_if<Acquired>(&outcome)) {
      // Its successor exists, complete: the hand-on only records it and completes this one.
      const std::vector<std::string> successors{text_id};
      absl::Status recorded =
          coordinator.CreateSuccessorsAndComplete(acquired->lease, successors, 0);
      return IsLeaseLost(recorded) ? absl::OkStatus() : recorded;
    }
    // Another worker holds it (recording it, or giving it back): look again shortly.
    if (attempt >= 600) {
      return absl::UnavailableError(
          StrCat("work item ", record_id, " stays leased by another worker"));
    }
    clock.SleepFor(std::chrono::milliseconds(100));
  }
}

absl::StatusOr<std::optional<std::string>> ReadSetupDescription(IWorkCoordinator& coordinator,
                                                                uint64_t hash) {
  RFS_ASSIGN_OR_RETURN(auto record, coordinator.GetWorkItem(StrCat(kSetupDescribedPrefix, hash)));
  if (!record || record->successor_ids.size() != 1 ||
      !record->successor_ids[0].starts_with(kSetupDescriptionPrefix)) {
    return std::nullopt;
  }
  auto text = core::Base64Decode(
      std::string_view(record->successor_ids[0]).substr(kSetupDescriptionPrefix.size()));
  if (!text.ok()) return std::nullopt;
  return std::string(text->begin(), text->end());
}

}  // namespace rfs::coordination
