"""Build a retrieval benchmark of REAL user questions from the Z shell FAQ (shell, not Python or Debian).

Source: the zsh FAQ that Debian's ``zsh-common`` package ships as /usr/share/doc/zsh-common/FAQ.gz.
The package need not be installed; fetch and unpack it without root:

    apt-get download zsh-common && dpkg -x zsh-common_*.deb DIR     # then --faq DIR/usr/share/doc/zsh-common/FAQ.gz

Each numbered section "N.M: heading" whose heading holds a '?' is a question people asked ("Why is my
history not being saved?", "How do I get a newline in my prompt?"), and its body is the answer.

Writes to ``--out`` (default /tmp/realq-zsh), for bench/realq/load.py, bench/validity.py and
bench/quality.py, the layout bench/realq/faqset.py writes (answers without their question heading, named by position;
distractors: the sections whose heading is not a question, such as "Differences from sh and ksh",
each chapter's introduction, the FAQ's own introduction and its closing notes; questions.jsonl;
README.txt).

Standard library only:  python3 bench/realq/build_zsh.py [--out /tmp/realq-zsh] [--faq FILE]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script or loaded by path: faqset is beside it
import faqset  # noqa: E402
from faqset import read_faq, write_set  # noqa: E402

DEFAULT_FAQ = Path("/usr/share/doc/zsh-common/FAQ.gz")
DEFAULT_OUT = Path("/tmp/realq-zsh")
MARKER = "Curator realq benchmark (zsh FAQ)"
RULE = "each 'N.M:' heading holding a '?'"
DISTRACTORS = ("sections whose heading is not a question, chapter introductions, the FAQ's introduction and "
               "closing notes")
# The table of contents numbers its entries "3.21." and sits before this line; the body numbers them "3.21:".
END_OF_CONTENTS = "--- End of Contents ---"
HEADING = re.compile(r"^(\d+\.\d+):[ \t]+(\S.*)$")
CHAPTER = re.compile(r"^Chapter (\d+):[ \t]+(\S.*)$")
# The closing unnumbered sections, named exactly: a looser pattern also takes body lines such as
# "As a summary of the status:" for headings.
CLOSING = re.compile(r"^(Acknowledgments|Copyright Information):$")


def sections(text: str) -> list[dict]:
    """The FAQ's sections in order: {"number", "heading", "body", "chapter", "intro"}. The text before
    the contents is the FAQ's introduction (number "0"); chapter introductions have intro=True."""
    head, marker, body = text.partition(END_OF_CONTENTS)
    if not marker:
        raise ValueError(f"no '{END_OF_CONTENTS}' line: is this the zsh FAQ?")
    preamble = head.split("\nContents:", 1)[0]
    found = [{"number": "0", "heading": "About this FAQ", "body": _dedent(_without_header(preamble)),
              "chapter": "0", "intro": True}]
    current = None
    for line in body.splitlines():
        numbered, chapter, closing = HEADING.match(line), CHAPTER.match(line), CLOSING.match(line)
        if numbered or chapter or closing:
            if numbered:
                number, heading, intro = numbered.group(1), numbered.group(2), False
            elif chapter:
                number, heading, intro = chapter.group(1), chapter.group(2), True
            else:
                number, heading, intro = "end", closing.group(1), True
            current = {"number": number, "heading": " ".join(heading.split()),
                       "chapter": "99" if number == "end" else number.split(".")[0], "intro": intro, "body": []}
            found.append(current)
        elif current is not None:
            current["body"].append(line)
    for section in found[1:]:
        section["body"] = _dedent("\n".join(section["body"]))
    return found


def _without_header(preamble: str) -> str:
    """The introduction without the Usenet posting header ("Archive-Name: ...", up to the first blank line)."""
    return preamble.strip().split("\n\n", 1)[-1]


def _dedent(text: str) -> str:
    """The body's lines without the FAQ's two-space continuation indent; paragraphs kept apart by one blank line."""
    lines = [line[2:] if line.startswith("  ") else line for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(line.rstrip() for line in lines)).strip()


def build(faq: Path, out: Path) -> dict:
    try:
        found = sections(read_faq(faq))
    except ValueError as err:
        raise SystemExit(f"{faq}: {err}") from None
    return write_set(found, out, "zsh", MARKER, faq, RULE, DISTRACTORS)


def main(argv: list[str] | None = None) -> int:
    return faqset.main(argv, __doc__.split("\n")[0], build, DEFAULT_FAQ, DEFAULT_OUT,
                       ("apt-get download zsh-common && dpkg -x zsh-common_*.deb DIR, then --faq "
                          "DIR/usr/share/doc/zsh-common/FAQ.gz"))


if __name__ == "__main__":
    sys.exit(main())
