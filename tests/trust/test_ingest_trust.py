"""Ingest: links out of the folder, bad bytes in one line, ids that would corrupt TSV (issue 20: 3, 4, 6, 10)."""

from __future__ import annotations

import json
import os

import pytest

from curator.core.corpus.ingest import ingest
from curator.core.queries.logs import import_log


def _texts(db) -> str:
    return " ".join(r[0] for r in db.execute("SELECT text FROM chunks WHERE active = 1"))


def test_a_link_out_of_the_folder_is_skipped_with_a_message(empty_db, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:the secret password line\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "real.txt").write_text("A real document about keys.\n")
    (docs / "inside.txt").symlink_to(docs / "real.txt")  # a link that stays inside is fine
    os.symlink(secret, docs / "passwd.txt")
    report = ingest(empty_db, [docs])
    assert "secret password" not in _texts(empty_db)
    assert [s["path"] for s in report.skipped] == [str(docs / "passwd.txt")]
    assert "outside the folder" in report.skipped[0]["reason"]
    assert empty_db.execute("SELECT COUNT(*) FROM documents").fetchone()[0] == 2
    ingest(empty_db, [docs / "passwd.txt"])  # named on its own, the user meant it
    assert "secret password" in _texts(empty_db)


def test_one_bad_byte_in_a_jsonl_corpus_is_that_line_only(empty_db, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    good = json.dumps({"_id": "p1", "text": "Café crème — naïve résumé"}, ensure_ascii=False).encode()
    bad = b'{"_id": "p2", "text": "broken \xff byte here"}'
    corpus.write_bytes(good + b"\n" + bad + b"\n")
    report = ingest(empty_db, [corpus])
    assert "Café crème — naïve résumé" in _texts(empty_db)  # not mojibake (CafÃ©)
    assert any(e.startswith(f"{corpus}:2:") and "UTF-8" in e for e in report.line_errors), report.line_errors


def test_one_bad_byte_in_a_csv_log_is_that_line_only(empty_db, tmp_path):
    log = tmp_path / "log.csv"
    log.write_bytes("query,feedback\nwhere is the café,up\n".encode() + b"bad \xff line,down\n")
    result = import_log(empty_db, log)
    texts = {r[0] for r in empty_db.execute("SELECT text FROM queries")}
    assert "where is the café" in texts
    assert any(w.startswith(f"{log}:3:") for w in result["warnings"]), result["warnings"]
    assert result["errors"] == [] and result["imported"] == 2  # read as cp1252 and kept, not skipped


@pytest.mark.parametrize("bad_id", ["a b", "a\tb", "a\nb", "=HYPERLINK(1)", "+1", "-x", "@SUM", "a\u200bb"])
def test_ids_that_would_corrupt_tsv_are_refused_with_file_and_line(empty_db, tmp_path, bad_id):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"_id": "ok-1", "text": "a fine passage"}) + "\n"
                      + json.dumps({"_id": bad_id, "text": "a hostile passage"}) + "\n")
    report = ingest(empty_db, [corpus])
    ids = [r[0] for r in empty_db.execute("SELECT id FROM chunks")]
    assert ids == ["ok-1"]
    assert any(e.startswith(f"{corpus}:2: id ") for e in report.line_errors), report.line_errors


def test_document_bytes_are_recorded(empty_db, tmp_path):
    (tmp_path / "a.md").write_text("# Title\n\nSome body text here.\n")
    ingest(empty_db, [tmp_path / "a.md"])
    assert empty_db.execute("SELECT bytes FROM documents").fetchone()[0] > 0


def test_two_folders_of_the_same_name_never_replace_each_others_files(empty_db, tmp_path):
    first, second = tmp_path / "x" / "docs", tmp_path / "y" / "docs"
    for folder, words in ((first, "rotating encryption keys"), (second, "booking a meeting room")):
        folder.mkdir(parents=True)
        (folder / "a.txt").write_text(f"A guide to {words}, written for this folder only.\n")
    ingest(empty_db, [first])
    report = ingest(empty_db, [second])
    assert report.chunks_retired == 0 and "encryption keys" in _texts(empty_db)
    assert [s["path"] for s in report.skipped] == [str(second / "a.txt")]
    assert str(first / "a.txt") in report.skipped[0]["reason"] and "common parent" in report.skipped[0]["reason"]


def test_a_corpus_that_moved_keeps_its_keys_and_chunk_ids(empty_db, tmp_path):
    old, new = tmp_path / "old" / "docs", tmp_path / "new" / "docs"
    old.mkdir(parents=True)
    (old / "a.txt").write_text("Keys are rotated every ninety days.\n")
    ingest(empty_db, [old])
    ids = {r[0] for r in empty_db.execute("SELECT id FROM chunks")}
    new.parent.mkdir()
    old.rename(new)
    (new / "a.txt").write_text("Keys are rotated every ninety days.\nOld keys are kept for a year.\n")
    report = ingest(empty_db, [new])
    assert report.skipped == [] and report.documents == 1
    assert empty_db.execute("SELECT COUNT(*) FROM documents").fetchone()[0] == 1
    assert ids & {r[0] for r in empty_db.execute("SELECT id FROM chunks")}
