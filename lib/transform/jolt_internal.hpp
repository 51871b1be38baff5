// Jolt's operations (bazaarvoice/jolt 0.1.8, the version the Java tool's
// JsonJoltTransformerProvider runs): shift, default, remove and sort on Boost.JSON values. See
// docs/transforms.md, "Jolt".
#pragma once

#include <memory>
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
  /// What shift may copy into its output: a spec can copy one input value to many places.
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
/// is wrong with it; operations rfs does not run (cardinality, modify-*, Java class names) are
/// refused with the reason.
absl::StatusOr<std::unique_ptr<Operation>> MakeOperation(const boost::json::value& entry,
                                                         const Bounds& bounds);

/// The alternatives of an "a|b" key, as Java's String.split("\\|") gives them (trailing empty
/// strings dropped).
std::vector<std::string> SplitOr(std::string_view key);

// The operations, for MakeOperation. Each throws SpecError for a spec Jolt refuses.
std::unique_ptr<Operation> MakeShift(const boost::json::value& spec, const Bounds& bounds);
std::unique_ptr<Operation> MakeDefault(const boost::json::value& spec);
std::unique_ptr<Operation> MakeRemove(const boost::json::value& spec);
std::unique_ptr<Operation> MakeSort();

}  // namespace rfs::transform::internal::jolt
