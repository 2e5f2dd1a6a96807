"""Realism per row (queries.realism): the figures, their storage and refresh, the validate section;
and the pairwise agreement that the verdict now rests on."""

from __future__ import annotations

import pytest

import validity_kit as kit
from curator.core.evaluation.validity import validate
from curator.core.queries import realism
from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide


@pytest.mark.parametrize("text, form", [
    ("How do I reset the router?", "question"), ("what is a tuple", "question"),
    ("router factory reset", "keywords"), ("sync stuck on blue spinning cloud", "keywords"),
    ("My printer does not print anything at all since the update.", "statement"),
])
def test_form_is_read_from_the_surface(text, form):
    assert realism.form_of(text) == form


def test_measure_counts_words_reused_from_the_chunk_and_the_answer():
    chunk = "To return the router to factory settings, hold the reset button for ten seconds."
    copied = realism.measure("How do I return the router to factory settings?", [chunk], "Hold the reset button.")
    own = realism.measure("How do I start over with my internet box?", ["unrelated text", chunk], None)
    assert copied["chunk_overlap"] == 1.0 and own["chunk_overlap"] == 0.0
    assert copied["answer_overlap"] == 0.0 and own["answer_overlap"] is None
    assert copied["words"] == 9 and copied["form"] == "question"
    assert 0.4 < copied["stopword_share"] < 0.6
    assert realism.measure("anything", [], None)["chunk_overlap"] is None


def _chunk(db, i=0):
    return db.execute("SELECT id, text FROM chunks WHERE active = 1 ORDER BY id LIMIT 1 OFFSET ?", [i]).fetchone()


def test_rows_are_measured_once_and_again_after_an_edit(sample_db):
    chunk_id, text = _chunk(sample_db)
    words = " ".join(text.split()[:6])
    with sample_db.conn:
        qid = add_query(sample_db, f"{words}?", "synthetic", query_type="factoid", source_chunk_ids=[chunk_id],
                        gold_chunk_ids=[chunk_id], reference=text.split(".")[0])
    assert realism.refresh(sample_db) >= 1
    assert realism.refresh(sample_db) == 0  # nothing changed: nothing measured again
    first = realism.stored(sample_db, [qid])[qid]
    assert first["chunk_overlap"] > 0.5
    decide(sample_db, qid, "edit", "ana", text="Which zebra quasar migrates north in winter?")
    assert realism.refresh(sample_db, [qid]) == 1
    assert realism.stored(sample_db, [qid])[qid]["chunk_overlap"] < first["chunk_overlap"]


def test_validate_without_log_rows_compares_with_the_built_in_reference(sample_db, tmp_path):
    kit.add_slices(sample_db, tmp_path, with_log=False)
    report = validate(sample_db, ["bm25"], {}, "recall@5", resamples=200)
    section = report["realism"]
    assert section["reference_basis"] == "builtin" and section["reference"]["rows"] == 167
    factoid = section["synthetic"]["factoid"]
    median = factoid["chunk_overlap"]["median"]
    assert factoid["rows"] == kit.PER_SLICE and median > 0.6  # four words of the chunk and "synthetic", a number
    assert factoid["text"].startswith(f"factoid rows reuse {median:.0%} of their chunk's words, real questions "
                                      "(built-in reference) 67%")
    assert report["stability"]["overall"]["text"] == "one retriever (bm25): nothing to rank"


def test_validate_with_log_rows_says_the_gap_against_your_users(sample_db, tmp_path):
    slices = kit.add_slices(sample_db, tmp_path)
    runs = kit.write_runs(slices, kit.AGREE, tmp_path, kit.decoy_chunk(sample_db))
    report = validate(sample_db, [], runs, "recall@5", resamples=200)
    section = report["realism"]
    assert section["reference_basis"] == "project" and section["real_rows"] == kit.PER_SLICE
    assert "your users' questions" in section["synthetic"]["factoid"]["text"]
    assert section["reference"]["forms"]["keywords"] > 0.5  # the kit's log rows are word runs


# Four retrievers, same winner (alpha) and tau +0.67, but the real queries clearly put gamma above
# beta and the synthetic rows put beta far above gamma: a user choosing between those two would
# choose wrongly. tau alone called this "agrees".
SWAPPED_PAIR = {"alpha": (0.95, 0.95), "beta": (0.7, 0.15), "gamma": (0.2, 0.75), "delta": (0.05, 0.05)}


def test_a_clearly_separated_pair_in_the_wrong_order_is_a_disagreement_even_at_tau_0_67(sample_db, tmp_path):
    slices = kit.add_slices(sample_db, tmp_path)
    runs = kit.write_runs(slices, SWAPPED_PAIR, tmp_path, kit.decoy_chunk(sample_db))
    report = validate(sample_db, [], runs, "recall@5", resamples=500)
    assert report["agreement"]["tau"] == pytest.approx(2 / 3) and report["agreement"]["same_winner"]
    assert report["verdict"]["code"] == "disagrees"
    pair = next(p for p in report["pairs"] if {p["a"], p["b"]} == {"beta", "gamma"})
    assert pair["real"]["clear"] and pair["agrees"] is False
    assert pair["real"]["gap"] == pytest.approx(-0.6) and pair["synthetic"]["gap"] == pytest.approx(0.5)
    assert "gamma - beta: 0.60 on real rows" in pair["text"] and "-0.50 on synthetic rows: disagree" in pair["text"]
    assert "worst: gamma - beta" in report["verdict"]["text"]


def test_same_winner_and_every_clear_pair_in_order_agrees(sample_db, tmp_path):
    slices = kit.add_slices(sample_db, tmp_path)
    runs = kit.write_runs(slices, kit.AGREE, tmp_path, kit.decoy_chunk(sample_db))
    report = validate(sample_db, [], runs, "recall@5", resamples=500)
    assert report["verdict"]["code"] == "agrees"
    assert all(p["agrees"] for p in report["pairs"]) and len(report["pairs"]) == 3
    assert "the same winner (alpha)" in report["verdict"]["text"]
