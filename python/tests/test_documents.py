"""Documents of generated repositories: what the generator wrote, resumption, errors, damage,
KeyboardInterrupt."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import rfs
from conftest import document_line, inspector_lines


def expected_lines(generated: Path) -> list[dict]:
    text = (generated / "expected-docs.ndjson").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line]


@pytest.fixture(scope="module")
def routed(generate) -> Path:
    """Two indices of two shards, updates, deletes and custom routing."""
    return generate("--indices", "2", "--shards", "2", "--docs", "300", "--updates", "20",
                    "--deletes", "10", "--routing-fraction", "0.3", "--segments", "2")


def test_documents_are_the_generated_ones(routed):
    snapshot = rfs.open_repository(str(routed / "repo")).latest_snapshot()
    assert snapshot.indices == ["index-0", "index-1"]
    got = []
    for index in snapshot.indices:
        with snapshot.documents(index) as documents:
            docs = list(documents)
            assert documents.skipped_without_source == 0
            assert documents.returned == len(docs)
        # Shards in order, cursors ascending within a shard.
        assert [(d.shard, d.cursor) for d in docs] == sorted((d.shard, d.cursor) for d in docs)
        # The generator lists documents by index, shard, then id bytes.
        docs.sort(key=lambda d: (d.shard, d.id.encode("utf-8")))
        got += [document_line(d) for d in docs]
    assert got == expected_lines(routed)
    assert any("_routing" in line for line in got)


def test_documents_equal_snapshot_inspector(routed, inspector):
    snapshot = rfs.open_repository(str(routed / "repo")).latest_snapshot()
    code, expected, stderr = inspector_lines(inspector, routed / "repo", snapshot.name)
    assert code == 0, stderr
    got = [document_line(d) for index in snapshot.indices for d in snapshot.documents(index)]
    assert got == expected


@pytest.mark.parametrize("threads", [0, 1, 3])
def test_reader_threads_change_nothing(routed, threads):
    snapshot = rfs.open_repository(str(routed / "repo")).latest_snapshot()
    baseline = [(d.id, d.source, d.cursor) for d in snapshot.documents("index-1", reader_threads=0)]
    got = [(d.id, d.source, d.cursor) for d in snapshot.documents("index-1", reader_threads=threads)]
    assert got == baseline


def test_one_shard_and_resumption(routed):
    snapshot = rfs.open_repository(str(routed / "repo")).latest_snapshot()
    for shard in (0, 1):
        docs = list(snapshot.documents("index-0", shard))
        assert docs and all(d.shard == shard for d in docs)
        for position in (0, 1, len(docs) // 2, len(docs) - 1):
            resumed = list(snapshot.documents("index-0", shard, from_cursor=docs[position].cursor))
            assert [(d.id, d.source, d.cursor) for d in resumed] == [
                (d.id, d.source, d.cursor) for d in docs[position:]
            ]
        past_end = list(snapshot.documents("index-0", shard, from_cursor=docs[-1].cursor + 1))
        assert past_end == []
    both = [d.id for d in snapshot.documents("index-0")]
    assert both == [d.id for d in snapshot.documents("index-0", 0)] + [
        d.id for d in snapshot.documents("index-0", 1)
    ]


def test_usage_errors(routed):
    repo = rfs.open_repository(str(routed / "repo"))
    snapshot = repo.latest_snapshot()
    with pytest.raises(rfs.RfsError) as error:
        snapshot.documents("index-0", from_cursor=3)
    assert error.value.code == "INVALID_ARGUMENT"
    with pytest.raises(rfs.RfsError) as error:
        snapshot.documents("index-0", 2)
    assert error.value.code == "INVALID_ARGUMENT" and "out of range" in error.value.message
    with pytest.raises(rfs.RfsError) as error:
        snapshot.documents("no-such-index")
    assert error.value.code == "NOT_FOUND"
    with pytest.raises(rfs.RfsError) as error:
        repo.snapshot("no-such-snapshot")
    assert error.value.code == "NOT_FOUND" and "snap-1" in error.value.message
    with pytest.raises(rfs.RfsError) as error:
        rfs.open_repository(str(routed / "no-such-folder"))
    assert error.value.code == "NOT_FOUND"
    with pytest.raises(rfs.RfsError) as error:
        rfs.open_repository("ftp://host/path")
    assert error.value.code == "INVALID_ARGUMENT"
    with pytest.raises(rfs.RfsError) as error:
        rfs.open_repository(str(routed / "repo"), region="us-east-1")
    assert error.value.code == "INVALID_ARGUMENT"


def test_s3_needs_a_region(monkeypatch, tmp_path):
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    with pytest.raises(rfs.RfsError) as error:
        rfs.open_repository("s3://bucket/prefix")
    assert error.value.code == "INVALID_ARGUMENT" and "region" in error.value.message


def test_metadata(routed):
    repo = rfs.open_repository(str(routed / "repo"))
    assert repo.snapshots == ["snap-1"]
    snapshot = repo.snapshot("snap-1")
    assert snapshot.state == "SUCCESS"
    info = snapshot.info
    assert info["name"] == "snap-1" and info["source_version"].startswith("ES 7")
    metadata = snapshot.index_metadata("index-0")
    assert metadata["number_of_shards"] == 2
    assert snapshot.settings("index-0")["index.number_of_shards"] == "2"
    mappings = snapshot.mappings("index-0")
    assert "properties" in next(iter(mappings.values()))
    assert isinstance(snapshot.aliases("index-0"), dict)
    shards = snapshot.shards("index-0")
    assert [s["shard"] for s in shards] == [0, 1]
    assert all(s["error"] is None and s["files"] > 0 and s["size_in_bytes"] > 0 for s in shards)
    assert snapshot.data_streams == []


def test_sourceless_index_needs_rebuild(generate):
    generated = generate("--docs", "40", "--source-enabled", "false")
    snapshot = rfs.open_repository(str(generated / "repo")).latest_snapshot()
    with pytest.raises(rfs.RfsError) as error:
        snapshot.documents("index-0")
    assert error.value.code == "FAILED_PRECONDITION"
    rebuilt = list(snapshot.documents("index-0", rebuild_sourceless=True))
    expected = json.loads((generated / "expected.json").read_text())
    assert len(rebuilt) == expected["indices"]["index-0"]["docs"]
    assert all(json.loads(d.source) for d in rebuilt)


def copy_repository(generated: Path, tmp_path: Path) -> Path:
    target = tmp_path / "repo"
    shutil.copytree(generated / "repo", target)
    return target


def largest_data_blob(repo: Path) -> Path:
    blobs = [p for p in (repo / "indices").rglob("__*") if p.is_file()]
    return max(blobs, key=lambda p: p.stat().st_size)


def read_everything(repo: Path) -> None:
    snapshot = rfs.open_repository(str(repo)).latest_snapshot()
    for index in snapshot.indices:
        for doc in snapshot.documents(index):
            json.loads(doc.source)


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "missing"])
def test_damaged_shard_raises_rfs_error(routed, tmp_path, damage):
    repo = copy_repository(routed, tmp_path)
    blob = largest_data_blob(repo)
    data = bytearray(blob.read_bytes())
    if damage == "flip":
        for offset in range(len(data) // 3, len(data) // 3 + 64):
            data[offset] ^= 0x5A
        blob.write_bytes(bytes(data))
    elif damage == "truncate":
        blob.write_bytes(bytes(data[: len(data) // 2]))
    elif damage == "empty":
        blob.write_bytes(b"")
    else:
        blob.unlink()
    with pytest.raises(rfs.RfsError) as error:
        read_everything(repo)
    assert error.value.code in {"DATA_LOSS", "NOT_FOUND", "OUT_OF_RANGE", "INVALID_ARGUMENT",
                                "UNIMPLEMENTED", "FAILED_PRECONDITION"}


@pytest.mark.parametrize("blob_glob", ["index-*", "snap-*.dat", "indices/*/meta-*.dat"])
def test_damaged_metadata_raises_rfs_error(routed, tmp_path, blob_glob):
    repo = copy_repository(routed, tmp_path)
    for blob in repo.glob(blob_glob):
        data = bytearray(blob.read_bytes())
        middle = len(data) // 2
        data[middle : middle + 8] = b"\xff\x00\xfe\x01garb"
        blob.write_bytes(bytes(data))
    with pytest.raises(rfs.RfsError):
        read_everything(repo)


def test_damaged_arrow_stream_fails_in_the_consumer(routed, tmp_path):
    pa = pytest.importorskip("pyarrow")
    repo = copy_repository(routed, tmp_path)
    blob = largest_data_blob(repo)
    data = bytearray(blob.read_bytes())
    for offset in range(len(data) // 3, len(data) // 3 + 64):
        data[offset] ^= 0x5A
    blob.write_bytes(bytes(data))
    snapshot = rfs.open_repository(str(repo)).latest_snapshot()
    failures = 0
    for index in snapshot.indices:
        try:
            pa.table(snapshot.to_arrow(index))
        except (OSError, pa.ArrowException) as error:
            assert "DATA_LOSS" in str(error) or "_LOSS" in str(error) or ":" in str(error)
            failures += 1
    assert failures >= 1


INTERRUPT_SCRIPT = textwrap.dedent(
    """
    import _thread, collections, os, sys, threading, time
    import rfs

    def threads():
        return len(os.listdir("/proc/self/task"))

    snapshot = rfs.open_repository(sys.argv[1]).latest_snapshot()
    before = threads()
    documents = snapshot.documents("index-0", reader_threads=2)
    next(documents)  # the reader threads run

    def interrupt():
        time.sleep(0.02)
        _thread.interrupt_main()

    timer = threading.Thread(target=interrupt)
    timer.start()
    try:
        # Consumed in C: only the iterator's own look for signals between batches can stop it.
        collections.deque(documents, maxlen=0)
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted after", documents.returned, flush=True)
    timer.join()
    print("threads", threads() - before, flush=True)
    """
)


def test_keyboard_interrupt_stops_the_reader(generate, tmp_path):
    generated = generate("--docs", "60000", "--doc-size", "400", "--write-docs", "false")
    script = tmp_path / "interrupt.py"
    script.write_text(INTERRUPT_SCRIPT)
    run = subprocess.run([sys.executable, str(script), str(generated / "repo")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("interrupted after"), run.stdout
    assert int(lines[0].split()[-1]) < 60000
    # No reader thread outlives the interrupt.
    assert lines[1] == "threads 0", run.stdout


MEMORY_SCRIPT = textwrap.dedent(
    """
    import sys
    import rfs

    def peak_kib():
        # This process's own peak (getrusage's ru_maxrss keeps pytest's across exec).
        status = open("/proc/self/status").read()
        return int(status.split("VmHWM:")[1].split()[0])

    repository = rfs.open_repository(sys.argv[1])
    snapshot = repository.latest_snapshot()
    before = peak_kib()
    docs = source = 0
    for doc in snapshot.documents(snapshot.indices[0]):
        docs += 1
        source += len(doc.source)
    print(docs, source, (peak_kib() - before) // 1024)
    """
)


def test_memory_stays_bounded_while_reading_a_large_shard(generate, tmp_path):
    """Reading every document of a 240 MB shard: the interpreter's peak grows by the reader's
    buffers (batches, read-ahead, decompression), within the workers' budget, not by the shard."""
    generated = generate("--docs", "12000", "--doc-size", "20000", "--segments", "3",
                         "--write-docs", "false")
    script = tmp_path / "memory.py"
    script.write_text(MEMORY_SCRIPT)
    run = subprocess.run([sys.executable, str(script), str(generated / "repo")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    docs, source, growth_mib = (int(field) for field in run.stdout.split())
    print(f"read {docs} documents, {source} bytes of _source: peak RSS +{growth_mib} MiB")
    assert docs == 12000
    assert source > 220_000_000, source  # the shard is far larger than the bound below
    # The bound is the workers' memory budget (256 MiB): a reader that kept what it read would
    # pass it by the shard's size.
    assert growth_mib < 256, f"peak RSS grew by {growth_mib} MiB while reading {source} bytes"
