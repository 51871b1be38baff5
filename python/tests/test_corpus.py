"""Every snapshot repository of the shared corpus read through Python equals SnapshotInspector docs,
document for document (or both refuse the snapshot)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import rfs
from conftest import REPOSITORY_ROOT, document_line, inspector_lines

CORPUS = REPOSITORY_ROOT.parent / "shared" / "corpus"


def is_repository(folder: Path) -> bool:
    """A repository index at the root: `index-N` (ES 5+, OpenSearch) or `index` (ES 1.x/2.x)."""
    if not folder.is_dir():
        return False
    return any(re.fullmatch(r"index(-\d+)?", child.name) and child.is_file() for child in folder.iterdir())


def corpus_repositories() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    found = []
    for path in sorted(CORPUS.rglob("*")):
        if is_repository(path) and not any(is_repository(parent) for parent in path.parents):
            found.append(path)
    return found


def python_lines(snapshot: rfs.Snapshot, index: str) -> tuple[list[dict], rfs.RfsError | None]:
    """The index's documents in SnapshotInspector's order (shards, then cursors), and the error
    that stopped them."""
    lines: list[dict] = []
    try:
        for doc in snapshot.documents(index):
            lines.append(document_line(doc))
    except rfs.RfsError as error:
        return lines, error
    return lines, None


REPOSITORIES = corpus_repositories()


def test_corpus_has_repositories(corpus_root):
    assert REPOSITORIES, f"no snapshot repository found under {corpus_root}"


@pytest.mark.parametrize("repo_path", REPOSITORIES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_documents_equal_snapshot_inspector(corpus_root, inspector, repo_path):
    repo = rfs.open_repository(str(repo_path))
    assert repo.snapshots, repo_path
    compared = 0
    for name in repo.snapshots:
        snapshot = repo.snapshot(name)
        for index in snapshot.indices:
            where = f"{name}/{index}"
            exit_code, expected, stderr = inspector_lines(inspector, repo_path, name, "--index", index)
            got, error = python_lines(snapshot, index)
            if exit_code == 0:
                assert error is None, f"{where}: the tool read it, Python raised {error}"
                assert got == expected, where
                compared += len(got)
            else:
                # The tool refuses the index (e.g. shard blobs left out of the corpus on purpose):
                # so does Python, after the same documents at most.
                assert error is not None, f"{where}: the tool failed ({stderr.strip()}), Python did not"
                assert error.code.isupper() and error.message
                assert got[: len(expected)] == expected, where
    assert compared > 0, f"{repo_path}: no document compared"
    print(f"{repo_path.name}: {compared} documents compared")


@pytest.mark.parametrize("repo_path", REPOSITORIES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_metadata_reads(corpus_root, repo_path):
    repo = rfs.open_repository(str(repo_path))
    for name in repo.snapshots:
        snapshot = repo.snapshot(name)
        for index in snapshot.indices:
            try:
                metadata = snapshot.index_metadata(index)
            except rfs.RfsError as error:
                assert error.code
                continue
            assert metadata["name"] == index
            assert metadata["number_of_shards"] >= 1
            assert isinstance(snapshot.settings(index), dict)
            assert isinstance(snapshot.mappings(index), dict)
            assert isinstance(snapshot.aliases(index), dict)
            shards = snapshot.shards(index)
            assert [s["shard"] for s in shards] == list(range(metadata["number_of_shards"]))
        assert isinstance(snapshot.data_streams, list)


def test_snapshot_matrix_order_and_latest(corpus_root):
    matrix = corpus_root / "snapshot-matrix-es1-es9-os1-os3"
    if not matrix.is_dir():
        pytest.skip("RFS-SKIPPED the corpus has no snapshot matrix")
    for folder in sorted(matrix.iterdir()):
        if not is_repository(folder):
            continue
        repo = rfs.open_repository(str(folder))
        # v1 was taken before v2: oldest first, whatever order the engine lists them in.
        assert repo.snapshots == ["snapshot_v1", "snapshot_v2"], folder.name
        assert repo.latest_snapshot().name == "snapshot_v2"
        docs = {d.id: d.source for d in repo.snapshot("snapshot_v2").documents("simple_index")}
        assert {k: json.loads(v) for k, v in docs.items()} == {
            "1": {"value": 42},
            "2": {"value": 99},
        }
