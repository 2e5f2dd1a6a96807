"""`curator generate --mode auto|need-first|extractive` (issue 39): the mode a run uses, said and recorded."""

import json

from click.testing import CliRunner

from curator.cli.main import cli
from curator.core import store
from curator.core.generation import engine
from curator.core.generation.backends import FakeBackend
from curator.core.store import open_project
from scripted import good_reply, need_first_reply


def _run(project, monkeypatch, reply, *options):
    backend = FakeBackend(reply)
    monkeypatch.setattr(engine, "open_engine", lambda *a, **k: backend)
    res = CliRunner().invoke(cli, ["generate", str(project), "--count", "2", "--mix", "factoid=1", *options])
    db = open_project(project)
    params = [json.loads(r["params"]) for r in store.rows(db, "SELECT params FROM generation_runs ORDER BY id")]
    db.close()
    return res, params, backend


def test_mode_need_first_is_said_recorded_and_asks_with_the_passage(sample_project_path, monkeypatch):
    res, params, backend = _run(sample_project_path, monkeypatch, need_first_reply, "--mode", "need-first")
    assert res.exit_code == 0, res.output
    assert "mode need-first: chosen by the user (--mode need-first)" in res.output
    assert params[-1]["mode"]["chosen"] == "need-first" and params[-1]["answers"] == "need-first"
    assert "Passage:" in backend.prompts[0][-1]["content"]


def test_mode_auto_with_the_bundled_model_is_extractive_and_says_why(sample_project_path, monkeypatch):
    res, params, backend = _run(sample_project_path, monkeypatch, good_reply)
    assert res.exit_code == 0, res.output
    assert "mode extractive: SmolLM2-135M-Instruct" in res.output and "< 1B" in res.output
    assert params[-1]["mode"] == {"requested": "auto", "chosen": "extractive", "why": params[-1]["mode"]["why"]}
    assert "Passage" not in backend.prompts[0][-1]["content"]  # answer-first: one sentence, not the chunk


def test_mode_is_refused_with_free_answers_and_unknown_names(sample_project_path):
    res = CliRunner().invoke(cli, ["generate", str(sample_project_path), "--mode", "need-first", "--answers", "free"])
    assert res.exit_code == 2 and "not with --mode" in res.output
    res = CliRunner().invoke(cli, ["generate", str(sample_project_path), "--mode", "huge"])
    assert res.exit_code == 2 and "'huge' is not one of" in res.output
