"""Query rows: normalisation, stable ids, INSERT OR IGNORE on re-add."""

from __future__ import annotations

import pytest

from curator.core.queries.rows import add_query, get_query, list_queries, make_query_id, normalize_text


def test_normalize_text():
    assert normalize_text("  How do I  ROTATE keys?! ") == "how do i rotate keys"
    assert normalize_text(None) == ""


def test_ids_stable_and_depend_on_source_and_normalised_text():
    a = make_query_id("log", "How do I rotate keys?")
    assert a == make_query_id("log", "how do i   rotate KEYS")
    assert a != make_query_id("manual", "How do I rotate keys?")
    assert a.startswith("q_") and len(a) == 18
    import hashlib
    assert a == "q_" + hashlib.sha1(b"log\x00how do i rotate keys").hexdigest()[:16]


def test_add_and_get_round_trip(empty_db):
    with empty_db.conn:
        qid = add_query(empty_db, "  What is WAL? ", "synthetic", query_type="factoid", reference="A journal mode.",
                        source_chunk_ids=["c1"], gold_chunk_ids=["c1", "c1", "c2"], metadata={"k": 1}, frequency=3)
    q = get_query(empty_db, qid)
    assert q["text"] == "What is WAL?" and q["text_norm"] == "what is wal"
    assert q["source"] == "synthetic" and q["query_type"] == "factoid" and q["status"] == "pending"
    assert q["gold_chunk_ids"] == ["c1", "c2"] and q["gold_grades"] == {"c1": 1, "c2": 1}
    assert q["source_chunk_ids"] == ["c1"] and q["metadata"] == {"k": 1} and q["frequency"] == 3
    assert q["answerable"] == 1 and q["queued"] is False and q["cluster"] is None


def test_re_add_is_ignored_and_keeps_first_row(empty_db):
    with empty_db.conn:
        first = add_query(empty_db, "rotate keys", "log", reference="first")
        second = add_query(empty_db, "Rotate keys!", "log", reference="second")
    assert first == second
    rows = list_queries(empty_db)
    assert len(rows) == 1 and rows[0]["reference"] == "first"


def test_query_type_defaults_to_source_and_bad_source_refused(empty_db):
    with empty_db.conn:
        qid = add_query(empty_db, "hello", "manual")
    assert get_query(empty_db, qid)["query_type"] == "manual"
    with pytest.raises(ValueError, match="source"):
        add_query(empty_db, "hello", "web")


def test_list_filters(empty_db):
    with empty_db.conn:
        add_query(empty_db, "one", "log")
        add_query(empty_db, "two", "manual")
        add_query(empty_db, "three", "synthetic", query_type="keyword")
    assert [q["text"] for q in list_queries(empty_db, source="log")] == ["one"]
    assert [q["text"] for q in list_queries(empty_db, query_type="keyword")] == ["three"]
    assert len(list_queries(empty_db, status="pending")) == 3
    assert get_query(empty_db, "q_missing") is None
