// rfs._rfs: the native half of the `rfs` package. Repository, Snapshot, Document, the document
// iterator and the Arrow stream source; rfs/__init__.py re-exports them.
//
// Every call that reads the repository runs without the GIL. Errors come out as rfs.RfsError
// with the absl status code's name (NOT_FOUND, DATA_LOSS, ...) as `.code`.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "rfs/lucene/snapshot_shard.hpp"

#include "arrow_stream.hpp"
#include "documents.hpp"
#include "field_projection.hpp"
#include "repository.hpp"
#include "status_error.hpp"
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace nb = nanobind;
using namespace nb::literals;

namespace rfs::python {
namespace {

// rfs._errors.RfsError, looked up once at import (kept for the module's life).
nb::handle rfs_error_type;

// The tools' default: one decoding thread per core.
int DefaultReaderThreads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

nb::object ToPython(const boost::json::value& value);

nb::object ToPython(const boost::json::object& object) {
  nb::dict dict;
  for (const auto& [key, item] : object) dict[nb::str(key.data(), key.size())] = ToPython(item);
  return dict;
}

// Metadata JSON as Python values (dicts, lists, str, int, float, bool, None).
nb::object ToPython(const boost::json::value& value) {
  switch (value.kind()) {
    case boost::json::kind::null:
      return nb::none();
    case boost::json::kind::bool_:
      return nb::bool_(value.get_bool());
    case boost::json::kind::int64:
      return nb::steal(PyLong_FromLongLong(value.get_int64()));
    case boost::json::kind::uint64:
      return nb::steal(PyLong_FromUnsignedLongLong(value.get_uint64()));
    case boost::json::kind::double_:
      return nb::float_(value.get_double());
    case boost::json::kind::string:
      return nb::str(value.get_string().data(), value.get_string().size());
    case boost::json::kind::array: {
      nb::list list;
      for (const auto& item : value.get_array()) list.append(ToPython(item));
      return list;
    }
    case boost::json::kind::object:
      return ToPython(value.get_object());
  }
  return nb::none();
}

std::string CodeAndMessage(const absl::Status& status) {
  return std::string(absl::StatusCodeToString(status.code())) + ": " +
         std::string(status.message());
}

// ---- Document and its iterator ----------------------------------------------------------------

struct Document {
  std::string index;
  std::optional<std::string> type;
  std::string id;
  std::optional<std::string> routing;
  std::string source;
  uint64_t cursor = 0;
  int shard = 0;
};

class DocumentIterator {
 public:
  DocumentIterator(std::unique_ptr<IndexDocumentReader> reader, std::string index)
      : reader_(std::move(reader)), index_(std::move(index)) {}
  ~DocumentIterator() { Close(); }

  Document Next() {
    if (position_ < rows_.size()) return Take();
    if (done_) throw nb::stop_iteration();
    if (busy_) throw std::runtime_error("this document iterator is in use by another thread");
    // Ctrl-C between batches: stop the reader threads before Python sees KeyboardInterrupt.
    if (PyErr_CheckSignals() != 0) {
      Close();
      throw nb::python_error();
    }
    rows_.clear();
    position_ = 0;
    absl::Status status;
    busy_ = true;
    try {
      nb::gil_scoped_release released;
      status = reader_->ReadBatch(kBatchRows, kBatchBytes, rows_);
    } catch (...) {
      busy_ = false;
      Close();
      throw;
    }
    busy_ = false;
    if (!status.ok()) {
      Close();
      throw StatusError(status);
    }
    if (rows_.empty()) {
      Close();
      throw nb::stop_iteration();
    }
    return Take();
  }

  void Close() {
    done_ = true;
    if (reader_ == nullptr || busy_) return;
    skipped_ = reader_->skipped();
    if (PyGILState_Check()) {
      nb::gil_scoped_release released;
      reader_.reset();  // joins the decoding threads
    } else {
      reader_.reset();
    }
  }

  uint64_t returned() const { return returned_; }
  const SkippedCounts& skipped() const {
    return reader_ != nullptr ? reader_->skipped() : skipped_;
  }

 private:
  static constexpr size_t kBatchRows = 1024;
  static constexpr size_t kBatchBytes = size_t{8} << 20;

  Document Take() {
    ++returned_;
    DocumentRow& row = rows_[position_++];
    return Document{index_,
                    std::move(row.type),
                    std::move(row.id),
                    std::move(row.routing),
                    std::move(row.source),
                    row.cursor,
                    row.shard};
  }

  std::unique_ptr<IndexDocumentReader> reader_;
  std::string index_;
  std::vector<DocumentRow> rows_;
  size_t position_ = 0;
  bool done_ = false;
  bool busy_ = false;
  uint64_t returned_ = 0;
  SkippedCounts skipped_;
};

// ---- Snapshot and Arrow source ----------------------------------------------------------------

class ArrowSource {
 public:
  explicit ArrowSource(ArrowStreamRequest request) : request_(std::move(request)) {}

  nb::object Stream(nb::object requested_schema) const {
    auto* stream = new ArrowArrayStream{};
    ExportArrowStream(request_, stream);
    PyObject* capsule = PyCapsule_New(stream, "arrow_array_stream", [](PyObject* capsule) {
      auto* owned =
          static_cast<ArrowArrayStream*>(PyCapsule_GetPointer(capsule, "arrow_array_stream"));
      if (owned == nullptr) {
        PyErr_Clear();
        return;
      }
      // A consumer that imported the stream has moved it out and released ours.
      if (owned->release != nullptr) owned->release(owned);
      delete owned;
    });
    if (capsule == nullptr) {
      stream->release(stream);
      delete stream;
      throw nb::python_error();
    }
    return nb::steal(capsule);
  }

  const std::string& index() const { return request_.documents.index; }
  size_t batch_size() const { return request_.batch_size; }
  std::vector<std::string> columns() const {
    std::vector<std::string> names = {"_index", "_id", "_routing", "_source"};
    for (const auto& field : request_.fields) names.push_back(field.name);
    return names;
  }

 private:
  ArrowStreamRequest request_;
};

class Snapshot {
 public:
  Snapshot(std::shared_ptr<const OpenRepository> repository, const snapshot::SnapshotEntry* entry)
      : repository_(std::move(repository)), entry_(entry) {}

  const std::string& name() const { return entry_->name; }
  const std::string& uuid() const { return entry_->uuid; }
  const std::string& state() const { return entry_->state; }

  std::vector<std::string> indices() const {
    nb::gil_scoped_release released;
    return repository_->repository().IndicesIn(*entry_);
  }

  nb::object Info() const {
    snapshot::SnapshotInfo info;
    std::string source_version;
    {
      nb::gil_scoped_release released;
      info = ValueOrThrow(repository_->repository().ReadSnapshotInfo(*entry_));
      if (auto version = repository_->repository().DetectSourceVersion(*entry_); version.ok()) {
        source_version = version->ToString();
      }
    }
    nb::dict out;
    out["name"] = info.name;
    out["uuid"] = info.uuid;
    out["state"] = info.state;
    out["reason"] = info.reason;
    out["source_version"] = source_version;
    out["indices"] = info.indices;
    out["data_streams"] = info.data_streams;
    out["include_global_state"] = info.include_global_state;
    out["start_time_millis"] = info.start_time;
    out["end_time_millis"] = info.end_time;
    out["total_shards"] = info.total_shards;
    out["successful_shards"] = info.successful_shards;
    nb::list failures;
    for (const auto& failure : info.failures) {
      nb::dict item;
      item["index"] = failure.index;
      item["shard"] = failure.shard;
      item["reason"] = failure.reason;
      item["status"] = failure.status;
      failures.append(item);
    }
    out["failures"] = failures;
    return out;
  }

  snapshot::IndexMetadata Metadata(const std::string& index) const {
    nb::gil_scoped_release released;
    return ValueOrThrow(repository_->repository().ReadIndexMetadata(*entry_, index));
  }

  nb::object IndexMetadata(const std::string& index) const {
    const snapshot::IndexMetadata metadata = Metadata(index);
    nb::dict out;
    out["name"] = metadata.name;
    out["number_of_shards"] = metadata.number_of_shards;
    out["number_of_replicas"] = metadata.number_of_replicas;
    out["state"] = metadata.state;
    out["version_created"] = metadata.version_created;
    out["settings"] = ToPython(metadata.settings);
    out["mappings"] = ToPython(metadata.mappings);
    out["aliases"] = ToPython(metadata.aliases);
    return out;
  }

  nb::object Shards(const std::string& index) const {
    const snapshot::IndexMetadata metadata = Metadata(index);
    std::vector<absl::StatusOr<snapshot::ShardSnapshot>> shards;
    {
      nb::gil_scoped_release released;
      for (int shard = 0; shard < metadata.number_of_shards; ++shard) {
        shards.push_back(repository_->repository().ReadShardSnapshot(*entry_, index, shard));
      }
    }
    nb::list out;
    for (int shard = 0; shard < metadata.number_of_shards; ++shard) {
      nb::dict item;
      item["shard"] = shard;
      const auto& read = shards[static_cast<size_t>(shard)];
      if (read.ok()) {
        item["files"] = read->files.size();
        item["size_in_bytes"] = read->total_file_bytes();
        item["start_time_millis"] = read->start_time;
        item["error"] = nb::none();
      } else {
        item["files"] = nb::none();
        item["size_in_bytes"] = nb::none();
        item["start_time_millis"] = nb::none();
        item["error"] = CodeAndMessage(read.status());
      }
      out.append(item);
    }
    return out;
  }

  nb::object DataStreams() const {
    std::vector<snapshot::DataStream> streams;
    {
      nb::gil_scoped_release released;
      streams = ValueOrThrow(repository_->repository().ReadDataStreams(*entry_));
    }
    nb::list out;
    for (const auto& stream : streams) {
      nb::dict item;
      item["name"] = stream.name;
      item["timestamp_field"] = stream.timestamp_field;
      item["backing_indices"] = stream.backing_indices;
      out.append(item);
    }
    return out;
  }

  DocumentRequest Request(const std::string& index, std::optional<int> shard, uint64_t from_cursor,
                          bool rebuild_sourceless, std::optional<int> reader_threads) const {
    DocumentRequest request;
    request.repository = repository_;
    request.snapshot = entry_;
    request.index = index;
    request.shard = shard;
    request.from_cursor = from_cursor;
    request.rebuild_sourceless = rebuild_sourceless;
    request.reader_threads = reader_threads.value_or(DefaultReaderThreads());
    return request;
  }

  DocumentIterator* Documents(const std::string& index, std::optional<int> shard,
                              uint64_t from_cursor, bool rebuild_sourceless,
                              std::optional<int> reader_threads) const {
    DocumentRequest request =
        Request(index, shard, from_cursor, rebuild_sourceless, reader_threads);
    std::unique_ptr<IndexDocumentReader> reader;
    {
      nb::gil_scoped_release released;
      reader = ValueOrThrow(IndexDocumentReader::Open(std::move(request)));
    }
    std::string name = reader->metadata().name;
    return new DocumentIterator(std::move(reader), std::move(name));
  }

  ArrowSource* ToArrow(const std::string& index, int64_t batch_size,
                       std::optional<std::vector<std::string>> fields, std::optional<int> shard,
                       bool rebuild_sourceless, std::optional<int> reader_threads) const {
    if (batch_size < 1 || batch_size > (int64_t{1} << 30)) {
      throw StatusError(absl::InvalidArgumentError("batch_size takes 1 to 2^30 rows"));
    }
    ArrowStreamRequest request;
    request.documents = Request(index, shard, 0, rebuild_sourceless, reader_threads);
    request.batch_size = static_cast<size_t>(batch_size);
    {
      nb::gil_scoped_release released;
      // Checks the index, shard and source storage now, so that errors come from to_arrow().
      auto reader = ValueOrThrow(IndexDocumentReader::Open(request.documents));
      if (fields) {
        const boost::json::object mapping = lucene::DescribeIndexSource(reader->metadata()).mapping;
        request.fields = ValueOrThrow(ResolveFields(mapping, *fields));
      }
    }
    return new ArrowSource(std::move(request));
  }

 private:
  std::shared_ptr<const OpenRepository> repository_;
  const snapshot::SnapshotEntry* entry_;
};

class Repository {
 public:
  explicit Repository(std::shared_ptr<const OpenRepository> repository)
      : repository_(std::move(repository)) {}

  const std::string& location() const { return repository_->location(); }
  const std::vector<std::string>& snapshots() const { return repository_->snapshot_names(); }
  std::string layout() const { return snapshot::LayoutName(repository_->repository().layout()); }
  const std::vector<std::string>& warnings() const { return repository_->repository().warnings(); }

  Snapshot* Find(const std::string& name) const {
    const snapshot::SnapshotEntry* entry = nullptr;
    {
      nb::gil_scoped_release released;
      entry = ValueOrThrow(repository_->repository().FindSnapshot(name));
    }
    return new Snapshot(repository_, entry);
  }

  Snapshot* Latest() const {
    const snapshot::SnapshotEntry* entry = nullptr;
    {
      nb::gil_scoped_release released;
      entry = ValueOrThrow(repository_->repository().LatestSnapshot());
    }
    return new Snapshot(repository_, entry);
  }

 private:
  std::shared_ptr<const OpenRepository> repository_;
};

Repository* Open(const std::string& path_or_uri, std::optional<std::string> region,
                 std::optional<std::string> endpoint, std::optional<std::string> profile) {
  RepositoryOptions options{std::move(region), std::move(endpoint), std::move(profile)};
  std::shared_ptr<const OpenRepository> opened;
  {
    nb::gil_scoped_release released;
    opened = ValueOrThrow(OpenRepository::Open(path_or_uri, options));
  }
  return new Repository(std::move(opened));
}

std::string Repr(const Document& doc) {
  std::string text = "Document(index=" + doc.index + ", id=" + doc.id;
  if (doc.routing) text += ", routing=" + *doc.routing;
  text += ", shard=" + std::to_string(doc.shard) + ", cursor=" + std::to_string(doc.cursor) + ")";
  return text;
}

}  // namespace
}  // namespace rfs::python

NB_MODULE(_rfs, m) {
  using namespace rfs::python;
  m.doc() = "Native reader of Elasticsearch and OpenSearch snapshot repositories (see rfs).";
  RememberMainThread();

  rfs_error_type = nb::module_::import_("rfs._errors").attr("RfsError").inc_ref();
  nb::register_exception_translator([](const std::exception_ptr& thrown, void*) {
    try {
      std::rethrow_exception(thrown);
    } catch (const StatusError& error) {
      const absl::Status& status = error.status();
      nb::object instance = rfs_error_type(std::string(absl::StatusCodeToString(status.code())),
                                           std::string(status.message()));
      PyErr_SetObject(rfs_error_type.ptr(), instance.ptr());
    }
  });

  nb::class_<Document>(m, "Document",
                       "One live document: where it is (index, shard, cursor), its _id, _routing, "
                       "mapping type and _source.")
      .def_ro("index", &Document::index, "The index name.")
      .def_ro("id", &Document::id, "The document's _id.")
      .def_ro("routing", &Document::routing, "The custom _routing, or None.")
      .def_ro("type", &Document::type,
              "The mapping type of indices created with types (before Elasticsearch 7), else None.")
      .def_prop_ro(
          "source",
          [](const Document& doc) { return nb::bytes(doc.source.data(), doc.source.size()); },
          "The _source as one line of UTF-8 JSON (SMILE, CBOR and YAML sources converted).")
      .def_ro("cursor", &Document::cursor,
              "The shard-global document number: documents(index, shard, from_cursor=cursor) "
              "starts at this document.")
      .def_ro("shard", &Document::shard, "The shard number.")
      .def("__repr__", &Repr);

  nb::class_<DocumentIterator>(m, "DocumentIterator",
                               "The documents of an index in shard and cursor order. Decoding runs "
                               "on reader threads without the GIL; close() (or the end, an error, "
                               "or a KeyboardInterrupt) stops them.")
      .def("__iter__", [](nb::handle self) { return self; })
      .def("__next__", &DocumentIterator::Next)
      .def("close", &DocumentIterator::Close, "Stops reading and joins the reader threads.")
      .def("__enter__", [](nb::handle self) { return self; })
      .def("__exit__",
           [](DocumentIterator& self, nb::args) {
             self.Close();
             return false;
           })
      .def_prop_ro("returned", &DocumentIterator::returned, "Documents returned so far.")
      .def_prop_ro(
          "skipped_without_source",
          [](const DocumentIterator& self) { return self.skipped().without_source; },
          "Live documents left out so far because they have no _source.")
      .def_prop_ro(
          "skipped_unconvertible",
          [](const DocumentIterator& self) { return self.skipped().unconvertible; },
          "Live documents left out so far because their _source has no JSON form.");

  nb::class_<ArrowSource>(
      m, "ArrowSource",
      "An index's documents as Arrow record batches (the Arrow PyCapsule stream protocol). Every "
      "__arrow_c_stream__() call starts a new read from the first document.")
      .def("__arrow_c_stream__", &ArrowSource::Stream, "requested_schema"_a = nb::none(),
           "A new ArrowArrayStream in a capsule named 'arrow_array_stream'. The schema is fixed; "
           "requested_schema is not applied (consumers cast).")
      .def_prop_ro("index", &ArrowSource::index, "The index read.")
      .def_prop_ro("batch_size", &ArrowSource::batch_size, "Rows per record batch (at most).")
      .def_prop_ro("columns", &ArrowSource::columns, "The column names, in order.");

  nb::class_<Snapshot>(m, "Snapshot", "One snapshot of a repository.")
      .def_prop_ro("name", &Snapshot::name)
      .def_prop_ro("uuid", &Snapshot::uuid)
      .def_prop_ro("state", &Snapshot::state,
                   "SUCCESS, PARTIAL, FAILED, ... as the repository index lists it ('' when not "
                   "listed).")
      .def_prop_ro("indices", &Snapshot::indices, "The names of the snapshot's indices, sorted.")
      .def_prop_ro("info", &Snapshot::Info,
                   "The snapshot's SnapshotInfo (state, times, shards, failures) and the version "
                   "that wrote it, as a dict.")
      .def_prop_ro("data_streams", &Snapshot::DataStreams,
                   "The snapshot's data streams: dicts with name, timestamp_field and "
                   "backing_indices (oldest first).")
      .def("index_metadata", &Snapshot::IndexMetadata, "index"_a,
           "The index's metadata as a dict: name, number_of_shards, number_of_replicas, state, "
           "version_created, settings (flat), mappings (by type), aliases.")
      .def(
          "settings",
          [](const Snapshot& self, const std::string& index) {
            return ToPython(self.Metadata(index).settings);
          },
          "index"_a, "The index's settings, flat ({'index.number_of_shards': '1', ...}).")
      .def(
          "mappings",
          [](const Snapshot& self, const std::string& index) {
            return ToPython(self.Metadata(index).mappings);
          },
          "index"_a, "The index's mappings by mapping type ({'_doc': {'properties': ...}}).")
      .def(
          "aliases",
          [](const Snapshot& self, const std::string& index) {
            return ToPython(self.Metadata(index).aliases);
          },
          "index"_a, "The index's aliases: name -> alias metadata.")
      .def("shards", &Snapshot::Shards, "index"_a,
           "Each shard of the index in the snapshot: dicts with shard, files, size_in_bytes, "
           "start_time_millis, and error (None, or why the snapshot holds no data for it).")
      .def("documents", &Snapshot::Documents, "index"_a, "shard"_a = nb::none(),
           "from_cursor"_a = 0, "rebuild_sourceless"_a = false, nb::kw_only(),
           "reader_threads"_a = nb::none(),
           "The live documents of an index (one shard when `shard` is given, from `from_cursor`), "
           "as SnapshotInspector docs writes them: documents without _source, or whose _source "
           "has no JSON form, are left out (counted on the iterator). An index that keeps no "
           "complete _source raises RfsError FAILED_PRECONDITION unless rebuild_sourceless. "
           "reader_threads: decoding threads (default one per core; 0 decodes on the calling "
           "thread).")
      .def("to_arrow", &Snapshot::ToArrow, "index"_a, "batch_size"_a = 65536,
           "fields"_a = nb::none(), nb::kw_only(), "shard"_a = nb::none(),
           "rebuild_sourceless"_a = false, "reader_threads"_a = nb::none(),
           "The documents of an index as an Arrow stream source (see ArrowSource): utf8 columns "
           "_index, _id, _routing (nullable) and _source (JSON text), then one typed column per "
           "mapped field of `fields` (keyword/text -> utf8, long/integer/short/byte -> int64, "
           "double/float -> float64, date -> timestamp[ms, UTC], boolean -> bool; 'name[]' for a "
           "list of them; other mapping types -> their JSON text). A value that does not fit the "
           "column's type is null, as are several values in a scalar column. Errors while "
           "streaming reach the consumer through the stream (as its own error type, carrying "
           "the status code name and message).")
      .def("__repr__", [](const Snapshot& self) { return "Snapshot(name=" + self.name() + ")"; });

  nb::class_<Repository>(m, "Repository", "An open snapshot repository.")
      .def_prop_ro("location", &Repository::location, "The path or URI it was opened with.")
      .def_prop_ro("snapshots", &Repository::snapshots,
                   "The snapshot names, oldest first (by start time).")
      .def_prop_ro("layout", &Repository::layout, "The repository layout family.")
      .def_prop_ro("warnings", &Repository::warnings, "What opening noticed and worked around.")
      .def("snapshot", &Repository::Find, "name"_a,
           "The snapshot with this name (RfsError NOT_FOUND listing the names otherwise).")
      .def("latest_snapshot", &Repository::Latest,
           "The newest snapshot by start time (RfsError FAILED_PRECONDITION when that is "
           "ambiguous).")
      .def("__repr__",
           [](const Repository& self) { return "Repository(" + self.location() + ")"; });

  m.def("open_repository", &Open, "path_or_uri"_a, nb::kw_only(), "region"_a = nb::none(),
        "endpoint"_a = nb::none(), "profile"_a = nb::none(),
        "Opens a snapshot repository: a folder, file:///path, s3://bucket/prefix (region=, "
        "endpoint= for a custom store, profile= for an AWS profile), gs://bucket/prefix "
        "(endpoint=) or az://container/prefix (endpoint=; the account from the environment).");
}
