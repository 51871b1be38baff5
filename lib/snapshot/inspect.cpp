#include "rfs/snapshot/inspect.hpp"

#include <boost/json.hpp>

#include "rfs/core/json_text.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

namespace rfs::snapshot {

using core::StrCat;
namespace json = boost::json;

namespace {

// Every snapshot of the repository, each checked as a migration of it would be (its entry in the
// repository index against its own snap-*.dat): a damaged one is named so, never listed as sound.
void ListSnapshots(const SnapshotRepository& repository, json::object& out) {
  json::array snapshots;
  json::array damaged;
  for (const auto& s : repository.snapshots()) {
    json::object entry{{"name", s.name}, {"uuid", s.uuid}, {"state", s.state}};
    std::string problem;
    auto found = repository.FindSnapshot(s.name);
    if (!found.ok()) {
      problem = std::string(found.status().message());
    } else if (*found != &s) {
      problem = StrCat("the repository index lists two snapshots named '", s.name, "'");
    }
    if (!problem.empty()) {
      entry["damaged"] = problem;
      damaged.emplace_back(s.name);
    }
    snapshots.push_back(std::move(entry));
  }
  out["snapshots"] = std::move(snapshots);
  out["damaged_snapshots"] = std::move(damaged);
}

// The indices of `snapshot`: their metadata and the bytes of their shards' files.
absl::StatusOr<json::array> ListIndices(const SnapshotRepository& repository,
                                        const SnapshotEntry& snapshot) {
  json::array indices;
  for (const auto& name : repository.IndicesIn(snapshot)) {
    RFS_ASSIGN_OR_RETURN(auto meta, repository.ReadIndexMetadata(snapshot, name));
    uint64_t shard_bytes = 0;
    json::array missing;
    for (int shard = 0; shard < meta.number_of_shards; ++shard) {
      auto files = repository.ReadShardSnapshot(snapshot, name, shard);
      if (absl::IsNotFound(files.status()) || absl::IsUnimplemented(files.status())) {
        missing.push_back(
            json::object{{"shard", shard}, {"reason", std::string(files.status().message())}});
        continue;
      }
      if (!files.ok()) return files.status();
      shard_bytes += files->total_file_bytes();
    }
    indices.push_back(json::object{{"name", meta.name},
                                   {"number_of_shards", meta.number_of_shards},
                                   {"number_of_replicas", meta.number_of_replicas},
                                   {"state", meta.state},
                                   {"shard_file_bytes", shard_bytes},
                                   {"shards_missing", std::move(missing)},
                                   {"aliases", meta.aliases},
                                   {"settings", meta.settings},
                                   {"mappings", meta.mappings}});
  }

  return indices;
}

// The templates and data streams of `snapshot`'s global metadata (none when it was taken without
// the global state).
absl::Status AddGlobalMetadata(const SnapshotRepository& repository, const SnapshotEntry& snapshot,
                               json::object& out) {
  json::object templates{
      {"legacy", json::object()}, {"component", json::object()}, {"index", json::object()}};
  json::array data_streams;
  auto global = repository.ReadGlobalMetadata(snapshot);
  if (global.ok()) {
    templates["legacy"] = global->legacy_templates;
    templates["component"] = global->component_templates;
    templates["index"] = global->index_templates;
    for (const DataStream& stream : global->data_streams) {
      json::array backing;
      for (const auto& b : stream.backing_indices) backing.emplace_back(b);
      data_streams.push_back(json::object{{"name", stream.name},
                                          {"timestamp_field", stream.timestamp_field},
                                          {"backing_indices", std::move(backing)}});
    }
  } else if (!absl::IsNotFound(global.status())) {
    // Snapshots without global state have no meta-<uuid>.dat; anything else is an error.
    return global.status();
  }
  out["templates"] = std::move(templates);
  out["data_streams"] = std::move(data_streams);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<json::object> InspectRepository(const SnapshotRepository& repository,
                                               const std::optional<std::string>& snapshot_name) {
  const SnapshotEntry* chosen = nullptr;
  if (snapshot_name) {
    RFS_ASSIGN_OR_RETURN(chosen, repository.FindSnapshot(*snapshot_name));
  } else {
    RFS_ASSIGN_OR_RETURN(chosen, repository.LatestSnapshot());
  }
  json::object out;
  out["repository"] = repository.repo().description();
  out["layout"] = LayoutName(repository.layout());
  RFS_ASSIGN_OR_RETURN(auto version, repository.DetectSourceVersion(*chosen));
  out["source_version"] = version.ToString();

  ListSnapshots(repository, out);
  json::array warnings;
  for (const auto& w : repository.warnings()) warnings.emplace_back(w);
  out["warnings"] = std::move(warnings);

  RFS_ASSIGN_OR_RETURN(auto info, repository.ReadSnapshotInfo(*chosen));
  json::array failures;
  for (const auto& f : info.failures) {
    failures.push_back(json::object{
        {"index", f.index}, {"shard", f.shard}, {"reason", f.reason}, {"status", f.status}});
  }
  out["snapshot"] = json::object{{"name", info.name},
                                 {"uuid", chosen->uuid},
                                 {"state", info.state},
                                 {"version_id", info.version_id},
                                 {"start_time", info.start_time},
                                 {"end_time", info.end_time},
                                 {"include_global_state", info.include_global_state},
                                 {"failures", std::move(failures)}};

  RFS_ASSIGN_OR_RETURN(out["indices"], ListIndices(repository, *chosen));
  RFS_RETURN_IF_ERROR(AddGlobalMetadata(repository, *chosen, out));
  return out;
}

namespace {

std::string Str(const json::value& v) {
  if (v.is_string()) return std::string(v.get_string());
  return core::JsonText(v);
}

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return buffer;
}

}  // namespace

std::string FormatInspection(const json::object& in) {
  std::string out;
  out += StrCat("Repository:     ", Str(in.at("repository")), " (", Str(in.at("layout")), ")\n");
  out += StrCat("Source version: ", Str(in.at("source_version")), "\n");
  if (const auto* warnings = in.if_contains("warnings"); warnings && warnings->is_array()) {
    for (const auto& w : warnings->get_array()) out += StrCat("Warning:        ", Str(w), "\n");
  }
  out += "Snapshots:\n";
  for (const auto& s : in.at("snapshots").get_array()) {
    const auto& o = s.get_object();
    out += StrCat("  ", Str(o.at("name")), "  uuid=", Str(o.at("uuid")),
                  "  state=", Str(o.at("state")), "\n");
    if (const auto* damaged = o.if_contains("damaged")) {
      out += StrCat("    DAMAGED: ", Str(*damaged), "\n");
    }
  }
  const auto& snap = in.at("snapshot").get_object();
  out += StrCat("\nSnapshot ", Str(snap.at("name")), " (", Str(snap.at("state")), ")\n");
  for (const auto& f : snap.at("failures").get_array()) {
    out += StrCat("  failed shard: ", core::JsonText(f), "\n");
  }
  out += "Indices:\n";
  for (const auto& i : in.at("indices").get_array()) {
    const auto& o = i.get_object();
    out += StrCat("  ", Str(o.at("name")), ": ", Str(o.at("number_of_shards")), " shard(s), ",
                  HumanBytes(o.at("shard_file_bytes").to_number<uint64_t>()), " of shard files\n");
    for (const auto& m : o.at("shards_missing").get_array()) {
      out += StrCat("    missing shard: ", core::JsonText(m), "\n");
    }
    out += StrCat("    aliases:  ", core::JsonText(o.at("aliases")), "\n");
    out += StrCat("    settings: ", core::JsonText(o.at("settings")), "\n");
    out += StrCat("    mappings: ", core::JsonText(o.at("mappings")), "\n");
  }
  const auto& templates = in.at("templates").get_object();
  out += "Templates:\n";
  for (const char* kind : {"legacy", "component", "index"}) {
    const auto& t = templates.at(kind).get_object();
    out += StrCat("  ", kind, ": ", t.size(), t.empty() ? "\n" : "");
    if (!t.empty()) {
      std::string names;
      for (const auto& [name, body] : t) names += StrCat(names.empty() ? "" : ", ", name);
      out += StrCat(" (", names, ")\n");
      for (const auto& [name, body] : t) {
        // Bodies can be long; the text form shows what each template applies to (--json has all).
        const json::value* patterns =
            body.is_object() ? body.get_object().if_contains("index_patterns") : nullptr;
        out +=
            StrCat("    ", name, ": index_patterns ",
                   patterns != nullptr ? core::JsonText(*patterns) : std::string("(none)"), "\n");
      }
    }
  }
  if (const auto* streams = in.if_contains("data_streams"); streams && streams->is_array()) {
    out += StrCat("Data streams: ", streams->get_array().size(), "\n");
    for (const auto& s : streams->get_array()) {
      const auto& o = s.get_object();
      std::string backing;
      for (const auto& b : o.at("backing_indices").get_array()) {
        backing += StrCat(backing.empty() ? "" : ", ", Str(b));
      }
      out += StrCat("  ", Str(o.at("name")), ": timestamp ", Str(o.at("timestamp_field")),
                    ", backing indices ", backing, "\n");
    }
  }
  return out;
}

}  // namespace rfs::snapshot
