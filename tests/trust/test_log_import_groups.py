"""import-log commits in groups, continues a cut-short import, and streams the file (issue 20: 8)."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from curator.core.queries import logs


class Crash(BaseException):
    """Stands in for a kill: no handler of the import catches it."""


def _write_log(path, n: int) -> None:
    path.write_text("".join(json.dumps({"query": f"how do I configure option {i}", "feedback": "down" if i % 3 else "up"})
                            + "\n" for i in range(n)))


def test_a_crash_keeps_the_committed_groups_and_a_rerun_finishes(empty_db, tmp_path, monkeypatch):
    log = tmp_path / "log.jsonl"
    _write_log(log, 100)
    monkeypatch.setattr(logs, "COMMIT_EVERY", 10, raising=False)
    real_add, calls = logs.add_query, []

    def crashing_add(*args, **kwargs):
        calls.append(1)
        if len(calls) == 35:
            raise Crash
        return real_add(*args, **kwargs)

    monkeypatch.setattr(logs, "add_query", crashing_add)
    with pytest.raises(Crash):
        logs.import_log(empty_db, log)
    assert empty_db.execute("SELECT COUNT(*) FROM queries").fetchone()[0] == 30  # three groups of ten
    monkeypatch.setattr(logs, "add_query", real_add)
    result = logs.import_log(empty_db, log)
    assert result["imported"] == 70 and not result["already_imported"]
    assert empty_db.execute("SELECT COUNT(*), SUM(frequency) FROM queries").fetchone() == (100, 100)
    assert logs.import_log(empty_db, log)["already_imported"]


def test_a_huge_line_is_skipped_without_holding_it(empty_db, tmp_path, monkeypatch):
    monkeypatch.setattr(logs, "MAX_LINE_BYTES", 100_000, raising=False)
    log = tmp_path / "log.jsonl"
    with open(log, "w") as fh:
        fh.write(json.dumps({"query": "a fine first query"}) + "\n")
        fh.write('{"query": "' + "x" * 8_000_000 + '"}\n')
        fh.write(json.dumps({"query": "a fine last query"}) + "\n")
    tracemalloc.start()
    result = logs.import_log(empty_db, log)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert result["imported"] == 2
    assert any(e.startswith(f"{log}:2: longer than 100,000 bytes") for e in result["errors"]), result["errors"]
    assert peak < 4_000_000, peak  # the 8 MB line was never read whole (generous: 1 MB blocks, 100 kB lines)
