"""Log files read by import-log (issue 32: availability).

``import-log /dev/zero`` read the device until memory ran out (or hung), a FIFO blocked for ever,
and every malformed line of a log was kept and printed.
"""

from __future__ import annotations

import json
import os

import pytest

from curator.core.errors import InputError
from curator.core.queries import logs
from curator.core.queries.logs import detect_fields, import_log

import trustkit


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_import_log_refuses_a_device_or_a_pipe(sample_project_path, tmp_path, kind):
    source = "/dev/zero"
    if kind == "fifo":
        source = str(tmp_path / "log.jsonl")
        os.mkfifo(source)
    code, output = trustkit.refused_input("import-log", str(sample_project_path), source, what=f"import-log {kind}")
    assert code == 1 and "not a regular file" in output, output
    assert "Traceback" not in output


def test_detect_fields_refuses_a_device(tmp_path):
    """The GUI's import dialog reads the fields first: the same refusal, before any read."""
    with pytest.raises(InputError, match="not a regular file"):
        detect_fields("/dev/zero")
    with pytest.raises(InputError, match="not a regular file"):
        detect_fields(tmp_path)


def test_malformed_log_lines_are_counted_and_twenty_listed(empty_db, tmp_path):
    log = tmp_path / "queries.csv"
    log.write_text("query,feedback\nhow do I reset my password,up\n" + "a,b,c\n" * 5000 + "where is the invoice,down\n")
    result = import_log(empty_db, log)
    assert result["imported"] == 2 and result["skipped"] == 5000 and result["lines_read"] == 5002
    assert len(result["errors"]) == 21 and result["errors"][-1] == f"{log}: and 4,980 more lines skipped"
    assert result["errors"][0].startswith(f"{log}:3: 3 columns")


def test_a_log_without_line_breaks_is_not_read_to_its_end(empty_db, tmp_path):
    log = tmp_path / "zeros.jsonl"
    with open(log, "wb") as fh:
        fh.write(b'{"query": "how do I reset my password"}\n')
        fh.truncate(200 << 20)  # then sparse NUL bytes up to 200 MiB, no line break (the cap is 64 MB)
    result = import_log(empty_db, log)
    assert result["imported"] == 1
    assert any(e.startswith(f"{log}:2: no line break in ") for e in result["errors"]), result["errors"]


# ---------------------------------------------------------------- quotes that do not close (issue 43: 4)

def _queries(db) -> set[str]:
    return {r[0] for r in db.execute("SELECT text FROM queries")}


def test_an_unclosed_quote_costs_its_line_only(empty_db, tmp_path):
    """A header, one line opening a quote that never closes, then 50,000 queries: 45,279 were imported,
    the rest swallowed into one oversized field with one line reported."""
    log = tmp_path / "queries.csv"
    log.write_text('query,feedback\n"unclosed,1\n' + "".join(f"how do I configure option {i},{i % 2}\n"
                                                             for i in range(50_000)))
    result = import_log(empty_db, log)
    assert (result["imported"], result["skipped"]) == (50_000, 1)
    assert result["errors"] == [f"{log}:2: a quote opened on this line is not closed (a quoted field spans at most "
                                "100 lines); line skipped."]


def test_an_unclosed_quote_near_the_end_keeps_the_lines_after_it(empty_db, tmp_path):
    """In a small file the quote ran to the end: 103 lines became one query holding line breaks."""
    log = tmp_path / "queries.csv"
    log.write_text("query\n" + "".join(f"query number {i}\n" for i in range(50)) + '"never closed\n'
                   + "".join(f"query number {i}\n" for i in range(50, 101)))
    result = import_log(empty_db, log)
    assert result["imported"] == 101 and result["skipped"] == 1 and result["errors"][0].startswith(f"{log}:52: ")
    assert not any("\n" in text for text in _queries(empty_db))


def test_a_stray_quote_that_closes_lines_later_costs_its_line_only(empty_db, tmp_path):
    """The quote opened on line 3 is closed by the quoted field of line 6, which no well-formed record
    does (a quote inside a field is doubled): line 3 is skipped, lines 4 to 6 are read as they are."""
    log = tmp_path / "queries.csv"
    log.write_text('query,feedback\nfirst query,1\n"stray quote,0\nsecond query,1\nthird query,0\n'
                   '"quoted, with a comma",1\n')
    result = import_log(empty_db, log)
    assert _queries(empty_db) == {"first query", "second query", "third query", "quoted, with a comma"}
    assert result["skipped"] == 1 and result["errors"][0].startswith(f"{log}:3: a quoted field opened on this line "
                                                                     "runs to line 6")


def test_a_closed_multi_line_field_is_one_query(empty_db, tmp_path):
    """Real exports quote a query holding line breaks: kept whole, numbered by its first line."""
    log = tmp_path / "queries.csv"
    log.write_text('query,feedback\n"how do I\nreset my ""admin"" password",0\nnext query,1\n')
    result = import_log(empty_db, log)
    assert _queries(empty_db) == {'how do I\nreset my "admin" password', "next query"} and result["errors"] == []
    lines = {json.loads(m)["line"] for (m,) in empty_db.execute("SELECT metadata FROM queries")}
    assert lines == {2, 4}


def test_a_multi_line_field_over_the_bound_is_cut_to_its_first_line(empty_db, tmp_path):
    log = tmp_path / "queries.csv"
    log.write_text('query\n"a query of\n' + "more words\n" * logs.MAX_RECORD_LINES + 'the end"\nlast query\n')
    result = import_log(empty_db, log)
    assert result["errors"][0].startswith(f"{log}:2: a quote opened on this line is not closed")
    assert "last query" in _queries(empty_db) and not any("\n" in t for t in _queries(empty_db))


# ---------------------------------------------------------------- a file with no usable line (issue 43: 9)

def test_a_csv_whose_only_data_line_is_too_long_says_so(empty_db, tmp_path):
    log = tmp_path / "queries.csv"
    log.write_text("query,feedback\n" + "x" * (logs.MAX_LINE_BYTES + 10) + ",1\n")
    with pytest.raises(InputError) as caught:
        import_log(empty_db, log)
    assert str(caught.value).startswith(f"{log}:2: longer than {logs.MAX_LINE_BYTES:,} bytes; line skipped.")
    assert "no query column" not in str(caught.value) and "No line of the log" in str(caught.value)


def test_a_header_over_the_line_limit_is_named(empty_db, tmp_path):
    log = tmp_path / "queries.csv"
    log.write_text("query," + "x" * (logs.MAX_LINE_BYTES + 10) + "\nhow do I reset my password,1\n")
    for read in (lambda: import_log(empty_db, log), lambda: detect_fields(log)):
        with pytest.raises(InputError, match=rf"^{log}:1: the header line is longer than"):
            read()
