"""Loaders: markup to clean sections, encodings, binary and broken files, JSONL corpora."""

from __future__ import annotations

from pathlib import Path

import pytest

from curator.core.errors import InputError
from curator.core.corpus.loaders import decode_bytes, load_file, parse_html, parse_markdown, parse_rst

DATA = Path(__file__).resolve().parent.parent / "data"


def _load(name: str, errors: list | None = None):
    return load_file(DATA / name, [] if errors is None else errors)


def test_markdown_headings_become_heading_paths():
    (doc,) = _load("guide.md")
    paths = [s.heading_path for s in doc.sections]
    assert paths == [("Install",), ("Install", "Linux"), ("Install", "Windows"), ("Usage",)]
    assert doc.title == "Install" and doc.format == "md"


def test_markdown_links_and_emphasis_cleaned_and_fences_not_headings():
    (doc,) = _load("guide.md")
    linux = doc.sections[1].text
    assert "manual for details" in linux
    assert "](" not in linux and "**" not in linux
    # The '# ...' line inside a code fence is code, not a heading.
    assert "not a heading inside a fence" in linux


def test_markdown_deeper_heading_pops_back():
    sections = parse_markdown("# A\n\ntext a\n\n### C\n\ntext c\n\n## B\n\ntext b\n")
    assert [s.heading_path for s in sections] == [("A",), ("A", "C"), ("A", "B")]


def test_markdown_setext_headings_and_thematic_breaks():
    text = "Guide\n=====\n\nintro words\n\nInstall\n-------\n\nrun it\n\n---\n\nafter the break\n"
    sections = parse_markdown(text)
    assert [(s.heading_path, s.text) for s in sections] == [
        (("Guide",), "intro words"),
        (("Guide", "Install"), "run it\n\n---\n\nafter the break"),
    ]


def test_rst_titles_detected_and_directives_roles_stripped():
    (doc,) = _load("manual.rst")
    assert doc.title == "Curator Manual"
    paths = [s.heading_path for s in doc.sections]
    assert ("Curator Manual", "Rotating keys") in paths
    assert ("Curator Manual", "Command line") in paths
    text = doc.text
    for junk in (":func:", ":ref:", "..", "image::", "toctree", ":maxdepth:", "diagram.png",
                 "secret-raw", "raw html payload", "comment that must disappear", "``", "`_", "<cli-ref>"):
        assert junk not in text, junk
    assert "Use the ingest function or the CLI command." in text
    assert "Keep a backup of the old key." in text  # a note's prose is kept
    assert "see the docs" in text


def test_rst_underline_levels_in_order_of_appearance():
    sections = parse_rst("Top\n===\n\nintro\n\nSub\n---\n\nbody\n\nOther\n=====\n\nmore\n")
    assert [s.heading_path for s in sections] == [("Top",), ("Top", "Sub"), ("Other",)]


def test_html_script_style_nav_removed_and_headings_kept():
    (doc,) = _load("page.html")
    assert doc.title == "Page & Title"
    assert [s.heading_path for s in doc.sections] == [("Backups",), ("Backups", "Restore")]
    text = doc.text
    for junk in ("scriptmarker", "stylemarker", "color: red", "navmarker", "<", ">"):
        assert junk not in text, junk
    assert "Backups run every night" in text and "cell one" in text and "cell two" in text


def test_html_entities_decoded():
    _, sections = parse_html("<h1>A &amp; B</h1><p>x &lt; y &eacute;</p>")
    assert sections[0].heading_path == ("A & B",)
    assert sections[0].text == "x < y é"


def test_cp1252_fallback():
    (doc,) = _load("legacy_cp1252.txt")
    assert doc.text.startswith("Café naïve résumé “quoted”")


def test_utf16_with_bom():
    (doc,) = _load("utf16.txt")
    assert "über straße" in doc.text


def test_utf8_bom_stripped():
    assert decode_bytes("\ufeffhello".encode("utf-8"), Path("x.txt")) == "hello"


def test_binary_file_refused_with_path():
    with pytest.raises(InputError) as info:
        _load("binary.txt")
    assert "binary.txt" in str(info.value) and "binary" in str(info.value)


def test_empty_file_refused(tmp_path):
    empty = tmp_path / "empty.md"
    empty.write_text("   \n\n")
    with pytest.raises(InputError, match="no text"):
        load_file(empty, [])


def test_missing_file_refused(tmp_path):
    with pytest.raises(InputError, match="cannot be read"):
        load_file(tmp_path / "gone.txt", [])


def test_pdf_text_layer():
    (doc,) = _load("report.pdf")
    assert doc.format == "pdf"
    assert doc.sections[0].heading_path == ("Page 1",)
    assert "solar panel efficiency" in doc.text


def test_broken_pdf_refused(tmp_path):
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\nthis is not really a pdf\n")
    with pytest.raises(InputError, match="broken.pdf"):
        load_file(broken, [])


def test_jsonl_keeps_ids_and_reports_bad_line():
    errors: list[str] = []
    docs = _load("corpus.jsonl", errors)
    assert [d.metadata["corpus_id"] for d in docs] == ["doc1", "doc2", "doc4"]  # 'id' works as well as '_id'
    assert docs[0].title == "Alpha" and docs[2].title == "doc4"
    assert all(d.key.endswith("#" + d.metadata["corpus_id"]) for d in docs)
    assert len(errors) == 1
    assert errors[0].startswith(f"{DATA / 'corpus.jsonl'}:3: ")


def test_jsonl_rejects_non_objects_and_missing_text(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('[1, 2]\n{"_id": "a"}\n{"_id": "b", "text": "fine"}\n')
    errors: list[str] = []
    docs = load_file(path, errors)
    assert [d.metadata["corpus_id"] for d in docs] == ["b"]
    assert [e.split(": ")[0] for e in errors] == [f"{path}:1", f"{path}:2"]


def test_jsonl_line_with_half_a_surrogate_pair_is_skipped_by_line(tmp_path):
    # json.loads accepts "\ud800" and returns a string that UTF-8, SQLite and sha1 cannot take:
    # before this check one such record stopped the whole ingest with a traceback
    path = tmp_path / "c.jsonl"
    path.write_text('{"_id": "a", "text": "bad \\ud800 half"}\n'
                    '{"_id": "b", "text": "a pair \\ud83d\\ude00 is one character"}\n')
    errors: list[str] = []
    docs = load_file(path, errors)
    assert [d.metadata["corpus_id"] for d in docs] == ["b"] and "😀" in docs[0].text
    assert len(errors) == 1 and errors[0].startswith(f"{path}:1: ") and "surrogate" in errors[0]


def test_jsonl_second_passage_with_an_id_already_used_is_skipped_by_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"_id": "a", "text": "first"}\n{"_id": "b", "text": "other"}\n{"_id": "a", "text": "again"}\n')
    errors: list[str] = []
    docs = load_file(path, errors)
    assert [(d.metadata["corpus_id"], d.text) for d in docs] == [("a", "first"), ("b", "other")]
    assert errors == [f"{path}:3: id 'a' was already used on line 1; line skipped."]
