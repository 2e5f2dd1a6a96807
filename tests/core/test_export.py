"""Export: RAGAS field names, a BEIR folder its loader reads, TREC qrels, manifest, atomic writes."""

from __future__ import annotations

import csv
import json

import pytest

from curator.core.export import writers as export_module
from curator.core.export.writers import export
from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide

RAGAS_FIELDS = {"user_input", "reference", "reference_contexts", "reference_context_ids"}


@pytest.fixture
def labelled_db(sample_db):
    chunk_ids = [r[0] for r in sample_db.execute("SELECT id FROM chunks ORDER BY id LIMIT 3")]
    with sample_db.conn:
        a = add_query(sample_db, "How do I rotate keys?", "manual", reference="larkspurctl keys rotate",
                      gold_chunk_ids=chunk_ids[:2])
        b = add_query(sample_db, "Does Larkspur run on a toaster?", "manual", answerable=False)
        c = add_query(sample_db, "Pending question?", "manual", gold_chunk_ids=chunk_ids[2:])
    decide(sample_db, a, "approve", "ana")
    decide(sample_db, b, "unanswerable", "ana")
    return sample_db, (a, b, c), chunk_ids


def test_jsonl_has_ragas_fields_and_only_reviewed_rows(labelled_db, tmp_path):
    db, (a, b, c), chunk_ids = labelled_db
    manifest = export(db, tmp_path / "gold.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "gold.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == sorted([a, b])
    assert all(RAGAS_FIELDS <= set(r) for r in rows)
    approved = next(r for r in rows if r["id"] == a)
    assert approved["reference_context_ids"] == chunk_ids[:2] and len(approved["reference_contexts"]) == 2
    assert next(r for r in rows if r["id"] == b)["answerable"] is False
    assert manifest["by_status"] == {"approved": 1, "unanswerable": 1}
    assert json.loads((tmp_path / "gold.jsonl.manifest.json").read_text())["files"]["gold.jsonl"]


def test_beir_folder_reads_like_generic_data_loader(labelled_db, tmp_path):
    db, (a, b, _), chunk_ids = labelled_db
    export(db, tmp_path / "beir", "beir")
    corpus = {d["_id"]: d for d in map(json.loads, (tmp_path / "beir/corpus.jsonl").read_text().splitlines())}
    queries = {q["_id"]: q for q in map(json.loads, (tmp_path / "beir/queries.jsonl").read_text().splitlines())}
    # GenericDataLoader: skips the qrels header, reads query-id, corpus-id, score.
    with open(tmp_path / "beir/qrels/test.tsv") as fh:
        reader = csv.reader(fh, delimiter="\t")
        assert next(reader) == ["query-id", "corpus-id", "score"]
        qrels = [(q, d, int(s)) for q, d, s in reader]
    assert qrels == [(a, chunk_ids[0], 1), (a, chunk_ids[1], 1)]
    assert all(d in corpus for _, d, _ in qrels) and set(corpus[chunk_ids[0]]) == {"_id", "title", "text", "metadata"}
    assert queries[b]["metadata"]["answerable"] is False


def test_trec_qrels_lines(labelled_db, tmp_path):
    db, (a, _, _), chunk_ids = labelled_db
    export(db, tmp_path / "gold.qrels", "trec")
    assert (tmp_path / "gold.qrels").read_text().splitlines() == [f"{a} 0 {chunk_ids[0]} 1", f"{a} 0 {chunk_ids[1]} 1"]


def test_failed_export_leaves_previous_file_intact(labelled_db, tmp_path, monkeypatch):
    db, _, _ = labelled_db
    target = tmp_path / "gold.jsonl"
    export(db, target)
    before = target.read_bytes()

    def broken(*args):
        raise RuntimeError("disk full")

    monkeypatch.setattr(export_module, "jsonl_record", broken)
    with pytest.raises(RuntimeError):
        export(db, target)
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def _json_text_inside(value, where="manifest") -> list[str]:
    """Paths of string values that are themselves a JSON object or list (JSON inside JSON)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _json_text_inside(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _json_text_inside(v, f"{where}[{i}]")]
    if isinstance(value, str) and value.strip()[:1] in "{[":
        try:
            json.loads(value)
        except ValueError:
            return []
        return [where]
    return []


def test_the_manifest_holds_objects_not_json_strings(labelled_db, tmp_path):
    from curator.core.clustering.cluster import cluster_queries

    db, _, _ = labelled_db
    cluster_queries(db, embedder="tfidf", k=2, seed=0)
    export(db, tmp_path / "gold.jsonl")
    manifest = json.loads((tmp_path / "gold.jsonl.manifest.json").read_text())
    assert _json_text_inside(manifest) == []
    assert isinstance(manifest["cluster_run"]["params"], dict) and manifest["cluster_run"]["params"]["k"] == 2
    assert manifest["chunker"] and all(isinstance(c, dict) for c in manifest["chunker"])
    assert _json_text_inside({"a": ['{"k": 1}']}) == ["manifest.a[0]"]  # the check itself can fail
