"""Log import: formats, field detection, negative signals, malformed lines, redaction."""

from __future__ import annotations

import json

import pytest

from curator.core.errors import InputError
from curator.core.queries.logs import import_log, is_negative, redact


def test_csv_with_feedback_rephrase_and_a_bad_line(empty_db, tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("timestamp,session_id,question,thumbs\n"
                    "2026-01-01T10:00:00,s1,how to rotate keys,down\n"
                    "2026-01-01T10:01:00,s1,rotate encryption key command,up\n"
                    "2026-01-01T11:00:00,s2,How to rotate keys?,up\n"
                    "2026-01-01T12:00:00,s3,broken,line,extra\n"
                    "2026-01-01T12:00:00,s3,,up\n")
    result = import_log(empty_db, path)
    assert result["fields"] == {"query": "question", "feedback": "thumbs", "timestamp": "timestamp", "session": "session_id"}
    assert (result["imported"], result["merged"], result["skipped"]) == (2, 1, 2)
    assert result["errors"][0].startswith(f"{path}:5:") and result["errors"][1].startswith(f"{path}:6:")
    rows = dict(empty_db.execute("SELECT text_norm, frequency || '/' || negative_count FROM queries").fetchall())
    assert rows == {"how to rotate keys": "2/1", "rotate encryption key command": "1/0"}


def test_jsonl_with_rating_abandoned_and_redaction(empty_db, tmp_path):
    path = tmp_path / "log.jsonl"
    lines = [{"query": "invoice for ana@example.com", "rating": 2},
             {"query": "sso setup", "rating": 5, "abandoned": True},
             {"query": "call me on +44 20 7946 0958", "rating": 4}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n{not json\n")
    result = import_log(empty_db, path, redact_pii=True)
    assert result["imported"] == 3 and result["negative"] == 2 and result["errors"][0].startswith(f"{path}:4:")
    texts = {r[0] for r in empty_db.execute("SELECT text FROM queries")}
    assert "invoice for <EMAIL>" in texts and "call me on <PHONE>" in texts


def test_tsv_explicit_field_and_missing_query_column(empty_db, tmp_path):
    path = tmp_path / "log.tsv"
    path.write_text("asked\tvote\nwebhook retries\t-1\n")
    with pytest.raises(InputError, match="no query column"):
        import_log(empty_db, path)
    assert import_log(empty_db, path, query_field="asked", feedback_field="vote")["negative"] == 1


@pytest.mark.parametrize("value,negative", [("👎", True), ("-1", True), ("0", True), ("1", False), ("2", True),
                                            ("4", False), ("bad", True), ("helpful", False), ("", False)])
def test_feedback_values(value, negative):
    assert is_negative(value) is negative


def test_redact_long_digit_runs():
    assert redact("order 12345678 late") == "order <NUMBER> late"


def test_reimporting_the_same_file_changes_nothing(empty_db, tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("query,feedback\nrotate keys,down\nrotate keys,up\nsso setup,up\n")
    first = import_log(empty_db, path)
    assert (first["imported"], first["merged"], first["already_imported"]) == (2, 1, False)
    copy = tmp_path / "renamed.csv"
    copy.write_bytes(path.read_bytes())
    again = import_log(empty_db, copy)  # identified by content, not name
    assert again["already_imported"] is True and (again["imported"], again["merged"]) == (0, 0)
    rows = dict(empty_db.execute("SELECT text_norm, frequency || '/' || negative_count FROM queries").fetchall())
    assert rows == {"rotate keys": "2/1", "sso setup": "1/0"}
    path.write_text(path.read_text() + "sso setup,down\n")  # changed content is a new import
    grown = import_log(empty_db, path)
    assert grown["already_imported"] is False and grown["merged"] == 4


def test_bundled_sample_log(empty_db):
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "curator" / "resources" / "sample_logs" / "queries.jsonl"
    result = import_log(empty_db, path)
    assert result["fields"] == {"query": "query", "feedback": "feedback", "timestamp": "timestamp",
                                "session": "session_id"}
    # 35 lines: one empty query skipped; two queries asked twice on different days are merged.
    assert (result["lines_read"], result["imported"], result["merged"], result["skipped"]) == (35, 32, 2, 1)
    assert result["errors"][0].startswith(f"{path}:21:")
    neg = dict(empty_db.execute("SELECT text_norm, negative_count FROM queries").fetchall())
    assert neg["paginate list notes endpoint cursor"] == 1  # abandoned
    assert neg["download invoice pdf"] == 1 and neg["how long can larkspur stay offline"] == 0
    # s-1002 rephrased twice within five minutes: both earlier queries are negative.
    assert neg["sync stuck on blue spinning cloud"] == 1
    assert neg["sync indicator keeps spinning and never finishes"] == 1
    assert import_log(empty_db, path)["already_imported"] is True


def test_detect_fields_shows_the_mapping_import_would_use(tmp_path):
    from curator.core.queries.logs import detect_fields

    log = tmp_path / "log.csv"
    log.write_text("When,Question,Thumbs,Extra\n2026-01-01T00:00:00,how do I sync,down,x\n"
                   "2026-01-01T00:01:00,reset password,up,y\n")
    found = detect_fields(log)
    assert found["fields"] == ["extra", "question", "thumbs", "when"] and found["records"] == 2
    assert found["mapping"] == {"query": "question", "feedback": "thumbs", "timestamp": None, "session": None}
    with pytest.raises(InputError, match="cannot read"):
        detect_fields(tmp_path / "missing.csv")


def test_import_reports_progress_and_a_cancel_keeps_the_committed_groups(empty_db, tmp_path, monkeypatch):
    from curator.core.progress import CancelToken, Cancelled
    from curator.core.queries import logs

    monkeypatch.setattr(logs, "COMMIT_EVERY", 3)
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"query": f"question number {i}"}) + "\n" for i in range(10)))
    token, calls = CancelToken(), []

    def progress(done, total, _message):
        calls.append((done, total))
        token.cancel()  # cancel after the first committed group

    with pytest.raises(Cancelled):
        import_log(empty_db, log, on_progress=progress, cancel=token)
    assert calls == [(3, 10)]
    assert empty_db.execute("SELECT COUNT(*) FROM queries").fetchone()[0] == 3
    calls.clear()
    result = import_log(empty_db, log, on_progress=lambda d, t, m: calls.append((d, t)))
    assert result["imported"] == 7 and calls[-1] == (10, 10)  # continued where the cancel stopped it


def test_an_empty_field_name_means_the_log_has_none_of_that_role(empty_db, tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"query": "how do I sync", "feedback": "down"}) + "\n")
    result = import_log(empty_db, log, feedback_field="")
    assert result["fields"]["feedback"] is None and result["negative"] == 0


def test_a_line_read_as_cp1252_is_imported_with_a_warning_not_counted_as_skipped(empty_db, tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"query": "caf\xe9 opening hours"}\n{"query": "rotate keys"}\n{"query": ""}\n')
    result = import_log(empty_db, path)
    assert (result["lines_read"], result["imported"], result["skipped"]) == (3, 2, 1)
    assert [e.split(": ", 1)[0] for e in result["errors"]] == [f"{path}:3"]  # the empty query only
    assert len(result["warnings"]) == 1 and result["warnings"][0].startswith(f"{path}:1: not valid UTF-8")
    assert empty_db.execute("SELECT count(*) FROM queries WHERE text = 'café opening hours'").fetchone()[0] == 1
