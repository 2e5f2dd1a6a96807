"""bench/pool.py's labelling sheet: the blind sheet hides which retriever found each chunk."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from curator.core.queries.rows import add_query
from curator.core.review import pool
from curator.core.store import open_project

_SPEC = importlib.util.spec_from_file_location("bench_pool", Path(__file__).resolve().parents[2] / "bench" / "pool.py")
bench_pool = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench_pool)


@pytest.fixture
def rows_db(sample_project_path):
    """Three synthetic rows, each asked in its source chunk's words, pooled by the lexical retrievers."""
    db = open_project(sample_project_path)
    ids = []
    with db.conn:
        for chunk_id, text in db.execute("SELECT id, text FROM chunks WHERE active = 1 ORDER BY id LIMIT 3 OFFSET 4"):
            ids.append(add_query(db, " ".join(text.split()[:12]), "synthetic", gold_chunk_ids=[chunk_id],
                                 source_chunk_ids=[chunk_id]))
    pool.compute(db, ids, k=5, retrievers=("bm25", "tfidf"), run_files=[])
    yield db, ids
    db.close()


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_blind_sheet_offers_the_same_chunks_without_who_found_them(rows_db, tmp_path):
    db, ids = rows_db
    bench_pool.write_sheet(db, ids, tmp_path / "open.jsonl")
    bench_pool.write_sheet(db, ids, tmp_path / "blind.jsonl", blind=True, seed=3)
    bench_pool.write_sheet(db, ids, tmp_path / "again.jsonl", blind=True, seed=3)
    opened, blind = read(tmp_path / "open.jsonl"), read(tmp_path / "blind.jsonl")
    assert [r["query_id"] for r in blind] == ids == [r["query_id"] for r in opened]
    assert all(e["found_by"] for r in opened for e in r["pooled"])  # the open sheet says who found it
    assert not any("found_by" in e for r in blind for e in r["pooled"])
    for o, b in zip(opened, blind):
        assert sorted(e["chunk_id"] for e in b["pooled"]) == sorted(e["chunk_id"] for e in o["pooled"])
        assert o["pooled"] and b["question"] == o["question"] and b["gold"] == o["gold"]
    assert read(tmp_path / "again.jsonl") == blind  # seeded: the grader's sheet can be rebuilt
    shuffled = [any(e["chunk_id"] != f["chunk_id"] for e, f in zip(o["pooled"], b["pooled"]))
                for o, b in zip(opened, blind)]
    assert any(shuffled)  # the pool's best-rank-first order is not kept
