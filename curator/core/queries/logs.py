"""Import production query logs (CSV, TSV, JSONL) and mark the queries that went badly.

Negative signals: thumbs-down (or -1, 0 of 0/1, "bad", "wrong", 👎), a rating of 2 or less out of
5, an explicit ``rephrased``/``abandoned`` flag, or a rephrase detected by session (the same
session asks again within ``rephrase_window_s``: the earlier query is the negative one).
Queries are de-duplicated by normalised text; each keeps a frequency and a negative count.

Re-import semantics: a file is identified by the sha1 of its bytes, recorded in the ``meta``
table (key ``log_import:<sha1>``). Importing the same content again changes nothing and says
so (``already_imported``), whatever the file is called. A file whose content changed (for
example a log that grew) is a new import and all of its lines count: split logs by period
rather than re-importing a growing file.
"""

from __future__ import annotations

import csv
import io
import hashlib
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Optional

import sqlite_utils

from curator.core import store
from curator.core.errors import InputError
from curator.core.corpus.loaders import decode_lines, parse_json_object, read_bytes, record_lines
from curator.core.queries.rows import add_query, make_query_id

QUERY_FIELDS = ("query", "question", "text", "user_input", "q", "prompt", "search", "search_query")
FEEDBACK_FIELDS = ("feedback", "thumbs", "rating", "score", "vote", "label", "reaction")
TIMESTAMP_FIELDS = ("timestamp", "time", "ts", "created_at", "date", "datetime")
SESSION_FIELDS = ("session", "session_id", "sessionid", "conversation_id", "user_id")
NEGATIVE_WORDS = {"down", "thumbs_down", "thumbsdown", "bad", "wrong", "unhelpful", "not helpful", "no",
                  "negative", "-1", "👎", "false", "incorrect", "dislike"}
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
_PHONE = re.compile(r"\+?\d[\d\s().-]{7,}\d")
_DIGITS = re.compile(r"\d{6,}")


def redact(text: str) -> str:
    """E-mail addresses, phone numbers and long digit runs become placeholders."""
    return _DIGITS.sub("<NUMBER>", _PHONE.sub("<PHONE>", _EMAIL.sub("<EMAIL>", text)))


def is_negative(value) -> bool:
    """Thumbs-down, -1, a rating ≤ 2 (of 5), or a negative label."""
    text = str(value).strip().lower()
    if not text:
        return False
    try:
        number = float(text)
    except ValueError:
        return text in NEGATIVE_WORDS or "👎" in text
    # 0 or -1 is a thumbs-down; 1 reads as thumbs-up (so a 1-star rating is not caught); 2 of 5 is low.
    return number <= 0 or 1 < number <= 2


def _truthy(value) -> bool:
    return str(value).strip().lower() in {"1", "true", "yes", "y"}


def _records(path: Path, errors: list[str]) -> list[tuple[int, dict]]:
    text = decode_lines(read_bytes(path), path, errors, allow_nul=True)
    if path.suffix.lower() in {".jsonl", ".ndjson"}:
        return _jsonl_records(path, text, errors)
    return _csv_records(path, text, "\t" if path.suffix.lower() == ".tsv" else ",", errors)


def _jsonl_records(path: Path, text: str, errors: list[str]) -> list[tuple[int, dict]]:
    out = []
    for number, line in enumerate(record_lines(text), 1):
        if not line.strip():
            continue
        try:
            out.append((number, parse_json_object(line)))
        except ValueError as exc:
            errors.append(f"{path}:{number}: bad JSON ({exc}); line skipped.")
    return out


def _csv_records(path: Path, text: str, delimiter: str, errors: list[str]) -> list[tuple[int, dict]]:
    """Rows with the line they start on; quoted fields may hold line breaks (newline='' reading)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = [h.strip().lower() for h in next(reader, [])]
    except csv.Error as exc:
        raise InputError(f"{path}:1: the header line cannot be read ({exc}).") from None
    out, number = [], reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return out
        except csv.Error as exc:  # e.g. a field over csv.field_size_limit(): this row only
            errors.append(f"{path}:{number}: {exc}; line skipped.")
            number = reader.line_num + 1
            continue
        start, number = number, reader.line_num + 1
        if not row:
            continue
        if "\x00" in "".join(row):
            errors.append(f"{path}:{start}: NUL byte in the line; line skipped.")
        elif len(row) != len(header):
            errors.append(f"{path}:{start}: {len(row)} columns where the header has {len(header)}; line skipped.")
        else:
            out.append((start, dict(zip(header, row))))


def _pick(fields: set[str], explicit: Optional[str], candidates: tuple[str, ...]) -> Optional[str]:
    if explicit:
        return explicit.lower()
    return next((c for c in candidates if c in fields), None)


def _when(value) -> Optional[float]:
    try:
        return float(value)
    except (TypeError, ValueError):
        pass
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _mark_rephrases(entries: list[dict], window: float) -> None:
    """The earlier query of a session that asks again within the window counts as negative."""
    by_session: dict[str, list[dict]] = {}
    for entry in entries:
        if entry["session"] and entry["time"] is not None:
            by_session.setdefault(entry["session"], []).append(entry)
    for items in by_session.values():
        items.sort(key=lambda e: e["time"])
        for earlier, later in zip(items, items[1:]):
            if later["time"] - earlier["time"] <= window and later["text"] != earlier["text"]:
                earlier["negative"] = True
                earlier["signals"].append("rephrased")


def import_log(db: sqlite_utils.Database, path, query_field: Optional[str] = None,
               feedback_field: Optional[str] = None, timestamp_field: Optional[str] = None,
               session_field: Optional[str] = None, redact_pii: bool = False, rephrase_window_s: float = 300) -> dict:
    """Import one log file; malformed lines are reported as file:line and skipped."""
    path = Path(path)
    digest = _file_digest(path)
    previous = db.execute("SELECT value FROM meta WHERE key = ?", [f"log_import:{digest}"]).fetchone()
    if previous:
        first = json.loads(previous[0])
        return {"file": str(path), "lines_read": 0, "imported": 0, "merged": 0, "skipped": 0, "negative": 0,
                "fields": first.get("fields", {}), "errors": [], "already_imported": True,
                "first_imported_at": first.get("at"), "sha1": digest}
    errors: list[str] = []
    records = _records(path, errors)
    fields = {k.lower() for _, r in records for k in r}
    qf = _pick(fields, query_field, QUERY_FIELDS)
    if qf is None:
        raise InputError(f"{path}: no query column found (looked for {', '.join(QUERY_FIELDS)}); use --query-field.")
    ff, tf, sf = (_pick(fields, feedback_field, FEEDBACK_FIELDS), _pick(fields, timestamp_field, TIMESTAMP_FIELDS),
                  _pick(fields, session_field, SESSION_FIELDS))
    entries = []
    for number, record in records:
        record = {k.lower(): v for k, v in record.items()}
        text = str(record.get(qf) or "").strip()
        if not text:
            errors.append(f"{path}:{number}: empty query; line skipped.")
            continue
        signals = [s for s, hit in (("feedback", ff and is_negative(record.get(ff, ""))),
                                    ("rephrased", _truthy(record.get("rephrased", ""))),
                                    ("abandoned", _truthy(record.get("abandoned", "")))) if hit]
        entries.append({"text": redact(text) if redact_pii else text, "line": number, "signals": signals,
                        "negative": bool(signals), "session": str(record.get(sf, "")) if sf else "",
                        "time": _when(record.get(tf)) if tf else None})
    _mark_rephrases(entries, rephrase_window_s)
    fields = {"query": qf, "feedback": ff, "timestamp": tf, "session": sf}
    return _store_entries(db, path, entries, errors, fields, digest)


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha1(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the log file ({exc.strerror or exc}).") from None


def _store_entries(db, path: Path, entries: list[dict], errors: list[str], fields: dict, digest: str) -> dict:
    imported = merged = 0
    with db.conn:  # the rows and the "already imported" mark commit together
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                   [f"log_import:{digest}", json.dumps({"file": path.name, "at": store.now(), "fields": fields})])
        for entry in entries:
            qid = make_query_id("log", entry["text"])
            existing = db.execute("SELECT 1 FROM queries WHERE id = ?", [qid]).fetchone()
            if existing:
                db.execute("UPDATE queries SET frequency = frequency + 1, negative_count = negative_count + ? "
                           "WHERE id = ?", [int(entry["negative"]), qid])
                merged += 1
            else:
                add_query(db, entry["text"], "log", negative_count=int(entry["negative"]),
                          metadata={"log_file": path.name, "line": entry["line"], "signals": entry["signals"]})
                imported += 1
    return {"file": str(path), "lines_read": len(entries) + len(errors), "imported": imported, "merged": merged,
            "skipped": len(errors), "negative": sum(e["negative"] for e in entries), "fields": fields,
            "errors": errors, "already_imported": False, "sha1": digest}
