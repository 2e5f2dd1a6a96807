"""Loaders parse adversarial lines in linear time and give the same text as before (issue 20: 2).

Timing is measured in bench/adversarial.py; here each case must parse correctly, and the new
linear scanners must agree with the regexes they replaced on random markup."""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from curator.core.corpus import loaders
from curator.core.corpus.loaders import load_file, parse_html, parse_markdown, parse_rst

# The regexes the scanners replaced: the reference of what the text must be.
OLD_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
OLD_TAG = re.compile(r"</?(?:a|b|i|u|s|em|strong|br|span|div|p|sup|sub|kbd|code|img|small|mark|details|summary)"
                     r"(?:\s[^>\n]*)?/?>", re.I)


def old_inline(text: str) -> str:
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)
    return OLD_TAG.sub("", text)


def new_inline(text: str) -> str:
    text = loaders._strip_links(text, "![", empty_ok=True)
    text = loaders._strip_links(text, "[", empty_ok=False)
    return loaders._strip_inline_tags(text)


markup = st.text(alphabet="[]()!<>/ \n\tabp#x", max_size=60)


@settings(max_examples=400, deadline=None)
@given(markup)
def test_link_and_tag_scanners_agree_with_the_old_regexes(text):
    assert new_inline(text) == old_inline(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="# \tab", max_size=30))
def test_heading_text_agrees_with_the_old_regex(line):
    old = OLD_HEADING.match(line)
    new = loaders._MD_HEADING.match(line)
    assert (old is None) == (new is None)
    if old:
        assert loaders._heading_text(new.group(2)) == old.group(2)


def test_heading_with_a_long_run_of_spaces_is_parsed_and_the_file_kept(tmp_path):
    doc = tmp_path / "spaces.md"
    doc.write_text("# a" + " " * 4000 + "b\n\nBody text under the heading.\n")
    [loaded] = load_file(doc, [])
    assert loaded.sections[0].heading_path == ("a" + " " * 4000 + "b",)
    assert loaded.sections[0].text == "Body text under the heading."


def test_unclosed_markdown_links_and_tags_stay_as_text():
    sections = parse_markdown("[a " * 20000 + "\n\n" + "<a " * 20000 + "\n\n" + "![a " * 20000)
    text = "\n\n".join(s.text for s in sections)
    assert text.count("[a") == 40000 and text.count("<a") == 20000


def test_unclosed_rst_targets_stay_as_text():
    [section] = parse_rst("`a <b " * 20000 + "\n\n" + ":a:`b <c " * 20000)
    assert section.text.count("<b") == 20000 and section.text.count(":a:") == 20000


def test_unclosed_html_tags_give_the_same_text():
    title, [section] = parse_html("<p>intro</p>" + "<a " * 20000)
    assert section.text.startswith("intro\n<a <a") and section.text.count("<a") == 20000
