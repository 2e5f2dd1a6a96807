"""Export never replaces the project or a foreign file, and publishes a whole set at once (issue 20: 1, 5, 10)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.errors import InputError
from curator.core.export.writers import export
from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide


@pytest.fixture
def gold_db(sample_db):
    ids = [r[0] for r in sample_db.execute("SELECT id FROM chunks ORDER BY id LIMIT 4")]
    with sample_db.conn:
        made = [add_query(sample_db, f"How does feature {n} work?", "manual", reference="it works",
                          gold_chunk_ids=[ids[n]]) for n in range(4)]
    for qid in made[:2]:
        decide(sample_db, qid, "approve", "ana")
    return sample_db, made


class Killed(BaseException):
    """Stands in for kill -9 at one rename: like a kill, it is no Exception, so no handler cleans up."""


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _manifest_matches_or_absent(manifest_path: Path, folder: Path) -> bool:
    if not manifest_path.exists():
        return True
    files = json.loads(manifest_path.read_text())["files"]
    return all((folder / name).exists() and _sha(folder / name) == sha for name, sha in files.items())


@pytest.mark.parametrize("fmt", ["jsonl", "trec", "beir"])
def test_export_onto_the_project_is_refused_and_the_project_survives(sample_project_path, fmt):
    before = _sha(sample_project_path)
    for target in (sample_project_path, Path(str(sample_project_path) + "-wal"), sample_project_path.parent):
        for extra in ([], ["--force"]):
            result = CliRunner().invoke(cli, ["export", str(sample_project_path), str(target), "--format", fmt, *extra])
            assert result.exit_code == 1, result.output
            assert "project file" in result.output and "Traceback" not in result.output
    assert _sha(sample_project_path) == before
    assert not [p for p in sample_project_path.parent.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("fmt", ["jsonl", "beir"])
def test_a_foreign_file_needs_force_and_a_prior_export_does_not(gold_db, tmp_path, fmt):
    db, _ = gold_db
    notes = tmp_path / "notes.txt"
    notes.write_text("my own notes\n")
    with pytest.raises(InputError, match="not a Curator export"):
        export(db, notes, fmt)
    assert notes.read_text() == "my own notes\n"
    export(db, tmp_path / "gold", fmt)
    export(db, tmp_path / "gold", fmt)  # replacing a prior export needs no --force
    export(db, notes, fmt, force=True)
    assert (notes / "corpus.jsonl").exists() if fmt == "beir" else notes.read_text().startswith("{")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # nothing hidden away


def test_kill_before_the_manifest_never_leaves_a_mismatched_manifest(gold_db, tmp_path, monkeypatch):
    db, made = gold_db
    out = tmp_path / "gold.jsonl"
    manifest_path = tmp_path / "gold.jsonl.manifest.json"
    export(db, out, split={"dev": 0.5, "test": 0.5})
    for qid in made[2:]:
        decide(db, qid, "approve", "ana")
    real_replace = os.replace

    def killed_before_manifest(src, dst):
        if str(dst) == str(manifest_path):
            raise Killed
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", killed_before_manifest)
    with pytest.raises(Killed):
        export(db, out, split={"dev": 0.5, "test": 0.5})
    assert _manifest_matches_or_absent(manifest_path, tmp_path)
    monkeypatch.setattr(os, "replace", real_replace)
    export(db, tmp_path / "other.jsonl")  # an unrelated export leaves this set alone
    from curator.core.export import publish

    publish.recover(manifest_path, ["gold.dev.jsonl", "gold.test.jsonl"])  # what the next export does first
    assert manifest_path.exists() and _manifest_matches_or_absent(manifest_path, tmp_path)
    rows = [json.loads(line) for name in ("gold.dev.jsonl", "gold.test.jsonl")
            for line in (tmp_path / name).read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(made)  # dev and test are one export: no overlap, no gap
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_beir_manifest_is_inside_the_swapped_folder(gold_db, tmp_path, monkeypatch):
    db, made = gold_db
    out = tmp_path / "beir"
    export(db, out, "beir")
    decide(db, made[2], "approve", "ana")
    real_replace = os.replace

    def killed_at_manifest(src, dst):
        if Path(dst) == out / "manifest.json":
            raise Killed
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", killed_at_manifest)
    export(db, out, "beir")  # the manifest is written in the staging folder, never renamed into out/
    assert _manifest_matches_or_absent(out / "manifest.json", out)
    assert json.loads((out / "manifest.json").read_text())["rows"] == 3


def test_exports_follow_the_umask(gold_db, tmp_path):
    db, _ = gold_db
    old = os.umask(0o022)
    try:
        export(db, tmp_path / "gold.jsonl")
        export(db, tmp_path / "beir", "beir")
    finally:
        os.umask(old)
    for path in (tmp_path / "gold.jsonl", tmp_path / "gold.jsonl.manifest.json", tmp_path / "beir/corpus.jsonl"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
    assert stat.S_IMODE((tmp_path / "beir").stat().st_mode) == 0o755


def test_an_unwritable_target_is_one_line_not_a_traceback(sample_project_path, tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    result = CliRunner().invoke(cli, ["export", str(sample_project_path), str(a_file / "gold.jsonl")])
    assert result.exit_code == 1 and "could not be written" in result.output, result.output
    assert not isinstance(result.exception, OSError)


@pytest.mark.parametrize("umask", [0o002, 0o027])
def test_every_exported_file_and_folder_gets_the_umask_permissions(gold_db, tmp_path, umask):
    """Not 0600/0700 (mkstemp, mkdtemp) and not a fixed 0644: whatever the user's umask says."""
    db, _ = gold_db
    out = tmp_path / "out"  # beside the project file (its own permissions are not an export's)
    out.mkdir()
    old = os.umask(umask)
    try:
        export(db, out / "gold.jsonl", split={"dev": 0.5, "test": 0.5}, seed=1)
        export(db, out / "beir", "beir")
        export(db, out / "gold.qrels", "trec")
    finally:
        os.umask(old)
    files = [p for p in out.rglob("*") if p.is_file()]
    folders = [out / "beir", out / "beir" / "qrels"]
    assert len(files) >= 8 and not [p for p in out.rglob(".*")]  # no staging file left behind
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in files} == {p.name: 0o666 & ~umask for p in files}
    assert [stat.S_IMODE(p.stat().st_mode) for p in folders] == [0o777 & ~umask] * 2
