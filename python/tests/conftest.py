"""Fixtures shared by the package's tests: the corpus, SnapshotInspector, generated repositories.

Environment (scripts/test sets them):
  RFS_SNAPSHOT_INSPECTOR   the SnapshotInspector tool to compare with
  RFS_GENERATE_SNAPSHOT    the fixture generator (test/fixtures), which writes small repositories
  RFS_REQUIRE_CORPUS=1     a missing ../shared/corpus fails the corpus tests instead of skipping
Without the tools, the tests that need them are skipped with "RFS-SKIPPED <reason>".
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]


def skip(reason: str) -> None:
    pytest.skip(f"RFS-SKIPPED {reason}")


def _tool(variable: str, name: str) -> str | None:
    given = os.environ.get(variable)
    if given:
        return given
    build = Path(os.environ.get("RFS_BUILD_DIR", REPOSITORY_ROOT / "build" / "asan"))
    if not build.is_absolute():
        build = REPOSITORY_ROOT / build
    candidate = build / "bin" / name
    return str(candidate) if candidate.exists() else None


@pytest.fixture(scope="module")
def corpus_root() -> Path:
    root = REPOSITORY_ROOT.parent / "shared" / "corpus"
    if root.is_dir():
        return root.resolve()
    if os.environ.get("RFS_REQUIRE_CORPUS") == "1":
        pytest.fail(f"RFS_REQUIRE_CORPUS=1 but there is no corpus at {root}")
    skip(f"no corpus at {root}")


@pytest.fixture(scope="module")
def inspector() -> str:
    tool = _tool("RFS_SNAPSHOT_INSPECTOR", "SnapshotInspector")
    if tool is None or not os.access(tool, os.X_OK):
        skip("SnapshotInspector is not built (set RFS_SNAPSHOT_INSPECTOR)")
    return tool


class Generator:
    """Writes repositories with the fixture generator, each option list once per test run."""

    # Repositories made so far in this test run, by option list, shared by every test module.
    made: dict[tuple[str, ...], Path] = {}

    def __init__(self, script: str, base: Path) -> None:
        self.script = script
        self.base = base

    def __call__(self, *args: str, files: dict[str, str] | None = None) -> Path:
        """Generates a repository; `files` are written first and passed as --NAME PATH options.

        Returns the output folder (repo/, expected.json, expected-docs.ndjson).
        """
        key = tuple(args) + tuple(sorted((files or {}).items()))
        if key in self.made:
            return self.made[key]
        out = self.base / f"repo-{len(self.made)}"
        out.mkdir(parents=True, exist_ok=True)
        command = [self.script, "--out", str(out / "generated"), *args]
        for option, text in (files or {}).items():
            path = out / f"{option}.input"
            path.write_text(text, encoding="utf-8")
            command += [f"--{option}", str(path)]
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0:
            pytest.fail(f"{shlex.join(command)} failed:\n{run.stdout}\n{run.stderr}")
        self.made[key] = out / "generated"
        return out / "generated"


@pytest.fixture(scope="module")
def generate(tmp_path_factory) -> Generator:
    script = _tool("RFS_GENERATE_SNAPSHOT", "rfs-generate-snapshot")
    if script is None or shutil.which("java") is None:
        skip("the fixture generator is not built (set RFS_GENERATE_SNAPSHOT)")
    return Generator(script, tmp_path_factory.getbasetemp() / "generated")


def inspector_lines(inspector: str, repo: Path, snapshot: str, *extra: str) -> tuple[int, list[dict], str]:
    """SnapshotInspector docs: its exit code, the documents it wrote (parsed), its stderr."""
    # The tools take RFS_<OPTION> variables as options and refuse the others (such as ours).
    environment = {k: v for k, v in os.environ.items() if not k.startswith("RFS_")}
    run = subprocess.run(
        [inspector, "docs", "--snapshot-local-dir", str(repo), "--snapshot-name", snapshot, *extra],
        capture_output=True,
        env=environment,
    )
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    return run.returncode, lines, run.stderr.decode("utf-8", "replace")


def document_line(doc) -> dict:
    """A document as SnapshotInspector docs writes it (parsed)."""
    line = {"_index": doc.index}
    if doc.type is not None:
        line["_type"] = doc.type
    line["_id"] = doc.id
    if doc.routing is not None:
        line["_routing"] = doc.routing
    line["_source"] = json.loads(doc.source)
    return line
