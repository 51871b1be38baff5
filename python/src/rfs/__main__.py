"""python -m rfs export: a snapshot's documents as Parquet or NDJSON files.

    python -m rfs export --format parquet --repo /backups/repo --snapshot snap-1 \\
        --index logs --out exported/ [--per-shard] [--fields status,@timestamp]

One file per index (INDEX.parquet, INDEX.ndjson), or with --per-shard one per shard
(INDEX-SHARD.parquet). NDJSON lines are SnapshotInspector docs' lines:
{"_index", "_type" (typed indices only), "_id", "_routing" (when set), "_source"}.
Parquet files hold the columns of Snapshot.to_arrow (Parquet needs pyarrow).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Iterable, Optional

from . import RfsError, Snapshot, open_repository


def _output_name(index: str, shard: Optional[int], extension: str) -> str:
    # Index names never hold a slash; a damaged repository might, and must not pick the folder.
    if "/" in index or index in (".", "..") or "\0" in index:
        raise RfsError("INVALID_ARGUMENT", f"index name {index!r} cannot name a file")
    stem = index if shard is None else f"{index}-{shard}"
    return f"{stem}.{extension}"


def _ndjson_line(doc) -> bytes:
    head = {"_index": doc.index}
    if doc.type is not None:
        head["_type"] = doc.type
    head["_id"] = doc.id
    if doc.routing is not None:
        head["_routing"] = doc.routing
    text = json.dumps(head, ensure_ascii=False, separators=(",", ":"))
    return text[:-1].encode("utf-8") + b',"_source":' + doc.source + b"}\n"


def _export_ndjson(snapshot: Snapshot, index: str, shard: Optional[int], path: str,
                   args: argparse.Namespace) -> int:
    count = 0
    with open(path, "wb") as out:
        with snapshot.documents(index, shard, rebuild_sourceless=args.rebuild_sourceless,
                                reader_threads=args.reader_threads) as documents:
            for doc in documents:
                out.write(_ndjson_line(doc))
                count += 1
    return count


_ROW_GROUP_BYTES = 64 << 20


def _record_batch_reader(source):
    import pyarrow as pa

    if hasattr(pa.RecordBatchReader, "from_stream"):
        return pa.RecordBatchReader.from_stream(source)
    return pa.RecordBatchReader._import_from_c_capsule(source.__arrow_c_stream__())


def _export_parquet(snapshot: Snapshot, index: str, shard: Optional[int], path: str,
                    args: argparse.Namespace) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise SystemExit("rfs export: --format parquet needs pyarrow (pip install pyarrow)")
    source = snapshot.to_arrow(index, batch_size=args.batch_size, fields=args.fields, shard=shard,
                               rebuild_sourceless=args.rebuild_sourceless,
                               reader_threads=args.reader_threads)
    reader = _record_batch_reader(source)
    count = 0
    # A batch is rows of one decoding range (up to 2,048 documents): batches are gathered into
    # row groups of batch_size rows or a little more (or 64 MiB), not a row group per batch.
    pending, pending_rows, pending_bytes = [], 0, 0
    with pq.ParquetWriter(path, reader.schema) as writer:
        for batch in reader:
            pending.append(batch)
            pending_rows += batch.num_rows
            pending_bytes += batch.nbytes
            count += batch.num_rows
            if pending_rows >= args.batch_size or pending_bytes >= _ROW_GROUP_BYTES:
                writer.write_table(pa.Table.from_batches(pending), row_group_size=pending_rows)
                pending, pending_rows, pending_bytes = [], 0, 0
        if pending:
            writer.write_table(pa.Table.from_batches(pending), row_group_size=pending_rows)
    return count


def _shards(snapshot: Snapshot, index: str, per_shard: bool) -> Iterable[Optional[int]]:
    if not per_shard:
        return [None]
    return range(snapshot.index_metadata(index)["number_of_shards"])


def export(args: argparse.Namespace) -> int:
    repo = open_repository(args.repo, region=args.region, endpoint=args.endpoint,
                           profile=args.profile)
    snapshot = repo.snapshot(args.snapshot) if args.snapshot else repo.latest_snapshot()
    indices = args.index or snapshot.indices
    os.makedirs(args.out, exist_ok=True)
    write = _export_parquet if args.format == "parquet" else _export_ndjson
    total = 0
    for index in indices:
        for shard in _shards(snapshot, index, args.per_shard):
            path = os.path.join(args.out, _output_name(index, shard, args.format))
            count = write(snapshot, index, shard, path, args)
            print(f"rfs export: {path}: {count} documents", file=sys.stderr)
            total += count
    print(f"rfs export: {total} documents from snapshot {snapshot.name}", file=sys.stderr)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rfs",
                                     description="Read Elasticsearch/OpenSearch snapshot repositories.")
    commands = parser.add_subparsers(dest="command", required=True)
    exporter = commands.add_parser("export", help="write a snapshot's documents as files",
                                   description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    exporter.add_argument("--format", choices=["parquet", "ndjson"], required=True)
    exporter.add_argument("--repo", required=True,
                          help="the repository: a folder, file:///path, s3://, gs:// or az://")
    exporter.add_argument("--snapshot", help="the snapshot name (default: the newest)")
    exporter.add_argument("--index", action="append",
                          help="an index to export (repeatable; default: every index)")
    exporter.add_argument("--out", required=True, help="the folder the files go to")
    exporter.add_argument("--per-shard", action="store_true",
                          help="one file per shard (INDEX-SHARD.EXT) instead of one per index")
    exporter.add_argument("--fields", type=lambda text: [f for f in text.split(",") if f],
                          help="Parquet: mapped fields as typed columns, comma-separated "
                               "('name[]' for a list column)")
    exporter.add_argument("--batch-size", type=int, default=65536,
                          help="Parquet: rows per record batch (default 65536)")
    exporter.add_argument("--rebuild-sourceless", action="store_true",
                          help="rebuild documents of indices that keep no complete _source")
    exporter.add_argument("--reader-threads", type=int, default=None,
                          help="decoding threads per shard (default: one per core)")
    exporter.add_argument("--region", help="S3: the bucket's region")
    exporter.add_argument("--endpoint", help="a custom S3, GCS or Azure endpoint")
    exporter.add_argument("--profile", help="S3: the AWS profile")
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return export(args)
    except RfsError as error:
        print(f"rfs export: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        # pyarrow reports an error of the stream (a damaged shard) as an OSError.
        print(f"rfs export: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
