"""`curator generate --cluster C` seeds generation with the chunks behind cluster C's real queries."""

import json

from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.generation import engine
from curator.core import store
from curator.core.generation.backends import FakeBackend
from curator.core.clustering.cluster import cluster_queries
from curator.core.queries.logs import import_log
from curator.core.corpus.search import search_chunks
from curator.core.store import open_project

LOG = ("query\n" + "\n".join([
    "download invoice pdf", "refund for annual plan", "add vat number to invoices", "invoice shows wrong tax",
    "offline sync conflict", "sync stuck offline", "resolve sync conflict copies", "sync conflict after offline edit",
    "install on ubuntu linux", "uninstall on windows", "install tarball linux", "upgrade install windows",
]) + "\n")


def _reply(messages):
    words = [w for w in messages[-1]["content"].split("Passage", 1)[1].split() if len(w) > 4][:5]
    return f"Question: What about {' '.join(words[1:5])} here?\nAnswer: {' '.join(words[:4])}\n"


def test_generate_cluster_uses_only_that_clusters_chunks(sample_project_path, tmp_path, monkeypatch):
    log = tmp_path / "log.csv"
    log.write_text(LOG)
    db = open_project(sample_project_path)
    import_log(db, log)
    run = cluster_queries(db, k=3, seed=0)  # 12 queries: the PCA path, no UMAP worker needed
    rows = store.rows(db, "SELECT q.text, qc.cluster FROM query_clusters qc JOIN queries q ON q.id = qc.query_id "
                          "WHERE qc.run_id = ?", [run["run_id"]])
    target = next(r["cluster"] for r in rows if r["text"] == "download invoice pdf")
    expected = {h["id"] for r in rows if r["cluster"] == target for h in search_chunks(db, r["text"], limit=3)}
    db.close()
    assert expected

    backend = FakeBackend(_reply)
    monkeypatch.setattr(engine, "open_engine", lambda *a, **k: backend)
    res = CliRunner().invoke(cli, ["generate", str(sample_project_path), "--cluster", str(target), "--count", "3",
                                   "--mix", "factoid=1", "--answers", "free", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["run_id"]
    db = open_project(sample_project_path)
    made = store.rows(db, "SELECT source_chunk_ids FROM queries WHERE source = 'synthetic'")
    db.close()
    assert backend.prompts and made
    used = {c for r in made for c in json.loads(r["source_chunk_ids"])}
    assert used and used <= expected
