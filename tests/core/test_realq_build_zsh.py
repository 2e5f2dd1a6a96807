"""bench/realq/build_zsh.py: the zsh FAQ's question headings become real questions, their answers
files without the heading, and nothing in the contents or inside an answer is taken for a heading."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "build_zsh", Path(__file__).resolve().parents[2] / "bench" / "realq" / "build_zsh.py")
build_zsh = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(build_zsh)

# The FAQ's own layout: a posting header, an introduction, contents numbered "N.M." (with a '?' in
# one entry whose body heading has none), then the body numbered "N.M:" with two-space indents.
FAQ = """Archive-Name: unix-faq/shell/zsh
Last-Modified: 2020/08/08

This document contains a list of frequently-asked questions concerning the Z-shell, a command
interpreter for many UNIX systems, and says where to start reading when you are new to it.

Contents:
Chapter 1:  Introducing zsh
1.1. sh and ksh?
1.2. Why is my history not being saved?
--- End of Contents ---


Chapter 1: Introducing zsh


This chapter compares zsh with other shells and explains how to keep the history of your
commands between sessions, with the options that control it.


1.1: Differences from sh and ksh


Most features of ksh are implemented in zsh; problems can arise because
  the implementation is slightly different.

As a summary of the status:

  1. ) because of all the options it is not safe to assume sh behaviour.


1.2: Why is my history not being saved?


In zsh, the history is not saved to a file by default.  Set HISTFILE
  to the file's name and SAVEHIST to the number of lines to keep.

Is it saved now?  Only when the shell exits, unless INC_APPEND_HISTORY is set.


1.3: Why?


Short.


Acknowledgments:


Thanks to zsh-list, in particular Bart Schaefer, for suggestions regarding this document and
for many answers given over the years.
"""


@pytest.fixture
def faq(tmp_path):
    path = tmp_path / "FAQ.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(FAQ)
    return path


def test_question_headings_become_questions_with_answer_only_files(faq, tmp_path):
    out = tmp_path / "realq-zsh"
    assert build_zsh.main(["--faq", str(faq), "--out", str(out)]) == 0
    questions = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    # 1.1 is a question only in the contents; 1.3's answer is too short; nothing in an answer is a heading
    assert [(q["id"], q["question"]) for q in questions] == [("zsh-1.2", "Why is my history not being saved?")]
    answer = (out / "corpus" / questions[0]["gold_path"]).read_text()
    assert "history is not saved" in answer and "Is it saved now?" in answer
    assert "Why is my history" not in answer
    assert "\n  to the file" not in answer, "the two-space continuation indent is removed"
    distractors = sorted(p.relative_to(out / "corpus").as_posix() for p in (out / "corpus" / "docs").rglob("*.md"))
    assert len(distractors) == 4  # FAQ introduction, chapter introduction, 1.1, acknowledgments
    texts = [p.read_text() for p in (out / "corpus" / "docs").rglob("*.md")]
    ksh = [text for text in texts if "Most features of ksh" in text]
    assert len(ksh) == 1 and "not safe to assume" in ksh[0], "a body line ending in ':' does not start a section"
    assert not any("Archive-Name" in p.read_text() for p in (out / "corpus").rglob("*.md"))


def test_refuses_a_folder_it_did_not_build_and_a_file_that_is_not_the_faq(faq, tmp_path):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("someone's data")
    with pytest.raises(SystemExit, match="not built by this script"):
        build_zsh.main(["--faq", str(faq), "--out", str(foreign)])
    assert (foreign / "keep.txt").read_text() == "someone's data"
    other = tmp_path / "other.txt"
    other.write_text("1.1: What?\n\nNo contents here at all, so this is not the zsh FAQ.\n")
    with pytest.raises(SystemExit, match="End of Contents"):
        build_zsh.main(["--faq", str(other), "--out", str(tmp_path / "x")])
