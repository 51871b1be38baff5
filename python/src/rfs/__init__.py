"""Read Elasticsearch and OpenSearch snapshot repositories directly: snapshots, index metadata and
every live document, without a cluster.

    import rfs

    repo = rfs.open_repository("/backups/repo")          # or s3://bucket/prefix, gs://, az://
    snap = repo.latest_snapshot()
    for doc in snap.documents("my-index"):
        print(doc.id, doc.source)

    import pyarrow as pa
    table = pa.table(snap.to_arrow("my-index", fields=["title", "price"]))
"""

from ._errors import RfsError
from ._rfs import (
    ArrowSource,
    Document,
    DocumentIterator,
    Repository,
    Snapshot,
    open_repository,
)

__version__ = "0.1.0"

__all__ = [
    "ArrowSource",
    "Document",
    "DocumentIterator",
    "Repository",
    "RfsError",
    "Snapshot",
    "open_repository",
]
