"""Coverage of real queries by synthetic rows, and the chunk list that aims generation at the gaps.

A real project (the ingested sample corpus), real MiniLM vectors and a real (PCA-path) cluster run:
billing is asked only by real users, sync and login have synthetic rows too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.core import store
from curator.core.clustering import coverage
from curator.core.clustering.cluster import cluster_queries
from curator.core.corpus import documents
from curator.core.errors import InputError
from curator.core.generation.plan import eligible_chunks
from curator.core.queries.rows import add_query
from curator.core.store import open_project

TOPICS = json.loads((Path(__file__).parents[1] / "data" / "topic_queries.json").read_text())


def _fill(db, synthetic_topics=("sync", "login")) -> dict[str, list[str]]:
    ids: dict[str, list[str]] = {}
    with db.conn:
        for topic, texts in TOPICS.items():
            for i, text in enumerate(texts):
                if topic in synthetic_topics and i % 2:
                    add_query(db, f"{text} how", "synthetic", query_type="factoid")
                else:  # a billing query that got negative feedback weighs twice as much
                    ids.setdefault(topic, []).append(add_query(db, text, "log", query_type="log",
                                                               negative_count=int(topic == "billing" and i == 0)))
    return ids


@pytest.fixture
def clustered(sample_project_path):
    db = open_project(sample_project_path)
    real = _fill(db)
    cluster_queries(db, embedder="default", k=3, seed=0)
    yield db, real
    db.close()


def _cluster_of(db, query_id: str) -> int:
    return db.execute("SELECT cluster FROM query_clusters WHERE query_id = ?", [query_id]).fetchone()[0]


def test_a_cluster_of_real_queries_only_is_under_covered(clustered):
    db, real = clustered
    billing = _cluster_of(db, real["billing"][0])
    assert {_cluster_of(db, q) for q in real["billing"]} == {billing}, "the topics are three clusters"
    report = coverage.coverage(db)
    by_cluster = {c["cluster"]: c for c in report["clusters"]}
    assert by_cluster[billing]["synthetic"] == 0 and by_cluster[billing]["real"] == 6
    assert by_cluster[billing]["negative"] == 1 and by_cluster[billing]["under_covered"]
    assert report["under_covered"] == [billing]
    assert report["real"] == 12 and report["real_in_clusters_without_synthetic"] == 6
    assert report["share_real_in_clusters_without_synthetic"] == 0.5
    # billing's real queries have only billing (real) queries as nearest neighbours
    gaps = coverage.measure(db).gap_ids()
    assert set(real["billing"]) <= gaps
    assert by_cluster[billing]["real_without_synthetic_neighbour"] == 6


def test_rows_added_since_the_run_are_placed_by_their_nearest_query(clustered):
    db, real = clustered
    billing = _cluster_of(db, real["billing"][0])
    with db.conn:
        add_query(db, "refund my invoice twice please", "synthetic", query_type="factoid")
    report = coverage.coverage(db)
    assert report["placed_since_run"] == 1 and report["unplaced"] == 0
    assert {c["cluster"]: c["synthetic"] for c in report["clusters"]}[billing] == 1
    assert report["real_in_clusters_without_synthetic"] == 0
    # without embedding (the GUI thread) the new row stays unplaced instead of loading a model
    fresh = coverage.measure(db, embed_new=False)
    assert sum(r["cluster"] < 0 for r in fresh.rows) in (0, 1)  # cached by the call above, or not


def test_target_chunks_follow_traffic_of_the_under_covered_cluster(clustered):
    db, real = clustered
    chunks = [c["id"] for c in documents.list_chunks(db)]
    first, second = real["billing"][0], real["billing"][1]
    with db.conn:  # suggestions as suggest() stores them: rank 1 best
        for query_id, own in ((first, chunks[:3]), (second, chunks[3:6])):
            db.execute("DELETE FROM suggestions WHERE query_id = ?", [query_id])
            for rank, chunk_id in enumerate(own, 1):
                db.execute("INSERT INTO suggestions (query_id, rank, chunk_id, score, retriever, created_at)"
                           " VALUES (?,?,?,?,?,?)", [query_id, rank, chunk_id, 1.0 / rank, "test", store.now()])
        for query_id in real["billing"][2:]:  # the other billing queries ask for the same chunk as the second
            db.execute("INSERT INTO suggestions (query_id, rank, chunk_id, score, retriever, created_at)"
                       " VALUES (?,?,?,?,?,?)", [query_id, 1, chunks[3], 1.0, "test", store.now()])
    plan = coverage.target_chunks(db)
    assert [c["label"] for c in plan["clusters"]] and len(plan["clusters"]) == 1
    order = plan["chunk_ids"]
    assert len(order) == len(set(order)) == 6 and set(order) == set(chunks[:6])
    # the query with negative feedback weighs twice as much: its chunks come up first and twice as often
    assert order[0] == chunks[0] and order[:4].count(chunks[1]) + order[:4].count(chunks[0]) == 2


def test_a_fully_covered_project_has_nothing_to_aim_at(sample_project_path):
    db = open_project(sample_project_path)
    _fill(db, synthetic_topics=("sync", "login", "billing"))
    cluster_queries(db, embedder="default", k=3, seed=0)
    report = coverage.coverage(db)
    assert report["under_covered"] == [] and report["share_real_in_clusters_without_synthetic"] == 0
    with pytest.raises(InputError, match="no under-covered cluster"):
        coverage.target_chunks(db)
    db.close()


def test_no_cluster_run_says_what_to_do(sample_project_path):
    db = open_project(sample_project_path)
    with pytest.raises(InputError, match="curator cluster"):
        coverage.coverage(db)
    db.close()


def test_weighted_interleave_keeps_proportions_in_every_stretch():
    lists = {"a": [f"a{i}" for i in range(8)], "b": [f"b{i}" for i in range(8)], "c": ["a0", "c1", "c2", "c3"]}
    order = coverage.weighted_interleave(lists, {"a": 2.0, "b": 1.0, "c": 1.0})
    assert len(order) == len(set(order)) == 19  # c's a0 is already taken: it gives c1 instead
    for n in (4, 8):  # a weighs as much as b and c together: half of any stretch from the start
        assert sum(x.startswith("a") for x in order[:n]) == n // 2
        assert sum(x.startswith("b") for x in order[:n]) == sum(x.startswith("c") for x in order[:n]) == n // 4
    assert coverage.weighted_interleave({"a": ["x"]}, {"a": 0}) == []


def test_generation_asks_an_ordered_chunk_list_in_its_order(sample_project_path):
    db = open_project(sample_project_path)
    all_eligible = [c["id"] for c in eligible_chunks(db, 0)]
    wanted = list(reversed(all_eligible[:4])) + ["c_not_a_chunk"]
    assert [c["id"] for c in eligible_chunks(db, 0, wanted)] == wanted[:4]
    db.close()


def test_rows_added_since_the_run_get_a_map_position_near_their_neighbours(clustered):
    """placed_points: only the row added since the run (flagged placed), inside the bounds of the
    fitted points of the cluster it is counted in; the run's own points stay as stored."""
    from curator.core.clustering.reads import cluster_points

    db, real = clustered
    billing = _cluster_of(db, real["billing"][0])
    before = cluster_points(db)
    with db.conn:
        new = add_query(db, "refund my invoice twice please", "synthetic", query_type="factoid")
    points = coverage.placed_points(coverage.measure(db))
    assert [p["query_id"] for p in points] == [new]
    placed = points[0]
    assert placed["placed"] and placed["cluster"] == billing
    fitted = [p for p in cluster_points(db) if p["cluster"] == billing]
    for axis in ("x", "y"):
        values = [p[axis] for p in fitted]
        assert min(values) <= placed[axis] <= max(values)
    assert cluster_points(db) == before  # placing writes nothing


def test_target_chunks_says_which_query_and_cluster_each_chunk_is_for(clustered):
    db, real = clustered
    billing = _cluster_of(db, real["billing"][0])
    plan = coverage.target_chunks(db)
    assert set(plan["aimed"]) == set(plan["chunk_ids"])
    assert {a["cluster"] for a in plan["aimed"].values()} == {billing}
    assert {a["query"] for a in plan["aimed"].values()} <= set(real["billing"])


def test_aimed_chunks_are_those_whose_text_belongs_to_the_cluster(clustered):
    """chunk_homes places each chunk's own text among the clustered queries; target_chunks keeps
    only the chunks at home in their query's cluster (a cluster with none keeps them all)."""
    db, real = clustered
    billing = _cluster_of(db, real["billing"][0])
    plan = coverage.target_chunks(db)
    homes = coverage.chunk_homes(db, coverage.measure(db), plan["chunk_ids"])
    assert set(homes) == set(plan["chunk_ids"]) and set(homes.values()) <= {0, 1, 2}
    suggested = sorted({c for chunks in coverage._suggested(db, real["billing"]).values() for c in chunks})
    every_home = coverage.chunk_homes(db, coverage.measure(db), suggested)
    at_home = {c for c in suggested if every_home[c] == billing}
    assert at_home, "some suggested chunk of a billing query is about billing"
    assert set(plan["chunk_ids"]) == at_home and plan["at_home"] == len(at_home)


def test_chunk_homes_reuses_the_measured_vectors_and_builds_no_embedder_when_all_are_cached(clustered, monkeypatch):
    """Once the chunks' vectors are cached, chunk_homes neither builds the run's embedder nor reads
    the clustered queries' vectors again (measure loaded them): the same homes, from memory."""
    from curator.core.embedding import embed

    db, real = clustered
    suggested = sorted({c for chunks in coverage._suggested(db, real["billing"]).values() for c in chunks})
    m = coverage.measure(db)
    first = coverage.chunk_homes(db, m, suggested)  # embeds the chunks' texts into the cache
    assert set(first) == set(suggested)

    def no_model(*args, **kwargs):
        raise AssertionError("the embedder was built although every vector is cached")

    read = []
    cached = coverage._cached_vectors
    monkeypatch.setattr(embed, "get_embedder", no_model)
    monkeypatch.setattr(coverage, "_cached_vectors", lambda db, e, texts: read.extend(texts) or cached(db, e, texts))
    assert coverage.chunk_homes(db, m, suggested) == first
    query_texts = {r["text"] for r in m.rows}
    assert read and not query_texts & set(read), "only the chunks' texts are looked up"


def test_embed_unplaced_embeds_only_what_is_not_cached(clustered):
    """The worker's step: the rows added since the run get vectors (counted once), so a measure from
    cached vectors only then places them."""
    db, _ = clustered
    with db.conn:
        new = [add_query(db, text, "synthetic", query_type="factoid")
               for text in ("refund my invoice twice please", "my sync stopped on the laptop")]
    assert coverage.measure(db, embed_new=False).rows and all(
        r["cluster"] < 0 for r in coverage.measure(db, embed_new=False).rows if r["id"] in new)
    assert coverage.embed_unplaced(db) == len(new)
    assert coverage.embed_unplaced(db) == 0  # cached now: nothing to embed
    placed = {r["id"]: r for r in coverage.measure(db, embed_new=False).rows if r["id"] in new}
    assert all(r["placed"] and r["cluster"] >= 0 for r in placed.values())


def test_embed_unplaced_stops_when_cancelled(clustered):
    """The Clusters tab cancels its placing worker when the project is left: the token reaches the
    embedding loop, which stops before its next batch and stores nothing more."""
    from curator.core.progress import CancelToken, Cancelled

    db, _ = clustered
    with db.conn:
        add_query(db, "refund my invoice twice please", "synthetic", query_type="factoid")
    token = CancelToken()
    token.cancel()
    before = db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
    with pytest.raises(Cancelled):
        coverage.embed_unplaced(db, cancel=token)
    assert db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] == before
    assert coverage.embed_unplaced(db) == 1
