"""curator eval through click's runner: retrievers, --save-run, --compare on ids and files, errors, help."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide
from curator.core.corpus.search import search_chunks
from curator.core.store import open_project


@pytest.fixture
def gold_project(sample_project_path):
    db = open_project(sample_project_path)
    for text in ("rotate encryption keys", "webhook signature verification", "refund within 14 days"):
        gold = search_chunks(db, text, limit=2)[-1]["id"]
        with db.conn:
            qid = add_query(db, text, "manual", gold_chunk_ids=[gold])
        decide(db, qid, "approve", "ana")
    db.close()
    return str(sample_project_path)


def _invoke(*args):
    result = CliRunner().invoke(cli, list(args))
    return result


def test_eval_each_retriever_then_compare_ids_and_files(gold_project, tmp_path):
    runs = {}
    for name in ("bm25", "tfidf", "hybrid"):
        result = _invoke("eval", gold_project, "--retriever", name, "--k", "1,10", "--json",
                         "--save-run", str(tmp_path / f"{name}.trec"))
        assert result.exit_code == 0, result.output
        runs[name] = json.loads(result.stdout)
        assert runs[name]["retriever"] == name and runs[name]["slices"]["overall"]["queries"] == 3
    assert runs["hybrid"]["params"]["embedder"].startswith("minilm:") and runs["hybrid"]["params"]["rrf_k"] == 60
    text = _invoke("eval", gold_project, "--retriever", "tfidf", "--k", "1,5")
    assert text.exit_code == 0 and "eval run 4: tfidf on 3 answerable queries" in text.stdout
    assert "recall@5" in text.stdout and "routing" in text.stdout

    same = _invoke("eval", gold_project, "--compare", str(runs["bm25"]["eval_run"]), str(tmp_path / "bm25.trec"),
                   "--metric", "ndcg@10", "--json")
    assert same.exit_code == 0, same.output
    body = json.loads(same.stdout)
    assert body["mean_difference"] == 0.0 and body["ci95"] == [0.0, 0.0] and body["ties"] == 3
    human = _invoke("eval", gold_project, "--compare", str(runs["bm25"]["eval_run"]), str(runs["tfidf"]["eval_run"]))
    assert human.exit_code == 0, human.output
    assert "B - A = " in human.stdout and "95% bootstrap interval" in human.stdout and "B better" in human.stdout


def test_eval_errors_are_one_line_messages(gold_project):
    result = _invoke("eval", gold_project, "--compare", "41", "42")
    assert result.exit_code == 1 and "no eval run 41" in result.stderr
    result = _invoke("eval", gold_project, "--compare", "1", "1", "--metric", "map")
    assert result.exit_code == 1 and "unknown metric" in result.stderr
    result = _invoke("eval", gold_project, "--compare", "1", "2", "--save-run", "x.trec")
    assert result.exit_code == 2 and "drop --run and --save-run" in result.output
    result = _invoke("eval", gold_project, "--retriever", "bm26")
    assert result.exit_code == 2  # click refuses a name outside the choice
    result = _invoke("eval", gold_project, "--k", "0")
    assert result.exit_code == 2 and "at least 1" in result.output


def test_help_shows_an_example_of_every_new_option():
    text = _invoke("eval", "--help").output
    for example in ("--retriever hybrid", "--embedder minilm", "--save-run", "--compare 1 2", "--metric ndcg@10"):
        assert example in text
