"""Hostile and broken input: each bad item is named (file and line), the rest of the batch goes
on, and the project stays consistent (SQLite integrity and the full-text index both check out).

Property tests are bounded (30 examples, no deadline) so the suite stays fast. Crashes found
while writing them are pinned as tests below; none is left as ``xfail``
with the reason, so they turn into passes when fixed.
"""

from __future__ import annotations

import csv
import io
import json
import re
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.cli.main import cli
from curator.core.generation import prompts
from curator.core.generation.backends import FakeBackend
from curator.core.errors import InputError
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.corpus.ingest import ingest
from curator.core.queries.logs import import_log
from curator.core.queries.rows import make_query_id
from curator.core.store import open_project

from trustkit import canned_reply

BOUNDED = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                          HealthCheck.function_scoped_fixture])
GOOD_DOC = "# Good document\n\nThe sync client retries uploads three times before it reports an error.\n"
TAGS = ["div", "p", "span", "table", "tr", "td", "li", "ul", "section", "h2", "b", "script", "blockquote"]
ENCODINGS = ["utf-8", "latin-1", "cp1252", "utf-16", "utf-8-sig", "shift_jis"]


def _consistent(db) -> None:
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')")  # raises if the index drifted


def _mixed(parts: list[tuple[str, str]]) -> bytes:
    return b"".join(text.encode(enc, errors="replace") for text, enc in parts)


def _nested(depth: int, tags: list[str], text: str) -> bytes:
    opening = "".join(f"<{tags[i % len(tags)]}>" for i in range(depth))
    closing = "".join(f"</{tags[i % len(tags)]}>" for i in reversed(range(depth)))
    return (f"<html><body>{opening}{text}{closing}</body></html>").encode()


def _not_broken_utf16(data: bytes) -> bool:
    """Leaves out a UTF-16 BOM followed by undecodable bytes: covered by test_truncated_utf16_file_is_skipped_not_fatal."""
    if not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    try:
        data.decode("utf-16")
        return True
    except UnicodeDecodeError:
        return False


hostile_bytes = st.one_of(
    st.binary(max_size=4096),
    st.text(max_size=500).map(lambda s: (s + "\x00" + s).encode("utf-8")),
    st.integers(20_000, 150_000).map(lambda n: ("lorem ipsum dolor " * (n // 18)).encode()),
    st.integers(20_000, 150_000).map(lambda n: b"x" * n + b"\n"),
    st.lists(st.tuples(st.text(max_size=60), st.sampled_from(ENCODINGS)), max_size=8).map(_mixed),
    st.builds(_nested, st.integers(1, 3000), st.lists(st.sampled_from(TAGS), min_size=1, max_size=4),
              st.text(max_size=80)),
).filter(_not_broken_utf16)


@BOUNDED
@given(data=hostile_bytes, suffix=st.sampled_from([".txt", ".md", ".rst", ".html", ".htm", ".pdf", ".jsonl"]))
def test_hostile_files_are_named_and_the_batch_goes_on(data, suffix):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bad, good = root / f"hostile{suffix}", root / "good.md"
        bad.write_bytes(data)
        good.write_text(GOOD_DOC)
        db = open_project(root / "p.curator", create=True)
        try:
            report = ingest(db, [bad, good])
            paths = {r[0] for r in db.execute("SELECT path FROM documents")}
            assert "good.md" in paths  # the good file after the bad one still went in
            for skipped in report.skipped:
                assert skipped["path"] == str(bad) and skipped["reason"].strip()
            for line in report.line_errors:
                assert re.match(re.escape(str(bad)) + r":\d+: ", line), line
            assert report.files_seen == 2
            _consistent(db)
        finally:
            db.close()


def test_truncated_utf16_file_is_skipped_not_fatal(tmp_path):
    (tmp_path / "broken.txt").write_bytes(b"\xfe\xff\x00\x00\x00")  # found by hypothesis
    (tmp_path / "good.md").write_text(GOOD_DOC)
    db = open_project(tmp_path / "p.curator", create=True)
    try:
        report = ingest(db, [tmp_path / "broken.txt", tmp_path / "good.md"])
        assert report.skipped and report.skipped[0]["path"].endswith("broken.txt")
    finally:
        db.close()


def test_specific_messages_for_known_bad_files(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "binary.txt").write_bytes(b"\x00\x01\x02" * 100)
    (docs / "empty.md").write_text("   \n\n")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    (docs / "corpus.jsonl").write_text('{"_id": "1", "text": "fine row"}\nnot json\n{"_id": "2"}\n[1, 2]\n')
    (docs / "good.md").write_text(GOOD_DOC)
    db = open_project(tmp_path / "p.curator", create=True)
    report = ingest(db, [docs])
    reasons = {Path(s["path"]).name: s["reason"] for s in report.skipped}
    assert "binary" in reasons["binary.txt"] and "no text" in reasons["empty.md"]
    assert "PDF" in reasons["broken.pdf"]
    errors = "\n".join(report.line_errors)
    assert "corpus.jsonl:2:" in errors and "corpus.jsonl:3:" in errors and "corpus.jsonl:4:" in errors
    assert {r[0] for r in db.execute("SELECT path FROM documents")} >= {"docs/good.md", "docs/corpus.jsonl#1"}
    _consistent(db)
    db.close()


# ---------------------------------------------------------------- query logs

json_value = st.one_of(st.text(max_size=40), st.integers(), st.floats(allow_nan=True), st.none(), st.booleans(),
                       st.lists(st.integers(), max_size=3))
log_record = st.dictionaries(st.sampled_from(["query", "feedback", "ts", "session", "rephrased"]), json_value,
                             max_size=5)
# ASCII-escaped JSON, and junk without raw line separators or NUL bytes: those two make the
# loader drop good lines before (see the line-separator and NUL tests below).
log_line = st.one_of(log_record.map(lambda r: json.dumps(r)), st.text(max_size=80).map(json.dumps),
                     st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00\n\r"
                                                    "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), max_size=80))


def _expected_queries(lines: list[str]) -> set[str]:
    found = set()
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and str(record.get("query") or "").strip():
            found.add(make_query_id("log", str(record["query"]).strip()))
    return found


@BOUNDED
@given(lines=st.lists(log_line, max_size=25))
def test_malformed_jsonl_log_lines_are_named_and_skipped(lines):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        db = open_project(Path(tmp) / "p.curator", create=True)
        try:
            try:
                result = import_log(db, path)
            except InputError as exc:  # the whole file is unusable: said once, naming it
                assert str(path) in str(exc)
                assert not _expected_queries(lines)
                return
            for error in result["errors"]:
                assert re.match(re.escape(str(path)) + r"(:\d+: |: and [\d,]+ more lines skipped$)", error), error
            stored = {r[0] for r in db.execute("SELECT id FROM queries")}
            assert _expected_queries(lines) <= stored
            _consistent(db)
        finally:
            db.close()


csv_cell = st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00\r\n\x0b\x0c\x1c"
                                          "\x1d\x1e\x85\u2028\u2029"), max_size=30)


def _csv_text(rows: list[list[str]], junk: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["query", "feedback", "session"])
    for row in rows:
        writer.writerow(row)
    return buffer.getvalue() + "".join(j + "\n" for j in junk)


@BOUNDED
@given(rows=st.lists(st.lists(csv_cell, min_size=1, max_size=5), max_size=20),
       junk=st.lists(csv_cell, max_size=5))
def test_malformed_csv_log_rows_are_named_and_skipped(rows, junk):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.csv"
        path.write_text(_csv_text(rows, junk), encoding="utf-8")
        db = open_project(Path(tmp) / "p.curator", create=True)
        try:
            try:
                result = import_log(db, path)
            except InputError as exc:
                assert str(path) in str(exc)
                return
            for error in result["errors"]:
                assert re.match(re.escape(str(path)) + r"(:\d+: |: and [\d,]+ more lines skipped$)", error), error
            assert result["imported"] + result["merged"] + result["skipped"] <= len(rows) + len(junk)
            _consistent(db)
        finally:
            db.close()


def test_line_separator_inside_a_json_string_is_not_a_line_break(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps({"query": "reset\u2028password"}, ensure_ascii=False) + "\n", encoding="utf-8")
    db = open_project(tmp_path / "p.curator", create=True)
    result = import_log(db, path)
    db.close()
    assert result["errors"] == [] and result["imported"] == 1


def test_nul_byte_in_one_log_line_skips_only_that_line(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"query": "first good query"}\n\x00\n{"query": "second good query"}\n')
    db = open_project(tmp_path / "p.curator", create=True)
    try:
        result = import_log(db, path)
        assert result["imported"] == 2 and any(":2:" in e for e in result["errors"])
    finally:
        db.close()


@pytest.mark.parametrize("kind", ["log", "corpus"])
def test_deeply_nested_json_line_is_one_bad_line(tmp_path, kind):
    path = tmp_path / ("log.jsonl" if kind == "log" else "corpus.jsonl")
    good = '{"query": "fine query"}' if kind == "log" else '{"_id": "1", "text": "fine text"}'
    path.write_text(good + "\n" + "[" * 50_000 + "]" * 50_000 + "\n")
    db = open_project(tmp_path / "p.curator", create=True)
    try:
        if kind == "log":
            assert any(":2:" in e for e in import_log(db, path)["errors"])
        else:
            assert any(":2:" in e for e in ingest(db, [path]).line_errors)
    finally:
        db.close()


def test_corpus_row_with_non_object_metadata_is_one_bad_line(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "1", "text": "fine text", "metadata": [1, 2]}\n{"_id": "2", "text": "more text"}\n')
    db = open_project(tmp_path / "p.curator", create=True)
    try:
        report = ingest(db, [path])
        assert report.documents == 1 and any(":1:" in e for e in report.line_errors)
    finally:
        db.close()


def test_huge_csv_field_is_one_bad_line(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("query,feedback\n" + "x" * 200_000 + ",1\nnormal query,0\n")
    db = open_project(tmp_path / "p.curator", create=True)
    try:
        result = import_log(db, path)
        assert result["imported"] == 1 and any(":2:" in e for e in result["errors"])
    finally:
        db.close()


# ---------------------------------------------------------------- model output

@BOUNDED
@given(raw=st.one_of(st.text(max_size=2000), st.binary(max_size=500).map(lambda b: b.decode("latin-1")),
                     st.just(""), st.just("{\"question\": \"json instead?\", \"answer\": \"no\"}"),
                     st.integers(1000, 100_000).map(lambda n: "Question: " + "very " * n)))
def test_parse_output_never_raises_and_returns_clean_lines(raw):
    parsed = prompts.parse_output(raw)
    if parsed is not None:
        question, answer = parsed
        assert question and answer and "\n" not in question and "\n" not in answer


HOSTILE_OUTPUTS = [
    "",  # empty
    "blah " * 50_000,  # endless, never reaching the format
    "Question: " + "and then " * 20_000 + "\nAnswer: x",  # endless question
    '{"question": "What is this?", "answer": "JSON, not the format"}',  # JSON instead of two lines
    "Question: only a question, no answer?",
    "\x00\x01\ufffd garbage \u202e reversed",
]


def test_generation_survives_hostile_model_output(sample_db):
    """Every second reply is hostile: each is rejected with a reason, the run still completes."""
    calls = {"n": 0}

    def reply(messages):
        calls["n"] += 1
        if calls["n"] % 2:
            return HOSTILE_OUTPUTS[(calls["n"] // 2) % len(HOSTILE_OUTPUTS)]
        return canned_reply(messages)

    config = GenerationConfig(count=8, seed=3, mix={"factoid": 1.0}, answers="free")  # canned_reply: both lines
    summary = generate(sample_db, config, backend=FakeBackend(reply))
    assert summary["status"] == "complete" and summary["accepted"] == 8
    assert summary["rejected"] >= 8
    assert "output not in the Question/Answer format" in summary["rejected_by_reason"]
    stored = sample_db.execute("SELECT COUNT(*) FROM rejected_candidates").fetchone()[0]
    assert stored == summary["rejected"]
    _consistent(sample_db)


@pytest.mark.parametrize("body", [b'{"choices": []}', b"[]", b'{"choices": [{"message": {"content": 42}}]}'])
def test_malformed_server_reply_is_a_clear_error(sample_db, fake_model, body):
    from curator.core.generation.backends import HttpBackend
    from curator.core.errors import CuratorError

    fake_model.raw, fake_model.delay = body, 0
    backend = HttpBackend(fake_model.url, retries=0)
    try:
        summary = generate(sample_db, GenerationConfig(count=2, seed=3, mix={"factoid": 1.0}), backend=backend)
    except CuratorError as exc:
        assert fake_model.url in str(exc)
    else:  # or every reply is rejected as not in the format, and the run says so
        assert summary["accepted"] == 0 and summary["rejected"] > 0
    _consistent(sample_db)


# ---------------------------------------------------------------- absurd flag values

ABSURD = [
    ["generate", "{p}", "--count", "0"],
    ["generate", "{p}", "--count", "999999999999"],
    ["generate", "{p}", "--mix", "factoid=-1"],
    ["generate", "{p}", "--mix", "nonsense=1"],
    ["generate", "{p}", "--mix", "factoid=abc"],
    ["generate", "{p}", "--threads", "0"],
    ["generate", "{p}", "--model", "/no/such/model.gguf"],
    ["ingest", "{p}", "--chunk-size", "1", "{p}"],
    ["ingest", "{p}", "--chunk-size", "100", "--overlap", "200", "{p}"],
    ["search", "{p}", "x", "--limit", "0"],
    ["export", "{p}", "out.jsonl", "--format", "xml"],
    ["export", "{p}", "out.jsonl", "--split", "dev=2,test=-1"],
    ["eval", "{p}", "--k", "0"],
    ["eval", "{p}", "--k", "a,b"],
    ["label", "{p}", "q_nope", "approve"],
    ["adjudicate", "{p}", "q_nope", "--pick", "bob"],
    ["adjudicate", "{p}", "q_nope"],
]


@pytest.mark.parametrize("argv", ABSURD, ids=lambda a: " ".join(a[0:1] + a[2:]))
def test_absurd_flag_values_give_one_clear_line(argv, sample_project_path, tmp_path):
    result = CliRunner().invoke(cli, [a.replace("{p}", str(sample_project_path)) for a in argv])
    assert result.exit_code in (1, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Error" in result.output
    db = open_project(sample_project_path)
    _consistent(db)
    db.close()
