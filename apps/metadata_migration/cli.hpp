// The command line of MetadataMigration: its usage text, its options (the Java tool's names) and
// their conversion into the library's MetadataToolOptions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "rfs/migration/solr_migration.hpp"
#include "rfs/migration/tools.hpp"

#include "absl/status/statusor.h"

namespace rfs::apps::metadata {

extern const char* const kUsage;

boost::program_options::options_description Options();

struct CommandLine {
  migration::MetadataToolOptions run;
  /// --output json: one JSON document on stdout instead of text.
  bool json_output = false;
  /// --output-file: the output also goes there.
  std::string output_file;
  /// --source-version "SOLR 9": the location holds Solr backups, --snapshot-name names one.
  std::optional<migration::SolrSourceOptions> solr;
  /// Said on stderr before the run (options given that the run will not use).
  std::vector<std::string> warnings;
};

/// The run of `command` (evaluate or migrate) described by parsed options; InvalidArgument names
/// the bad option.
absl::StatusOr<CommandLine> ParseCommand(const std::string& command,
                                         const boost::program_options::variables_map& vm);

}  // namespace rfs::apps::metadata
