#include "arrow_stream.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include <boost/json.hpp>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include <Python.h>

namespace rfs::python {
namespace {

using core::StrCat;

// A batch ends early once its sources would pass 16 MiB (it holds one row at least): far below
// the 2 GiB that utf8 columns' 32-bit offsets allow, and a batch of huge documents stays small
// for consumers that hold a batch whole (a Parquet row group).
constexpr size_t kMaxBatchSourceBytes = size_t{16} << 20;

std::thread::id main_thread_id;

// ---- Schemas ----------------------------------------------------------------------------------

struct SchemaHolder {
  std::string format;
  std::string name;
  std::vector<std::unique_ptr<ArrowSchema>> children;
  std::vector<ArrowSchema*> child_pointers;
};

void ReleaseSchema(ArrowSchema* schema) {
  auto* holder = static_cast<SchemaHolder*>(schema->private_data);
  for (ArrowSchema* child : holder->child_pointers) {
    if (child->release != nullptr) child->release(child);
  }
  delete holder;
  schema->release = nullptr;
}

void FillSchema(ArrowSchema* out, std::string format, std::string name, bool nullable,
                std::vector<std::unique_ptr<ArrowSchema>> children = {}) {
  auto* holder = new SchemaHolder{std::move(format), std::move(name), std::move(children), {}};
  for (auto& child : holder->children) holder->child_pointers.push_back(child.get());
  out->format = holder->format.c_str();
  out->name = holder->name.c_str();
  out->metadata = nullptr;
  out->flags = nullable ? ARROW_FLAG_NULLABLE : 0;
  out->n_children = static_cast<int64_t>(holder->child_pointers.size());
  out->children = holder->child_pointers.empty() ? nullptr : holder->child_pointers.data();
  out->dictionary = nullptr;
  out->release = ReleaseSchema;
  out->private_data = holder;
}

std::unique_ptr<ArrowSchema> NewSchema(std::string format, std::string name, bool nullable,
                                       std::vector<std::unique_ptr<ArrowSchema>> children = {}) {
  auto schema = std::make_unique<ArrowSchema>();
  FillSchema(schema.get(), std::move(format), std::move(name), nullable, std::move(children));
  return schema;
}

const char* FormatOf(ColumnKind kind) {
  switch (kind) {
    case ColumnKind::kUtf8:
      return "u";
    case ColumnKind::kInt64:
      return "l";
    case ColumnKind::kFloat64:
      return "g";
    case ColumnKind::kBool:
      return "b";
    case ColumnKind::kTimestampMillis:
      return "tsm:UTC";
  }
  return "u";
}

void FillStreamSchema(const ArrowStreamRequest& request, ArrowSchema* out) {
  std::vector<std::unique_ptr<ArrowSchema>> columns;
  columns.push_back(NewSchema("u", "_index", false));
  columns.push_back(NewSchema("u", "_id", false));
  columns.push_back(NewSchema("u", "_routing", true));
  columns.push_back(NewSchema("u", "_source", false));
  for (const auto& field : request.fields) {
    if (field.is_list) {
      std::vector<std::unique_ptr<ArrowSchema>> item;
      item.push_back(NewSchema(FormatOf(field.kind), "item", true));
      columns.push_back(NewSchema("+l", field.name, true, std::move(item)));
    } else {
      columns.push_back(NewSchema(FormatOf(field.kind), field.name, true));
    }
  }
  FillSchema(out, "+s", "", false, std::move(columns));
}

// ---- Arrays -----------------------------------------------------------------------------------

struct ArrayHolder {
  std::vector<std::shared_ptr<void>> storage;
  std::vector<const void*> buffers;
  std::vector<std::unique_ptr<ArrowArray>> children;
  std::vector<ArrowArray*> child_pointers;
};

void ReleaseArray(ArrowArray* array) {
  auto* holder = static_cast<ArrayHolder*>(array->private_data);
  for (ArrowArray* child : holder->child_pointers) {
    if (child->release != nullptr) child->release(child);
  }
  delete holder;
  array->release = nullptr;
}

template <typename Container>
const void* Keep(ArrayHolder& holder, Container&& data) {
  auto owned = std::make_shared<std::decay_t<Container>>(std::forward<Container>(data));
  const void* pointer = owned->data();
  holder.storage.push_back(std::move(owned));
  return pointer;
}

// A bitmap of one bit per row, least significant bit first, as Arrow lays them out.
class Bitmap {
 public:
  void Append(bool bit) {
    if (length_ % 8 == 0) bytes_.push_back(0);
    if (bit) bytes_.back() |= static_cast<uint8_t>(1u << (length_ % 8));
    ++length_;
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
  int64_t length_ = 0;
};

// The values of one flat column of a batch.
class FlatColumn {
 public:
  explicit FlatColumn(ColumnKind kind) : kind_(kind) {
    // Never an empty (null) values buffer: some consumers read it whatever the length.
    offsets_.push_back(0);
  }

  void AppendNull() {
    validity_.Append(false);
    ++nulls_;
    ++length_;
    switch (kind_) {
      case ColumnKind::kUtf8:
        offsets_.push_back(offsets_.back());
        break;
      case ColumnKind::kInt64:
      case ColumnKind::kTimestampMillis:
        ints_.push_back(0);
        break;
      case ColumnKind::kFloat64:
        doubles_.push_back(0);
        break;
      case ColumnKind::kBool:
        bits_.Append(false);
        break;
    }
  }
  absl::Status AppendText(std::string_view text) {
    if (text.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()) - text_.size()) {
      return absl::ResourceExhaustedError(
          "a batch's text column would pass 2 GiB: use a smaller batch_size");
    }
    text_.append(text);
    offsets_.push_back(static_cast<int32_t>(text_.size()));
    Valid();
    return absl::OkStatus();
  }
  void AppendInt(int64_t value) {
    ints_.push_back(value);
    Valid();
  }
  void AppendDouble(double value) {
    doubles_.push_back(value);
    Valid();
  }
  void AppendBool(bool value) {
    bits_.Append(value);
    Valid();
  }

  // Converts and appends `value`; null when it does not fit.
  absl::Status AppendValue(const boost::json::value& value, const ProjectedField& field) {
    switch (kind_) {
      case ColumnKind::kUtf8:
        if (auto text = ToText(value, field)) return AppendText(*text);
        break;
      case ColumnKind::kInt64:
        if (auto number = ToInt64(value)) return AppendInt(*number), absl::OkStatus();
        break;
      case ColumnKind::kFloat64:
        if (auto number = ToFloat64(value)) return AppendDouble(*number), absl::OkStatus();
        break;
      case ColumnKind::kBool:
        if (auto flag = ToBool(value)) return AppendBool(*flag), absl::OkStatus();
        break;
      case ColumnKind::kTimestampMillis:
        if (auto millis = ToTimestampMillis(value, field)) {
          return AppendInt(*millis), absl::OkStatus();
        }
        break;
    }
    AppendNull();
    return absl::OkStatus();
  }

  int64_t length() const { return length_; }

  std::unique_ptr<ArrowArray> Finish() {
    auto holder = std::make_unique<ArrayHolder>();
    holder->buffers.push_back(nulls_ > 0 ? Keep(*holder, std::move(validity_.bytes())) : nullptr);
    switch (kind_) {
      case ColumnKind::kUtf8:
        holder->buffers.push_back(Keep(*holder, std::move(offsets_)));
        // std::string's data is never null, even empty.
        holder->buffers.push_back(Keep(*holder, std::move(text_)));
        break;
      case ColumnKind::kInt64:
      case ColumnKind::kTimestampMillis:
        ints_.reserve(1);
        holder->buffers.push_back(Keep(*holder, std::move(ints_)));
        break;
      case ColumnKind::kFloat64:
        doubles_.reserve(1);
        holder->buffers.push_back(Keep(*holder, std::move(doubles_)));
        break;
      case ColumnKind::kBool:
        bits_.bytes().reserve(1);
        holder->buffers.push_back(Keep(*holder, std::move(bits_.bytes())));
        break;
    }
    return Wrap(std::move(holder), length_, nulls_);
  }

  static std::unique_ptr<ArrowArray> Wrap(std::unique_ptr<ArrayHolder> holder, int64_t length,
                                          int64_t nulls) {
    auto array = std::make_unique<ArrowArray>();
    for (auto& child : holder->children) holder->child_pointers.push_back(child.get());
    array->length = length;
    array->null_count = nulls;
    array->offset = 0;
    array->n_buffers = static_cast<int64_t>(holder->buffers.size());
    array->n_children = static_cast<int64_t>(holder->child_pointers.size());
    array->buffers = holder->buffers.data();
    array->children = holder->child_pointers.empty() ? nullptr : holder->child_pointers.data();
    array->dictionary = nullptr;
    array->release = ReleaseArray;
    array->private_data = holder.release();
    return array;
  }

 private:
  void Valid() {
    validity_.Append(true);
    ++length_;
  }

  ColumnKind kind_;
  Bitmap validity_;
  int64_t length_ = 0;
  int64_t nulls_ = 0;
  std::vector<int32_t> offsets_;
  std::string text_;
  std::vector<int64_t> ints_;
  std::vector<double> doubles_;
  Bitmap bits_;
};

// A list<kind> column: offsets into one flat column of items.
class ListColumn {
 public:
  explicit ListColumn(ColumnKind kind) : items_(kind) { offsets_.push_back(0); }

  void AppendNull() {
    validity_.Append(false);
    offsets_.push_back(offsets_.back());
    ++nulls_;
    ++length_;
  }
  absl::Status AppendValues(const std::vector<const boost::json::value*>& values,
                            const ProjectedField& field) {
    if (items_.length() + static_cast<int64_t>(values.size()) >
        std::numeric_limits<int32_t>::max()) {
      return absl::ResourceExhaustedError("a batch's list column would pass 2^31 items");
    }
    for (const auto* value : values) {
      if (auto status = items_.AppendValue(*value, field); !status.ok()) return status;
    }
    offsets_.push_back(static_cast<int32_t>(items_.length()));
    validity_.Append(true);
    ++length_;
    return absl::OkStatus();
  }

  std::unique_ptr<ArrowArray> Finish() {
    auto holder = std::make_unique<ArrayHolder>();
    holder->buffers.push_back(nulls_ > 0 ? Keep(*holder, std::move(validity_.bytes())) : nullptr);
    holder->buffers.push_back(Keep(*holder, std::move(offsets_)));
    holder->children.push_back(items_.Finish());
    return FlatColumn::Wrap(std::move(holder), length_, nulls_);
  }

 private:
  FlatColumn items_;
  Bitmap validity_;
  std::vector<int32_t> offsets_;
  int64_t length_ = 0;
  int64_t nulls_ = 0;
};

// Rows [first, last) of one of a range's text columns (`text`, each row's end offset in `ends`)
// as a utf8 array: the values stay where the decoding thread wrote them, and the array holds the
// range until the consumer releases the batch, with int32 offsets of its own. So a table of a
// whole index writes each source once, on the decoding threads, instead of copying it again into
// fresh memory on the thread that assembles the batches. A row whose `present` is 0 is null.
std::unique_ptr<ArrowArray> RangeTextColumn(const std::shared_ptr<const RowRange>& range,
                                            const std::string& text,
                                            const std::vector<size_t>& ends, size_t first,
                                            size_t last,
                                            const std::vector<uint8_t>* present = nullptr) {
  const size_t begin = first == 0 ? 0 : ends[first - 1];
  std::vector<int32_t> offsets;
  offsets.reserve(last - first + 1);
  offsets.push_back(0);
  for (size_t i = first; i < last; ++i) offsets.push_back(static_cast<int32_t>(ends[i] - begin));
  Bitmap validity;
  int64_t nulls = 0;
  if (present != nullptr) {
    for (size_t i = first; i < last; ++i) {
      validity.Append((*present)[i] != 0);
      nulls += (*present)[i] == 0 ? 1 : 0;
    }
  }
  auto holder = std::make_unique<ArrayHolder>();
  holder->storage.push_back(std::const_pointer_cast<RowRange>(range));  // kept, never written
  holder->buffers.push_back(nulls > 0 ? Keep(*holder, std::move(validity.bytes())) : nullptr);
  holder->buffers.push_back(Keep(*holder, std::move(offsets)));
  holder->buffers.push_back(text.data() + begin);  // std::string's data is never null
  return FlatColumn::Wrap(std::move(holder), static_cast<int64_t>(last - first), nulls);
}

// The columns of one record batch: rows [first, last) of one range, and the mapped fields
// projected from their sources.
class BatchColumns {
 public:
  explicit BatchColumns(const std::vector<ProjectedField>& fields)
      : fields_(fields), index_(ColumnKind::kUtf8) {
    for (const auto& field : fields) {
      if (field.is_list) {
        lists_.emplace_back(field.kind);
      } else {
        flat_.emplace_back(field.kind);
      }
    }
    parse_options_.max_depth = 1000;  // as deep as the engines' own parser allows
  }

  // Takes rows [first, last) of `range`, each in `index`.
  absl::Status Take(const std::string& index, std::shared_ptr<const RowRange> range, size_t first,
                    size_t last) {
    range_ = std::move(range);
    first_ = first;
    last_ = last;
    for (size_t i = first; i < last; ++i) RFS_RETURN_IF_ERROR(index_.AppendText(index));
    if (fields_.empty()) return absl::OkStatus();
    const RowRange& rows = *range_;
    for (size_t i = first; i < last; ++i) {
      const size_t begin = i == 0 ? 0 : rows.source_ends[i - 1];
      RFS_RETURN_IF_ERROR(AppendProjected(
          std::string_view(rows.sources).substr(begin, rows.source_ends[i] - begin)));
    }
    return absl::OkStatus();
  }

  void Finish(ArrowArray* out) {
    const RowRange& rows = *range_;
    auto holder = std::make_unique<ArrayHolder>();
    holder->buffers.push_back(nullptr);  // a struct's own validity: every row is there
    holder->children.push_back(index_.Finish());
    holder->children.push_back(RangeTextColumn(range_, rows.ids, rows.id_ends, first_, last_));
    holder->children.push_back(
        RangeTextColumn(range_, rows.routings, rows.routing_ends, first_, last_, &rows.routed));
    holder->children.push_back(
        RangeTextColumn(range_, rows.sources, rows.source_ends, first_, last_));
    size_t next_flat = 0;
    size_t next_list = 0;
    for (const auto& field : fields_) {
      holder->children.push_back(field.is_list ? lists_[next_list++].Finish()
                                               : flat_[next_flat++].Finish());
    }
    auto array = FlatColumn::Wrap(std::move(holder), static_cast<int64_t>(last_ - first_), 0);
    *out = *array;  // the struct moves; the heap copy is dropped without releasing it
    array->release = nullptr;
  }

 private:
  // The mapped fields of one source projected into their columns.
  absl::Status AppendProjected(std::string_view text) {
    boost::system::error_code ec;
    const boost::json::value source = boost::json::parse(text, ec, {}, parse_options_);
    size_t next_flat = 0;
    size_t next_list = 0;
    for (const auto& field : fields_) {
      values_.clear();
      const bool present = !ec && CollectValues(source, field, values_);
      if (field.is_list) {
        ListColumn& column = lists_[next_list++];
        if (!present) {
          column.AppendNull();
        } else {
          RFS_RETURN_IF_ERROR(column.AppendValues(values_, field));
        }
      } else {
        FlatColumn& column = flat_[next_flat++];
        // Several values do not fit one cell.
        if (values_.size() != 1) {
          column.AppendNull();
        } else {
          RFS_RETURN_IF_ERROR(column.AppendValue(*values_.front(), field));
        }
      }
    }
    return absl::OkStatus();
  }

  const std::vector<ProjectedField>& fields_;
  FlatColumn index_;
  std::shared_ptr<const RowRange> range_;
  size_t first_ = 0;
  size_t last_ = 0;
  std::vector<FlatColumn> flat_;
  std::vector<ListColumn> lists_;
  boost::json::parse_options parse_options_;
  std::vector<const boost::json::value*> values_;
};

// ---- The stream -------------------------------------------------------------------------------

struct StreamState {
  ArrowStreamRequest request;
  std::unique_ptr<IndexDocumentReader> reader;
  // The range being taken into batches, and its first row not taken yet.
  std::shared_ptr<const RowRange> pending;
  size_t pending_row = 0;
  std::string last_error;
  bool finished = false;
};

StreamState* StateOf(ArrowArrayStream* stream) {
  return static_cast<StreamState*>(stream->private_data);
}

int Fail(StreamState& state, int code, std::string message) {
  state.last_error = std::move(message);
  state.finished = true;
  state.reader.reset();  // joins its threads
  return code;
}

int GetSchema(ArrowArrayStream* stream, ArrowSchema* out) {
  FillStreamSchema(StateOf(stream)->request, out);
  return 0;
}

// Decodes the next batch into `out` (released at the end); no Python call inside. The decoding
// threads format the documents, range by range; a batch is rows of one range.
absl::Status NextBatch(StreamState& state, ArrowArray* out) {
  if (state.reader == nullptr) {
    auto opened = IndexDocumentReader::Open(state.request.documents);
    if (!opened.ok()) return opened.status();
    state.reader = *std::move(opened);
  }
  while (state.pending == nullptr || state.pending_row == state.pending->rows()) {
    state.pending.reset();
    auto next = state.reader->NextRange();
    if (!next.ok()) return next.status();
    if (*next == nullptr) {
      state.finished = true;
      state.reader.reset();
      return absl::OkStatus();
    }
    state.pending = *std::move(next);
    state.pending_row = 0;
  }
  const RowRange& range = *state.pending;
  const size_t first = state.pending_row;
  const size_t begin = first == 0 ? 0 : range.source_ends[first - 1];
  size_t last = first + 1;  // one row, whatever its size (a source is below 2 GiB)
  while (last < range.rows() && last - first < state.request.batch_size &&
         range.source_ends[last] - begin <= kMaxBatchSourceBytes) {
    ++last;
  }
  BatchColumns columns(state.request.fields);
  RFS_RETURN_IF_ERROR(columns.Take(state.reader->metadata().name, state.pending, first, last));
  state.pending_row = last;
  columns.Finish(out);
  return absl::OkStatus();
}

int GetNext(ArrowArrayStream* stream, ArrowArray* out) {
  StreamState& state = *StateOf(stream);
  out->release = nullptr;
  if (state.finished) return 0;
  if (InterruptRequested()) return Fail(state, EINTR, "interrupted (KeyboardInterrupt)");
  // Called by Python code holding the GIL: decode without it.
  PyThreadState* saved = nullptr;
  if (Py_IsInitialized() && PyGILState_Check()) saved = PyEval_SaveThread();
  absl::Status status;
  try {
    status = NextBatch(state, out);
  } catch (const std::exception& e) {
    status = absl::InternalError(StrCat("unexpected error: ", e.what()));
  }
  if (saved != nullptr) PyEval_RestoreThread(saved);
  if (!status.ok()) {
    if (out->release != nullptr) out->release(out);
    return Fail(state, EIO,
                StrCat(absl::StatusCodeToString(status.code()), ": ", status.message()));
  }
  return 0;
}

const char* GetLastError(ArrowArrayStream* stream) {
  const StreamState& state = *StateOf(stream);
  return state.last_error.empty() ? nullptr : state.last_error.c_str();
}

void ReleaseStream(ArrowArrayStream* stream) {
  StreamState* state = StateOf(stream);
  if (Py_IsInitialized() && PyGILState_Check()) {
    // Joining reader threads can take a moment; Python need not wait for it.
    PyThreadState* saved = PyEval_SaveThread();
    delete state;
    PyEval_RestoreThread(saved);
  } else {
    delete state;
  }
  stream->release = nullptr;
  stream->private_data = nullptr;
}

}  // namespace

void ExportArrowStream(const ArrowStreamRequest& request, ArrowArrayStream* out) {
  auto* state = new StreamState{request, nullptr, nullptr, 0, {}, false};
  out->get_schema = GetSchema;
  out->get_next = GetNext;
  out->get_last_error = GetLastError;
  out->release = ReleaseStream;
  out->private_data = state;
}

void RememberMainThread() { main_thread_id = std::this_thread::get_id(); }

bool InterruptRequested() {
  if (std::this_thread::get_id() != main_thread_id || !Py_IsInitialized()) return false;
  const PyGILState_STATE gil = PyGILState_Ensure();
  const bool raised = PyErr_CheckSignals() != 0;
  if (raised) {
    PyErr_Clear();
    PyErr_SetInterrupt();
  }
  PyGILState_Release(gil);
  return raised;
}

}  // namespace rfs::python
