"""Prints what a snapshot repository holds and the first documents of each index.

    python examples/python/read_snapshot.py REPOSITORY [SNAPSHOT] [--docs N]

REPOSITORY is a folder, file:///path, s3://bucket/prefix (AWS_REGION or --region), gs:// or az://.
Needs the rfs package (pip install ./python); with pyarrow installed, each index is also read as
an Arrow table.
"""

import argparse
import json
import sys

import rfs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repository")
    parser.add_argument("snapshot", nargs="?", help="default: the newest")
    parser.add_argument("--docs", type=int, default=3, help="documents shown per index")
    parser.add_argument("--region", help="S3: the bucket's region")
    args = parser.parse_args()

    try:
        repo = rfs.open_repository(args.repository, region=args.region)
        print(f"{repo.location}: {len(repo.snapshots)} snapshot(s): {', '.join(repo.snapshots)}")
        snap = repo.snapshot(args.snapshot) if args.snapshot else repo.latest_snapshot()
        info = snap.info
        print(f"snapshot {snap.name}: {info['state']}, written by {info['source_version']}")
        for stream in snap.data_streams:
            print(f"  data stream {stream['name']}: {', '.join(stream['backing_indices'])}")
        for index in snap.indices:
            metadata = snap.index_metadata(index)
            shards = snap.shards(index)
            size = sum(s["size_in_bytes"] or 0 for s in shards)
            print(f"index {index}: {metadata['number_of_shards']} shard(s), {size} bytes, "
                  f"aliases {sorted(metadata['aliases'])}")
            try:
                with snap.documents(index) as documents:
                    for shown, doc in enumerate(documents):
                        if shown >= args.docs:
                            break
                        source = json.loads(doc.source)
                        print(f"  {doc.id} (shard {doc.shard}, cursor {doc.cursor}): "
                              f"{json.dumps(source, ensure_ascii=False)[:120]}")
            except rfs.RfsError as error:
                print(f"  documents: {error.code}: {error.message}")
                continue
            try:
                import pyarrow as pa
            except ImportError:
                continue
            table = pa.table(snap.to_arrow(index))
            print(f"  as Arrow: {table.num_rows} rows, columns {table.column_names}")
    except rfs.RfsError as error:
        print(f"read_snapshot: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
