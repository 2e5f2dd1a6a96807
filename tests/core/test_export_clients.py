"""The exports load in the tools that read them: BEIR's GenericDataLoader and ragas' EvaluationDataset.

beir installs with ``--no-deps`` (GenericDataLoader needs only tqdm); ragas 0.4.3 needs
``langchain-community<0.4`` and ``langchain-core<1``. Each client test is skipped when its
package is missing; the schema test below holds the JSONL to ragas 0.4.3's SingleTurnSample
field names and types either way.
"""

from __future__ import annotations

import json

import pytest

from curator.core.export.writers import export
from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide

# ragas 0.4.3 SingleTurnSample fields Curator fills, with the types that model declares.
RAGAS_FIELDS = {"user_input": str, "reference": (str, type(None)), "reference_contexts": list,
                "reference_context_ids": list}


@pytest.fixture
def exported(sample_db, tmp_path):
    chunk_ids = [r[0] for r in sample_db.execute("SELECT id FROM chunks WHERE active = 1 ORDER BY id LIMIT 3")]
    with sample_db.conn:
        a = add_query(sample_db, "How do I rotate keys?", "manual", reference="larkspurctl keys rotate",
                      gold_chunk_ids=chunk_ids[:2])
        b = add_query(sample_db, "Where are webhooks signed?", "manual", reference="in the header",
                      gold_chunk_ids=chunk_ids[2:])
        c = add_query(sample_db, "Does Larkspur run on a toaster?", "manual", answerable=False)
    decide(sample_db, a, "approve", "ana")
    decide(sample_db, b, "approve", "ana")
    decide(sample_db, c, "unanswerable", "ana")
    export(sample_db, tmp_path / "gold.jsonl")
    export(sample_db, tmp_path / "beir", "beir")
    active = sample_db.execute("SELECT COUNT(*) FROM chunks WHERE active = 1").fetchone()[0]
    return tmp_path, (a, b, c), chunk_ids, active


def test_beir_folder_loads_with_generic_data_loader(exported):
    data_loader = pytest.importorskip("beir.datasets.data_loader")
    folder, (a, b, c), chunk_ids, active = exported
    corpus, queries, qrels = data_loader.GenericDataLoader(data_folder=str(folder / "beir")).load(split="test")
    assert len(corpus) == active and set(corpus[chunk_ids[0]]) >= {"title", "text"}
    assert qrels == {a: {chunk_ids[0]: 1, chunk_ids[1]: 1}, b: {chunk_ids[2]: 1}}
    # The loader keeps only queries with qrels: the unanswerable one is in the file, not in the split.
    assert queries == {a: "How do I rotate keys?", b: "Where are webhooks signed?"}
    listed = [json.loads(line)["_id"] for line in (folder / "beir" / "queries.jsonl").read_text().splitlines()]
    assert c in listed


def test_jsonl_loads_with_ragas_evaluation_dataset(exported):
    ragas = pytest.importorskip("ragas")
    folder, (a, b, c), chunk_ids, _ = exported
    dataset = ragas.EvaluationDataset.from_jsonl(str(folder / "gold.jsonl"))
    rows = [json.loads(line) for line in (folder / "gold.jsonl").read_text().splitlines()]
    assert len(dataset) == len(rows) == 3
    by_input = {s.user_input: s for s in dataset.samples}
    rotate = by_input["How do I rotate keys?"]
    assert rotate.reference == "larkspurctl keys rotate" and rotate.reference_context_ids == chunk_ids[:2]
    assert len(rotate.reference_contexts) == 2 and all(rotate.reference_contexts)
    assert by_input["Does Larkspur run on a toaster?"].reference_contexts == []


def test_jsonl_fields_match_ragas_single_turn_sample_schema(exported):
    folder, _, _, _ = exported
    for line in (folder / "gold.jsonl").read_text().splitlines():
        row = json.loads(line)
        for name, kind in RAGAS_FIELDS.items():
            assert isinstance(row[name], kind), (name, row[name])
        assert all(isinstance(t, str) for t in row["reference_contexts"] + row["reference_context_ids"])
        assert len(row["reference_contexts"]) == len(row["reference_context_ids"])
    try:
        from ragas.dataset_schema import SingleTurnSample
    except ImportError:
        return
    assert set(RAGAS_FIELDS) <= set(SingleTurnSample.model_fields)  # the names above are ragas' own
