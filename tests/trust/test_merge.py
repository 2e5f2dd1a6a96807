"""Two reviewers on two copies: merge, agreement (checked against sklearn) and adjudication."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.review import adjudicate
from curator.core.review import decisions
from curator.core.review.agreement import agreement
from curator.core.errors import InputError, NotAProject
from curator.core.review.merge import merge
from curator.core.queries.rows import add_query, get_query
from curator.core.store import open_project

# Twelve queries; ann decides 0-8 in her copy, bob 3-11 in his: 3-8 overlap.
ANN = {0: "approve", 1: "reject", 2: "approve", 3: "approve", 4: "approve", 5: "reject", 6: "unanswerable",
       7: "approve", 8: "reject"}
BOB = {3: "approve", 4: "reject", 5: "reject", 6: "unanswerable", 7: "unanswerable", 8: "approve", 9: "approve",
       10: "reject", 11: "unanswerable"}
STATUS = {"approve": "approved", "reject": "rejected", "unanswerable": "unanswerable"}
CLUSTER_OF = {i: i % 2 for i in range(12)}  # queries 3,5,7 in cluster 1; 4,6,8 in cluster 0


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _checkpoint(path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


@pytest.fixture
def copies(tmp_path, sample_project_path):
    """A base project with queries and an active cluster run, copied for ann and bob."""
    db = open_project(sample_project_path)
    chunks = [r[0] for r in db.execute("SELECT id FROM chunks WHERE active = 1 ORDER BY id LIMIT 12")]
    with db.conn:
        qids = [add_query(db, f"how does feature number {i} work?", "manual", gold_chunk_ids=[chunks[i]])
                for i in range(12)]
        db.execute("INSERT INTO cluster_runs (id, created_at, k, active) VALUES (1, 'now', 2, 1)")
        for c in (0, 1):
            db.execute("INSERT INTO clusters (run_id, cluster, label, size) VALUES (1, ?, ?, 6)", [c, f"topic {c}"])
        for i, q in enumerate(qids):
            db.execute("INSERT INTO query_clusters (run_id, query_id, cluster) VALUES (1, ?, ?)", [q, CLUSTER_OF[i]])
    db.close()
    _checkpoint(sample_project_path)
    a, b = tmp_path / "ann.curator", tmp_path / "bob.curator"
    shutil.copy(sample_project_path, a)
    shutil.copy(sample_project_path, b)
    for path, reviewer, plan in ((a, "ann", ANN), (b, "bob", BOB)):
        db = open_project(path)
        for i, action in plan.items():
            decisions.decide(db, qids[i], action, reviewer)
        db.close()
    # bob also edited the answer of query 9 after approving it, and decided a query ann's copy lacks
    db = open_project(b)
    decisions.decide(db, qids[9], "edit", "bob", reference="bob's answer")
    with db.conn:
        extra = add_query(db, "a question only bob has?", "manual")
    decisions.decide(db, extra, "reject", "bob")
    db.close()
    _checkpoint(b)
    return a, b, qids, chunks


def test_merge_keeps_both_lists_conflicts_and_is_idempotent(copies):
    a, b, qids, _ = copies
    before = _sha(b)
    db = open_project(a)
    result = merge(db, b)
    assert _sha(b) == before  # the other copy is only read
    assert result["matched"] == 9 and result["unmatched"] == 1
    assert result["decisions_imported"] == 10  # bob's 9 labels + his edit, not the unmatched query
    assert result["adopted"] == 3  # queries 9, 10, 11: only bob decided them
    expected = sorted(qids[i] for i in range(3, 9) if ANN[i] != BOB[i])
    assert [c["query_id"] for c in result["conflicts"]] == expected
    conflict = result["conflicts"][0]
    assert [d["reviewer"] for d in conflict["decisions"]] == ["ann", "bob"] and "status" in conflict["fields"]
    # ann's rows stay as she left them; bob's rows she never touched take his decision
    assert get_query(db, qids[4])["status"] == "approved"
    q9 = get_query(db, qids[9])
    assert (q9["status"], q9["reviewer"], q9["reference"]) == ("approved", "bob", "bob's answer")
    count = db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0]

    again = merge(db, b)
    assert (again["decisions_imported"], again["adopted"]) == (0, 0)
    assert [c["query_id"] for c in again["conflicts"]] == expected
    assert db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == count
    # ann's undo is still hers: the imported rows are never on her stack
    assert decisions.undo(db, "ann") == qids[8]
    assert get_query(db, qids[8])["status"] == "pending"
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()


def test_merge_back_the_other_way_adds_nothing_twice(copies):
    a, b, qids, _ = copies
    db = open_project(a)
    merge(db, b)
    db.close()
    _checkpoint(a)
    db = open_project(b)
    first = merge(db, a)
    # ann's 9 decisions come across; bob's own rows (and the adoptions made as bob) are recognised
    assert first["decisions_imported"] == 9 + 3
    assert first["adopted"] == 3  # queries 0-2: only ann decided them
    again = merge(db, a)
    assert again["decisions_imported"] == 0
    assert {c["query_id"] for c in first["conflicts"]} == {qids[i] for i in range(3, 9) if ANN[i] != BOB[i]}
    db.close()


def test_agreement_matches_sklearn_overall_and_per_cluster(copies):
    sk = pytest.importorskip("sklearn.metrics")
    a, b, qids, _ = copies
    db = open_project(a)
    merge(db, b)
    result = agreement(db)
    db.close()
    pair = result["pairs"][0]
    overlap = list(range(3, 9))
    ann = [STATUS[ANN[i]] for i in overlap]
    bob = [STATUS[BOB[i]] for i in overlap]
    assert (pair["a"], pair["b"], pair["n"]) == ("ann", "bob", 6)
    assert pair["agreement"] == pytest.approx(sum(x == y for x, y in zip(ann, bob)) / 6)
    assert pair["kappa"] == pytest.approx(sk.cohen_kappa_score(ann, bob))
    for entry in pair["by_cluster"]:
        ids = [i for i in overlap if CLUSTER_OF[i] == entry["cluster"]]
        x, y = [STATUS[ANN[i]] for i in ids], [STATUS[BOB[i]] for i in ids]
        assert entry["n"] == len(ids) and entry["label"] == f"topic {entry['cluster']}"
        assert entry["kappa"] == pytest.approx(sk.cohen_kappa_score(x, y))
    assert [c["cluster"] for c in pair["by_cluster"]] == [0, 1]


def test_adjudication_resolves_is_journaled_and_undoable(copies):
    a, b, qids, chunks = copies
    db = open_project(a)
    conflicts = merge(db, b)["conflicts"]
    first, second = conflicts[0]["query_id"], conflicts[1]["query_id"]
    result = adjudicate.resolve(db, first, "carol", pick="bob")
    bob_status = next(d["status"] for d in conflicts[0]["decisions"] if d["reviewer"] == "bob")
    assert result["status"] == bob_status and get_query(db, first)["reviewer"] == "carol"
    adjudicate.resolve(db, second, "carol", status="approved", gold=[chunks[0]], reference="final")
    q = get_query(db, second)
    assert (q["status"], q["gold_chunk_ids"], q["reference"]) == ("approved", [chunks[0]], "final")
    remaining = [c["query_id"] for c in adjudicate.conflicts(db)]
    assert first not in remaining and second not in remaining
    assert {c["query_id"] for c in adjudicate.conflicts(db, include_resolved=True)} >= {first, second}
    assert agreement(db)["reviewers"] == ["ann", "bob"]  # the judge is not a reviewer
    assert decisions.undo(db, "carol") == second  # an adjudication undoes like any decision
    assert second in [c["query_id"] for c in adjudicate.conflicts(db)]
    with pytest.raises(InputError, match="dave"):
        adjudicate.resolve(db, first, "carol", pick="dave")
    with pytest.raises(InputError, match="status"):
        adjudicate.resolve(db, first, "carol")
    db.close()


def test_adjudicating_unanswerable_to_approved_makes_it_answerable(copies):
    a, b, qids, chunks = copies
    db = open_project(a)
    merge(db, b)
    adjudicate.resolve(db, qids[7], "carol", pick="ann")  # ann approved, bob said unanswerable
    decisions.decide(db, qids[6], "unanswerable", "ann")
    adjudicate.resolve(db, qids[6], "carol", status="approved", gold=[chunks[6]])
    assert get_query(db, qids[6])["answerable"] == 1
    db.close()


def test_merge_refuses_foreign_files_and_itself(copies, tmp_path):
    a, _, _, _ = copies
    junk = tmp_path / "junk.curator"
    junk.write_bytes(b"not sqlite at all" * 100)
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    db = open_project(a)
    for path, match in ((junk, "not a SQLite file"), (foreign, "not a Curator project"),
                        (tmp_path / "missing.curator", "no such project")):
        digest = _sha(path) if path.exists() else None
        with pytest.raises(NotAProject, match=match):
            merge(db, path)
        assert digest is None or _sha(path) == digest
    with pytest.raises(InputError, match="this project itself"):
        merge(db, a)
    db.close()


def test_cli_merge_agreement_conflicts_adjudicate(copies):
    a, b, qids, _ = copies
    runner = CliRunner()
    out = runner.invoke(cli, ["merge", str(a), str(b), "--json"])
    assert out.exit_code == 0, out.output
    merged = json.loads(out.output)
    assert merged["adopted"] == 3 and merged["conflicts"]
    text = runner.invoke(cli, ["merge", str(a), str(b)])
    assert "0 decisions imported" in text.output and "conflicts" in text.output
    agree = runner.invoke(cli, ["agreement", str(a)])
    assert agree.exit_code == 0 and "ann vs bob: 6 queries" in agree.output and "topic 0" in agree.output
    listed = json.loads(runner.invoke(cli, ["conflicts", str(a), "--json"]).output)
    target = listed[0]["query_id"]
    done = runner.invoke(cli, ["adjudicate", str(a), target, "--pick", "ann", "--judge", "carol", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["reviewer"] == "carol"
    assert len(json.loads(runner.invoke(cli, ["conflicts", str(a), "--json"]).output)) == len(listed) - 1
    bad = runner.invoke(cli, ["merge", str(a), str(a.with_name("nope.curator"))])
    assert bad.exit_code == 1 and "Error:" in bad.output and "no such project" in bad.output


def test_same_reviewer_name_in_both_copies_is_warned(copies, tmp_path):
    """Two laptops whose reviewers both label as 'reviewer' (the default name) cannot be told
    apart; merge says so instead of silently reporting no conflicts."""
    a, b, qids, _ = copies
    c = tmp_path / "carl.curator"
    shutil.copy(b, c)
    db = open_project(c)
    decisions.decide(db, qids[0], "reject", "ann")  # someone else labelling as 'ann'
    decisions.decide(db, qids[2], "approve", "ann")  # the same verdict as the real ann: no warning on its own
    db.close()
    _checkpoint(c)
    db = open_project(a)
    result = merge(db, c)
    db.close()
    assert len(result["warnings"]) == 1 and "'ann'" in result["warnings"][0]
    db = open_project(a)
    assert merge(db, b)["warnings"] == []
    db.close()


def test_blind_overlap_plan_copies_and_merge(tmp_path, sample_project_path):
    from curator.core.review.merge import assign_overlap, assigned, overlap_ids

    sk = pytest.importorskip("sklearn.metrics")
    db = open_project(sample_project_path)
    with db.conn:
        chunk = db.execute("SELECT id FROM chunks WHERE active = 1 ORDER BY id LIMIT 1").fetchone()[0]
        qids = [add_query(db, f"overlap question number {i}?", "manual", gold_chunk_ids=[chunk]) for i in range(20)]
    plan = assign_overlap(db, ["ann", "bob"], share=0.25, seed=1)
    assert plan["overlap"] == 5 and plan["per_reviewer"] == {"ann": 5 + 8, "bob": 5 + 7}
    both = overlap_ids(db)
    assert set(assigned(db, "ann")) & set(assigned(db, "bob")) == both
    assert set(assigned(db, "ann")) | set(assigned(db, "bob")) == set(qids)
    with pytest.raises(InputError, match="carol"):
        assigned(db, "carol")
    for bad in (["ann"], ["ann", "ann"]):
        with pytest.raises(InputError, match="two"):
            assign_overlap(db, bad, 0.2)
    db.close()
    _checkpoint(sample_project_path)
    a, b = tmp_path / "ann.curator", tmp_path / "bob.curator"
    shutil.copy(sample_project_path, a)
    shutil.copy(sample_project_path, b)

    ann_labels, bob_labels = {}, {}
    for path, name, labels in ((a, "ann", ann_labels), (b, "bob", bob_labels)):
        db = open_project(path)
        for i, qid in enumerate(assigned(db, name)):
            if name == "ann" and qid == sorted(both)[0]:
                continue  # ann has not reached this overlap query yet
            action = ("approve", "reject")[(i + (name == "bob")) % 2]
            decisions.decide(db, qid, action, name)
            labels[qid] = STATUS[action]
        db.close()
    _checkpoint(b)
    db = open_project(a)
    result = merge(db, b)
    waiting = sorted(both)[0]
    assert result["held_blind"] == 1 and get_query(db, waiting)["status"] == "pending"  # still blind for ann
    assert result["adopted"] == 7  # bob's own share
    common = sorted(set(ann_labels) & set(bob_labels))
    assert len(common) == 4
    pair = agreement(db)["pairs"][0]
    assert pair["n"] == 4
    assert pair["kappa"] == pytest.approx(sk.cohen_kappa_score([ann_labels[q] for q in common],
                                                               [bob_labels[q] for q in common]))
    disagree = {q for q in common if ann_labels[q] != bob_labels[q]}
    assert {c["query_id"] for c in result["conflicts"]} == disagree
    db.close()
    runner = CliRunner()
    out = runner.invoke(cli, ["assigned", str(a), "--reviewer", "bob", "--json"])
    assert out.exit_code == 0 and len(json.loads(out.output)) == 12
    out = runner.invoke(cli, ["overlap", str(a), "--reviewers", "ann,bob", "--share", "1.5"])
    assert out.exit_code == 2 and "share" in out.output
