"""One guard for every user-named output (issue 32: 1 and the run tag).

``curator eval P --save-run P`` turned the project into a TEXT file; export had its own guard and
``--save-run`` none. Both now go through files.check_output: never the project, its side files, a
folder holding it, or any SQLite database; and the saved run's tag (the run file's name) can no
longer inject lines into the TREC file.
"""

from __future__ import annotations

import hashlib
import os
import stat
import shutil
from pathlib import Path

import pytest
from approved_rows import approve_manual_rows
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.errors import InputError
from curator.core.evaluation.evaluate import evaluate, read_trec_run, write_trec_run
from curator.core.export.writers import _qrels, export
from curator.core.store import open_project


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def gold_project(sample_project_path):
    """The sample project with three approved rows, closed (the CLI opens it itself)."""
    approve_manual_rows(sample_project_path, 3, "How does feature {n} work?", "it works")
    return sample_project_path


def _eval(*args: str):
    return CliRunner().invoke(cli, ["eval", *args])


def test_save_run_onto_the_project_is_refused_and_the_project_survives(gold_project):
    before = _sha(gold_project)
    for target in (gold_project, Path(f"{gold_project}-wal"), Path(f"{gold_project}-shm"),
                   Path(f"{gold_project}-journal")):
        result = _eval(str(gold_project), "--save-run", str(target))
        assert result.exit_code == 1, result.output
        assert "project file" in result.output and "Traceback" not in result.output
    assert _sha(gold_project) == before
    db = open_project(gold_project)  # still a project, its rows all there
    assert db.execute("SELECT COUNT(*) FROM queries WHERE status = 'approved'").fetchone()[0] == 3
    db.close()
    assert not [p for p in gold_project.parent.iterdir() if p.name.startswith(".")]  # no staging file left


def test_save_run_onto_another_sqlite_database_or_a_hard_link_is_refused(gold_project, tmp_path):
    other = tmp_path / "other.curator"
    shutil.copy(gold_project, other)
    link = tmp_path / "link.trec"
    os.link(gold_project, link)  # the project under another name: only its header says what it is
    symlink = tmp_path / "alias.trec"
    symlink.symlink_to(gold_project)
    for target in (other, link, symlink):
        before = _sha(target)
        result = _eval(str(gold_project), "--save-run", str(target))
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert "SQLite database" in result.output or "project file" in result.output, result.output
        assert _sha(target) == before
    ok = _eval(str(gold_project), "--save-run", str(tmp_path / "bm25.trec"))
    assert ok.exit_code == 0, ok.output


def test_save_run_never_replaces_the_run_it_scores(gold_project, tmp_path):
    run = tmp_path / "mine.trec"
    assert _eval(str(gold_project), "--save-run", str(run)).exit_code == 0
    before = run.read_bytes()
    result = _eval(str(gold_project), "--run", str(run), "--save-run", str(run))
    assert result.exit_code == 1 and "being scored" in result.output, result.output
    assert run.read_bytes() == before


def test_export_with_force_never_replaces_a_sqlite_database(gold_project, tmp_path):
    other = tmp_path / "other.curator"
    shutil.copy(gold_project, other)
    holder = tmp_path / "holder"
    holder.mkdir()
    shutil.copy(gold_project, holder / "kept.curator")
    for target, fmt in ((other, "jsonl"), (Path(f"{other}-wal"), "trec"), (holder, "beir")):
        result = CliRunner().invoke(cli, ["export", str(gold_project), str(target), "--format", fmt, "--force"])
        assert result.exit_code == 1 and "SQLite database" in result.output, result.output
    assert open_project(other).execute("SELECT COUNT(*) FROM chunks").fetchone()[0] > 0
    assert (holder / "kept.curator").exists()


def test_the_guard_is_one_function_with_one_rule(tmp_path, gold_project):
    from curator.core.files import check_output

    check_output(tmp_path / "new.trec")  # nothing there: fine
    (tmp_path / "notes.txt").write_text("x")
    check_output(tmp_path / "notes.txt")  # a text file is not refused by this guard (export asks --force)
    with pytest.raises(InputError, match="SQLite database"):
        check_output(gold_project)
    with pytest.raises(InputError, match="project file"):
        check_output(gold_project.parent, [gold_project.resolve()])


def test_a_tab_or_newline_in_the_run_name_cannot_inject_lines(gold_project, tmp_path):
    """The saved run's tag is the run file's name: 'x\\nq_evil Q0 c 1 99 t' made a line of its own."""
    good = tmp_path / "good.trec"
    assert _eval(str(gold_project), "--save-run", str(good)).exit_code == 0
    lines_before = good.read_text().splitlines()
    hostile = tmp_path / "a\tb\nq_evil Q0 c_evil 1 99 x\r\x0bz.trec"
    hostile.write_bytes(good.read_bytes())
    saved = tmp_path / "saved.trec"
    result = _eval(str(gold_project), "--run", str(hostile), "--save-run", str(saved))
    assert result.exit_code == 0, result.output
    lines = saved.read_text().splitlines()
    assert len(lines) == len(lines_before)
    assert all(len(line.split(" ")) == 6 for line in lines), lines[:3]
    assert "q_evil" not in read_trec_run(saved, [])


def test_qrels_ids_with_whitespace_stay_one_field():
    rows = [{"id": "q\n2", "status": "approved", "gold_chunk_ids": ["c 2\r\nx"], "gold_grades": {}}]
    assert _qrels(rows) == [("q_2", "c_2_x", 1)]


def test_write_trec_run_keeps_one_line_per_row(tmp_path):
    write_trec_run(tmp_path / "r.trec", {"q 1\n": {"d\t1": 1.0, "d2": 0.5}}, "tag\nq9 Q0 d 1 1 t")
    lines = (tmp_path / "r.trec").read_text().splitlines()
    assert lines == ["q_1_ Q0 d_1 1 1.0 tag_q9_Q0_d_1_1_t", "q_1_ Q0 d2 2 0.5 tag_q9_Q0_d_1_1_t"]


def test_export_through_the_core_call_is_guarded_too(gold_project):
    """The GUI's export calls core's export: the guard is there, not in the CLI."""
    db = open_project(gold_project)
    try:
        with pytest.raises(InputError, match="project file"):
            export(db, gold_project, "jsonl", force=True)
        with pytest.raises(InputError, match="project file"):
            evaluate(db, save_run=str(gold_project))
    finally:
        db.close()


def test_an_unwritable_save_run_is_one_line_not_a_traceback(gold_project, tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for target in (a_file / "run.trec", Path("/proc/run.trec")):
        result = _eval(str(gold_project), "--save-run", str(target))
        assert result.exit_code == 1 and "could not be written" in result.output, result.output
        assert not isinstance(result.exception, OSError)


def test_save_run_keeps_a_file_that_is_not_a_run_unless_forced(gold_project, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes\nnot a run\n")
    result = _eval(str(gold_project), "--save-run", str(notes))
    assert result.exit_code == 1 and "--force" in result.output and notes.read_text() == "# my notes\nnot a run\n"
    saved = tmp_path / "bm25.trec"
    assert _eval(str(gold_project), "--save-run", str(saved)).exit_code == 0
    assert _eval(str(gold_project), "--save-run", str(saved)).exit_code == 0  # a run is refreshed in place
    forced = _eval(str(gold_project), "--save-run", str(notes), "--force")
    assert forced.exit_code == 0, forced.output
    assert notes.read_text().split()[1] == "Q0"  # now a TREC run


# ---------------------------------------------------------------- devices, pipes, sockets (issue 43: 2)
# As root, 'curator export P /dev/full --force' replaced /dev/full with a regular file and wrote
# /dev/full.manifest.json beside it. A FIFO and a symlink to one stand in for the device here.

def _fifo(folder: Path, name: str = "pipe") -> Path:
    os.mkfifo(folder / name)
    return folder / name


def _special_targets(tmp_path: Path) -> dict[str, Path]:
    fifo = _fifo(tmp_path)
    link = tmp_path / "link-to-pipe"
    link.symlink_to(fifo)
    return {"fifo": fifo, "symlink to a fifo": link}


def _still_a_fifo(path: Path) -> bool:
    return stat.S_ISFIFO(os.stat(path).st_mode)


@pytest.mark.parametrize("fmt", ["jsonl", "trec", "beir"])
def test_export_with_force_never_replaces_a_pipe(gold_project, tmp_path, fmt):
    for what, target in _special_targets(tmp_path).items():
        result = CliRunner().invoke(cli, ["export", str(gold_project), str(target), "--format", fmt, "--force"])
        assert result.exit_code == 1 and "not a regular file" in result.output, (what, result.output)
        assert "Traceback" not in result.output
        assert _still_a_fifo(target), what
        assert not Path(f"{target}.manifest.json").exists()


def test_export_with_force_never_replaces_a_pipe_as_its_manifest(gold_project, tmp_path):
    manifest = _fifo(tmp_path, "gold.jsonl.manifest.json")
    result = CliRunner().invoke(cli, ["export", str(gold_project), str(tmp_path / "gold.jsonl"), "--force"])
    assert result.exit_code == 1 and "not a regular file" in result.output, result.output
    assert _still_a_fifo(manifest) and not (tmp_path / "gold.jsonl").exists()


def test_beir_export_with_force_never_deletes_a_pipe_inside_the_folder(gold_project, tmp_path):
    folder = tmp_path / "beir"
    folder.mkdir()
    inner = _fifo(folder, "queries.jsonl")
    result = CliRunner().invoke(cli, ["export", str(gold_project), str(folder), "--format", "beir", "--force"])
    assert result.exit_code == 1 and "not a regular file" in result.output and str(inner) in result.output
    assert _still_a_fifo(inner)


def test_save_run_with_force_never_replaces_a_pipe(gold_project, tmp_path):
    for what, target in _special_targets(tmp_path).items():
        result = _eval(str(gold_project), "--save-run", str(target), "--force")
        assert result.exit_code == 1 and "not a regular file" in result.output, (what, result.output)
        assert _still_a_fifo(target), what
