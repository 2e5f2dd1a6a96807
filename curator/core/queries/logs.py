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
import hashlib
import json
import re
from collections import deque
from datetime import datetime
from pathlib import Path
from typing import Iterable, Iterator, Optional

import sqlite_utils

from curator.core import store
from curator.core.errors import InputError
from curator.core.progress import CancelToken, ProgressCallback, report
from curator.core.corpus.loaders import decode_line, decode_lines, parse_json_object, read_bytes
from curator.core.files import LineProblems, bounded_lines, open_regular
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


MAX_LINE_BYTES = 1_000_000  # a longer "line" is not a query: skipped, never held in memory whole
COMMIT_EVERY = 2000  # rows per transaction, so a labeller's decision waits a moment, not a minute


def _lines(path: Path, errors, warnings) -> Iterator[tuple[int, str]]:
    """(number, text with its line break) of each physical line, each decoded on its own.

    A line that is not UTF-8 is still imported (read as cp1252): it goes to ``warnings``, not to
    ``errors``, which holds the skipped lines only, so the counts of the two never overlap. Only a
    regular file is read (``/dev/zero`` was read until memory ran out), a line at most
    MAX_LINE_BYTES long (files.bounded_lines)."""
    with open_regular(path, "log file") as fh:
        if fh.read(2) in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16: rare and small, decoded whole
            text = decode_lines(read_bytes(path), path, warnings, allow_nul=True)
            yield from enumerate(text.splitlines(keepends=True), 1)
            return
        fh.seek(0)
        for number, raw in bounded_lines(fh, path, errors, MAX_LINE_BYTES):
            if raw is not None:
                yield number, decode_line(raw.removeprefix(b"\xef\xbb\xbf") if number == 1 else raw, number, path,
                                          warnings)


def _records(path: Path, errors, warnings=None) -> Iterator[tuple[int, dict]]:
    """The file's records, streamed: (line number, fields). ``errors`` and ``warnings``: lists or
    files.LineProblems (which keeps the first few and counts the rest)."""
    lines = _lines(path, errors, LineProblems() if warnings is None else warnings)
    if path.suffix.lower() in {".jsonl", ".ndjson"}:
        return _jsonl_records(path, lines, errors)
    return _csv_records(path, lines, "\t" if path.suffix.lower() == ".tsv" else ",", errors)


def _jsonl_records(path: Path, lines: Iterable[tuple[int, str]], errors: list[str]) -> Iterator[tuple[int, dict]]:
    for number, line in lines:
        line = line.rstrip("\n").removesuffix("\r")
        if not line.strip():
            continue
        try:
            yield number, parse_json_object(line)
        except ValueError as exc:
            errors.append(f"{path}:{number}: bad JSON ({exc}); line skipped.")


def _csv_records(path: Path, lines: Iterable[tuple[int, str]], delimiter: str,
                 errors: list[str]) -> Iterator[tuple[int, dict]]:
    """Rows with the line they start on. A quoted field may hold line breaks, but a record that
    spans lines must be well formed (_well_formed) within MAX_RECORD_LINES lines: otherwise the
    quote opened on its first line is taken for a stray one, that line is skipped, and reading
    goes on from the next line (an unclosed quote swallowed thousands of lines without a word)."""
    feed = _RecordLines(lines)
    reader = csv.reader(feed, delimiter=delimiter)
    header = _csv_header(path, reader, feed)
    while True:
        feed.start_record()
        try:
            row = next(reader)
        except StopIteration:
            return
        except (csv.Error, _Unclosed) as exc:  # e.g. a field over csv.field_size_limit(): this record only
            errors.append(_bad_record(path, feed, exc))
            continue
        start = feed.record[0][0]
        if len(feed.record) > 1 and not _well_formed(feed.record, delimiter, len(header)):
            errors.append(_bad_record(path, feed, f"gives {len(row)} columns where the header has {len(header)}"
                                      if len(row) != len(header) else "a quote inside it is not doubled"))
        elif not row:
            continue
        elif "\x00" in "".join(row):
            errors.append(f"{path}:{start}: NUL byte in the line; line skipped.")
        elif len(row) != len(header):
            errors.append(f"{path}:{start}: {len(row)} columns where the header has {len(header)}; line skipped.")
        else:
            yield start, dict(zip(header, row))


MAX_RECORD_LINES = 100  # a quoted field with line breaks: a query of a few paragraphs, not a whole log


class _Unclosed(Exception):
    """A quoted field still open after MAX_RECORD_LINES lines or MAX_LINE_BYTES characters, before a
    skipped line, or at the end of the file."""

    def __str__(self) -> str:
        return f"a quote opened on this line is not closed (a quoted field spans at most {MAX_RECORD_LINES} lines)"


class _RecordLines:
    """The text of each line for csv.reader, keeping the lines of the record being read, so that
    a record that proves malformed can be read again from its second line."""

    def __init__(self, lines: Iterable[tuple[int, str]]) -> None:
        self.source = iter(lines)
        self.pending: deque[tuple[int, str]] = deque()  # lines given back, read again first
        self.record: list[tuple[int, str]] = []
        self.size = 0

    def __iter__(self) -> "_RecordLines":
        return self

    def __next__(self) -> str:
        line = self.pending.popleft() if self.pending else next(self.source, None)
        if line is None:
            if self.record:  # the reader asks for more: a quote is still open at the end of the file
                raise _Unclosed
            raise StopIteration
        if self.record and (len(self.record) >= MAX_RECORD_LINES or self.size + len(line[1]) > MAX_LINE_BYTES
                            or line[0] != self.record[-1][0] + 1):  # too long, or a skipped line between
            self.pending.appendleft(line)
            raise _Unclosed
        self.record.append(line)
        self.size += len(line[1])
        return line[1]

    def start_record(self) -> None:
        self.record, self.size = [], 0

    def skip_first(self) -> int:
        """Give back all the record's lines but its first, whose number is returned."""
        self.pending.extendleft(reversed(self.record[1:]))
        return self.record[0][0]


def _bad_record(path: Path, feed: _RecordLines, why) -> str:
    """The record's first line is skipped and reading goes on from its second."""
    last = feed.record[-1][0]
    number = feed.skip_first()
    if last > number and not isinstance(why, _Unclosed):
        why = f"a quoted field opened on this line runs to line {last}, and {why}"
    return f"{path}:{number}: {why}; line skipped."


def _well_formed(record: list[tuple[int, str]], delimiter: str, columns: int) -> bool:
    """A record spanning lines each of whose quoted fields closes right before a delimiter or a line
    break (a quote inside doubled), with the header's column count: a stray quote that happens to
    close some lines further down gives neither, most of the time."""
    try:
        row = next(csv.reader((text for _, text in record), delimiter=delimiter, strict=True))
    except csv.Error:
        return False
    return len(row) == columns


def _csv_header(path: Path, reader, feed: _RecordLines) -> list[str]:
    """The column names, from line 1 and that line only."""
    try:
        header = next(reader, [])
    except (csv.Error, _Unclosed) as exc:
        raise InputError(f"{path}:1: the header line cannot be read ({exc}).") from None
    if feed.record and feed.record[0][0] != 1:
        raise InputError(f"{path}:1: the header line is longer than {MAX_LINE_BYTES:,} bytes, so the columns are "
                         "unknown; the first line of a CSV log names its columns.")
    if len(feed.record) > 1:
        raise InputError(f"{path}:1: a quote in the header line is not closed on that line; the header is one line.")
    return [h.strip().lower() for h in header]


def _pick(fields: set[str], explicit: Optional[str], candidates: tuple[str, ...]) -> Optional[str]:
    """The explicit field, else the first known name present; "" means "this log has none"."""
    if explicit is not None:
        return explicit.lower() or None
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


def _rephrased_lines(path: Path, pick: dict, window: float) -> set[int]:
    """Lines whose query the same session asked again, differently, within the window: negative.

    A pass of its own that keeps three numbers per query, not the queries themselves."""
    by_session: dict[str, list[tuple[float, int, int]]] = {}
    for number, record in _records(path, LineProblems()):
        record = {k.lower(): v for k, v in record.items()}
        session, when = str(record.get(pick["session"], "")), _when(record.get(pick["timestamp"]))
        text = str(record.get(pick["query"]) or "").strip()
        if session and when is not None and text:
            by_session.setdefault(session, []).append((when, number, hash(text)))
    negative = set()
    for items in by_session.values():
        items.sort()
        for earlier, later in zip(items, items[1:]):
            if later[0] - earlier[0] <= window and later[2] != earlier[2]:
                negative.add(earlier[1])
    return negative


def _entry(record: dict, number: int, pick: dict, redact_pii: bool, rephrased: set[int]) -> Optional[dict]:
    record = {k.lower(): v for k, v in record.items()}
    text = str(record.get(pick["query"]) or "").strip()
    if not text:
        return None
    ff = pick["feedback"]
    signals = [s for s, hit in (("feedback", ff and is_negative(record.get(ff, ""))),
                                ("rephrased", _truthy(record.get("rephrased", ""))),
                                ("abandoned", _truthy(record.get("abandoned", "")))) if hit]
    if number in rephrased and "rephrased" not in signals:
        signals.append("rephrased")
    return {"text": redact(text) if redact_pii else text, "line": number, "signals": signals,
            "negative": bool(signals)}


def _fields(path: Path, problems: Optional[LineProblems] = None) -> tuple[set[str], int]:
    """Every field name in the file (lower case) and how many records it holds."""
    fields: set[str] = set()
    count = 0
    for count, (_, record) in enumerate(_records(path, LineProblems() if problems is None else problems), start=1):
        fields.update(k.lower() for k in record)
    return fields, count


def _usable_fields(path: Path) -> tuple[set[str], int]:
    """_fields of a file with at least one usable record; with none, what is wrong with its lines
    (a file whose only line was unusable said "no query column found", naming no line)."""
    problems = LineProblems()
    fields, records = _fields(path, problems)
    if not records and problems.count:
        more = f" (and {problems.count - 1:,} more problems)" if problems.count > 1 else ""
        raise InputError(f"{problems.kept[0]}{more} No line of the log holds a usable record; nothing was imported.")
    return fields, records


def _mapping(fields: set[str], query_field=None, feedback_field=None, timestamp_field=None, session_field=None) -> dict:
    return {"query": _pick(fields, query_field, QUERY_FIELDS),
            "feedback": _pick(fields, feedback_field, FEEDBACK_FIELDS),
            "timestamp": _pick(fields, timestamp_field, TIMESTAMP_FIELDS),
            "session": _pick(fields, session_field, SESSION_FIELDS)}


def detect_fields(path) -> dict:
    """What ``import_log`` would use: every field of the file and the one it picks for each role
    (None where no known name is present), so a front end can show the mapping before importing."""
    path = Path(path)
    _file_digest(path)  # the same clear message as import_log for a file that cannot be read
    fields, records = _fields(path)
    return {"file": str(path), "fields": sorted(fields), "records": records, "mapping": _mapping(fields)}


def import_log(db: sqlite_utils.Database, path, query_field: Optional[str] = None,
               feedback_field: Optional[str] = None, timestamp_field: Optional[str] = None,
               session_field: Optional[str] = None, redact_pii: bool = False, rephrase_window_s: float = 300,
               on_progress: Optional[ProgressCallback] = None, cancel: Optional[CancelToken] = None) -> dict:
    """Import one log file; malformed lines are reported as file:line and skipped.

    The file is streamed (three passes: fields, rephrases, rows) and rows commit in groups of
    COMMIT_EVERY; the import mark records the last committed line, so an import cut short by a
    crash continues where it stopped when run again instead of counting lines twice."""
    path = Path(path)
    digest = _file_digest(path)
    previous = db.execute("SELECT value FROM meta WHERE key = ?", [f"log_import:{digest}"]).fetchone()
    first = json.loads(previous[0]) if previous else {}
    if previous and first.get("complete", True):
        return {"file": str(path), "lines_read": 0, "imported": 0, "merged": 0, "skipped": 0, "negative": 0,
                "fields": first.get("fields", {}), "errors": [], "warnings": [], "already_imported": True,
                "first_imported_at": first.get("at"), "sha1": digest}
    fields, records = _usable_fields(path)
    pick = _mapping(fields, query_field, feedback_field, timestamp_field, session_field)
    if pick["query"] is None:
        raise InputError(f"{path}: no query column found (looked for {', '.join(QUERY_FIELDS)}); use --query-field.")
    rephrased = _rephrased_lines(path, pick, rephrase_window_s) if pick["session"] and pick["timestamp"] else set()
    errors, warnings = LineProblems(path), LineProblems(path)  # a million bad lines print 20 and a count
    progress = _GroupProgress(records, on_progress, cancel)
    result = _store_entries(db, path, _entries(path, pick, redact_pii, rephrased, errors, warnings), errors, pick,
                            digest, first.get("done_through", 0), progress)
    return {**result, "warnings": warnings.lines("warnings")}


class _GroupProgress:
    """Reports records done after each committed group and honours a cancel there: the import
    mark already says how far it got, so running the import again continues from that line."""

    def __init__(self, total: int, on_progress: Optional[ProgressCallback], cancel: Optional[CancelToken]) -> None:
        self.total, self.on_progress, self.cancel = total, on_progress, cancel

    def group_done(self, done: int) -> None:
        report(self.on_progress, min(done, self.total), self.total, "importing")
        if self.cancel is not None:
            self.cancel.check()


def _entries(path: Path, pick: dict, redact_pii: bool, rephrased: set[int], errors: LineProblems,
             warnings: LineProblems) -> Iterator[dict]:
    for number, record in _records(path, errors, warnings):
        entry = _entry(record, number, pick, redact_pii, rephrased)
        if entry is None:
            errors.append(f"{path}:{number}: empty query; line skipped.")
        else:
            yield entry


def _file_digest(path: Path) -> str:
    digest = hashlib.sha1()
    try:
        with open_regular(path, "log file") as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
    except OSError as exc:
        raise InputError(f"{path}: cannot read the log file ({exc.strerror or exc}).") from None
    return digest.hexdigest()


def _store_entries(db, path: Path, entries: Iterator[dict], errors: LineProblems, fields: dict, digest: str,
                   done_through: int, progress: _GroupProgress) -> dict:
    counts = {"imported": 0, "merged": 0, "negative": 0, "seen": 0}
    batch: list[dict] = []
    for entry in entries:
        counts["seen"] += 1
        if entry["line"] <= done_through:
            continue  # committed by an earlier run of this import that was cut short
        batch.append(entry)
        if len(batch) >= COMMIT_EVERY:
            _commit_group(db, path, batch, fields, digest, counts, complete=False)
            progress.group_done(counts["seen"] + errors.count)
    _commit_group(db, path, batch, fields, digest, counts, complete=True)
    report(progress.on_progress, progress.total, progress.total, "done")
    return {"file": str(path), "lines_read": counts["seen"] + errors.count, "imported": counts["imported"],
            "merged": counts["merged"], "skipped": errors.count, "negative": counts["negative"], "fields": fields,
            "errors": errors.lines("lines skipped"), "already_imported": False, "sha1": digest}


def _commit_group(db, path: Path, batch: list[dict], fields: dict, digest: str, counts: dict, complete: bool) -> None:
    """One transaction: the group's rows and the import mark saying how far the import got."""
    with db.conn:
        for entry in batch:
            qid = make_query_id("log", entry["text"])
            counts["negative"] += entry["negative"]
            if db.execute("SELECT 1 FROM queries WHERE id = ?", [qid]).fetchone():
                db.execute("UPDATE queries SET frequency = frequency + 1, negative_count = negative_count + ? "
                           "WHERE id = ?", [int(entry["negative"]), qid])
                counts["merged"] += 1
            else:
                add_query(db, entry["text"], "log", negative_count=int(entry["negative"]),
                          metadata={"log_file": path.name, "line": entry["line"], "signals": entry["signals"]})
                counts["imported"] += 1
        mark = {"file": path.name, "at": store.now(), "fields": fields, "complete": complete}
        if batch:
            mark["done_through"] = batch[-1]["line"]
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", [f"log_import:{digest}", json.dumps(mark)])
    batch.clear()
