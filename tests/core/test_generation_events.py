"""generate's events: each accepted row (as stored), each rejected candidate with its reason, progress."""

from __future__ import annotations

from curator.core.generation.backends import FakeBackend
from curator.core.generation.generate import GenerationConfig, GenerationEvents, generate
from curator.core.generation.runs import rejected_candidates
from curator.core.queries.rows import list_queries
from scripted import good_reply


def every_third_is_bad(messages, _calls=[0]) -> str:
    _calls[0] += 1
    return "Here are two questions about it" if _calls[0] % 3 == 0 else good_reply(messages)


def test_events_report_what_was_stored_as_it_was_stored(sample_db):
    accepted, rejected, progress = [], [], []

    def on_accepted(row: dict) -> None:  # the row is committed before anyone hears of it
        assert sample_db.execute("SELECT 1 FROM queries WHERE id = ?", [row["id"]]).fetchone()
        accepted.append(row)

    events = GenerationEvents(accepted=on_accepted, rejected=lambda *c: rejected.append(c),
                              progress=lambda *p: progress.append(p))
    summary = generate(sample_db, GenerationConfig(count=6, seed=1), backend=FakeBackend(every_third_is_bad),
                       events=events)
    stored = [q for q in list_queries(sample_db) if q["run_id"] == summary["run_id"]]
    assert sorted(r["id"] for r in accepted) == sorted(q["id"] for q in stored) and len(accepted) == 6
    assert accepted[0]["gold_chunk_ids"] == next(q for q in stored if q["id"] == accepted[0]["id"])["gold_chunk_ids"]
    in_project = rejected_candidates(sample_db, run_id=summary["run_id"])
    assert len(rejected) == summary["rejected"] == len(in_project) > 0
    assert {(t, text, reason) for t, text, reason in rejected} == {
        (r["query_type"], r["text"], r["reason"]) for r in in_project}
    assert progress[-1] == (6, 6, f"accepted 6, rejected {summary['rejected']}")
    # one step per judged reply, after the line saying which shares were handed over at plan time (if any) and
    # the line saying the run's mode (issue 39)
    handed = [p for p in progress if p[2].startswith("handed over at plan time")]
    assert progress[:len(handed)] == handed and len(handed) == bool(summary.get("handed_over"))
    assert progress[len(handed)][2].startswith("mode extractive: ")
    assert len(progress) - len(handed) - 1 == len(accepted) + len(rejected)


def test_without_events_generate_runs_as_before(sample_db):
    summary = generate(sample_db, GenerationConfig(count=3, seed=2), backend=FakeBackend(good_reply))
    assert summary["status"] == "complete" and summary["accepted"] == 3
