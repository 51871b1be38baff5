// Checked access to fields of decoded metadata blobs. Repository metadata is untrusted input:
// a missing or mistyped required field is DataLoss naming the blob and the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "rfs/core/str_cat.hpp"

#include "absl/status/statusor.h"

namespace rfs::snapshot::internal {

inline absl::Status FieldError(std::string_view blob, std::string_view field,
                               std::string_view expected) {
  return absl::DataLossError(
      core::StrCat(blob, ": field '", field, "' is missing or not ", expected));
}

inline const boost::json::value* Find(const boost::json::object& object, std::string_view key) {
  return object.if_contains(boost::json::string_view(key.data(), key.size()));
}

inline absl::StatusOr<const boost::json::object*> RequireObject(const boost::json::value& value,
                                                                std::string_view blob,
                                                                std::string_view field) {
  if (!value.is_object()) return FieldError(blob, field, "an object");
  return &value.get_object();
}

inline absl::StatusOr<const boost::json::object*> RequireObjectField(
    const boost::json::object& object, std::string_view key, std::string_view blob) {
  const auto* v = Find(object, key);
  if (v == nullptr || !v->is_object()) return FieldError(blob, key, "an object");
  return &v->get_object();
}

inline std::optional<std::string> OptString(const boost::json::object& object,
                                            std::string_view key) {
  const auto* v = Find(object, key);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return std::string(v->get_string().data(), v->get_string().size());
}

inline absl::StatusOr<std::string> RequireString(const boost::json::object& object,
                                                 std::string_view key, std::string_view blob) {
  auto s = OptString(object, key);
  if (!s) return FieldError(blob, key, "a string");
  return *s;
}

/// Integers may arrive as JSON numbers or (in settings) as decimal strings.
inline std::optional<int64_t> OptInt(const boost::json::object& object, std::string_view key) {
  const auto* v = Find(object, key);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64() && v->get_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
    return static_cast<int64_t>(v->get_uint64());
  }
  if (v->is_string()) {
    const auto& s = v->get_string();
    if (s.empty()) return std::nullopt;
    int64_t out = 0;
    bool negative = false;
    size_t i = 0;
    if (s[0] == '-') {
      negative = true;
      i = 1;
    }
    if (i == s.size()) return std::nullopt;
    for (; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9' || out > (INT64_MAX - 9) / 10) return std::nullopt;
      out = out * 10 + (s[i] - '0');
    }
    return negative ? -out : out;
  }
  return std::nullopt;
}

inline absl::StatusOr<int64_t> RequireInt(const boost::json::object& object, std::string_view key,
                                          std::string_view blob) {
  auto i = OptInt(object, key);
  if (!i) return FieldError(blob, key, "an integer");
  return *i;
}

inline std::string ToStdString(const boost::json::string& s) { return {s.data(), s.size()}; }

}  // namespace rfs::snapshot::internal
