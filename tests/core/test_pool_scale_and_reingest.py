"""Fair-gold leftovers: one graded-relevance scale (store.gold.GRADES) everywhere a grade is given or
read, with old projects' grade 3 read as 2 (m011); pools that follow the corpus after a re-ingest
(out of date, computed again, retired chunks never offered, grades kept, a 0 given to text that
changed offered again). Real SQLite, real ingest, real retrievers (bm25 and tfidf: fast)."""

from __future__ import annotations

import json

import pytest

from curator.core.corpus.ingest import ingest
from curator.core.errors import InputError
from curator.core.export.writers import export
from curator.core.queries.rows import add_query, get_query
from curator.core.review import decisions, pool
from curator.core.store import open_project
from curator.core.store import gold as gold_scale
from curator.core.store.stats import compute_corpus_key, corpus_key, project_stats

LEXICAL = ("bm25", "tfidf")


# -- one scale -----------------------------------------------------------------------------------

def test_the_scale_is_trec_s_three_levels_and_the_gold_grades_cycle_within_it():
    assert gold_scale.GRADES == {0: "not relevant", 1: "relevant", 2: "highly relevant"}
    assert gold_scale.MAX_GRADE == 2 and gold_scale.GOLD_GRADES == (1, 2)
    assert [gold_scale.next_gold_grade(g) for g in (None, 1, 2)] == [2, 2, 1]  # Shift+N: 1 -> 2 -> 1, never 3


def test_a_decision_off_the_scale_is_refused_whoever_makes_it(sample_db):
    chunk = sample_db.execute("SELECT id FROM chunks WHERE active = 1 LIMIT 1").fetchone()[0]
    with sample_db.conn:
        qid = add_query(sample_db, "a question", "manual")
    with pytest.raises(InputError, match=r"grade 3 of .* not on the scale \(0 not relevant, 1 relevant, 2 highly"):
        decisions.decide(sample_db, qid, "gold", "ana", gold=[chunk], grades={chunk: 3})
    assert get_query(sample_db, qid)["gold_chunk_ids"] == []  # nothing written
    decisions.decide(sample_db, qid, "gold", "ana", gold=[chunk], grades={chunk: 2})
    assert get_query(sample_db, qid)["gold_grades"] == {chunk: 2}


def test_an_old_project_s_grade_3_reads_2_in_rows_journal_undo_and_qrels(sample_project_path, tmp_path):
    """Before m011 the gold dialog and Shift+1-5 wrote 3; the project opened now reads it as 2 everywhere,
    and undoing a decision made then does not bring a 3 back."""
    db = open_project(sample_project_path)
    a, b = [r[0] for r in db.execute("SELECT id FROM chunks WHERE active = 1 ORDER BY id LIMIT 2")]
    with db.conn:
        qid = add_query(db, "an old graded question", "manual")
    decisions.decide(db, qid, "gold", "ana", gold=[a], grades={a: 2})
    decisions.decide(db, qid, "approve", "ana", gold=[a, b], grades={a: 2, b: 1})
    with db.conn:  # what the old keys wrote, as an old project holds it
        db.execute("UPDATE queries SET gold_grades = ? WHERE id = ?", [json.dumps({a: 3, b: 1}), qid])
        for decision_id, after in db.execute("SELECT id, after FROM decisions WHERE query_id = ?", [qid]).fetchall():
            state = json.loads(after)
            state["gold_grades"] = {c: (3 if c == a else g) for c, g in state["gold_grades"].items()}
            db.execute("UPDATE decisions SET after = ?, before = ? WHERE id = ?",
                       [json.dumps(state), json.dumps({**state, "status": "pending"}), decision_id])
        db.execute("DELETE FROM _sqlite_migrations WHERE name = 'm011_one_grade_scale'")
    db.close()
    db = open_project(sample_project_path)
    assert get_query(db, qid)["gold_grades"] == {a: 2, b: 1}
    out = tmp_path / "gold.qrels"
    export(db, out, format="trec")
    assert f"{qid} 0 {a} 2" in out.read_text().splitlines()
    journal = [json.loads(side) for r in db.execute("SELECT before, after FROM decisions WHERE query_id = ?", [qid])
               for side in r]
    assert all(g <= 2 for state in journal for g in state["gold_grades"].values())
    decisions.undo(db, "ana")
    assert max(get_query(db, qid)["gold_grades"].values()) == 2
    db.close()


# -- pools follow the corpus -----------------------------------------------------------------------

def _sentences(topic: str, n: int) -> str:
    return " ".join(f"The {topic} valve number {i} is opened with the {topic} key before the pump starts." for i in range(n))


@pytest.fixture
def folder_project(tmp_path):
    """A folder corpus (three files about valves and keys, small chunks) and a row asked about it,
    pooled by bm25 and tfidf."""
    root = tmp_path / "corpus"
    root.mkdir()
    for name, topic in (("a.md", "red"), ("b.md", "blue"), ("c.md", "green")):
        (root / name).write_text(f"# {topic}\n\n{_sentences(topic, 12)}\n")
    db = open_project(tmp_path / "p.curator", create=True)
    ingest(db, [root], chunk_size=48, overlap=8)
    source = db.execute("SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE d.path LIKE '%a.md' "
                        "ORDER BY c.ord LIMIT 1").fetchone()[0]
    with db.conn:
        qid = add_query(db, "how is the blue valve opened with the key", "synthetic", gold_chunk_ids=[source],
                        source_chunk_ids=[source])
    pool.compute(db, [qid], retrievers=LEXICAL, run_files=[])
    yield db, root, qid, source
    db.close()


def test_a_reingest_makes_the_pool_out_of_date_and_refresh_offers_the_new_corpus(folder_project):
    db, root, qid, source = folder_project
    offered = [e["chunk_id"] for e in pool.pooled(db, qid)]
    blue = [c for c in offered if "blue" in db.execute("SELECT text FROM chunks WHERE id = ?", [c]).fetchone()[0]]
    relevant, not_relevant = blue[0], blue[1]
    pool.grade(db, qid, relevant, 2, "ana")
    pool.grade(db, qid, not_relevant, 0, "ana")
    assert pool.outdated(db) == [] and project_stats(db)["pools"] == {"pooled": 1, "out_of_date": 0}

    (root / "b.md").write_text("# blue\n\nThe blue valve is now opened with the new blue key, the blue lever.\n")
    (root / "d.md").write_text(f"# violet\n\n{_sentences('blue violet', 3)}\n")
    ingest(db, [root], chunk_size=48, overlap=8)
    retired = {r[0] for r in db.execute("SELECT id FROM chunks WHERE active = 0")}
    assert retired and set(offered) & retired  # the pool held chunks the re-ingest removed
    assert pool.outdated(db) == [qid] and pool.is_outdated(db, qid)
    assert project_stats(db)["pools"] == {"pooled": 1, "out_of_date": 1}
    assert not {e["chunk_id"] for e in pool.pooled(db, qid)} & retired  # never offered, even before a refresh

    assert pool.refresh(db)["queries"] == 1
    assert pool.outdated(db) == [] and project_stats(db)["pools"]["out_of_date"] == 0
    new_chunks = {r[0] for r in db.execute("SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id "
                                           "WHERE c.active = 1 AND (d.path LIKE '%b.md' OR d.path LIKE '%d.md')")}
    now_offered = {e["chunk_id"] for e in pool.pooled(db, qid)}
    assert now_offered & new_chunks and not now_offered & retired
    row = get_query(db, qid)  # the grades given survive; the retired gold makes the row stale, as for any gold
    assert row["gold_grades"] == {source: 1, relevant: 2, not_relevant: 0} and row["stale"] == 1


def test_an_unchanged_reingest_leaves_pools_current(folder_project):
    db, root, qid, _ = folder_project
    ingest(db, [root], chunk_size=48, overlap=8)
    assert pool.outdated(db) == [] and pool.needing_pool(db, everywhere=True) == []


def test_the_corpus_key_is_what_the_last_ingest_recorded_not_a_scan_per_render(folder_project):
    """Each Review render asks whether a pool is out of date; the key comes from meta (written by the
    ingest's commit, 60-80 ms a scan at 100k chunks), and matches a fresh computation after ingest."""
    db, root, _, _ = folder_project
    assert corpus_key(db) == compute_corpus_key(db)
    recorded = corpus_key(db)
    with db.conn:  # a change no ingest made: the recorded key stands until the next ingest
        db.execute("UPDATE chunks SET active = 0 WHERE rowid = (SELECT MAX(rowid) FROM chunks)")
    assert corpus_key(db) == recorded != compute_corpus_key(db)
    (root / "later.md").write_text("# Later\n\nA page that arrives with the next ingest.\n")
    ingest(db, [root], chunk_size=48, overlap=8)
    assert corpus_key(db) == compute_corpus_key(db) != recorded


def test_a_passage_edited_in_place_offers_its_not_relevant_again_and_stales_its_gold(tmp_path):
    """A BEIR passage keeps its id when its text changes: a 0 given to the old text is offered again,
    marked, until it is graded again; a gold grade on it makes the row stale as gold labels do."""
    corpus = tmp_path / "beir" / "corpus.jsonl"
    corpus.parent.mkdir()
    passages = {f"d{i}": f"Passage {i}: the filter cartridge of model {i} is replaced every {i + 2} months."
                for i in range(8)}

    def write(texts):
        corpus.write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in texts.items()))

    write(passages)
    db = open_project(tmp_path / "beir.curator", create=True)
    ingest(db, [corpus.parent])
    with db.conn:
        qid = add_query(db, "how often is the filter cartridge replaced", "synthetic", gold_chunk_ids=["d0"],
                        source_chunk_ids=["d0"])
    pool.compute(db, [qid], retrievers=LEXICAL, run_files=[])
    first, second = [e["chunk_id"] for e in pool.pooled(db, qid)[:2]]
    pool.grade(db, qid, first, 0, "ana")
    pool.grade(db, qid, second, 1, "ana")
    decisions.decide(db, qid, "approve", "ana")
    assert first not in [e["chunk_id"] for e in pool.pooled(db, qid)]

    write({**passages, first: passages[first] + " It now also fits the filter housing.",
           second: passages[second].replace("months", "weeks")})
    ingest(db, [corpus.parent])
    assert pool.outdated(db) == [qid]
    again = {e["chunk_id"]: e for e in pool.pooled(db, qid)}
    assert first in again and again[first]["changed_since_judged"]
    assert "judged not relevant before its text changed" in pool.found_by_text(again[first])
    row = get_query(db, qid)
    assert row["gold_grades"] == {"d0": 1, first: 0, second: 1} and row["stale"] == 1
    decisions.decide(db, qid, "approve", "ana")  # reads today's gold (settles it), not the changed 0
    assert get_query(db, qid)["stale"] == 0
    assert [e["changed_since_judged"] for e in pool.pooled(db, qid) if e["chunk_id"] == first] == [True]
    pool.grade(db, qid, first, 0, "ana")  # judged against today's text: settled
    assert first not in [e["chunk_id"] for e in pool.pooled(db, qid)]
    assert get_query(db, qid)["gold_grades"][first] == 0
    decisions.undo(db, "ana")  # the settling is journaled: undo offers the changed 0 again
    assert [e["changed_since_judged"] for e in pool.pooled(db, qid) if e["chunk_id"] == first] == [True]
    pool.grade(db, qid, first, 1, "ana")  # graded relevant against today's text: gold, the row current
    assert get_query(db, qid)["stale"] == 0
    decisions.undo(db, "ana")
    pool.grade(db, qid, first, 0, "ana")
    assert first not in [e["chunk_id"] for e in pool.pooled(db, qid)]
    assert pool.refresh(db)["queries"] == 1 and pool.outdated(db) == []
    assert get_query(db, qid)["gold_grades"] == {"d0": 1, first: 0, second: 1}  # the grades outlive the pool
    db.close()


def test_merging_a_copy_that_still_holds_a_grade_3_reads_it_as_2(sample_project_path, tmp_path):
    """merge reads the other copy as it is (read-only, not migrated): its 3s are read as 2, in the
    decision it adopts and in the journal rows it imports (which adjudication replays)."""
    import shutil

    from curator.core.review.merge import merge

    db = open_project(sample_project_path)
    chunk = db.execute("SELECT id FROM chunks WHERE active = 1 ORDER BY id LIMIT 1").fetchone()[0]
    with db.conn:
        qid = add_query(db, "a question both copies hold", "manual")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    other = tmp_path / "bob.curator"
    shutil.copy(sample_project_path, other)
    theirs = open_project(other)
    decisions.decide(theirs, qid, "approve", "bob", gold=[chunk], grades={chunk: 2})
    with theirs.conn:  # what an old copy holds
        theirs.execute("UPDATE queries SET gold_grades = ? WHERE id = ?", [json.dumps({chunk: 3}), qid])
        theirs.execute("UPDATE decisions SET after = json_set(after, '$.gold_grades', json(?)) WHERE query_id = ?",
                       [json.dumps({chunk: 3}), qid])
    theirs.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    theirs.close()
    db = open_project(sample_project_path)
    report = merge(db, other)
    assert report["adopted"] == 1 and report["errors"] == []
    assert get_query(db, qid)["gold_grades"] == {chunk: 2}
    imported = [json.loads(r[0]) for r in db.execute("SELECT after FROM decisions WHERE state = 'merged'")]
    assert imported and all(state["gold_grades"] == {chunk: 2} for state in imported)
    db.close()
