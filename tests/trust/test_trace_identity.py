"""Traces that differ only in query_id, trace_id, reference or timestamp are different traces
(issue 32: they were merged into one on import, so a second run of a question vanished)."""

from __future__ import annotations

import hashlib
import json

from curator.core import store
from curator.core.diagnosis.traces import import_traces
from curator.core.queries.rows import normalize_text

BASE = {"user_input": "How are tokens rotated?", "response": "Weekly.", "retrieved_contexts": ["Tokens rotate weekly."]}
VARIANTS = [BASE, {**BASE, "query_id": "q_other"}, {**BASE, "trace_id": "run-2"}, {**BASE, "reference": "Weekly."},
            {**BASE, "timestamp": "2026-12-01T10:00:00"}, {**BASE, "timestamp": "2026-12-02T10:00:00"},
            {**BASE, "reference_context_ids": ["c_x"]}]


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_traces_differing_in_one_identity_field_are_all_kept(sample_db, tmp_path):
    path = _write(tmp_path / "traces.jsonl", VARIANTS + [BASE])  # the last line repeats the first: one trace
    first = import_traces(sample_db, path)
    assert (first["imported"], first["unchanged"]) == (len(VARIANTS), 1)
    assert sample_db.execute("SELECT COUNT(*) FROM traces").fetchone()[0] == len(VARIANTS)
    stamps = {r[0] for r in sample_db.execute("SELECT timestamp FROM traces")}
    assert {"2026-12-01T10:00:00", "2026-12-02T10:00:00"} <= stamps
    again = import_traces(sample_db, path)
    assert (again["imported"], again["unchanged"]) == (0, len(VARIANTS) + 1)


def test_a_trace_without_identity_fields_keeps_its_old_id(sample_db, tmp_path):
    import_traces(sample_db, _write(tmp_path / "t.jsonl", [BASE]))
    payload = store.dumps([normalize_text(BASE["user_input"]), BASE["response"], [], BASE["retrieved_contexts"]])
    old_id = "t_" + hashlib.sha1(payload.encode("utf-8")).hexdigest()[:16]
    assert sample_db.execute("SELECT id FROM traces").fetchone()[0] == old_id


def test_traces_imported_under_the_old_ids_are_not_imported_twice(sample_db, tmp_path):
    """A project whose traces got content-only ids: re-importing the same file changes nothing."""
    record = {**BASE, "trace_id": "run-7", "timestamp": "2026-12-01T10:00:00", "reference": "Weekly."}
    path = _write(tmp_path / "t.jsonl", [record])
    import_traces(sample_db, path)
    payload = store.dumps([normalize_text(BASE["user_input"]), BASE["response"], [], BASE["retrieved_contexts"]])
    old_id = "t_" + hashlib.sha1(payload.encode("utf-8")).hexdigest()[:16]
    with sample_db.conn:
        sample_db.execute("UPDATE traces SET id = ?", [old_id])  # as the import before this fix stored it
    again = import_traces(sample_db, path)
    assert (again["imported"], again["unchanged"]) == (0, 1)
    other_run = import_traces(sample_db, _write(tmp_path / "u.jsonl", [{**record, "trace_id": "run-8"}]))
    assert other_run["imported"] == 1
