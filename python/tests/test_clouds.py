"""A corpus repository read in place from S3, GCS and Azure through Python (s3rver, fake-gcs-server
and Azurite, which scripts/local-cloud runs) equals the same repository read from its folder,
snapshot for snapshot and document for document."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import rfs
from conftest import REPOSITORY_ROOT, document_line

CORPUS_REPOSITORY = Path("opensearch-2.11-soft-deletes-multiseg") / "OS_2_11_Deletes_w_Soft_Multi_Seg"
LOCAL_CLOUD = REPOSITORY_ROOT / "scripts" / "local-cloud"


def start_emulator(kind: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Starts the emulator and applies the credentials it prints; returns its other settings."""
    started = subprocess.run(
        [str(LOCAL_CLOUD), "start", "--dir", str(folder), "--kind", kind],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert started.returncode == 0, started.stderr
    settings: dict[str, str] = {}
    for line in started.stdout.splitlines():
        exported = line.startswith("export ")
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip().strip("'\"")
        if exported:
            monkeypatch.setenv(key, value)
        else:
            settings[key] = value
    return settings


def all_documents(repository: rfs.Repository) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for name in repository.snapshots:
        snapshot = repository.snapshot(name)
        for index in snapshot.indices:
            out[f"{name}/{index}"] = [document_line(doc) for doc in snapshot.documents(index)]
    return out


@pytest.mark.parametrize("kind", ["s3", "gcs", "azure"])
def test_cloud_repository_reads_as_its_folder(kind, corpus_root, tmp_path, monkeypatch):
    folder = corpus_root / CORPUS_REPOSITORY
    assert folder.is_dir(), folder
    emulator = tmp_path / "emulator"
    settings = start_emulator(kind, emulator, monkeypatch)
    try:
        uploaded = subprocess.run(
            [str(LOCAL_CLOUD), "upload", "--dir", str(emulator), "--bucket", "rfs-python",
             "--from", str(folder), "--prefix", "repo"],
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert uploaded.returncode == 0, uploaded.stderr
        scheme = settings["LOCAL_CLOUD_URI_SCHEME"]
        # The endpoint the tools are given (Azurite's is path-style: .../devstoreaccount1).
        tool_options = settings.get("LOCAL_CLOUD_TOOL_OPTIONS", "").split()
        endpoint = settings["LOCAL_CLOUD_ENDPOINT"]
        for option, value in zip(tool_options, tool_options[1:]):
            if option.endswith("-endpoint"):
                endpoint = value
        options = {"endpoint": endpoint}
        if kind == "s3":
            options["region"] = "us-east-1"
        cloud = rfs.open_repository(f"{scheme}://rfs-python/repo", **options)
        local = rfs.open_repository(str(folder))
        assert cloud.snapshots == local.snapshots
        expected = all_documents(local)
        assert sum(len(docs) for docs in expected.values()) > 0
        assert all_documents(cloud) == expected
        # A prefix that holds no repository raises rfs's error, naming what is missing.
        with pytest.raises(rfs.RfsError) as missing:
            rfs.open_repository(f"{scheme}://rfs-python/nothing-here", **options)
        assert missing.value.code == "NOT_FOUND", missing.value
    finally:
        subprocess.run([str(LOCAL_CLOUD), "stop", "--dir", str(emulator)], timeout=60)
    assert os.environ.get("LOCAL_CLOUD_KIND") is None  # settings stay out of the environment
