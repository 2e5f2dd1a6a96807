"""Log files read by import-log (issue 32: availability).

``import-log /dev/zero`` read the device until memory ran out (or hung), a FIFO blocked for ever,
and every malformed line of a log was kept and printed.
"""

from __future__ import annotations

import os

import pytest

from curator.core.errors import InputError
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
