"""Ingest: idempotent re-runs, updates, stale gold labels, bad files, summary counts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from curator.core.corpus.documents import list_chunks, list_documents
from curator.core.corpus.ingest import ingest, iter_input_files, IngestReport
from curator.core.queries.rows import add_query, get_query
from curator.core.store import open_project

DATA = Path(__file__).resolve().parent.parent / "data"


def _sentences(prefix: str, n: int) -> str:
    return " ".join(f"{prefix} sentence {i} explains one detail of the {prefix} topic." for i in range(n))


@pytest.fixture
def corpus(tmp_path) -> Path:
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text(f"# Alpha\n\n{_sentences('alpha', 40)}\n\n## Beta\n\n{_sentences('beta', 40)}\n")
    (root / "sub" / "b.txt").write_text(_sentences("gamma", 30))
    (root / "notes.docx").write_bytes(b"PK\x03\x04 unsupported")  # ignored inside a folder
    (root / ".hidden.md").write_text("# Hidden\n\nnever ingested")
    return root


def _ids(db) -> list[str]:
    return sorted(r[0] for r in db.execute("SELECT id FROM chunks WHERE active = 1"))


def test_first_ingest_summary(empty_db, corpus):
    r = ingest(empty_db, [corpus], chunk_size=64, overlap=8)
    assert (r.files_seen, r.files_ingested, r.files_unchanged, r.skipped) == (2, 2, 0, [])
    assert r.documents == r.total_documents == 2
    assert r.chunks_added == r.total_chunks == len(_ids(empty_db)) > 4
    assert r.bytes == sum(p.stat().st_size for p in (corpus / "a.md", corpus / "sub" / "b.txt"))
    assert r.seconds >= 0 and r.chunks_retired == 0
    assert sorted(d["path"] for d in list_documents(empty_db)) == ["corpus/a.md", "corpus/sub/b.txt"]


def test_reingest_unchanged_is_a_no_op(empty_db, corpus):
    ingest(empty_db, [corpus], chunk_size=64, overlap=8)
    before = _ids(empty_db)
    r = ingest(empty_db, [corpus], chunk_size=64, overlap=8)
    assert (r.files_seen, r.files_ingested, r.files_unchanged) == (2, 0, 2)
    assert (r.documents, r.chunks_added, r.chunks_retired) == (0, 0, 0)
    assert _ids(empty_db) == before


def test_ids_identical_in_a_copy_elsewhere(tmp_path, corpus):
    other = tmp_path / "elsewhere" / "corpus"
    shutil.copytree(corpus, other)
    dbs = [open_project(tmp_path / f"{n}.curator", create=True) for n in ("one", "two")]
    ingest(dbs[0], [corpus])
    ingest(dbs[1], [other])
    assert _ids(dbs[0]) == _ids(dbs[1])
    for db in dbs:
        db.close()


def test_changed_params_rechunk(empty_db, corpus):
    ingest(empty_db, [corpus], chunk_size=64, overlap=8)
    small = len(_ids(empty_db))
    r = ingest(empty_db, [corpus], chunk_size=256, overlap=8)
    assert r.files_ingested == 2 and len(_ids(empty_db)) < small


def test_changed_file_updates_chunks_and_flags_stale_gold(empty_db, corpus):
    ingest(empty_db, [corpus], chunk_size=64, overlap=8)
    chunks = list_chunks(empty_db, "corpus/sub/b.txt")
    kept = list_chunks(empty_db, "corpus/a.md")[0]["id"]
    gold = chunks[0]["id"]
    with empty_db.conn:
        lost_q = add_query(empty_db, "what is gamma sentence 0?", "manual", gold_chunk_ids=[gold])
        kept_q = add_query(empty_db, "what is alpha?", "manual", gold_chunk_ids=[kept])
    (corpus / "sub" / "b.txt").write_text("Completely new text. " + _sentences("delta", 30))
    r = ingest(empty_db, [corpus], chunk_size=64, overlap=8)
    assert (r.files_ingested, r.files_unchanged) == (1, 1)
    assert r.chunks_retired >= 1 and r.chunks_added >= 1
    texts = " ".join(c["text"] for c in list_chunks(empty_db, "corpus/sub/b.txt"))
    assert "delta" in texts and "gamma" not in texts
    # The gold chunk is retired, not deleted, and the query is flagged rather than removed.
    assert empty_db.execute("SELECT active FROM chunks WHERE id = ?", [gold]).fetchone() == (0,)
    assert get_query(empty_db, lost_q)["stale"] == 1
    assert get_query(empty_db, kept_q)["stale"] == 0
    assert r.queries_stale == 1


def test_restoring_the_file_clears_stale(empty_db, corpus):
    ingest(empty_db, [corpus], chunk_size=64, overlap=8)
    original = (corpus / "sub" / "b.txt").read_text()
    gold = list_chunks(empty_db, "corpus/sub/b.txt")[0]["id"]
    with empty_db.conn:
        q = add_query(empty_db, "gamma?", "manual", gold_chunk_ids=[gold])
    (corpus / "sub" / "b.txt").write_text(_sentences("delta", 30))
    ingest(empty_db, [corpus], chunk_size=64, overlap=8)
    assert get_query(empty_db, q)["stale"] == 1
    (corpus / "sub" / "b.txt").write_text(original)
    ingest(empty_db, [corpus], chunk_size=64, overlap=8)
    assert get_query(empty_db, q)["stale"] == 0
    assert gold in _ids(empty_db)


def test_bad_files_never_stop_the_batch(empty_db, tmp_path):
    root = tmp_path / "mixed"
    shutil.copytree(DATA, root)
    (root / "empty.md").write_text("\n")
    r = ingest(empty_db, [root, tmp_path / "missing-folder", DATA / "guide.md.zip"])
    reasons = {Path(s["path"]).name: s["reason"] for s in r.skipped}
    assert "binary" in reasons["binary.txt"]
    assert "no text" in reasons["empty.md"]
    assert reasons["missing-folder"] == "no such file or folder"
    assert reasons["guide.md.zip"] == "no such file or folder"
    formats = {d["format"] for d in list_documents(empty_db)}
    assert formats == {"md", "rst", "html", "txt", "pdf", "jsonl"}
    assert r.files_ingested == 7  # guide, manual, page, cp1252, utf16, report.pdf, corpus.jsonl
    assert len(r.line_errors) == 1 and "corpus.jsonl:3:" in r.line_errors[0]


def test_unsupported_file_named_directly_is_reported(empty_db, tmp_path):
    odd = tmp_path / "slides.pptx"
    odd.write_bytes(b"x")
    r = ingest(empty_db, [odd])
    assert r.skipped == [{"path": str(odd), "reason": "unsupported file type .pptx"}]


def test_jsonl_corpus_keeps_ids_and_reingest_is_stable(empty_db):
    r = ingest(empty_db, [DATA / "corpus.jsonl"])
    assert _ids(empty_db) == ["doc1", "doc2", "doc4"]
    assert r.documents == 3
    again = ingest(empty_db, [DATA / "corpus.jsonl"])
    assert (again.documents, again.chunks_added, again.files_unchanged) == (0, 0, 1)
    assert _ids(empty_db) == ["doc1", "doc2", "doc4"]


def test_hidden_and_unsupported_files_in_folders_ignored(corpus):
    found = [key for _, key in iter_input_files([corpus], IngestReport())]
    assert found == ["corpus/a.md", "corpus/sub/b.txt"]


def test_progress_and_cancel(empty_db, corpus):
    from curator.core.progress import CancelToken, Cancelled

    calls = []
    ingest(empty_db, [corpus], on_progress=lambda d, t, m: calls.append((d, t)))
    assert calls[-1] == (2, 2)
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        ingest(empty_db, [corpus], cancel=token)


def test_fts_follows_ingest(empty_db, corpus):
    from curator.core.corpus.search import search_chunks

    ingest(empty_db, [corpus], chunk_size=64, overlap=8)
    assert search_chunks(empty_db, "gamma")
    (corpus / "sub" / "b.txt").write_text(_sentences("delta", 30))
    ingest(empty_db, [corpus], chunk_size=64, overlap=8)
    assert search_chunks(empty_db, "gamma") == []
    assert search_chunks(empty_db, "delta")



def test_row_removed_from_jsonl_is_retired(empty_db, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"_id": "a", "text": "alpha text here"}\n{"_id": "b", "text": "beta text here"}\n')
    ingest(empty_db, [corpus])
    with empty_db.conn:
        q = add_query(empty_db, "beta?", "manual", gold_chunk_ids=["b"])
    corpus.write_text('{"_id": "a", "text": "alpha text here"}\n')
    ingest(empty_db, [corpus])
    assert _ids(empty_db) == ["a"]
    assert get_query(empty_db, q)["stale"] == 1



def test_same_file_named_two_ways_is_one_document(empty_db, corpus):
    ingest(empty_db, [corpus])
    ingest(empty_db, [corpus / "a.md"])
    assert len(list_documents(empty_db)) == 2


def _table(db, sql: str) -> list[tuple]:
    return [tuple(r) for r in db.execute(sql)]


def test_a_file_failing_while_stored_leaves_nothing_and_earlier_files_are_kept(empty_db, corpus, monkeypatch):
    import curator.core.corpus.ingest as ingest_module

    real = ingest_module._store_documents

    def failing(db, docs, *args):
        if docs[0][0].endswith("b.txt"):
            raise RuntimeError("disk on fire")
        return real(db, docs, *args)

    monkeypatch.setattr(ingest_module, "_store_documents", failing)
    with pytest.raises(RuntimeError):
        ingest(empty_db, [corpus])
    paths = [r[0] for r in empty_db.execute("SELECT path FROM documents")]
    assert paths == ["corpus/a.md"]  # committed before the failure; b.txt left nothing behind
    assert not _table(empty_db, "SELECT id FROM chunks WHERE doc_id NOT IN (SELECT id FROM documents)")
    monkeypatch.setattr(ingest_module, "_store_documents", real)
    again = ingest(empty_db, [corpus])
    assert again.files_unchanged == 1 and again.files_ingested == 1


def test_file_name_that_is_not_utf8_is_skipped_and_the_rest_ingested(empty_db, tmp_path):
    root = tmp_path / "names"
    root.mkdir()
    (root / "good.txt").write_text(_sentences("good", 5))
    bad = Path(os.fsdecode(bytes(root) + b"/bad\xffname.txt"))
    bad.write_text(_sentences("bad", 5))
    r = ingest(empty_db, [root])
    assert r.files_ingested == 1 and [d["path"] for d in list_documents(empty_db)] == ["names/good.txt"]
    assert r.skipped == [{"path": str(root / "bad\ufffdname.txt"), "reason": "the file name is not valid UTF-8; rename the file"}]


def test_a_changed_jsonl_passage_keeps_its_id_and_takes_its_new_text(empty_db, tmp_path):
    corpus = tmp_path / "beir" / "corpus.jsonl"
    corpus.parent.mkdir()
    corpus.write_text('{"_id": "d1", "text": "The first version talks about apples and oranges in the garden."}\n'
                      '{"_id": "d2", "text": "An unchanged passage about the weather in the mountains today."}\n')
    ingest(empty_db, [corpus.parent])
    corpus.write_text('{"_id": "d1", "text": "The second version talks about pears and plums in the orchard."}\n'
                      '{"_id": "d2", "text": "An unchanged passage about the weather in the mountains today."}\n')
    again = ingest(empty_db, [corpus.parent])
    assert again.documents == 1  # only the changed passage is written again
    assert {c["id"]: c["text"] for c in list_chunks(empty_db)}["d1"].startswith("The second version")
    from curator.core.corpus.search import search_chunks
    assert [h["id"] for h in search_chunks(empty_db, "plums orchard")] == ["d1"]
    assert search_chunks(empty_db, "apples oranges") == []


def test_reingest_reads_the_recorded_sources_with_their_chunk_params(empty_db, corpus):
    from curator.core.corpus.ingest import corpus_sources, reingest
    from curator.core.errors import InputError

    with pytest.raises(InputError, match="add files or a folder first"):
        reingest(empty_db)
    ingest(empty_db, [corpus], chunk_size=64, overlap=8)
    ingest(empty_db, [corpus], chunk_size=64, overlap=8)  # the same root twice is recorded once
    assert corpus_sources(empty_db) == [str(corpus.absolute())]
    before = _ids(empty_db)
    r = reingest(empty_db)
    assert (r.files_seen, r.files_unchanged, r.chunks_added) == (2, 2, 0)  # 64/8 again, not the defaults: nothing re-chunked
    (corpus / "sub" / "b.txt").write_text(_sentences("delta", 30))
    r = reingest(empty_db)
    assert r.files_ingested == 1 and r.chunks_retired > 0 and _ids(empty_db) != before
    assert sorted(d["path"] for d in list_documents(empty_db)) == ["corpus/a.md", "corpus/sub/b.txt"]
