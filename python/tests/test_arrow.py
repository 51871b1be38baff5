"""The Arrow stream read by pyarrow, Polars, DuckDB and pandas; Parquet and NDJSON export; typed
projection of mapped fields."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

import pytest

import rfs
from conftest import document_line

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

METADATA_SCHEMA = [
    ("_index", pa.string(), False),
    ("_id", pa.string(), False),
    ("_routing", pa.string(), True),
    ("_source", pa.string(), False),
]


@pytest.fixture(scope="module")
def generated(generate) -> Path:
    return generate("--shards", "3", "--docs", "500", "--deletes", "25", "--routing-fraction", "0.2")


@pytest.fixture(scope="module")
def snapshot(generated) -> rfs.Snapshot:
    return rfs.open_repository(str(generated / "repo")).latest_snapshot()


def documents_as_rows(snapshot: rfs.Snapshot, index: str) -> list[dict]:
    return [
        {"_index": d.index, "_id": d.id, "_routing": d.routing, "_source": d.source.decode("utf-8")}
        for d in snapshot.documents(index)
    ]


def test_pyarrow_reads_every_document_in_batches(snapshot):
    source = snapshot.to_arrow("index-0", batch_size=64)
    assert source.columns == ["_index", "_id", "_routing", "_source"]
    reader = pa.RecordBatchReader.from_stream(source)
    assert [(f.name, f.type, f.nullable) for f in reader.schema] == METADATA_SCHEMA
    batches = list(reader)
    expected = documents_as_rows(snapshot, "index-0")
    assert len(expected) == 475
    # A batch is rows of one decoding range (2,048 documents, so here one shard): every batch is
    # full but each shard's last.
    shard_rows = [sum(1 for _ in snapshot.documents("index-0", shard=s)) for s in range(3)]
    assert sum(shard_rows) == 475
    expected_sizes = [size for rows in shard_rows for size in [64] * (rows // 64) + [rows % 64] if size]
    assert [b.num_rows for b in batches] == expected_sizes
    assert pa.Table.from_batches(batches).to_pylist() == expected
    assert any(row["_routing"] is not None for row in expected)


def test_every_call_gives_a_fresh_stream(snapshot):
    source = snapshot.to_arrow("index-0", batch_size=100)
    first = pa.table(source)
    second = pa.table(source)
    assert first.num_rows == second.num_rows == 475
    assert first.equals(second)
    # Two capsules alive at once read independently.
    a = pa.RecordBatchReader.from_stream(source)
    b = pa.RecordBatchReader.from_stream(source)
    assert a.read_next_batch().equals(b.read_next_batch())
    assert a.read_all().num_rows == b.read_all().num_rows == 375


def test_capsule_protocol(snapshot):
    source = snapshot.to_arrow("index-0")
    capsule = source.__arrow_c_stream__()
    assert type(capsule).__name__ == "PyCapsule"
    assert "arrow_array_stream" in repr(capsule)
    del capsule  # released unread, by its destructor
    assert source.__arrow_c_stream__(requested_schema=None) is not None


def test_one_shard(snapshot):
    whole = pa.table(snapshot.to_arrow("index-0")).to_pylist()
    parts = []
    for shard in range(3):
        parts += pa.table(snapshot.to_arrow("index-0", shard=shard)).to_pylist()
    assert parts == whole


def test_polars(snapshot):
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame(snapshot.to_arrow("index-0", batch_size=50))
    assert frame.height == 475
    assert frame.columns == ["_index", "_id", "_routing", "_source"]
    assert all(dtype == pl.String for dtype in frame.dtypes)
    assert frame["_id"].to_list() == [d.id for d in snapshot.documents("index-0")]


def test_duckdb_scans_twice(snapshot):
    duckdb = pytest.importorskip("duckdb")
    documents = snapshot.to_arrow("index-0", batch_size=128)
    connection = duckdb.connect()
    # A self-join makes DuckDB open the stream twice.
    count = connection.execute(
        "SELECT count(*) FROM documents a JOIN documents b ON a._id = b._id"
    ).fetchone()[0]
    assert count == 475
    # DuckDB finds `documents` among this function's local variables (a replacement scan).
    described = connection.execute("DESCRIBE SELECT * FROM documents").fetchall()
    types = {row[0]: row[1] for row in described}
    assert types == {"_index": "VARCHAR", "_id": "VARCHAR", "_routing": "VARCHAR", "_source": "VARCHAR"}
    routed = connection.execute(
        "SELECT count(*) FROM documents WHERE _routing IS NOT NULL"
    ).fetchone()[0]
    assert routed == sum(1 for d in snapshot.documents("index-0") if d.routing is not None)


def test_pandas(snapshot):
    pytest.importorskip("pandas")
    frame = pa.table(snapshot.to_arrow("index-0")).to_pandas()
    assert len(frame) == 475
    assert list(frame.columns) == ["_index", "_id", "_routing", "_source"]


def test_bad_requests_raise_rfs_error(snapshot):
    with pytest.raises(rfs.RfsError) as error:
        snapshot.to_arrow("no-such-index")
    assert error.value.code == "NOT_FOUND"
    with pytest.raises(rfs.RfsError) as error:
        snapshot.to_arrow("index-0", batch_size=0)
    assert error.value.code == "INVALID_ARGUMENT"
    with pytest.raises(rfs.RfsError) as error:
        snapshot.to_arrow("index-0", fields=["no_such_field"])
    assert error.value.code == "INVALID_ARGUMENT" and "no_such_field" in error.value.message
    with pytest.raises(rfs.RfsError) as error:
        snapshot.to_arrow("index-0", fields=["_id"])
    assert error.value.code == "INVALID_ARGUMENT"


def run_export(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rfs", "export", *args], capture_output=True,
                          text=True)


def test_parquet_export_reads_back_equal(generated, snapshot, tmp_path):
    out = tmp_path / "parquet"
    run = run_export("--format", "parquet", "--repo", str(generated / "repo"), "--snapshot",
                     snapshot.name, "--index", "index-0", "--out", str(out))
    assert run.returncode == 0, run.stderr
    table = pq.read_table(out / "index-0.parquet")
    assert table.equals(pa.table(snapshot.to_arrow("index-0")))
    # The three shards' batches make one row group of the default batch_size, not one per batch.
    assert pq.ParquetFile(out / "index-0.parquet").metadata.num_row_groups == 1
    per_shard = tmp_path / "per-shard"
    run = run_export("--format", "parquet", "--repo", str(generated / "repo"), "--snapshot",
                     snapshot.name, "--index", "index-0", "--out", str(per_shard), "--per-shard",
                     "--fields", "counter,title")
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in per_shard.iterdir()) == [f"index-0-{s}.parquet" for s in range(3)]
    rows = sum(pq.read_table(p).num_rows for p in per_shard.iterdir())
    assert rows == 475
    assert pq.read_table(per_shard / "index-0-0.parquet").schema.field("counter").type == pa.int64()


def test_ndjson_export_equals_the_documents(generated, snapshot, tmp_path):
    out = tmp_path / "ndjson"
    run = run_export("--format", "ndjson", "--repo", str(generated / "repo"), "--out", str(out))
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in (out / "index-0.ndjson").read_text("utf-8").splitlines()]
    assert lines == [document_line(d) for d in snapshot.documents("index-0")]


def test_export_reports_errors(generated, tmp_path):
    run = run_export("--format", "ndjson", "--repo", str(generated / "repo"), "--snapshot", "nope",
                     "--out", str(tmp_path))
    assert run.returncode == 1
    assert "NOT_FOUND" in run.stderr


MAPPING = {
    "properties": {
        "name": {"type": "keyword"},
        "title": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
        "count": {"type": "long"},
        "small": {"type": "integer"},
        "price": {"type": "double"},
        "ratio": {"type": "float"},
        "created": {"type": "date"},
        "seen": {"type": "date", "format": "epoch_second"},
        "flag": {"type": "boolean"},
        "tags": {"type": "keyword"},
        "scores": {"type": "long"},
        "user": {"properties": {"age": {"type": "short"}}},
        "location": {"type": "geo_point"},
    }
}

DOCUMENTS = [
    {"_id": "a", "_source": {"name": "alpha", "title": "Alpha", "count": 5, "small": 1, "price": 1.5,
                             "ratio": 0.25, "created": "2024-01-02T03:04:05.678Z", "seen": 1700000000,
                             "flag": True, "tags": ["x", "y"], "scores": [1, 2, 3],
                             "user": {"age": 30}, "location": {"lat": 1.5, "lon": 2.5}}},
    {"_id": "b", "_source": {"name": 7, "count": "12", "price": "2.5", "created": 1700000000000,
                             "flag": "false", "tags": "z", "scores": 4, "user.age": 31,
                             "created_extra": 1}},
    {"_id": "c", "_source": {"name": None, "count": 1.5, "price": "abc", "created": "not a date",
                             "flag": "yes", "tags": [], "scores": [5, "six"], "user": {"age": "old"}}},
    {"_id": "d", "_source": {"count": 9223372036854775807, "created": "2024-02-30",
                             "seen": "1700000001", "small": 2.0}},
    {"_id": "e", "_source": {"created": "2024-03-04T05:06:07+02:00", "title": "Echo",
                             "user": [{"age": 1}, {"age": 2}]}},
]

UTC = datetime.timezone.utc


def test_typed_projection_of_a_mapped_index(generate):
    generated = generate(
        "--shards", "1",
        files={
            "mapping-file": json.dumps(MAPPING),
            "docs-file": "\n".join(json.dumps(d) for d in DOCUMENTS) + "\n",
        },
    )
    snapshot = rfs.open_repository(str(generated / "repo")).latest_snapshot()
    fields = ["name", "title", "title.raw", "count", "small", "price", "ratio", "created", "seen",
              "flag", "tags", "user.age", "location"]
    table = pa.table(snapshot.to_arrow("index-0", batch_size=2, fields=fields))
    types = {f.name: f.type for f in table.schema}
    assert types["name"] == pa.string() and types["title.raw"] == pa.string()
    assert types["count"] == pa.int64() and types["small"] == pa.int64()
    assert types["price"] == pa.float64() and types["ratio"] == pa.float64()
    assert types["created"] == pa.timestamp("ms", tz="UTC")
    assert types["flag"] == pa.bool_()
    assert table.schema.names == ["_index", "_id", "_routing", "_source", *fields]
    # Batches of the size asked for.
    assert [b.num_rows for b in table.to_batches()] == [2, 2, 1]
    assert table.num_rows == 5
    rows = {row["_id"]: row for row in table.to_pylist()}
    a, b, c, d, e = (rows[k] for k in "abcde")
    assert a["name"] == "alpha" and b["name"] == "7" and c["name"] is None and d["name"] is None
    assert a["title"] == "Alpha" and a["title.raw"] == "Alpha" and e["title.raw"] == "Echo"
    assert a["count"] == 5 and b["count"] == 12 and c["count"] is None
    assert d["count"] == 9223372036854775807
    assert a["small"] == 1 and d["small"] == 2
    assert a["price"] == 1.5 and b["price"] == 2.5 and c["price"] is None
    assert a["ratio"] == 0.25
    assert a["created"] == datetime.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    assert b["created"] == datetime.datetime.fromtimestamp(1700000000, tz=UTC)
    assert c["created"] is None and d["created"] is None
    assert e["created"] == datetime.datetime(2024, 3, 4, 3, 6, 7, tzinfo=UTC)
    assert a["seen"] == datetime.datetime.fromtimestamp(1700000000, tz=UTC)
    assert d["seen"] == datetime.datetime.fromtimestamp(1700000001, tz=UTC)
    assert a["flag"] is True and b["flag"] is False and c["flag"] is None
    assert a["user.age"] == 30 and b["user.age"] == 31 and c["user.age"] is None
    # Several values do not fit a scalar column; a list column keeps them.
    assert e["user.age"] is None and a["tags"] is None and b["tags"] == "z"
    assert json.loads(a["location"]) == {"lat": 1.5, "lon": 2.5}


def test_list_columns(generate):
    generated = generate(
        "--shards", "1",
        files={
            "mapping-file": json.dumps(MAPPING),
            "docs-file": "\n".join(json.dumps(d) for d in DOCUMENTS) + "\n",
        },
    )
    snapshot = rfs.open_repository(str(generated / "repo")).latest_snapshot()
    table = pa.table(snapshot.to_arrow("index-0", fields=["tags[]", "scores[]", "user.age[]"]))
    assert table.schema.field("tags").type == pa.list_(pa.string())
    assert table.schema.field("scores").type == pa.list_(pa.int64())
    rows = {row["_id"]: row for row in table.to_pylist()}
    assert rows["a"]["tags"] == ["x", "y"] and rows["b"]["tags"] == ["z"]
    assert rows["c"]["tags"] == [] and rows["d"]["tags"] is None
    assert rows["a"]["scores"] == [1, 2, 3] and rows["b"]["scores"] == [4]
    assert rows["c"]["scores"] == [5, None]
    assert rows["e"]["user.age"] == [1, 2] and rows["a"]["user.age"] == [30]
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame(snapshot.to_arrow("index-0", fields=["tags[]", "count", "created"]))
    assert frame.schema["tags"] == pl.List(pl.String)
    assert frame.schema["count"] == pl.Int64
    assert frame.schema["created"] == pl.Datetime("ms", "UTC")
    duckdb = pytest.importorskip("duckdb")
    typed = snapshot.to_arrow("index-0", fields=["count", "flag", "created", "tags[]"])
    described = dict(
        row[:2] for row in duckdb.connect().execute("DESCRIBE SELECT * FROM typed").fetchall()
    )
    assert described["count"] == "BIGINT" and described["flag"] == "BOOLEAN"
    assert described["created"] == "TIMESTAMP WITH TIME ZONE"
    assert described["tags"] == "VARCHAR[]"


ARROW_INTERRUPT_SCRIPT = """
import _thread, os, sys, threading, time
import pyarrow as pa
import rfs

def threads():
    return len(os.listdir("/proc/self/task"))

snapshot = rfs.open_repository(sys.argv[1]).latest_snapshot()
before = threads()
reader = pa.RecordBatchReader.from_stream(snapshot.to_arrow("index-0", batch_size=500,
                                                            reader_threads=2))
reader.read_next_batch()  # the reader threads run

def interrupt():
    time.sleep(0.02)
    _thread.interrupt_main()

timer = threading.Thread(target=interrupt)
timer.start()
outcome = "finished"
try:
    try:
        reader.read_all()
    except OSError as error:
        # The stream ends with this error; KeyboardInterrupt follows as soon as Python runs again.
        assert "interrupted" in str(error), error
        time.sleep(5)
        outcome = "no KeyboardInterrupt"
except KeyboardInterrupt:
    outcome = "interrupted"
timer.join()
print(outcome, flush=True)
print("threads", threads() - before, flush=True)
"""


def test_keyboard_interrupt_ends_the_arrow_stream(generate, tmp_path):
    generated = generate("--docs", "60000", "--doc-size", "400", "--write-docs", "false")
    script = tmp_path / "arrow_interrupt.py"
    script.write_text(ARROW_INTERRUPT_SCRIPT)
    run = subprocess.run([sys.executable, str(script), str(generated / "repo")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["interrupted", "threads 0"], run.stdout + run.stderr
