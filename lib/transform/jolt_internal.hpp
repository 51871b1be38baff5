// Jolt's operations (bazaarvoice/jolt 0.1.8, the version the Java tool's
// JsonJoltTransformerProvider runs) on Boost.JSON values, and the helpers they share. See
// docs/transforms.md, "Jolt".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "boost/json/value.hpp"

namespace rfs::transform::internal::jolt {

/// One operation of a Jolt chain.
class Operation {
 public:
  virtual ~Operation() = default;
  /// Applies the operation. Errors are those the Java library throws at run time (a reference
  /// above the input's root, a top-level array a default spec cannot take) and rfs's own bound.
  virtual absl::StatusOr<boost::json::value> Apply(boost::json::value input) = 0;
};

/// Bounds on one application.
struct Bounds {
  /// What shift may copy into its output and modify may add (values, list padding): a spec can
  /// copy one input value to many places.
  size_t output_bytes = size_t{128} << 20;
};

/// A spec Jolt would refuse (its SpecException), thrown while an operation is built.
struct SpecError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// What fails one application, thrown inside it and returned as a Status.
struct RunError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// An application over Bounds: returned as ResourceExhausted, as the other transforms' budgets.
struct BoundError : RunError {
  using RunError::RunError;
};

/// Builds one chain entry, a `{"operation": ..., "spec": ...}` object. InvalidArgument names what
/// is wrong with it; an operation rfs does not know (a Java class other than Jolt's own) is
/// refused with the reason.
absl::StatusOr<std::unique_ptr<Operation>> MakeOperation(const boost::json::value& entry,
                                                         const Bounds& bounds);

/// `spec` when it is a map, the shape every spec-driven operation takes; SpecError otherwise.
const boost::json::value& MapSpec(std::string_view operation, const boost::json::value& spec);

/// The alternatives of an "a|b" key, as Java's String.split("\\|") gives them (trailing empty
/// strings dropped).
std::vector<std::string> SplitOr(std::string_view key);

/// A key with '*'s, matched as Jolt's StarAll/Single/Double/RegexPathElement match it: a lone '*'
/// takes any key; otherwise each '*' takes one character or more, as few as the rest allows
/// (StarRegexPathElement's reluctant "(.+?)", whose '.' takes no line terminator). Shift and
/// remove read a key with exactly two '*'s as StarDoublePathElement, which with nothing between
/// them takes exactly one character for the first and three or more in all; cardinality reads
/// every key with two or more as a regex.
class StarPattern {
 public:
  /// Throws SpecError for keys Java's Jolt cannot build ("**", "a**" under StarDouble's rules).
  StarPattern(std::string_view key, bool star_double_rules);
  bool lone() const { return lone_; }
  /// What each '*' captured (nothing for a lone '*'), or nullopt when `text` does not match.
  std::optional<std::vector<std::string>> Match(std::string_view text) const;
  bool Matches(std::string_view text) const { return Match(text).has_value(); }

 private:
  bool MatchFrom(std::string_view text, size_t at, size_t piece, std::vector<std::string>& captures,
                 std::vector<bool>& failed) const;

  std::vector<std::string> pieces_;  // the text around the '*'s: "a*b*" -> "a", "b", ""
  bool lone_ = false;
  bool regex_ = false;         // captures take no line terminator
  bool empty_middle_ = false;  // StarDouble with nothing between its '*'s
};

/// The end of the UTF-8 character that starts at `at` (keys and strings are valid UTF-8).
size_t NextUtf8(std::string_view text, size_t at);

/// Java's Integer.parseInt and Long.parseLong: an optional sign and decimal digits in the type's
/// range, else nullopt.
std::optional<int32_t> JavaParseInt(std::string_view text);
std::optional<int64_t> JavaParseLong(std::string_view text);

/// The largest array index a spec may make Jolt write or pad a list to: a bigger one (from the
/// input, or a default spec) would allocate the list whole.
inline constexpr int64_t kMaxArrayIndex = 1 << 20;

/// A string as Java holds it (UTF-16 code units): Java orders and counts strings by these.
std::u16string ToUtf16(std::string_view s);

/// About what a value takes in memory, for the bounds on what an operation makes.
size_t ApproxBytes(const boost::json::value& v);

/// ComputedKeysComparator: wildcard keys by kind (`order`), then the longest canonical form (in
/// UTF-16 units), then String.compareTo.
bool ComputedKeyBefore(int a_order, std::string_view a_canonical, int b_order,
                       std::string_view b_canonical);

/// A scalar's text as Jolt matches it against keys (Java's toString); nullopt for null and
/// containers.
std::optional<std::string> ScalarKeyText(const boost::json::value& v);

// The operations, for MakeOperation. Each throws SpecError for a spec Jolt refuses.
std::unique_ptr<Operation> MakeShift(const boost::json::value& spec, const Bounds& bounds);
std::unique_ptr<Operation> MakeDefault(const boost::json::value& spec);
std::unique_ptr<Operation> MakeRemove(const boost::json::value& spec);
std::unique_ptr<Operation> MakeSort();
std::unique_ptr<Operation> MakeCardinality(const boost::json::value& spec);
/// `operation`: modify-overwrite-beta, modify-default-beta or modify-define-beta.
std::unique_ptr<Operation> MakeModify(const boost::json::value& spec, std::string_view operation,
                                      const Bounds& bounds);

}  // namespace rfs::transform::internal::jolt
