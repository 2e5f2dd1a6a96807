"""stats.gold_set_version: the Validity tab's "out of date" check sees every change an evaluation reads."""

from __future__ import annotations

from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide, undo
from curator.core.store.stats import approved_by_source, gold_set_version


def test_a_gold_edit_with_the_same_counts_changes_the_version_and_undo_changes_it_again(sample_db):
    first, second = [r[0] for r in sample_db.execute("SELECT id FROM chunks WHERE active = 1 LIMIT 2")]
    with sample_db.conn:
        query_id = add_query(sample_db, "how do keys rotate?", "synthetic", gold_chunk_ids=[first])
    decide(sample_db, query_id, "approve", "ann")
    assert approved_by_source(sample_db) == {"synthetic": 1}
    checked = gold_set_version(sample_db)
    decide(sample_db, query_id, "gold", "ann", gold=[second])  # same counts, other gold
    assert approved_by_source(sample_db) == {"synthetic": 1} and gold_set_version(sample_db) != checked
    edited = gold_set_version(sample_db)
    undo(sample_db, "ann")
    assert gold_set_version(sample_db) not in (checked, edited)
    assert gold_set_version(sample_db) == gold_set_version(sample_db)  # stable while nothing changes
