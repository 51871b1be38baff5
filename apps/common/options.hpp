// Option parsing shared by the rfs tools: kebab-case options on the command line, each also
// settable through an RFS_-prefixed environment variable (RFS_SNAPSHOT_LOCAL_DIR for
// --snapshot-local-dir); the command line wins.
#pragma once

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/program_options.hpp>

#include "rfs/core/duration.hpp"
#include "rfs/core/exit_codes.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/shard_delta.hpp"
#include "rfs/migration/document_migration_worker.hpp"
#include "rfs/migration/tools.hpp"
#include "rfs/transform/json_transformer.hpp"

#include "absl/strings/string_view.h"
#include <unistd.h>

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
/// Documents in one request.
using RequestDocs = Bounded<uint64_t, 0, 100'000'000>;
/// A TCP port.
using Port = Bounded<uint16_t>;

/// Environment variables with the RFS_ prefix that are no option: read by the tools directly
/// (tokens kept out of the process list) or by the build and test scripts.
inline bool IsEnvironmentOnlyVariable(std::string_view variable) {
  return variable == "RFS_CONSOLE_TOKEN" || variable == "RFS_CONSOLE_ADMIN_TOKEN" ||
         variable == "RFS_KEEP_TEST_DIRS" || variable == "RFS_BUILD_DIR" ||
         variable == "RFS_DEMO_DIR" || variable == "RFS_JAVA_OPTS" ||
         variable == "RFS_TSAN_BUILD_DIR" || variable == "RFS_FUZZ_BUILD_DIR" ||
         variable == "RFS_FUZZ_SECONDS" || variable == "RFS_SANITIZER_OPT_FLAGS" ||
         variable == "RFS_REQUIRE_CORPUS" || variable == "RFS_TEST_KILL_BEFORE_SETTINGS_RESTORE" ||
         variable.starts_with("RFS_E2E_");
}

/// The value of a Bounded option with a default (or given) value.
template <typename B>
auto Get(const po::variables_map& vm, const char* name) {
  return vm[name].as<B>().value;
}

/// "RFS_SNAPSHOT_LOCAL_DIR" -> "snapshot-local-dir" when that option exists, else "".
inline std::string EnvironmentToOption(const po::options_description& options,
                                       const std::string& variable) {
  if (variable.rfind("RFS_", 0) != 0) return "";
  std::string name = variable.substr(4);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) {
    return c == '_' ? '-' : static_cast<char>(std::tolower(c));
  });
  return options.find_nothrow(name, false) != nullptr ? name : "";
}

/// Parses argv (from `first`) then the environment into `vm`. Returns false after printing the
/// error and a hint when the options are invalid.
inline bool ParseOptions(int argc, char** argv, int first, const po::options_description& options,
                         po::variables_map& vm, const char* program) {
  // A misspelt RFS_ variable would otherwise be ignored without a word.
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view assignment(*entry);
    if (!assignment.starts_with("RFS_")) continue;
    const std::string variable(assignment.substr(0, assignment.find('=')));
    if (IsEnvironmentOnlyVariable(variable) || !EnvironmentToOption(options, variable).empty()) {
      continue;
    }
    std::cerr << program << ": environment variable " << variable << " names no option of "
              << program << " (RFS_<OPTION> sets --<option>; unset it or fix its name)\nTry '"
              << program << " --help'.\n";
    return false;
  }
  try {
    // No positional arguments: a stray word (a value after a switch, a missing "--") is an
    // error naming it. They are collected under a hidden name to be reported.
    po::options_description with_stray;
    with_stray.add(options);
    with_stray.add_options()("rfs-stray-argument", po::value<std::vector<std::string>>());
    po::positional_options_description stray;
    stray.add("rfs-stray-argument", -1);
    po::store(po::command_line_parser(argc - first, argv + first)
                  .options(with_stray)
                  .positional(stray)
                  .run(),
              vm);
    if (vm.count("rfs-stray-argument")) {
      std::cerr << program << ": unexpected argument '"
                << vm["rfs-stray-argument"].as<std::vector<std::string>>().front()
                << "' (every option is --name value; switches take no value)\nTry '" << program
                << " --help'.\n";
      return false;
    }
    po::store(po::parse_environment(options,
                                    [&](const std::string& variable) {
                                      return EnvironmentToOption(options, variable);
                                    }),
              vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << program << ": " << e.what() << "\nTry '" << program << " --help'.\n";
    return false;
  }
  return true;
}

/// Prints "<program>: message" and the --help hint; returns core::kExitUsage (64, sysexits'
/// EX_USAGE, as the Java tools).
inline int UsageError(const char* program, absl::string_view message) {
  std::cerr << program << ": " << message << "\nTry '" << program << " --help'.\n";
  return core::kExitUsage;
}

/// --reader-threads: decoding threads per shard; 0 decodes on the tool's own thread, "auto" (the
/// default) uses one per core. The decoding threads also do the per-document work (NDJSON lines
/// for SnapshotInspector, bulk documents for the workers), so the tool's own thread only orders
/// and sends them.
inline void AddReaderThreadsOption(po::options_description& options) {
  options.add_options()("reader-threads", po::value<std::string>()->default_value("auto"),
                        "threads decoding each shard in cursor order (0: decode on the main "
                        "thread; auto: one per core)");
}

/// --enable-sourceless-migrations (the Java tool's name): rebuild documents of indices without a
/// complete stored `_source` from doc values and stored fields.
inline void AddSourcelessOption(po::options_description& options) {
  options.add_options()(
      "enable-sourceless-migrations", po::bool_switch(),
      "rebuild the documents of indices that keep no _source (_source disabled, synthetic or "
      "derived source), and complete sources cut by _source includes/excludes, from their doc "
      "values and stored fields; without it such an index stops the run before any work "
      "(MetadataMigration evaluate lists what can be rebuilt; see docs/sourceless.md)");
}

inline void AddDeltaOptions(po::options_description& options) {
  options.add_options()(
      "previous-snapshot-name", po::value<std::string>(),
      "a delta (catch-up) migration: send only what changed since this older snapshot of the "
      "same repository, reading only the segments the two do not share (docs/delta.md); run it "
      "with a coordination session of its own")("experimental-previous-snapshot-name",
                                                po::value<std::string>(),
                                                "the Java tool's name of --previous-snapshot-name")(
      "delta-mode", po::value<std::string>(),
      "with --previous-snapshot-name: UPDATES_AND_DELETES (default: index new and changed "
      "documents, delete those gone), UPDATES_ONLY or DELETES_ONLY")(
      "experimental-delta-mode", po::value<std::string>(), "the Java tool's name of --delta-mode");
}

/// The delta options into `docs` (after its snapshot name); InvalidArgument for an unknown mode,
/// a mode without a previous snapshot, or a previous snapshot named as the one to migrate.
inline absl::Status ApplyDeltaOptions(const po::variables_map& vm,
                                      migration::DocumentMigrationOptions& docs) {
  for (const char* name : {"previous-snapshot-name", "experimental-previous-snapshot-name"}) {
    if (vm.count(name)) docs.previous_snapshot_name = vm[name].as<std::string>();
  }
  if (!docs.previous_snapshot_name.empty() && docs.previous_snapshot_name == docs.snapshot_name) {
    return absl::InvalidArgumentError(
        core::StrCat("--previous-snapshot-name names the snapshot to migrate, '",
                     docs.snapshot_name, "': a delta needs an older snapshot than this one"));
  }
  for (const char* name : {"delta-mode", "experimental-delta-mode"}) {
    if (!vm.count(name)) continue;
    auto mode = lucene::ParseDeltaMode(vm[name].as<std::string>());
    if (!mode) {
      return absl::InvalidArgumentError(core::StrCat(
          "--", name, " must be UPDATES_AND_DELETES, UPDATES_ONLY or DELETES_ONLY, not '",
          vm[name].as<std::string>(), "'"));
    }
    if (docs.previous_snapshot_name.empty()) {
      return absl::InvalidArgumentError(
          core::StrCat("--", name, " needs --previous-snapshot-name"));
    }
    docs.delta_mode = *mode;
  }
  return absl::OkStatus();
}

inline void AddTrialOptions(po::options_description& options) {
  options.add_options()(
      "max-docs-per-shard", po::value<Count>(),
      "a trial run: migrate at most N documents of each shard, into indices named with "
      "--target-index-prefix (default 'trial-'), in a coordination store of its own that a full "
      "run never resumes")("target-index-prefix", po::value<std::string>(),
                           "put this before every target index name (a trial's indices)");
}

/// Checks an index name prefix as OpenSearch checks index names: lowercase, none of
/// \ / * ? " < > | , # : or a space, not starting with _ - +.
inline absl::Status CheckIndexPrefix(const std::string& prefix) {
  if (prefix.empty()) return absl::InvalidArgumentError("--target-index-prefix must not be empty");
  if (prefix.size() > 100) {
    return absl::InvalidArgumentError("--target-index-prefix is longer than 100 characters");
  }
  if (prefix[0] == '_' || prefix[0] == '-' || prefix[0] == '+') {
    return absl::InvalidArgumentError("--target-index-prefix must not start with _, - or +");
  }
  for (char c : prefix) {
    if ((c >= 'A' && c <= 'Z') ||
        std::string_view("\\/*?\"<>|,#: ").find(c) != std::string_view::npos ||
        static_cast<unsigned char>(c) < 0x20) {
      return absl::InvalidArgumentError(core::StrCat(
          "--target-index-prefix '", prefix,
          "' cannot start an index name: lowercase, without \\ / * ? \" < > | , # : or spaces"));
    }
  }
  return absl::OkStatus();
}

/// The trial options into `docs`; InvalidArgument for a bad prefix or a trial of a delta.
inline absl::Status ApplyTrialOptions(const po::variables_map& vm,
                                      migration::DocumentMigrationOptions& docs) {
  if (vm.count("max-docs-per-shard")) {
    docs.max_docs_per_shard = vm["max-docs-per-shard"].as<Count>().value;
    if (docs.max_docs_per_shard == 0) {
      return absl::InvalidArgumentError("--max-docs-per-shard must be at least 1");
    }
    docs.target_index_prefix = "trial-";
  }
  if (vm.count("target-index-prefix")) {
    docs.target_index_prefix = vm["target-index-prefix"].as<std::string>();
    RFS_RETURN_IF_ERROR(CheckIndexPrefix(docs.target_index_prefix));
  }
  if (docs.trial() && !docs.previous_snapshot_name.empty()) {
    return absl::InvalidArgumentError(
        "a trial run (--max-docs-per-shard, --target-index-prefix) cannot be a delta "
        "(--previous-snapshot-name)");
  }
  return absl::OkStatus();
}

/// The --reader-threads value; InvalidArgument for anything but "auto" or 0..256.
inline absl::StatusOr<int> ReaderThreads(const po::variables_map& vm) {
  const std::string text = vm["reader-threads"].as<std::string>();
  if (text == "auto") return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0 || value > 256) {
    return absl::InvalidArgumentError(
        "--reader-threads takes auto or a number from 0 to 256, not '" + text + "'");
  }
  return value;
}

/// The text value of an option, or "" when it is not set.
inline std::string Text(const po::variables_map& vm, const char* name) {
  return vm.count(name) ? vm[name].as<std::string>() : std::string();
}

/// --<name>, --<name>-base64 and --<name>-file: a transformer configuration (Java's format).
inline void AddTransformerOptions(po::options_description& options, const std::string& name,
                                  const std::string& what) {
  std::string providers;
  for (const auto& provider : transform::TransformerProviderNames()) {
    providers += (providers.empty() ? "" : ", ") + provider;
  }
  const std::string help = what + " (providers: " + providers + "; see README)";
  options.add_options()(name.c_str(), po::value<std::string>(), help.c_str())(
      (name + "-base64").c_str(), po::value<std::string>(),
      ("the same, base64-encoded (one of --" + name + "[-base64|-file])").c_str())(
      (name + "-file").c_str(), po::value<std::string>(), "the same, read from a JSON file");
}

/// The transformer configuration those options give (nullopt: none). Checks only the choice of
/// form here; the content is checked when the tool loads it, before any work.
inline absl::StatusOr<std::optional<std::string>> TransformerConfig(const po::variables_map& vm,
                                                                    const std::string& name) {
  auto get = [&](const std::string& option) { return Text(vm, option.c_str()); };
  return transform::ResolveTransformerConfig(name, get(name), get(name + "-base64"),
                                             get(name + "-file"));
}

/// --metrics-port, --metrics-bind-address, --otel-metrics-collector-endpoint (and the Java
/// document tool's --otel-collector-endpoint).
inline void AddMetricsOptions(po::options_description& options) {
  options.add_options()("metrics-port", po::value<Bounded<uint16_t>>(),
                        "serve Prometheus metrics at http://<bind>:PORT/metrics (documents and "
                        "bytes read and sent, bulk latency, retries, 429s, concurrency, leases, "
                        "work items, failed documents)")(
      "metrics-bind-address", po::value<std::string>()->default_value("0.0.0.0"),
      "the address the metrics endpoint listens on")(
      "otel-metrics-collector-endpoint", po::value<std::string>(),
      "push the same metrics as OTLP/HTTP JSON to this OpenTelemetry collector, e.g. "
      "http://otel-collector:4318 (posted to /v1/metrics) every --otel-metrics-interval")(
      "otel-collector-endpoint", po::value<std::string>(),
      "the Java tool's name for --otel-metrics-collector-endpoint")(
      "otel-metrics-interval", po::value<std::string>()->default_value("PT10S"),
      "ISO-8601 interval between OTLP pushes (a last one is sent at exit)");
}

inline absl::StatusOr<migration::MetricsOptions> MetricsOptionsFrom(const po::variables_map& vm) {
  migration::MetricsOptions out;
  if (vm.count("metrics-port")) out.port = vm["metrics-port"].as<Bounded<uint16_t>>().value;
  out.bind_address = vm["metrics-bind-address"].as<std::string>();
  out.otel_endpoint = Text(vm, "otel-metrics-collector-endpoint");
  if (out.otel_endpoint.empty()) out.otel_endpoint = Text(vm, "otel-collector-endpoint");
  auto interval = core::ParseIsoDuration(vm["otel-metrics-interval"].as<std::string>());
  if (!interval.ok() || *interval <= std::chrono::nanoseconds(0)) {
    return absl::InvalidArgumentError(
        "--otel-metrics-interval takes a positive ISO-8601 duration, e.g. PT10S");
  }
  out.otel_interval = std::chrono::duration_cast<std::chrono::milliseconds>(*interval);
  if (!out.otel_endpoint.empty() && !out.otel_endpoint.starts_with("http://") &&
      !out.otel_endpoint.starts_with("https://")) {
    return absl::InvalidArgumentError(
        "--otel-metrics-collector-endpoint takes an http:// or https:// URL (OTLP/HTTP)");
  }
  return out;
}

/// The command line of a tool: --help or -h anywhere prints `usage` and the options and returns
/// 0; bad options print the error and return core::kExitUsage; nullopt means go on with `vm`.
/// Arguments before `first` (the program, a command) are not options.
inline std::optional<int> ParseCommandLine(int argc, char** argv, int first,
                                           const po::options_description& options,
                                           std::string_view usage, const char* program,
                                           po::variables_map& vm) {
  for (int i = first + 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << usage << "\n" << options << "\n";
      return 0;
    }
  }
  if (!ParseOptions(argc, argv, first, options, vm, program)) return core::kExitUsage;
  return std::nullopt;
}

}  // namespace rfs::apps
