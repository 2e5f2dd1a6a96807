"""A zero-byte file is not a project; ingest on a mistyped name does not create one (issue 20: 10)."""

from __future__ import annotations

from click.testing import CliRunner

from curator.cli.main import cli


def test_a_zero_byte_file_is_refused_and_left_empty(tmp_path):
    empty = tmp_path / "notes.txt"
    empty.touch()
    for command in (["stats", str(empty)], ["ingest", str(empty), str(tmp_path)], ["chunks", str(empty)]):
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 1 and "an empty file, not a Curator project" in result.output, result.output
    assert empty.stat().st_size == 0
    assert CliRunner().invoke(cli, ["init", str(empty)]).exit_code == 0  # asked for explicitly
    assert empty.stat().st_size > 0


def test_ingest_on_a_mistyped_name_creates_nothing(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Some text to ingest.\n")
    typo = tmp_path / "handbok.curator"
    result = CliRunner().invoke(cli, ["ingest", str(typo), str(docs)])
    assert result.exit_code == 1 and "no such project" in result.output
    assert not typo.exists()
    result = CliRunner().invoke(cli, ["ingest", str(typo), str(docs), "--create"])
    assert result.exit_code == 0 and typo.exists(), result.output
