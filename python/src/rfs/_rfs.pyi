"""Type stubs of the native module (rfs re-exports everything here)."""

from types import TracebackType
from typing import Any, Iterator, Literal, Optional

class Document:
    """One live document."""

    @property
    def index(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def routing(self) -> Optional[str]: ...
    @property
    def type(self) -> Optional[str]:
        """The mapping type of indices created with types (before Elasticsearch 7), else None."""
    @property
    def source(self) -> bytes:
        """The _source as one line of UTF-8 JSON."""
    @property
    def cursor(self) -> int:
        """The shard-global document number (resume with from_cursor=cursor)."""
    @property
    def shard(self) -> int: ...

class DocumentIterator(Iterator[Document]):
    """The documents of an index in shard and cursor order, decoded on reader threads."""

    def __iter__(self) -> DocumentIterator: ...
    def __next__(self) -> Document: ...
    def close(self) -> None:
        """Stops reading and joins the reader threads."""
    def __enter__(self) -> DocumentIterator: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> Literal[False]: ...
    @property
    def returned(self) -> int: ...
    @property
    def skipped_without_source(self) -> int: ...
    @property
    def skipped_unconvertible(self) -> int: ...

class ArrowSource:
    """An index's documents as Arrow record batches (Arrow PyCapsule stream protocol).

    Columns: _index, _id, _routing (nullable), _source (JSON text), all utf8, then the projected
    fields. A value that does not fit its column's type is null.
    """

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        """A new stream, read from the first document, in a capsule named 'arrow_array_stream'."""
    @property
    def index(self) -> str: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def columns(self) -> list[str]: ...

class Snapshot:
    """One snapshot of a repository."""

    @property
    def name(self) -> str: ...
    @property
    def uuid(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def indices(self) -> list[str]:
        """The names of the snapshot's indices, sorted."""
    @property
    def info(self) -> dict[str, Any]: ...
    @property
    def data_streams(self) -> list[dict[str, Any]]: ...
    def index_metadata(self, index: str) -> dict[str, Any]: ...
    def settings(self, index: str) -> dict[str, Any]: ...
    def mappings(self, index: str) -> dict[str, Any]: ...
    def aliases(self, index: str) -> dict[str, Any]: ...
    def shards(self, index: str) -> list[dict[str, Any]]: ...
    def documents(
        self,
        index: str,
        shard: Optional[int] = None,
        from_cursor: int = 0,
        rebuild_sourceless: bool = False,
        *,
        reader_threads: Optional[int] = None,
    ) -> DocumentIterator:
        """The live documents of an index (a cursor needs a shard)."""
    def to_arrow(
        self,
        index: str,
        batch_size: int = 65536,
        fields: Optional[list[str]] = None,
        *,
        shard: Optional[int] = None,
        rebuild_sourceless: bool = False,
        reader_threads: Optional[int] = None,
    ) -> ArrowSource:
        """The documents of an index as Arrow record batches of at most batch_size rows (fewer
        at the end of a decoding range of 2,048 documents, or once a batch's sources reach 16 MiB).

        fields: mapped fields projected into typed columns (keyword/text -> utf8,
        long/integer/short/byte -> int64, double/float -> float64, date -> timestamp[ms, UTC],
        boolean -> bool; "name[]" for a list column). A value that does not fit is null.
        """

class Repository:
    """An open snapshot repository."""

    @property
    def location(self) -> str: ...
    @property
    def snapshots(self) -> list[str]:
        """Snapshot names, oldest first."""
    @property
    def layout(self) -> str: ...
    @property
    def warnings(self) -> list[str]: ...
    def snapshot(self, name: str) -> Snapshot: ...
    def latest_snapshot(self) -> Snapshot: ...

def open_repository(
    path_or_uri: str,
    *,
    region: Optional[str] = None,
    endpoint: Optional[str] = None,
    profile: Optional[str] = None,
) -> Repository:
    """Opens a folder, file:///path, s3://bucket/prefix, gs://bucket/prefix or az://container/prefix."""
