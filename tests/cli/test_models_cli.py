"""`curator models [--project P]`: the models found, and what each did in a project (keyed by the hash
of its file that each generation run records)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core import store
from curator.core.cachefiles import file_sha256
from curator.core.modelfiles import listing
from curator.core.modelfiles.listing import list_models
from curator.core.modelfiles.places import Place
from gguf_bytes import write_model


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CURATOR_CONFIG_DIR", str(tmp_path / "config"))
    for name in ("OLLAMA_MODELS", "HF_HOME", "HF_HUB_CACHE", "LLAMA_CACHE", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    return home


def run_models(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["models", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def add_run(db, model: Path, seconds: float = 60.0) -> int:
    """A generation run record as generate writes it (the file's size and SHA-256)."""
    with db.conn:
        return db.execute("INSERT INTO generation_runs (created_at, backend, model_path, model_size, model_sha256, "
                          "params, status, counts) VALUES (?,?,?,?,?,?,?,?)",
                          [store.now(), "llama-cpp", str(model), model.stat().st_size, file_sha256(model), "{}",
                           "complete", json.dumps({"seconds": seconds})]).lastrowid


def test_the_listing_names_each_model_and_each_unreadable_file(home):
    write_model(home / ".lmstudio" / "models" / "p" / "r" / "good.gguf", "Good")
    (home / ".lmstudio" / "models" / "p" / "r" / "bad.gguf").write_bytes(b"GGUF" + b"\xff" * 30)
    text = CliRunner().invoke(cli, ["models"])
    assert text.exit_code == 0, text.output
    assert "good" in text.output and "Q4_K_M" in text.output and "lmstudio" in text.output
    assert "unreadable: " in text.output and "bad.gguf" in text.output
    listed = {m["name"]: m for m in run_models()["models"]}
    assert listed["good"]["readable"] and not listed["bad"]["readable"] and "project" not in listed["good"]


def test_a_folder_added_is_searched_until_removed(home, tmp_path):
    write_model(tmp_path / "mine" / "own.gguf", "Own")
    assert "own" in {m["name"] for m in run_models("--add-folder", str(tmp_path / "mine"))["models"]}
    assert "own" in {m["name"] for m in run_models()["models"]}
    assert "own" not in {m["name"] for m in run_models("--remove-folder", str(tmp_path / "mine"))["models"]}


def test_only_files_of_a_size_a_run_recorded_are_hashed(home, tmp_path, empty_db, monkeypatch):
    used = write_model(tmp_path / "m" / "used.gguf", "Used")
    other = write_model(tmp_path / "m" / "other.gguf", "Other", context=1234567)  # another size
    assert used.stat().st_size != other.stat().st_size
    add_run(empty_db, used)
    hashed = []
    monkeypatch.setattr(listing, "file_sha256", lambda path: hashed.append(Path(path).name) or file_sha256(path))
    rows = {m["name"]: m for m in list_models(empty_db, [Place("folder", tmp_path / "m", "tree")], bundled=False)["models"]}
    assert hashed == ["used.gguf"]
    assert rows["used"]["project"]["runs"] == 1 and rows["other"]["project"] is None


def test_judge_agreement_is_matched_by_the_judges_file_name(home, tmp_path, empty_db):
    from curator.core.diagnosis.faithfulness import correct_verdict

    judge = write_model(tmp_path / "m" / "judge.gguf", "Judge")
    with empty_db.conn:
        empty_db.execute("INSERT INTO traces (id, matched_by, question, created_at) VALUES ('t1', 'text', 'q?', ?)",
                         [store.now()])
        for ord_ in (0, 1):
            claim = empty_db.execute("INSERT INTO claims (trace_id, ord, text) VALUES ('t1', ?, ?)",
                                     [ord_, f"claim {ord_}"]).lastrowid
            empty_db.execute("INSERT INTO judgements (claim_id, verdict, judge, at) VALUES (?, 'supported', ?, ?)",
                             [claim, f"llama-cpp:{judge.name}", store.now()])
            correct_verdict(empty_db, claim, "supported" if ord_ == 0 else "not supported", "ana")
    (row,) = list_models(empty_db, [Place("folder", judge.parent, "tree")], bundled=False)["models"]
    assert row["judge"] == {"claims_checked": 2, "kept": 1, "agreement": 0.5}


def test_project_numbers_after_a_real_run_with_the_bundled_model_and_a_review(home, sample_db, sample_project_path,
                                                                             bundled_model):
    from curator.core.generation.generate import GenerationConfig, generate
    from curator.core.review import decisions

    summary = generate(sample_db, GenerationConfig(count=3, seed=0))
    ids = [r[0] for r in sample_db.execute("SELECT id FROM queries WHERE answerable = 1 ORDER BY id")]
    assert summary["accepted"] >= 2 and len(ids) >= 2
    decisions.decide(sample_db, ids[0], "edit", "ana", text="What does the handbook say first?")
    decisions.decide(sample_db, ids[0], "approve", "ana")
    decisions.decide(sample_db, ids[1], "reject", "ana")
    report = run_models("--project", str(sample_project_path))
    (bundled,) = [m for m in report["models"] if m["store"] == "bundled"]
    assert bundled["sha256"] == file_sha256(bundled_model)
    numbers = bundled["project"]
    rejected = sample_db.execute("SELECT COUNT(*) FROM rejected_candidates").fetchone()[0]
    assert numbers["runs"] == 1 and numbers["accepted"] == summary["accepted"]
    assert numbers["candidates"] == summary["accepted"] + rejected
    assert (numbers["approved"], numbers["edited"], numbers["rejected"]) == (1, 1, 1)
    assert numbers["rows_per_minute"] > 0 and numbers["approval_rate"] == 0.5
    assert report["not_found_here"] == []
    text = CliRunner().invoke(cli, ["models", "--project", str(sample_project_path)])
    assert f"{summary['accepted']}/{numbers['candidates']} kept, 1 approved, 1 edited, 1 rejected" in text.output
