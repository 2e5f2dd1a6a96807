"""FTS5 search: bm25 ranking, safe handling of text that looks like FTS syntax."""

from __future__ import annotations

import pytest

from curator.core.corpus.ingest import ingest
from curator.core.corpus.search import fts_query, search_chunks


@pytest.fixture
def db(empty_db, tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    filler = " ".join(f"Filler sentence {i} says nothing in particular." for i in range(6))
    (root / "heavy.md").write_text(f"# Keys\n\nRotate keys. Rotate keys often. Key rotation keeps keys safe. {filler}\n")
    (root / "light.md").write_text(f"# Misc\n\nYou may rotate the logo image once. {filler} Keys are mentioned once.\n")
    (root / "none.md").write_text(f"# Cooking\n\nBoil pasta in salted water for ten minutes. {filler}\n")
    (root / "cpp.md").write_text(f"# Languages\n\nC++ AND \"x templates are tricky; NEAR(a b) OR NOT -y* ^z. {filler}\n")
    ingest(empty_db, [root])
    return empty_db


def test_bm25_ranks_denser_match_first(db):
    hits = search_chunks(db, "rotate keys")
    assert [h["doc_path"] for h in hits[:2]] == ["docs/heavy.md", "docs/light.md"]
    assert hits[0]["score"] > hits[1]["score"] > 0
    assert all(h["doc_path"] != "docs/none.md" for h in hits)


def test_porter_stemming_matches_inflections(db):
    assert search_chunks(db, "rotation")[0]["doc_path"] == "docs/heavy.md"


def test_mode_all_requires_every_word(db):
    assert {h["doc_path"] for h in search_chunks(db, "rotate logo", mode="any")} >= {"docs/heavy.md", "docs/light.md"}
    assert [h["doc_path"] for h in search_chunks(db, "rotate logo", mode="all")] == ["docs/light.md"]


@pytest.mark.parametrize("text", ['C++ AND "x', 'NEAR(a b)', '"', "-y* ^z", "a:b", "NOT OR AND", "()", "*"])
def test_fts_syntax_in_user_text_does_not_crash(db, text):
    hits = search_chunks(db, text)
    assert isinstance(hits, list)


def test_user_text_with_operators_finds_the_literal_words(db):
    assert search_chunks(db, 'C++ AND "x')[0]["doc_path"] == "docs/cpp.md"


def test_punctuation_only_query_returns_nothing(db):
    assert search_chunks(db, "?!...") == []
    assert fts_query("  ") == ""


def test_fts_query_quotes_and_dedupes():
    assert fts_query('Keys keys "AND"') == '"keys" OR "and"'
    assert fts_query("a b", mode="all") == '"a" AND "b"'


def test_limit_and_retired_chunks_hidden(db):
    assert len(search_chunks(db, "filler", limit=2)) == 2
    with db.conn:
        db.execute("UPDATE chunks SET active = 0 WHERE doc_id IN (SELECT id FROM documents WHERE path = 'docs/heavy.md')")
    assert all(h["doc_path"] != "docs/heavy.md" for h in search_chunks(db, "rotate keys"))
