// Option parsing shared by the rfs tools: kebab-case options on the command line, each also
// settable through an RFS_-prefixed environment variable (RFS_SNAPSHOT_LOCAL_DIR for
// --snapshot-local-dir); the command line wins.
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <boost/program_options.hpp>

#include "rfs/migration/document_migration_worker.hpp"
#include "rfs/migration/worker_metrics.hpp"

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rfs::apps {

namespace po = boost::program_options;

/// A whole-number option in [min, max]. Boost's own parsing of unsigned types accepts "-1" and
/// wraps it to a huge value, so counts, sizes, shards and cursors use this type instead.
template <typename T, uint64_t Min = 0, uint64_t Max = std::numeric_limits<T>::max()>
struct Bounded {
  T value{};
  friend std::ostream& operator<<(std::ostream& out, const Bounded& b) { return out << b.value; }
};

template <typename T, uint64_t Min, uint64_t Max>
void validate(boost::any& out, const std::vector<std::string>& values, Bounded<T, Min, Max>*, int) {
  po::validators::check_first_occurrence(out);
  const std::string& text = po::validators::get_single_string(values);
  uint64_t parsed = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || parsed < Min ||
      parsed > Max) {
    // The range in the message: "invalid" alone leaves the user guessing.
    po::error_with_option_name error(
        "the argument ('%value%') for option '%canonical_option%' "
        "must be a whole number from " +
        std::to_string(Min) + " to " + std::to_string(Max));
    error.set_substitute("value", text);
    throw error;
  }
  out = boost::any(Bounded<T, Min, Max>{static_cast<T>(parsed)});
}

/// Option value types: counts and sizes (>= 0), and shard numbers.
using Count = Bounded<uint64_t>;
using ShardNumber = Bounded<int, 0, 1u << 30>;
/// Requests in flight at once (each holds a connection and a batch in memory).
using Connections = Bounded<uint64_t, 1, 1024>;
/// Bytes of one request body (HTTP bodies over 2 GiB are refused by every server).
using RequestBytes = Bounded<uint64_t, 0, uint64_t{2} << 30>;
/// Documents in one request; up to the Java tools' default, Integer.MAX_VALUE (no limit but the
/// bytes), which their workflows pass.
using RequestDocs = Bounded<uint64_t, 0, 2'147'483'647>;
/// A TCP port.
using Port = Bounded<uint16_t>;

/// Environment variables with the RFS_ prefix that are no option: read by the tools directly
/// (tokens kept out of the process list) or by the build and test scripts.
bool IsEnvironmentOnlyVariable(std::string_view variable);

/// The value of a Bounded option with a default (or given) value.
template <typename B>
auto Get(const po::variables_map& vm, const char* name) {
  return vm[name].as<B>().value;
}

/// "RFS_SNAPSHOT_LOCAL_DIR" -> "snapshot-local-dir" when that option exists, else "".
std::string EnvironmentToOption(const po::options_description& options,
                                const std::string& variable);

/// True when `arg` ("--name", or a Java tool's "--camelName") is an option of `options` that
/// takes a value (the next argument, unless given as --name=value).
bool OptionTakesValue(const po::options_description& options, std::string_view arg);

/// Parses argv (from `first`) then the environment into `vm`. Returns false after printing the
/// error and a hint when the options are invalid.
bool ParseOptions(int argc, char** argv, int first, const po::options_description& options,
                  po::variables_map& vm, const char* program);

/// A Java tool's option that rfs takes so that a command line or environment made for the Java
/// tool works unchanged, and has no use for; --help lists it with `why` (what rfs does instead).
/// `takes_value`: the option is given a value (the Java tool's arity 1), else it is a switch.
void AddIgnoredJavaOption(po::options_description& options, const char* name, bool takes_value,
                          const std::string& why);

/// --allow-loose-version-matching (the Java tools'), taken and ignored.
void AddLooseVersionMatchingOption(po::options_description& options);

/// --otel-trace-collector-endpoint (the Java tools'): taken, and a warning says that rfs exports
/// no traces.
void AddTraceOption(po::options_description& options);

/// A true/false value as the Java tools take it ("true", "false", any case).
absl::StatusOr<bool> JavaBoolean(const po::variables_map& vm, const char* name, bool otherwise);

/// Prints "<program>: message" and the --help hint; returns core::kExitUsage (64, sysexits'
/// EX_USAGE, as the Java tools).
int UsageError(const char* program, absl::string_view message);

/// --reader-threads: decoding threads per shard; 0 decodes on the tool's own thread, "auto" (the
/// default) uses one per core. The decoding threads also do the per-document work (NDJSON lines
/// for SnapshotInspector, bulk documents for the workers), so the tool's own thread only orders
/// and sends them.
void AddReaderThreadsOption(po::options_description& options);

/// --enable-sourceless-migrations (the Java tool's name): rebuild documents of indices without a
/// complete stored `_source` from doc values and stored fields.
void AddSourcelessOption(po::options_description& options);

void AddDeltaOptions(po::options_description& options);

/// The delta options into `docs` (after its snapshot name); InvalidArgument for an unknown mode,
/// a mode without a previous snapshot, or a previous snapshot named as the one to migrate.
absl::Status ApplyDeltaOptions(const po::variables_map& vm,
                               migration::DocumentMigrationOptions& docs);

void AddTrialOptions(po::options_description& options);

/// Checks an index name prefix as OpenSearch checks index names: lowercase, none of
/// \ / * ? " < > | , # : or a space, not starting with _ - +.
absl::Status CheckIndexPrefix(const std::string& prefix);

/// The trial options into `docs`; InvalidArgument for a bad prefix or a trial of a delta.
absl::Status ApplyTrialOptions(const po::variables_map& vm,
                               migration::DocumentMigrationOptions& docs);

/// The --reader-threads value; InvalidArgument for anything but "auto" or 0..256.
absl::StatusOr<int> ReaderThreads(const po::variables_map& vm);

/// The text value of an option, or "" when it is not set.
std::string Text(const po::variables_map& vm, const char* name);

/// --<name>, --<name>-base64 and --<name>-file: a transformer configuration (Java's format).
void AddTransformerOptions(po::options_description& options, const std::string& name,
                           const std::string& what);

/// The transformer configuration those options give (nullopt: none). Checks only the choice of
/// form here; the content is checked when the tool loads it, before any work.
absl::StatusOr<std::optional<std::string>> TransformerConfig(const po::variables_map& vm,
                                                             const std::string& name);

/// --metrics-port, --metrics-bind-address, --otel-metrics-collector-endpoint (and the Java
/// document tool's --otel-collector-endpoint).
void AddMetricsOptions(po::options_description& options);

absl::StatusOr<migration::MetricsOptions> MetricsOptionsFrom(const po::variables_map& vm);

/// A tool's command line with the Java tools' JSON form expanded (JsonCommandLineParser in
/// opensearch-migrations, which their workflows use): `---INLINE-JSON TEXT`, TEXT a JSON object
/// of options or its base64, or `---JSON-FILE PATH`, with nothing else beside it but one of
/// `commands` (before or after it, or named by the object's "jcommanderCommand"). The object's
/// keys are option names, kebab or camel case, with or without leading dashes; null leaves an
/// option unset, true sets a switch, an array gives a list option each of its items. Without
/// either flag the command line is kept as it is. Errors never quote a value: they may be
/// passwords.
class ArgumentList {
 public:
  static absl::StatusOr<ArgumentList> Expand(int argc, char** argv,
                                             const po::options_description& options,
                                             const char* program,
                                             std::vector<std::string_view> commands = {});

  int argc() const { return static_cast<int>(words_.size()); }
  /// argv-style pointers into this object's words, valid while it lives and is not moved.
  char** argv();

 private:
  std::vector<std::string> words_;
  std::vector<char*> pointers_;
};

/// The command line of a tool: --help or -h anywhere prints `usage` and the options and returns
/// 0; bad options print the error and return core::kExitUsage; nullopt means go on with `vm`.
/// Arguments before `first` (the program, a command) are not options.
std::optional<int> ParseCommandLine(int argc, char** argv, int first,
                                    const po::options_description& options, std::string_view usage,
                                    const char* program, po::variables_map& vm);

}  // namespace rfs::apps
