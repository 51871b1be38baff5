// The provider factories LoadTransformers dispatches to, and helpers they share.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "rfs/transform/json_transformer.hpp"

#include "absl/status/statusor.h"
#include "boost/json/value.hpp"

namespace rfs::transform::internal {

absl::StatusOr<std::unique_ptr<IJsonTransformer>> MakeTypeMappingSanitization(
    const boost::json::value& config, const TransformerContext& context);
absl::StatusOr<std::unique_ptr<IJsonTransformer>> MakeJqTransformer(
    const boost::json::value& config, const TransformLimits& limits);
absl::StatusOr<std::unique_ptr<IJsonPredicate>> MakeJqPredicate(const boost::json::value& config,
                                                                const TransformLimits& limits);
absl::StatusOr<std::unique_ptr<IJsonTransformer>> MakeJsTransformer(
    const boost::json::value& config, const TransformLimits& limits);
absl::StatusOr<std::unique_ptr<IJsonPredicate>> MakeJsPredicate(const boost::json::value& config,
                                                                const TransformLimits& limits);
absl::StatusOr<std::unique_ptr<IJsonTransformer>> MakePythonTransformer(
    const boost::json::value& config, const TransformLimits& limits);
/// JMESPath (Java's JsonJMESPath*Provider) on the jmespath Python package, in the interpreter
/// Python transforms use.
absl::StatusOr<std::unique_ptr<IJsonTransformer>> MakeJmesPathTransformer(
    const boost::json::value& config, const TransformLimits& limits);
absl::StatusOr<std::unique_ptr<IJsonPredicate>> MakeJmesPathPredicate(
    const boost::json::value& config, const TransformLimits& limits);
/// Jolt's operations (Java's JsonJoltTransformerProvider), run natively.
absl::StatusOr<std::unique_ptr<IJsonTransformer>> MakeJoltTransformer(
    const boost::json::value& config, const TransformLimits& limits);

/// A string-valued key of a provider's config object, or nullopt when absent. InvalidArgument when
/// present with another type.
absl::StatusOr<std::optional<std::string>> OptionalString(const boost::json::object& config,
                                                          std::string_view provider,
                                                          std::string_view key);

/// A program given inline (`inline_key`) or in a file (`file_key`): exactly one of them.
absl::StatusOr<std::string> ScriptFromConfig(const boost::json::value& config,
                                             std::string_view provider, std::string_view inline_key,
                                             std::string_view file_key);

/// The `bindingsObject` of a script provider's config as JSON text: an object, or a string of
/// one; "{}" when absent or null.
absl::StatusOr<std::string> BindingsFromConfig(const boost::json::object& config);

/// Integers a double cannot hold exactly (|v| > 2^53) would change in jq 1.6 and JavaScript,
/// whose numbers are doubles: the path of the first one, or nullopt.
std::optional<std::string> FindInexactInteger(const boost::json::value& value);

}  // namespace rfs::transform::internal
