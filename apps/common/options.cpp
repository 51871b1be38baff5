#include "options.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

#include <boost/json.hpp>

#include "rfs/core/base64.hpp"
#include "rfs/core/duration.hpp"
#include "rfs/core/exit_codes.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/shard_delta.hpp"
#include "rfs/migration/tools.hpp"
#include "rfs/transform/json_transformer.hpp"

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include <unistd.h>

namespace rfs::apps {

bool IsEnvironmentOnlyVariable(std::string_view variable) {
  return variable == "RFS_CONSOLE_TOKEN" || variable == "RFS_CONSOLE_ADMIN_TOKEN" ||
         variable == "RFS_KEEP_TEST_DIRS" || variable == "RFS_BUILD_DIR" ||
         variable == "RFS_DEMO_DIR" || variable == "RFS_JAVA_OPTS" ||
         variable == "RFS_TSAN_BUILD_DIR" || variable == "RFS_FUZZ_BUILD_DIR" ||
         variable == "RFS_FUZZ_SECONDS" || variable == "RFS_SANITIZER_OPT_FLAGS" ||
         variable == "RFS_REQUIRE_CORPUS" || variable == "RFS_TEST_KILL_BEFORE_SETTINGS_RESTORE" ||
         variable.starts_with("RFS_E2E_");
}

namespace {

// The Java tools read their options from environment variables with a prefix of their own
// (EnvVarParameterPuller: CREATE_SNAPSHOT_MAX_SNAPSHOT_RATE_MB_PER_NODE); the document tool's is
// RFS_, as every rfs tool's.
const char* JavaEnvironmentPrefix(std::string_view program) {
  if (program == "MetadataMigration") return "METADATA_MIGRATE_";
  if (program == "CreateSnapshot") return "CREATE_SNAPSHOT_";
  return nullptr;
}

// The Java tools also read credentials from unprefixed variables (TARGET_PASSWORD), which
// container task definitions set.
constexpr std::string_view kUnprefixedCredentials[] = {
    "TARGET_USERNAME", "TARGET_PASSWORD",      "SOURCE_USERNAME",
    "SOURCE_PASSWORD", "COORDINATOR_USERNAME", "COORDINATOR_PASSWORD"};

// The rfs option a kebab-case name stands for: itself, or rfs's spelling of a Java name
// (--targetCaCert and TARGET_CA_CERT read as target-ca-cert, which rfs calls target-cacert).
// "" when there is none.
std::string KnownOption(const po::options_description& options, std::string name) {
  if (name.empty()) return "";  // Boost takes an empty name for a prefix of every option
  if (options.find_nothrow(name, false) != nullptr) return name;
  if (const size_t at = name.find("ca-cert"); at != std::string::npos) {
    name.replace(at, 7, "cacert");
    if (options.find_nothrow(name, false) != nullptr) return name;
  }
  return "";
}

// "SNAPSHOT_LOCAL_DIR" -> "snapshot-local-dir".
std::string EnvironmentName(std::string_view variable) {
  std::string name = absl::AsciiStrToLower(std::string(variable));
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

// "PREFIX_SNAPSHOT_LOCAL_DIR" -> "snapshot-local-dir" when that option exists, else "".
std::string EnvironmentToOption(const po::options_description& options, const std::string& variable,
                                std::string_view prefix) {
  if (!variable.starts_with(prefix)) return "";
  return KnownOption(options, EnvironmentName(std::string_view(variable).substr(prefix.size())));
}

// The option an argument names, in kebab case: "--targetHost=x" -> "target-host"; "" for an
// argument that is no option.
std::string OptionName(std::string_view arg) {
  if (!arg.starts_with("--")) return "";
  const size_t end = std::min(arg.find('='), arg.size());
  std::string name;
  for (size_t i = 2; i < end; ++i) {
    const unsigned char c = static_cast<unsigned char>(arg[i]);
    if (std::isupper(c)) {
      name += '-';
      name += static_cast<char>(std::tolower(c));
    } else {
      name += static_cast<char>(c);
    }
  }
  return name;
}

// The Java tools' camelCase names (--targetHost, --s3RepoUri) as the option they name
// (--target-host, --s3-repo-uri); anything else as it is.
std::string KebabCaseOption(const po::options_description& options, const std::string& arg) {
  const std::string known = KnownOption(options, OptionName(arg));
  if (known.empty()) return arg;
  return "--" + known + arg.substr(std::min(arg.find('='), arg.size()));
}

// Options of a Java tool for what rfs does not do: refused with the reason, not as unknown.
std::optional<std::string> RefusedJavaOption(std::string_view program, std::string_view name) {
  if (program == "CreateSnapshot" && name == "solr-collections") {
    return "rfs takes snapshots of Elasticsearch and OpenSearch clusters; back a Solr "
           "collection up with Solr's BACKUP action and migrate the backup (docs/solr.md)";
  }
  return std::nullopt;
}

}  // namespace

std::string EnvironmentToOption(const po::options_description& options,
                                const std::string& variable) {
  return EnvironmentToOption(options, variable, "RFS_");
}

bool OptionTakesValue(const po::options_description& options, std::string_view arg) {
  const std::string known = KnownOption(options, OptionName(arg));
  if (known.empty()) return false;
  return options.find(known, false).semantic()->max_tokens() > 0;
}

bool ParseOptions(int argc, char** argv, int first, const po::options_description& options,
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
    // argv[first] is the program or the command, not an option. A value (the word after an
    // option that takes one) is left as it is, whatever it looks like.
    std::vector<std::string> args;
    bool is_value = false;
    for (int i = first + 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (is_value) {
        args.push_back(arg);
        is_value = false;
        continue;
      }
      const std::string name = OptionName(arg);
      if (auto reason = RefusedJavaOption(program, name)) {
        std::cerr << program << ": --" << name << " is not supported: " << *reason << "\nTry '"
                  << program << " --help'.\n";
        return false;
      }
      args.push_back(KebabCaseOption(options, arg));
      is_value = arg.find('=') == std::string::npos && OptionTakesValue(options, arg);
    }
    if (const char* prefix = JavaEnvironmentPrefix(program)) {
      for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        const std::string_view assignment(*entry);
        if (!assignment.starts_with(prefix)) continue;
        const std::string name = EnvironmentName(
            assignment.substr(std::strlen(prefix), assignment.find('=') - std::strlen(prefix)));
        if (auto reason = RefusedJavaOption(program, name)) {
          std::cerr << program << ": " << assignment.substr(0, assignment.find('=')) << " (--"
                    << name << ") is not supported: " << *reason << "\n";
          return false;
        }
      }
    }
    // No positional arguments: a stray word (a value after a switch, a missing "--") is an
    // error naming it. They are collected under a hidden name to be reported.
    po::options_description with_stray;
    with_stray.add(options);
    with_stray.add_options()("rfs-stray-argument", po::value<std::vector<std::string>>());
    po::positional_options_description stray;
    stray.add("rfs-stray-argument", -1);
    // No abbreviations: Boost would take `--output json` for `--output-dir json`.
    po::store(
        po::command_line_parser(args)
            .options(with_stray)
            .positional(stray)
            .style(po::command_line_style::unix_style ^ po::command_line_style::allow_guessing)
            .run(),
        vm);
    if (vm.count("rfs-stray-argument")) {
      std::cerr << program << ": unexpected argument '"
                << vm["rfs-stray-argument"].as<std::vector<std::string>>().front()
                << "' (every option is --name value; switches take no value)\nTry '" << program
                << " --help'.\n";
      return false;
    }
    // The command line wins, then RFS_ variables, then the Java tool's own prefix, then the
    // unprefixed credentials (Boost keeps the first value stored).
    po::store(po::parse_environment(options,
                                    [&](const std::string& variable) {
                                      return EnvironmentToOption(options, variable, "RFS_");
                                    }),
              vm);
    if (const char* prefix = JavaEnvironmentPrefix(program)) {
      po::store(po::parse_environment(options,
                                      [&](const std::string& variable) {
                                        return EnvironmentToOption(options, variable, prefix);
                                      }),
                vm);
    }
    po::store(po::parse_environment(options,
                                    [&](const std::string& variable) -> std::string {
                                      for (std::string_view name : kUnprefixedCredentials) {
                                        if (variable == name) {
                                          return EnvironmentToOption(options, variable, "");
                                        }
                                      }
                                      return "";
                                    }),
              vm);
    po::notify(vm);
    if (vm.count("otel-trace-collector-endpoint")) {
      std::cerr << program
                << ": warning: --otel-trace-collector-endpoint is ignored: rfs exports no traces "
                   "(metrics: --otel-metrics-collector-endpoint where the tool has it)\n";
    }
  } catch (const po::error& e) {
    std::cerr << program << ": " << e.what() << "\nTry '" << program << " --help'.\n";
    return false;
  }
  return true;
}

void AddIgnoredJavaOption(po::options_description& options, const char* name, bool takes_value,
                          const std::string& why) {
  const std::string text = "accepted for compatibility with the Java tool and ignored: " + why;
  if (takes_value) {
    options.add_options()(name, po::value<std::string>(), text.c_str());
  } else {
    options.add_options()(name, po::bool_switch(), text.c_str());
  }
}

void AddLooseVersionMatchingOption(po::options_description& options) {
  AddIgnoredJavaOption(options, "allow-loose-version-matching", false,
                       "rfs reads every Elasticsearch 1-9 and OpenSearch 1-3 version it detects");
}

void AddTraceOption(po::options_description& options) {
  options.add_options()("otel-trace-collector-endpoint", po::value<std::string>(),
                        "accepted for compatibility with the Java tool: rfs exports no traces, "
                        "and says so once at start");
}

absl::StatusOr<bool> JavaBoolean(const po::variables_map& vm, const char* name, bool otherwise) {
  if (!vm.count(name)) return otherwise;
  const std::string value = absl::AsciiStrToLower(vm[name].as<std::string>());
  if (value == "true") return true;
  if (value == "false") return false;
  return absl::InvalidArgumentError(
      core::StrCat("--", name, " takes true or false, not '", vm[name].as<std::string>(), "'"));
}

int UsageError(const char* program, absl::string_view message) {
  std::cerr << program << ": " << message << "\nTry '" << program << " --help'.\n";
  return core::kExitUsage;
}

void AddReaderThreadsOption(po::options_description& options) {
  options.add_options()("reader-threads", po::value<std::string>()->default_value("auto"),
                        "threads decoding each shard in cursor order (0: decode on the main "
                        "thread; auto: one per core)");
}

void AddSourcelessOption(po::options_description& options) {
  options.add_options()(
      "enable-sourceless-migrations", po::bool_switch(),
      "rebuild the documents of indices that keep no _source (_source disabled, synthetic or "
      "derived source), and complete sources cut by _source includes/excludes, from their doc "
      "values and stored fields; without it such an index stops the run before any work "
      "(MetadataMigration evaluate lists what can be rebuilt; see docs/sourceless.md)");
}

void AddDeltaOptions(po::options_description& options) {
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

absl::Status ApplyDeltaOptions(const po::variables_map& vm,
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

void AddTrialOptions(po::options_description& options) {
  options.add_options()(
      "max-docs-per-shard", po::value<Count>(),
      "a trial run: migrate at most N documents of each shard, into indices named with "
      "--target-index-prefix (default 'trial-'), in a coordination store of its own that a full "
      "run never resumes")("target-index-prefix", po::value<std::string>(),
                           "put this before every target index name (a trial's indices)");
}

absl::Status CheckIndexPrefix(const std::string& prefix) {
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

absl::Status ApplyTrialOptions(const po::variables_map& vm,
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

absl::StatusOr<int> ReaderThreads(const po::variables_map& vm) {
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

std::string Text(const po::variables_map& vm, const char* name) {
  return vm.count(name) ? vm[name].as<std::string>() : std::string();
}

void AddTransformerOptions(po::options_description& options, const std::string& name,
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

absl::StatusOr<std::optional<std::string>> TransformerConfig(const po::variables_map& vm,
                                                             const std::string& name) {
  auto get = [&](const std::string& option) { return Text(vm, option.c_str()); };
  return transform::ResolveTransformerConfig(name, get(name), get(name + "-base64"),
                                             get(name + "-file"));
}

void AddMetricsOptions(po::options_description& options) {
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

absl::StatusOr<migration::MetricsOptions> MetricsOptionsFrom(const po::variables_map& vm) {
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

namespace {

namespace json = boost::json;

constexpr std::string_view kInlineJsonFlag = "---INLINE-JSON";
constexpr std::string_view kJsonFileFlag = "---JSON-FILE";
constexpr std::string_view kCommandKey = "jcommanderCommand";
// An options file is a few kilobytes; a bigger one is not one.
constexpr std::streamsize kMaxJsonFileBytes = 16 << 20;

std::string_view TrimWhitespace(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

std::string JsonText(const json::string& text) { return std::string(text.data(), text.size()); }

absl::StatusOr<std::string> ReadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::InvalidArgumentError(core::StrCat(kJsonFileFlag, " ", path, ": cannot read it"));
  std::string text(static_cast<size_t>(kMaxJsonFileBytes) + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad())
    return absl::InvalidArgumentError(core::StrCat(kJsonFileFlag, " ", path, ": cannot read it"));
  if (in.gcount() > kMaxJsonFileBytes) {
    return absl::InvalidArgumentError(core::StrCat(
        kJsonFileFlag, " ", path, ": over ", kMaxJsonFileBytes >> 20, " MiB, not an options file"));
  }
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

// The options object the flag's text holds: JSON, or (as the Java tools take it) its base64.
absl::StatusOr<json::object> ParseJsonOptions(std::string_view flag, const std::string& text) {
  const std::string_view trimmed = TrimWhitespace(text);
  std::string decoded;
  std::string_view json_text = trimmed;
  if (!trimmed.starts_with('{') && !trimmed.starts_with('[')) {
    auto bytes = core::Base64Decode(trimmed);
    if (!bytes.ok()) {
      return absl::InvalidArgumentError(
          core::StrCat(flag, ": neither a JSON object of options nor its base64"));
    }
    decoded.assign(bytes->begin(), bytes->end());
    json_text = decoded;
  }
  boost::system::error_code error;
  json::value value = json::parse(json_text, error);
  if (error) {
    // The text is not quoted: it may hold passwords.
    return absl::InvalidArgumentError(
        core::StrCat(flag, ": the options are not valid JSON (", error.message(), ")"));
  }
  if (!value.is_object()) {
    return absl::InvalidArgumentError(
        core::StrCat(flag, ": the options must be one JSON object, {\"name\": value, ...}"));
  }
  return std::move(value.as_object());
}

// A scalar as the command line would spell it. Doubles in their shortest form (Boost.JSON would
// write 1.5 as 1.5E0).
std::optional<std::string> ScalarText(const json::value& value) {
  switch (value.kind()) {
    case json::kind::string:
      return JsonText(value.get_string());
    case json::kind::bool_:
      return value.get_bool() ? "true" : "false";
    case json::kind::int64:
      return std::to_string(value.get_int64());
    case json::kind::uint64:
      return std::to_string(value.get_uint64());
    case json::kind::double_: {
      // A whole number as one (1e7 -> "10000000"), as Jackson's asInt and asLong take it.
      const double number = value.get_double();
      if (std::trunc(number) == number && std::abs(number) < 9.2e18) {
        return std::to_string(static_cast<int64_t>(number));
      }
      char buffer[32];
      const auto end = std::to_chars(buffer, buffer + sizeof buffer, number).ptr;
      return std::string(buffer, end);
    }
    default:
      return std::nullopt;
  }
}

// Appends the words that set option `name` to `value`, as the Java parser reads it (Jackson's
// asBoolean for a switch: true, "true" or a non-zero integer sets it).
absl::Status AppendJsonOption(std::string_view flag, const po::options_description& options,
                              const std::string& key, const std::string& name,
                              const json::value& value, std::vector<std::string>& words) {
  if (value.is_null()) return absl::OkStatus();
  const bool is_switch = options.find(name, false).semantic()->max_tokens() == 0;
  if (is_switch) {
    bool on = false;
    if (value.is_bool()) {
      on = value.get_bool();
    } else if (value.is_string()) {
      on = TrimWhitespace(JsonText(value.get_string())) == "true";
    } else if (value.is_int64() || value.is_uint64()) {
      on = !(value.is_int64() && value.get_int64() == 0);
    } else if (value.is_double()) {
      on = false;  // Jackson's asBoolean of a floating-point number
    } else {
      return absl::InvalidArgumentError(
          core::StrCat(flag, ": \"", key, "\" is a switch: give it true or false"));
    }
    if (on) words.push_back("--" + name);
    return absl::OkStatus();
  }
  // --name=value, so that no value (a password starting with '-') is read as an option.
  if (const json::array* items = value.if_array()) {
    for (const json::value& item : *items) {
      const std::optional<std::string> text = ScalarText(item);
      if (!text) {
        return absl::InvalidArgumentError(
            core::StrCat(flag, ": \"", key, "\" takes a list of strings or numbers"));
      }
      words.push_back("--" + name + "=" + *text);
    }
    return absl::OkStatus();
  }
  const std::optional<std::string> text = ScalarText(value);
  if (!text) {
    return absl::InvalidArgumentError(core::StrCat(
        flag, ": \"", key, "\" takes a string, a number or true/false, not an object"));
  }
  words.push_back("--" + name + "=" + *text);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ArgumentList> ArgumentList::Expand(int argc, char** argv,
                                                  const po::options_description& options,
                                                  const char* program,
                                                  std::vector<std::string_view> commands) {
  ArgumentList line;
  int flag_at = 0;
  for (int i = 1; i < argc && flag_at == 0; ++i) {
    const std::string_view arg = argv[i];
    if (arg == kInlineJsonFlag || arg == kJsonFileFlag) flag_at = i;
  }
  if (flag_at == 0) {
    line.words_.assign(argv, argv + argc);
    return line;
  }
  const std::string_view flag = argv[flag_at];
  if (flag_at + 1 >= argc) {
    return absl::InvalidArgumentError(
        core::StrCat(flag, " takes the options as its value: ", kInlineJsonFlag,
                     " '{\"name\": value}' or ", kJsonFileFlag, " PATH"));
  }
  // Besides the flag and its value, at most the command, just before or just after them.
  std::string command;
  for (int i = 1; i < argc; ++i) {
    if (i == flag_at || i == flag_at + 1) continue;
    const std::string_view arg = argv[i];
    const bool is_command = std::find(commands.begin(), commands.end(), arg) != commands.end() &&
                            command.empty() && (i == flag_at - 1 || i == flag_at + 2);
    if (!is_command) {
      // Named by its option, or its position: a stray word may be a password (an unquoted
      // object splits into words, "--target-password=..." given beside it).
      const bool unquoted_object =
          i > flag_at + 1 && std::string_view(argv[flag_at + 1]).starts_with("{");
      const std::string what =
          arg.starts_with("--") && arg.size() > 2
              ? core::StrCat("option --", OptionName(arg))
              : core::StrCat(
                    "argument ", i,
                    unquoted_object ? "; quote the JSON object: ---INLINE-JSON '{...}'" : "");
      return absl::InvalidArgumentError(core::StrCat(
          "with ", flag, " every option is in the JSON",
          commands.empty() ? "" : "; give only the command beside it", " (unexpected ", what, ")"));
    }
    command = std::string(arg);
  }
  std::string text;
  if (flag == kJsonFileFlag) {
    RFS_ASSIGN_OR_RETURN(text, ReadJsonFile(argv[flag_at + 1]));
  } else {
    text = argv[flag_at + 1];
  }
  RFS_ASSIGN_OR_RETURN(json::object object, ParseJsonOptions(flag, text));

  std::vector<std::string> option_words;
  std::vector<std::string> unknown;
  for (const auto& [key_view, value] : object) {
    const std::string key(key_view.data(), key_view.size());
    if (key == kCommandKey) {
      if (commands.empty()) continue;  // as the Java parser, for a tool without commands
      const json::string* named = value.if_string();
      const std::string wanted = named != nullptr ? JsonText(*named) : "";
      if (std::find(commands.begin(), commands.end(), wanted) == commands.end()) {
        return absl::InvalidArgumentError(core::StrCat(
            flag, ": \"", kCommandKey, "\" must be one of ",
            absl::StrJoin(std::vector<std::string>(commands.begin(), commands.end()), ", ")));
      }
      if (command.empty()) command = wanted;
      continue;
    }
    std::string_view bare = key;
    while (bare.starts_with('-')) bare.remove_prefix(1);
    const std::string spelled = OptionName("--" + std::string(bare));
    // The workflows send every option with its default ("solrCollections": []): one rfs refuses
    // is refused only when it asks for something.
    const bool sets_nothing = value.is_null() || (value.is_bool() && !value.get_bool()) ||
                              (value.is_array() && value.get_array().empty()) ||
                              (value.is_string() && value.get_string().empty());
    if (auto reason = RefusedJavaOption(program, spelled)) {
      if (sets_nothing) continue;
      return absl::InvalidArgumentError(
          core::StrCat(flag, ": \"", key, "\" (--", spelled, ") is not supported: ", *reason));
    }
    const std::string name =
        bare.find('=') == std::string_view::npos ? KnownOption(options, spelled) : "";
    if (name.empty()) {
      unknown.push_back(key);
      continue;
    }
    RFS_RETURN_IF_ERROR(AppendJsonOption(flag, options, key, name, value, option_words));
  }
  if (!unknown.empty()) {
    return absl::InvalidArgumentError(
        core::StrCat(flag, ": no option named ", absl::StrJoin(unknown, ", "),
                     " (keys are option names: \"target-host\" or \"targetHost\")"));
  }
  line.words_.push_back(argv[0]);
  if (!command.empty()) line.words_.push_back(command);
  line.words_.insert(line.words_.end(), std::make_move_iterator(option_words.begin()),
                     std::make_move_iterator(option_words.end()));
  return line;
}

char** ArgumentList::argv() {
  pointers_.clear();
  for (std::string& word : words_) pointers_.push_back(word.data());
  pointers_.push_back(nullptr);
  return pointers_.data();
}

std::optional<int> ParseCommandLine(int argc, char** argv, int first,
                                    const po::options_description& options, std::string_view usage,
                                    const char* program, po::variables_map& vm) {
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
