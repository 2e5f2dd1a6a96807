"""Dev/test splits: parsing, stratification by cluster, determinism, files written per split."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.errors import InputError
from curator.core.export.writers import export
from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide
from curator.core.export.splits import assign_splits, parse_split


def test_parse_split_accepts_fractions_and_refuses_bad_specs():
    assert parse_split("dev=0.3,test=0.7") == {"dev": 0.3, "test": 0.7}
    assert parse_split(None) is None
    for bad in ("dev=0.3,test=0.6", "dev=x,test=1", "=0.5,test=0.5", "dev=0.5,dev=0.5", "dev=-0.5,test=1.5"):
        with pytest.raises(InputError):
            parse_split(bad)


def _rows(sizes: dict) -> list[dict]:
    return [{"id": f"q{cluster}_{i}", "cluster": cluster} for cluster, n in sizes.items() for i in range(n)]


def test_each_cluster_is_cut_at_the_fractions():
    rows = _rows({0: 10, 1: 20, None: 30})
    assignment = assign_splits(rows, {"dev": 0.3, "test": 0.7}, seed=4)
    assert set(assignment) == {r["id"] for r in rows}
    for cluster, n in ((0, 10), (1, 20), (None, 30)):
        dev = sum(1 for r in rows if r["cluster"] == cluster and assignment[r["id"]] == "dev")
        assert dev == round(0.3 * n)


def test_same_seed_same_assignment_other_seed_differs():
    rows = _rows({0: 40, 1: 40})
    fractions = {"dev": 0.5, "test": 0.5}
    assert assign_splits(rows, fractions, 1) == assign_splits(list(reversed(rows)), fractions, 1)
    assert assign_splits(rows, fractions, 1) != assign_splits(rows, fractions, 2)


def _approve_many(db, n: int) -> list[str]:
    chunk_ids = [r[0] for r in db.execute("SELECT id FROM chunks ORDER BY id LIMIT ?", [n])]
    with db.conn:
        ids = [add_query(db, f"Question number {i} about the handbook?", "manual", reference=f"answer {i}",
                         gold_chunk_ids=[chunk_ids[i]]) for i in range(n)]
    for query_id in ids:
        decide(db, query_id, "approve", "ana")
    return ids


def test_jsonl_export_writes_one_file_per_split_with_manifest_counts(sample_db, tmp_path):
    ids = _approve_many(sample_db, 10)
    manifest = export(sample_db, tmp_path / "gold.jsonl", split={"dev": 0.3, "test": 0.7}, seed=3)
    dev = [json.loads(x) for x in (tmp_path / "gold.dev.jsonl").read_text().splitlines()]
    test = [json.loads(x) for x in (tmp_path / "gold.test.jsonl").read_text().splitlines()]
    assert (len(dev), len(test)) == (3, 7)
    assert sorted(r["id"] for r in dev + test) == sorted(ids)
    assert {r["split"] for r in dev} == {"dev"} and all(r["reference_contexts"] for r in dev + test)
    assert manifest["split"]["counts"] == {"dev": 3, "test": 7} or manifest["split"]["counts"] == {"test": 7, "dev": 3}
    assert set(manifest["files"]) == {"gold.dev.jsonl", "gold.test.jsonl"}


def test_beir_export_writes_qrels_per_split(sample_db, tmp_path):
    _approve_many(sample_db, 10)
    export(sample_db, tmp_path / "beir", format="beir", split={"dev": 0.5, "test": 0.5}, seed=0)
    dev = (tmp_path / "beir" / "qrels" / "dev.tsv").read_text().splitlines()
    test = (tmp_path / "beir" / "qrels" / "test.tsv").read_text().splitlines()
    assert dev[0] == test[0] == "query-id\tcorpus-id\tscore"
    assert len(dev) - 1 == len(test) - 1 == 5
    queries = [json.loads(x) for x in (tmp_path / "beir" / "queries.jsonl").read_text().splitlines()]
    assert {q["metadata"]["split"] for q in queries} == {"dev", "test"}


def test_cli_split_option_and_bad_spec_message(sample_project_path, tmp_path):
    runner = CliRunner()
    bad = runner.invoke(cli, ["export", str(sample_project_path), str(tmp_path / "g.jsonl"), "--split", "dev=0.2"])
    assert bad.exit_code == 2 and "sum to 0.2" in bad.output
    ok = runner.invoke(cli, ["export", str(sample_project_path), str(tmp_path / "g.jsonl"), "--split",
                             "dev=0.3,test=0.7", "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["split"]["fractions"] == {"dev": 0.3, "test": 0.7}
