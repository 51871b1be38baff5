// The documents of an index as an Arrow C stream of record batches, written by rfs itself
// (arrow_c_interface.hpp; no Arrow library): columns _index, _id, _routing (nullable) and
// _source (JSON text) as utf8, then the projected fields (field_projection.hpp).
//
// Each stream reads the index from its start on its own reader, opened at the first batch, so
// every stream made from one request yields the same batches. get_next may be called from any
// thread, with or without the Python GIL: it holds the GIL only to look for a Ctrl-C between
// batches (then the batch fails with EINTR and Python raises KeyboardInterrupt once back), and
// decodes without it.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "arrow_c_interface.hpp"
#include "documents.hpp"
#include "field_projection.hpp"

namespace rfs::python {

struct ArrowStreamRequest {
  DocumentRequest documents;
  size_t batch_size = 65536;
  std::vector<ProjectedField> fields;
};

/// Fills `out` (a released or fresh stream) with a stream of its own over `request`.
void ExportArrowStream(const ArrowStreamRequest& request, ArrowArrayStream* out);

/// Called once at module import: the thread Python runs signal handlers on.
void RememberMainThread();

/// On Python's main thread: whether a signal handler raised (Ctrl-C's raises KeyboardInterrupt)
/// since Python last looked. The exception is cleared and the interrupt set again, so that Python
/// raises KeyboardInterrupt as soon as control is back in it. Takes the GIL for the look.
bool InterruptRequested();

}  // namespace rfs::python
