"""Ids from different files never collide silently; an edited passage makes its gold stale (issue 32: 2)."""

from __future__ import annotations

import json

from curator.core.corpus.ingest import ingest
from curator.core.export.writers import export
from curator.core.queries.rows import add_query, get_query


def _corpus(path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _chunk(db, chunk_id: str) -> tuple:
    return db.execute("SELECT title, text, doc_id, active FROM chunks WHERE id = ?", [chunk_id]).fetchone()


def _approved(db, gold: str, text: str = "when do keys rotate?") -> str:
    with db.conn:
        query_id = add_query(db, text, "manual", gold_chunk_ids=[gold])
        db.execute("UPDATE queries SET status = 'approved', reviewer = 'ann' WHERE id = ?", [query_id])
    return query_id


def test_another_corpus_with_the_same_id_is_refused_not_written_over(empty_db, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = tmp_path / "a" / "corpus.jsonl", tmp_path / "b" / "corpus.jsonl"
    _corpus(first, [{"_id": "1", "title": "Keys", "text": "Keys rotate every ninety days."},
                    {"_id": "2", "text": "Audit logs are kept for a year."}])
    _corpus(second, [{"_id": "x", "text": "A passage of the second corpus."},
                     {"_id": "1", "title": "Other", "text": "Something else entirely, from another corpus."}])
    ingest(empty_db, [first])
    query_id = _approved(empty_db, "1")
    report = ingest(empty_db, [tmp_path / "b"])
    assert _chunk(empty_db, "1")[:2] == ("Keys", "Keys rotate every ninety days.")
    assert report.ids_refused == 1 and report.chunks_added == 1  # the other record of the file went in
    assert any(e.startswith(f"{second}:2: id '1' is already taken by") for e in report.line_errors)
    assert get_query(empty_db, query_id)["stale"] == 0
    assert empty_db.execute("SELECT path FROM documents WHERE id = '1'").fetchone()[0] == "corpus.jsonl#1"
    again = ingest(empty_db, [tmp_path / "b"])  # refused every time, never taken over while the owner exists
    assert again.ids_refused == 1 and _chunk(empty_db, "1")[1] == "Keys rotate every ninety days."


def test_a_record_named_like_a_files_chunk_is_refused(empty_db, tmp_path):
    (tmp_path / "notes.txt").write_text("Keys rotate every ninety days. " * 5)
    ingest(empty_db, [tmp_path / "notes.txt"])
    chunk_id = empty_db.execute("SELECT id FROM chunks").fetchone()[0]
    corpus = tmp_path / "corpus.jsonl"
    _corpus(corpus, [{"_id": chunk_id, "text": "A hostile passage that takes the chunk's id."}])
    report = ingest(empty_db, [corpus])
    assert report.ids_refused == 1 and "Keys rotate" in _chunk(empty_db, chunk_id)[1]
    # nothing of that file went in: it is reported as skipped with the reason, not as "unchanged"
    assert report.files_unchanged == 0 and report.skipped[0]["path"] == str(corpus)
    assert "already taken" in report.skipped[0]["reason"]


def test_an_edited_passage_makes_its_gold_stale_until_it_reads_as_before(empty_db, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    records = [{"_id": "1", "title": "Keys", "text": "Keys rotate every ninety days."},
               {"_id": "2", "text": "Audit logs are kept for a year."}]
    _corpus(corpus, records)
    ingest(empty_db, [corpus])
    query_id = _approved(empty_db, "1")
    other = _approved(empty_db, "2", "how long are audit logs kept?")
    _corpus(corpus, [{**records[0], "text": "Keys never rotate."}, records[1]])
    report = ingest(empty_db, [corpus])
    assert report.chunks_changed == 1 and _chunk(empty_db, "1")[1] == "Keys never rotate."
    assert get_query(empty_db, query_id)["stale"] == 1 and get_query(empty_db, other)["stale"] == 0
    out = tmp_path / "gold.jsonl"
    export(empty_db, out)
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert rows[query_id]["stale"] is True and rows[other]["stale"] is False
    # labelled against the edited text, a new query is not stale now, and is once the text goes back
    later = _approved(empty_db, "1", "do keys ever rotate?")
    _corpus(corpus, records)
    ingest(empty_db, [corpus])
    assert get_query(empty_db, query_id)["stale"] == 0
    assert get_query(empty_db, later)["stale"] == 1


def test_approving_a_row_again_labels_it_against_the_edited_text_and_undo_puts_the_mark_back(empty_db, tmp_path):
    from curator.core.review.decisions import decide, undo

    corpus = tmp_path / "corpus.jsonl"
    _corpus(corpus, [{"_id": "1", "title": "Keys", "text": "Keys rotate every ninety days."}])
    ingest(empty_db, [corpus])
    query_id = _approved(empty_db, "1")
    _corpus(corpus, [{"_id": "1", "title": "Keys", "text": "Keys rotate every thirty days."}])
    ingest(empty_db, [corpus])
    assert get_query(empty_db, query_id)["stale"] == 1
    decide(empty_db, query_id, "edit", "ann", note="looked, not decided")  # not an approval: still stale
    assert get_query(empty_db, query_id)["stale"] == 1
    decide(empty_db, query_id, "approve", "ann", reference="Every thirty days.")
    assert get_query(empty_db, query_id)["stale"] == 0
    assert empty_db.execute("SELECT COUNT(*) FROM gold_changes").fetchone()[0] == 0
    undo(empty_db, "ann")
    assert get_query(empty_db, query_id)["stale"] == 1  # the approval undone: labelled against the old text again
    _corpus(corpus, [{"_id": "1", "title": "Keys", "text": "Keys rotate every ninety days."}])
    ingest(empty_db, [corpus])
    assert get_query(empty_db, query_id)["stale"] == 0  # and the old text back makes it current, as before


def test_undo_of_a_later_decision_keeps_stale_marks_a_reingest_added_and_a_merge_clears_none(empty_db, tmp_path):
    """Undo restores exactly what the approval cleared; changes recorded since stay (a reviewer's
    review found undo wiping them), and a decision replayed without relabel clears nothing."""
    from curator.core.review.decisions import decide, undo

    corpus = tmp_path / "corpus.jsonl"
    _corpus(corpus, [{"_id": "1", "text": "Keys rotate every ninety days."}])
    ingest(empty_db, [corpus])
    query_id = _approved(empty_db, "1")
    decide(empty_db, query_id, "approve", "ann")
    _corpus(corpus, [{"_id": "1", "text": "Keys rotate every thirty days."}])
    ingest(empty_db, [corpus])  # edited after the approval
    assert get_query(empty_db, query_id)["stale"] == 1
    decide(empty_db, query_id, "edit", "ann", note="later note")
    undo(empty_db, "ann")  # undo the note: the edit recorded since must stay
    assert get_query(empty_db, query_id)["stale"] == 1
    decide(empty_db, query_id, "approve", "bob", relabel=False)  # as a merge replays another copy's approval
    assert get_query(empty_db, query_id)["stale"] == 1
