"""Run files read by eval, validate and compare (issue 32: wrong answers and availability).

validate ranked an empty or garbage run that eval refuses ("tau +1.00"), ``--run bm25=F``
replaced the built-in column, nan scores made the same run score MRR 1.0 or 0.17 by line
order, a million malformed lines printed 90 MB and were stored with the eval run, and
``--run /dev/zero`` read until memory ran out.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.errors import InputError
from curator.core.evaluation.compare import compare
from curator.core.evaluation.evaluate import evaluate, read_trec_run
from curator.core.evaluation.validity import parse_runs, validate
from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide
from curator.core.store import open_project

import trustkit


@pytest.fixture
def gold(sample_project_path):
    """(project path, {query id: gold chunk id}) with three approved rows; the project is closed."""
    db = open_project(sample_project_path)
    ids = [r[0] for r in db.execute("SELECT id FROM chunks ORDER BY id LIMIT 3")]
    with db.conn:
        made = {add_query(db, f"How does feature {n} work?", "manual", reference="it works",
                          gold_chunk_ids=[ids[n]]): ids[n] for n in range(3)}
    for qid in made:
        decide(db, qid, "approve", "ana")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return sample_project_path, made


def _good_lines(made: dict) -> list[str]:
    return [f"{qid} Q0 {chunk} 1 2.0 mine" for qid, chunk in made.items()]


def _invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


# ---------------------------------------------------------------- validate reads runs as eval does

@pytest.mark.parametrize("content", ["", "\n\n", "this is not a run\nnor is this one\n", "q Q0 d 1 nan t\n"])
def test_validate_refuses_the_runs_eval_refuses_with_the_same_message(gold, tmp_path, content):
    project, _ = gold
    run = tmp_path / "mine.trec"
    run.write_text(content)
    by_eval = _invoke("eval", str(project), "--run", str(run))
    by_validate = _invoke("validate", str(project), "--retrievers", "bm25,tfidf", "--run", f"mine={run}",
                          "--resamples", "100")
    assert by_eval.exit_code == by_validate.exit_code == 1, (by_eval.output, by_validate.output)
    assert "no valid TREC run line" in by_validate.output and "Traceback" not in by_validate.output
    assert by_validate.output.strip().splitlines()[-1] == by_eval.output.strip().splitlines()[-1]


def test_a_run_named_like_a_built_in_retriever_is_refused(gold, tmp_path):
    project, made = gold
    run = tmp_path / "bm25.trec"
    run.write_text("\n".join(_good_lines(made)) + "\n")
    for spec in (f"bm25={run}", str(run), f" dense ={run}"):
        result = _invoke("validate", str(project), "--run", spec, "--resamples", "100")
        assert result.exit_code == 1 and "built-in retriever" in result.output, result.output
        assert "another name" in result.output
    assert parse_runs([f"my-bm25={run}"]) == {"my-bm25": str(run)}


def test_validate_scores_a_good_run_beside_the_built_in_ones(gold, tmp_path):
    project, made = gold
    run = tmp_path / "mine.trec"
    run.write_text("\n".join(_good_lines(made)) + "\nbroken line\n")
    db = open_project(project)
    try:
        report = validate(db, ["bm25"], {"mine": str(run)}, "mrr", resamples=100)
    finally:
        db.close()
    assert report["retrievers"] == ["bm25", "mine"] and report["slices"]["overall"]["means"]["mine"] == 1.0
    assert report["warnings"] == [f"{run}:4: expected 'qid Q0 docid rank score tag' with a finite score; line skipped."]


# ---------------------------------------------------------------- non-finite scores

@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "NaN", "1e999"])
def test_non_finite_scores_are_malformed_lines_and_line_order_does_not_matter(gold, tmp_path, bad):
    project, made = gold
    first, second = tmp_path / "first.trec", tmp_path / "second.trec"
    lines = {qid: [f"{qid} Q0 {chunk} 1 {bad} t", f"{qid} Q0 other_a 2 0.5 t", f"{qid} Q0 other_b 3 0.25 t"]
             for qid, chunk in made.items()}
    first.write_text("".join(f"{line}\n" for group in lines.values() for line in group))
    second.write_text("".join(f"{line}\n" for group in lines.values() for line in reversed(group)))
    db = open_project(project)
    try:
        a, b = evaluate(db, run_file=str(first), ks=(1, 5)), evaluate(db, run_file=str(second), ks=(1, 5))
        assert a["slices"]["overall"]["mrr"] == b["slices"]["overall"]["mrr"] == 0.0  # the gold line is dropped
        assert a["warnings"][0] == (f"{first}:1: expected 'qid Q0 docid rank score tag' with a finite score; "
                                    "line skipped.")
        assert len(a["warnings"]) == len(made)
        gap = compare(db, str(first), str(second))
        assert gap["ties"] == gap["queries"] == len(made) and gap["ci95"] == [0.0, 0.0]
    finally:
        db.close()


# ---------------------------------------------------------------- bounded warnings and reads

def test_a_flood_of_malformed_lines_prints_and_stores_twenty_and_a_count(gold, tmp_path):
    project, made = gold
    run = tmp_path / "flood.trec"
    with open(run, "w") as fh:
        fh.write("\n".join(_good_lines(made)) + "\n")
        fh.write("not a run line at all\n" * 100_000)
    result = _invoke("eval", str(project), "--run", str(run), "--json")
    assert result.exit_code == 0, result.output[-2000:]
    warnings = json.loads(result.output)["warnings"]
    assert len(warnings) == 21 and warnings[-1] == f"{run}: and 99,980 more malformed lines"
    assert warnings[0].startswith(f"{run}:4: ")
    text = _invoke("eval", str(project), "--run", str(run))
    assert len(text.output) < 20_000  # was 100,000 warning lines
    db = open_project(project)
    try:
        stored = [json.loads(r[0])["warnings"] for r in db.execute("SELECT metrics FROM eval_runs")]
    finally:
        db.close()
    assert [len(w) for w in stored] == [21, 21]


def test_an_overlong_line_is_one_malformed_line_and_the_rest_is_read(gold, tmp_path):
    _, made = gold
    run = tmp_path / "long.trec"
    run.write_bytes(b"q Q0 d 1 1.0 " + b"x" * 3_000_000 + b"\n" + "\n".join(_good_lines(made)).encode() + b"\n")
    errors: list[str] = []
    assert set(read_trec_run(run, errors)) == set(made)
    assert errors == [f"{run}:1: longer than 1,000,000 bytes; line skipped."]


def test_a_file_without_line_breaks_is_not_read_to_its_end(tmp_path):
    run = tmp_path / "zeros.trec"
    with open(run, "wb") as fh:
        fh.truncate(1 << 30)  # sparse: 1 GiB of NUL bytes, no line break, no disk space used
    errors: list[str] = []
    assert read_trec_run(run, errors) == {}
    assert errors[-1].startswith(f"{run}:1: no line break in ") and "the rest of the file was not read" in errors[-1]


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_a_device_or_a_pipe_is_refused_not_read(gold, tmp_path, kind):
    """/dev/zero was read into memory until MemoryError; a FIFO with no writer blocked for ever."""
    project, _ = gold
    source = "/dev/zero"
    if kind == "fifo":
        source = str(tmp_path / "run.fifo")
        os.mkfifo(source)
    code, output = trustkit.refused_input("eval", str(project), "--run", source, what=f"eval --run {kind}")
    assert code == 1 and "not a regular file" in output, output
    assert "Traceback" not in output


# ---------------------------------------------------------------- ids beyond SQLite's INTEGER

def test_ids_above_2_63_are_a_one_line_error_not_a_traceback(gold, tmp_path):
    project, made = gold
    base = _invoke("eval", str(project))
    assert base.exit_code == 0, base.output
    for ref in ("99999999999999999999", str(2**63), "²"):
        result = _invoke("eval", str(project), "--compare", ref, "1")
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert not isinstance(result.exception, (OverflowError, ValueError)), result.exception
        assert "no eval run" in result.output or "neither" in result.output, result.output
    big = tmp_path / "big.trec"  # huge numeric ids in a run are plain strings: scored, no overflow
    big.write_text("\n".join(_good_lines(made)) + f"\n{2**70} Q0 {2**80} 1 1.0 t\n")
    result = _invoke("eval", str(project), "--run", str(big))
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    with pytest.raises(InputError, match="no eval run"):
        db = open_project(project)
        try:
            compare(db, str(2**64), "1")
        finally:
            db.close()


def test_the_refusal_names_the_problem_of_the_file_refused(gold, tmp_path):
    """validate reads several runs into one warning list: the message quotes the refused file's line."""
    project, made = gold
    good, bad = tmp_path / "good.trec", tmp_path / "bad.trec"
    good.write_text("\n".join(_good_lines(made)) + "\nbroken in good\n")
    bad.write_text("broken in bad\n")
    result = _invoke("validate", str(project), "--retrievers", "", "--run", f"a={good}", "--run", f"b={bad}")
    assert result.exit_code == 1 and f"first problem: {bad}:1:" in result.output, result.output
