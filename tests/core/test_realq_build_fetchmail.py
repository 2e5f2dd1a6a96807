"""bench/realq/build_fetchmail.py: the fetchmail FAQ's question entries become real questions, their answers
files without the heading; struck-out entries, statements and the contents pages never become questions; the
package's manual page and other documents beside the FAQ become distractors, and a rebuild is byte-identical."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "build_fetchmail", Path(__file__).resolve().parents[2] / "bench" / "realq" / "build_fetchmail.py")
build_fetchmail = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(build_fetchmail)

# The FAQ's own layout: an introduction, two contents pages whose entries are links holding '?', then
# lettered chapters of <h2> entries; one entry struck out, one a statement, one split over two links.
FAQ = """<?xml version="1.0" encoding="ISO-8859-1"?>
<html><head><title>The Fetchmail FAQ</title></head>
<body>
<h1 id="FAQ">Frequently Asked Questions About Fetchmail</h1>
<p><strong>Support? Bug reports?</strong> Please read G1 for what information is required to get your
problem solved as quickly as possible, and check the release notes &ndash; often.</p>
<h1 id="Contents">Contents</h1>
<a href="#C_G">G. General problems</a><br/>
<a href="#C_B">B. Build-time problems</a><br/>
<a href="#C_T">T. How to make fetchmail play nice with various MTAs</a><br/>
<a href="#C_K">K. How to set up well-known security and authentication methods</a><br/>
<h1 id="Contentdetail">Detailed Contents</h1>
<h2 id="C_G">General problems</h2>
<a href="#G1">G1. What is fetchmail and why should I bother?</a><br/>
<hr/>
<h1 id="G">General problems</h1>
<h2><a id="G1" name="G1">G1. What is fetchmail and why should I
bother?</a></h2>
<p>Fetchmail is a one-stop solution to the remote mail retrieval
problem for Unix machines, quite useful to anyone with an intermittent connection.</p>
<ul>
<li>It speaks POP3 and IMAP.</li>
</ul>
<pre>
poll pop.example.com
    user joe
</pre>
<h2><a id="G2" name="G2"><strike>G2. Does it still run on a VAX with no network card at all?</strike></a></h2>
<p>Not any more: that port was dropped many releases ago and nobody has asked about it since then, ever.</p>
<h1>Build-time problems</h1>
<h2><a id="B1" name="B1">B1. Lex bombs out while building the
fetchmail lexer.</a></h2>
<p>fetchmail 6.3.0 and newer ship with the lexer and parser in .c formats, so you do not need lex.</p>
<h2><a id="B2" name="B2">B2.</a> <a id="short" name="short">Why?</a></h2>
<p>Short.</p>
<h2><a id="B3" name="B3">B3.</a> <a id="generic" name="generic">Why does my build fail in the
intl directory?</a></h2>
<p>Your gettext is too old for this release; install a newer gettext and configure again from scratch.</p>
</body></html>
"""

MAN = r""".\" a comment that is not text
.TH fetchmail 1
.SH NAME
fetchmail \- fetch mail from a POP, IMAP, ETRN, or ODMR-capable server
.SH DESCRIPTION
\fBfetchmail\fP is a mail-retrieval and forwarding utility; it fetches mail from remote mailservers
and forwards it to your local (client) machine's delivery system, as described in
.BR fetchmailconf (1).
.SS General Options
.TP
.B \-V | \-\-version
Displays the version information for your copy of \fBfetchmail\fP and the options it was built with.
.nf
fetchmail \-V
.fi
"""

FEATURES = """<html><body><h1>Fetchmail Features</h1><h2>Since 6.0</h2>
<ul><li>Fetchmail now supports IMAP IDLE and a great many other things that you may need one day.</li></ul>
</body></html>"""


@pytest.fixture
def faq(tmp_path):
    """The package unpacked: the FAQ in usr/share/doc/fetchmail, the manual page in usr/share/man/man1."""
    doc = tmp_path / "usr" / "share" / "doc" / "fetchmail"
    man = tmp_path / "usr" / "share" / "man" / "man1"
    doc.mkdir(parents=True)
    man.mkdir(parents=True)
    (doc / "fetchmail-FAQ.html").write_text(FAQ, encoding="latin-1")
    (doc / "fetchmail-features.html").write_text(FEATURES, encoding="latin-1")
    (man / "fetchmail.1.gz").write_bytes(gzip.compress(MAN.encode("latin-1"), mtime=0))
    return doc / "fetchmail-FAQ.html"


def _corpus_texts(out: Path, part: str) -> list[str]:
    return [p.read_text() for p in sorted((out / "corpus" / part).rglob("*.md"))]


def test_question_entries_become_questions_with_answer_only_files(faq, tmp_path):
    out = tmp_path / "realq-fetchmail"
    assert build_fetchmail.main(["--faq", str(faq), "--out", str(out)]) == 0
    questions = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    # G2 is struck out, B1 a statement, B2's answer too short, and the contents' links are not entries
    assert [(q["id"], q["question"]) for q in questions] == [
        ("fetchmail-G1", "What is fetchmail and why should I bother?"),
        ("fetchmail-B3", "Why does my build fail in the intl directory?")]
    answer = (out / "corpus" / questions[0]["gold_path"]).read_text()
    assert "one-stop solution to the remote mail retrieval problem" in answer and "why should I" not in answer
    assert "- It speaks POP3 and IMAP." in answer, "a list item keeps its own line"
    assert "poll pop.example.com\n    user joe" in answer, "<pre> keeps its lines and indent"
    assert questions[0]["page"] == "chapter-01" and questions[1]["page"] == "chapter-02"


def test_statements_struck_entries_and_companion_documents_are_distractors(faq, tmp_path):
    out = tmp_path / "realq-fetchmail"
    build_fetchmail.main(["--faq", str(faq), "--out", str(out)])
    docs = _corpus_texts(out, "docs")
    assert any("that port was dropped" in text for text in docs), "a struck-out entry is a distractor"
    assert any("you do not need lex" in text for text in docs), "a statement heading is a distractor"
    assert any("Support? Bug reports?" in text and "release notes \u2013 often" in text for text in docs)
    man = [text for text in docs if "mail-retrieval and forwarding utility" in text]
    assert len(man) == 1 and "fetchmail is a" in man[0] and "\\f" not in man[0]
    assert "fetchmailconf(1)" in man[0], ".BR joins its arguments"
    assert not any("a comment that is not text" in text for text in docs)
    version = [text for text in docs if "Displays the version information" in text]
    assert len(version) == 1 and "-V | --version" in version[0] and "\nfetchmail -V" in version[0]
    assert any("supports IMAP IDLE" in text for text in docs)
    readme = (out / "README.txt").read_text()
    assert "fetchmail.1.gz, fetchmail-features.html" in readme and "questions: 2" in readme
    everything = docs + _corpus_texts(out, "faq")
    assert not any("Detailed Contents" in text or "B. Build-time problems" in text for text in everything)


def test_a_rebuild_is_byte_identical(faq, tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    build_fetchmail.main(["--faq", str(faq), "--out", str(first)])
    build_fetchmail.main(["--faq", str(faq), "--out", str(second)])
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert all((first / f).read_bytes() == (second / f).read_bytes() for f in files)


def test_refuses_a_folder_it_did_not_build_and_a_page_that_is_not_the_faq(faq, tmp_path):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("someone's data")
    with pytest.raises(SystemExit, match="not built by this script"):
        build_fetchmail.main(["--faq", str(faq), "--out", str(foreign)])
    assert (foreign / "keep.txt").read_text() == "someone's data"
    other = tmp_path / "other.html"
    other.write_text("<html><body><h1>Release notes</h1><p>What changed? Many things.</p></body></html>")
    with pytest.raises(SystemExit, match="is this the fetchmail FAQ"):
        build_fetchmail.main(["--faq", str(other), "--out", str(tmp_path / "x")])
