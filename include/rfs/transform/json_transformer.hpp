// User transforms in the Java tool's configuration format: a JSON list of single-key objects
// `[{"<ProviderName>": <config>}, ...]`, applied in order (or a bare provider name, with no
// config), given inline, base64-encoded or as a file (`--doc-transformer-config[-base64|-file]`,
// `--transformer-config[-base64|-file]`).
//
// Providers (names as the Java tool's, matched exactly):
//   NoopTransformerProvider                      passes everything through
//   JsonTransformerForDocumentTypeRemovalProvider  removes operation._type from documents
//   TypeMappingSanitizationTransformerProvider   routes ES <= 6 mapping types to target indices
//                                                (staticMappings, regexMappings, sourceProperties)
//   JsonConditionalTransformerProvider           [<predicate>, [<transformers>...]]
//   JqTransformerProvider                        a jq program (libjq)
//   JsonJSTransformerProvider                    an ECMAScript 5.1 function (duktape)
// Predicates for the conditional: JsonJSPredicateProvider and JqPredicateProvider.
//
// Shapes (the Java tool's):
//   documents  {"schema":"rfs-opensearch-bulk-v1","operation_type":"index","include_document":
//              true,"operation":{"_index","_id","_type"?,"routing"?},"document":{...source...}}
//              A transformer receives a JSON array of these (a batch) and returns an array: leave
//              a document out to drop it, return several to split it.
//   metadata   {"type":"index"|"template"|"index_template"|"component_template","name":...,
//              "body":{...}}; a transformer returns one such object or an array of them (a
//              multi-type index may become one index per type, or none).
//
// Thread safety: a transformer is used by one thread at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "boost/json/value.hpp"

namespace rfs::transform {

class IJsonTransformer {
 public:
  virtual ~IJsonTransformer() = default;
  /// Transforms `input`: an array of documents, or one metadata item. Errors name the provider
  /// and what went wrong; the caller decides what fails (one document, one item).
  virtual absl::StatusOr<boost::json::value> Transform(boost::json::value input) = 0;
  /// False when the transformer never reads or writes a document's `document` (its source), so
  /// sources may pass through as they are, unparsed.
  virtual bool ReadsDocumentSource() const { return true; }
  /// The provider name and a short description, for messages.
  virtual std::string Describe() const = 0;
};

class IJsonPredicate {
 public:
  virtual ~IJsonPredicate() = default;
  virtual absl::StatusOr<bool> Test(const boost::json::value& input) = 0;
  virtual bool ReadsDocumentSource() const { return true; }
};

/// Bounds on one call of a jq, JavaScript or Python program (a batch of documents, or one metadata
/// item). A program past its time, or one that grows the process by more than `memory_bytes` (or,
/// for jq, produces more output than that), is interrupted: Transform returns ResourceExhausted
/// naming the bound, and the caller fails the batch's documents with that reason. Once
/// `*stop_requested` is set, a program still running `shutdown_grace` later is interrupted with
/// Aborted, so a stop is never held up by a transform.
struct TransformLimits {
  std::chrono::milliseconds time_per_call{30'000};
  size_t memory_bytes = size_t{128} << 20;
  const std::atomic<bool>* stop_requested = nullptr;
  std::chrono::milliseconds shutdown_grace{20'000};
};

/// What providers may need to know about the migration.
struct TransformerContext {
  /// The snapshot's source version ("major"/"minor"), used as TypeMappingSanitization's
  /// sourceProperties when its configuration has none.
  int source_major = 7;
  int source_minor = 10;
  TransformLimits limits;
};

/// True for the error of a program interrupted at its TransformLimits (time or memory): the call's
/// documents fail together, with its message as the reason.
bool IsTransformBudgetExceeded(const absl::Status& status);
/// That error for a document refused before any program runs: transforming `source_bytes` of
/// `_source` would take about `needed_bytes`, more than `memory_bytes` allow.
absl::Status TooLargeToTransform(size_t source_bytes, size_t needed_bytes, size_t memory_bytes);

/// The configuration text from the three option forms, at most one of which may be set: `text`
/// as given, `base64` decoded, or the contents of `file`. nullopt when none is set.
/// InvalidArgument when several are set, the base64 does not decode or the file cannot be read.
absl::StatusOr<std::optional<std::string>> ResolveTransformerConfig(std::string_view option_prefix,
                                                                    const std::string& text,
                                                                    const std::string& base64,
                                                                    const std::string& file);

/// Parses `config` and builds the chain. A broken configuration (not JSON, an unknown provider,
/// a provider's bad config, a jq or JavaScript program that does not compile) is InvalidArgument
/// with a message naming the entry and the problem.
absl::StatusOr<std::unique_ptr<IJsonTransformer>> LoadTransformers(
    std::string_view config, const TransformerContext& context = {});

/// The provider names LoadTransformers accepts.
std::vector<std::string> TransformerProviderNames();

/// `value` as compact JSON text, with numbers written as people write them: doubles in their
/// shortest round-trip form (873.4, not Boost.JSON's 8.734E2).
std::string SerializeJson(const boost::json::value& value);
void AppendJson(const boost::json::value& value, std::string& out);

/// The document map a transformer receives for one document (`source` parsed or a placeholder).
struct DocumentOperation {
  std::string index;
  std::string id;
  std::optional<std::string> type;
  std::optional<std::string> routing;
};
boost::json::object MakeDocumentMap(const DocumentOperation& operation, boost::json::value source);
/// The operation of a transformed document map. InvalidArgument when it is not an object with an
/// "operation" holding string "_index" and "_id" (and optional string "_type", "routing").
absl::StatusOr<DocumentOperation> ReadDocumentOperation(const boost::json::value& item);

}  // namespace rfs::transform
