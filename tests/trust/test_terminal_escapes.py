"""Escape sequences in documents, logs and traces never reach the terminal raw (issue 32: `trace`,
`queries` and `search` printed them, so a document could clear the screen, set the window title
or write the clipboard with OSC 52). Everything the CLI prints for a person goes through one
sanitiser (curator.cli.common.echo); JSON keeps the text, escaped."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.queries.rows import add_query
from curator.core.store import open_project

# clear screen, window title, OSC 52 clipboard write, the one-byte C1 CSI, a carriage return that
# overprints the line, a backspace and DEL
HOSTILE = ("rotate keys \x1b[2J\x1b[H\x1b]0;owned\x07 \x1b]52;c;cm0gLXJmIH4K\x07 \x9b31m red \x9d8;;x\x9c"
           " \r fake ok \x08\x7f end")
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what may not appear: controls except \t and \n


def _hostile_project(tmp_path, sample_project_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "evil.txt").write_text(f"Keys rotation.\n\n{HOSTILE} keys rotation handbook.\n", encoding="utf-8")
    out = CliRunner().invoke(cli, ["ingest", str(sample_project_path), str(docs)])
    assert out.exit_code == 0, out.output
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps({"user_input": f"How? {HOSTILE}", "response": f"They rotate. {HOSTILE}",
                                  "retrieved_contexts": [HOSTILE]}) + "\n", encoding="utf-8")
    out = CliRunner().invoke(cli, ["import-traces", str(sample_project_path), str(traces)])
    assert out.exit_code == 0, out.output
    db = open_project(sample_project_path)
    with db.conn:
        add_query(db, f"keys {HOSTILE}", "manual")
        trace_id = db.execute("SELECT id FROM traces").fetchone()[0]
        db.execute("INSERT INTO claims (trace_id, ord, text) VALUES (?, 0, ?)", [trace_id, HOSTILE])
    db.close()
    return trace_id


def test_documents_logs_and_traces_print_no_control_characters(tmp_path, sample_project_path):
    trace_id = _hostile_project(tmp_path, sample_project_path)
    project = str(sample_project_path)
    commands = [["search", project, "rotate keys"], ["chunks", project], ["queries", project],
                ["trace", project, trace_id], ["diagnose", project, "--no-judge", "--traces"]]
    for args in commands:
        out = CliRunner().invoke(cli, args)
        assert out.exit_code == 0, (args, out.output)
        assert not RAW.search(out.output), (args, RAW.findall(out.output))  # no control reached the terminal...
        assert "x1b" in out.output or args[0] == "diagnose", (args, out.output)  # ...the text was shown, inert


def test_json_output_keeps_the_text_escaped(tmp_path, sample_project_path):
    trace_id = _hostile_project(tmp_path, sample_project_path)
    out = CliRunner().invoke(cli, ["trace", str(sample_project_path), trace_id, "--json"])
    assert out.exit_code == 0, out.output
    assert not RAW.search(out.output)  # C0 escaped by json, DEL and C1 by curator: \u009b
    assert json.loads(out.output)["claims"][0]["text"] == HOSTILE  # the same text, parsed back


def test_error_lines_are_sanitised_too(tmp_path, sample_project_path):
    missing = tmp_path / "t\x1b]0;owned\x07.jsonl"
    out = CliRunner().invoke(cli, ["import-traces", str(sample_project_path), str(missing)])
    assert out.exit_code == 1 and out.output.startswith("Error: ")
    assert not RAW.search(out.output) and "\\x1b]0;owned\\x07" in out.output


def test_the_sanitiser_shows_each_control_and_keeps_layout():
    from curator.cli.common import terminal_safe

    assert terminal_safe("a\tb\nc") == "a\tb\nc"
    assert terminal_safe("\x1b[2J\r\x9b\x7f") == "\\x1b[2J\\x0d\\x9b\\x7f"
    assert terminal_safe("café ✓ 日本") == "café ✓ 日本"


def test_bidi_controls_are_shown_not_obeyed(tmp_path, sample_project_path):
    """A right-to-left override in a document reorders what the reader sees (Trojan Source)."""
    from curator.cli.common import terminal_safe

    assert terminal_safe("admin\u202e\u2066txt.exe") == "admin\\u202e\\u2066txt.exe"
    assert terminal_safe("\u05e9\u05dc\u05d5\u05dd") == "\u05e9\u05dc\u05d5\u05dd"  # Hebrew text itself is kept
    out = CliRunner().invoke(cli, ["import-traces", str(sample_project_path), str(tmp_path / "a\u202eb.jsonl")])
    assert out.exit_code == 1 and "\u202e" not in out.output and "a\\u202eb" in out.output
