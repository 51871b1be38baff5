// Jolt's paths (bazaarvoice/jolt 0.1.8, common/): references (&, $, #), the walked path, the keys
// of a write or read path and transposes (@), shared by shift and modify.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "rfs/core/str_cat.hpp"

#include "boost/json/value.hpp"
#include "jolt_internal.hpp"

namespace rfs::transform::internal::jolt {

// --- References: &(path, group), $(path, group), #path (common/reference) ---

struct Reference {
  int path = 0;
  int group = 0;
};

/// Parses "&", "&2", "&(1,2)" (or with '$'; `with_group` false for '#' references, "#2").
Reference ParseReference(std::string_view text, char token, bool with_group);
std::string RefCanonical(char token, const Reference& ref);

// --- The walked path (common/tree) ---

struct Matched {
  std::vector<std::string> keys;  // [0] the whole key, then what each '*' captured
  int hash_count = 0;             // siblings matched so far, for "[#n]"
  // A list's element (modify's ArrayMatchedElement): the list's size before modify padded it.
  std::optional<int> orig_size;
};

struct PathStep {
  const boost::json::value* tree;
  Matched* match;
};

struct Walk {
  std::vector<PathStep> steps;

  const PathStep& FromEnd(int index) const {
    if (index < 0 || static_cast<size_t>(index) >= steps.size()) {
      throw RunError(
          core::StrCat("a reference goes ", index, " levels up, above the input's root"));
    }
    return steps[steps.size() - 1 - static_cast<size_t>(index)];
  }
};

const std::string& SubKey(const Matched& m, int group);

/// Java's Integer.parseInt for a non-negative index, else nullopt.
std::optional<int64_t> NonNegativeInt(std::string_view text);
/// Java's Number.intValue(): doubles truncate toward zero and saturate, longs keep their low bits.
int32_t JavaIntValue(const boost::json::value& v);

// --- Keys of a write or read path (EvaluatablePathElement) ---

struct Transpose;

// "&1-&(2,1)" and the like (AmpPathElement): literal text and references.
using AmpToken = std::variant<std::string, Reference>;

// How a write path steps into its container (traversr/traversal).
enum class StepKind { kMap, kArray, kAppend };

struct PathKey {
  enum class Kind {
    kLiteral,
    kAmp,
    kAppend,
    kIndex,
    kIndexRef,
    kIndexHash,
    kIndexTranspose,
    kTranspose
  };
  Kind kind = Kind::kLiteral;
  std::string text;       // a literal, or an explicit index
  std::string canonical;  // for a transpose key's canonical form
  std::vector<AmpToken> amp;
  Reference ref;
  std::shared_ptr<const Transpose> transpose;

  StepKind Step() const {
    switch (kind) {
      case Kind::kAppend:
        return StepKind::kAppend;
      case Kind::kIndex:
      case Kind::kIndexRef:
      case Kind::kIndexHash:
      case Kind::kIndexTranspose:
        return StepKind::kArray;
      default:
        return StepKind::kMap;
    }
  }
  // nullopt: this write (or read) does not happen (ArrayPathElement.evaluate's null).
  std::optional<std::string> Evaluate(const Walk& walk) const;
};

// "@(2,a.b)" / "@a.b" / "@1" (TransposePathElement): a value read from the input, `up` levels
// above, along `path`.
struct Transpose {
  int up = 0;
  std::optional<std::vector<PathKey>> path;
  std::string canonical;

  // The value found (it may be null), or nullopt when the path leads nowhere.
  std::optional<const boost::json::value*> Read(const Walk& walk) const;
  // As a key: numbers (their int value) and booleans as text, strings as they are.
  std::optional<std::string> Evaluate(const Walk& walk) const {
    const auto found = Read(walk);
    if (!found) return std::nullopt;
    const boost::json::value& v = **found;
    if (v.is_number()) return std::to_string(JavaIntValue(v));
    if (v.is_bool()) return std::string(v.get_bool() ? "true" : "false");
    if (v.is_string()) return std::string(v.get_string());
    return std::nullopt;
  }
};

std::vector<AmpToken> ParseAmpTokens(std::string_view key, std::string* canonical);
std::string EvaluateAmp(const std::vector<AmpToken>& tokens, const Walk& walk);
std::shared_ptr<const Transpose> ParseTranspose(std::string_view key);
/// PathElementBuilder.parseDotNotationRHS: "a.&1[&2].@(1,id)" -> its keys.
std::vector<PathKey> ParseDotPath(std::string_view dot_path);

/// StringTools.countMatches.
size_t Count(std::string_view text, char c);
/// SpecStringParser.removeEscapedValues / removeEscapeChars.
std::string RemoveEscapedValues(std::string_view key);
std::string RemoveEscapeChars(std::string_view key);
/// "@..." or "..@(...": a transpose key (PathElementBuilder); any other '@' is refused.
bool IsTransposeKey(const std::string& inspect, const std::string& key);

}  // namespace rfs::transform::internal::jolt
