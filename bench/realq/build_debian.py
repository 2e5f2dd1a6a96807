"""Build a retrieval benchmark of REAL user questions from the Debian GNU/Linux FAQ (not Python).

Source: Debian's ``debian-faq`` package (``apt-get install debian-faq``), whose plain-text edition
is /usr/share/doc/debian/FAQ/debian-faq.en.txt.gz. Each numbered section whose heading holds a '?'
is a question people asked ("How do I install Debian from CD-ROMs?", "You asked me to install
stable, but ... What should I do?"), and its body is the answer.

Writes to ``--out`` (default /tmp/realq-debian), for bench/validity.py and bench/quality.py
(``--realq``), the layout bench/realq/faqset.py writes (answers without their question heading, named by position;
distractors: the sections whose heading is not a question, such as "Obtaining the source", and each
chapter's introduction; questions.jsonl; README.txt).

Standard library only:  python3 bench/realq/build_debian.py [--out /tmp/realq-debian] [--faq FILE]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script or loaded by path: faqset is beside it
import faqset  # noqa: E402
from faqset import read_faq, write_set  # noqa: E402

DEFAULT_FAQ = Path("/usr/share/doc/debian/FAQ/debian-faq.en.txt.gz")
DEFAULT_OUT = Path("/tmp/realq-debian")
MARKER = "Curator realq benchmark (Debian FAQ)"
RULE = "each heading holding a '?'"
DISTRACTORS = "sections whose heading is not a question, and chapter introductions"
# "2.5.\xa0Why does ..." at the start of a line; the table of contents is indented, so it never matches.
HEADING = re.compile(r"^(\d+(?:\.\d+)+)\.[\s\xa0]+(\S.*)$")
CHAPTER = re.compile(r"^Chapter (\d+)\.[\s\xa0]+(.*)$")


def sections(text: str) -> list[dict]:
    """Numbered sections and chapter introductions: {"number", "heading", "body", "chapter"}, in order.
    A heading runs on over the unindented lines that follow it, up to the first blank line."""
    found: list[dict] = []
    lines = text.replace("\xa0", " ").splitlines()
    current, chapter, i = None, "0", 0
    while i < len(lines):
        line = lines[i]
        head, chap = HEADING.match(line), CHAPTER.match(line)
        if head or chap:
            number = head.group(1) if head else chap.group(1)
            heading = head.group(2) if head else chap.group(2)
            while i + 1 < len(lines) and lines[i + 1].strip() and not lines[i + 1].startswith(" "):
                i += 1
                heading += " " + lines[i].strip()
            chapter = number.split(".")[0]
            current = {"number": number, "heading": " ".join(heading.split()), "body": [], "chapter": chapter,
                       "intro": bool(chap)}
            found.append(current)
        elif current is not None:
            current["body"].append(line)
        i += 1
    for section in found:
        section["body"] = _dedent("\n".join(section["body"]))
    return found


def _dedent(text: str) -> str:
    """The body's lines without the FAQ's four-space indent; paragraphs kept apart by blank lines."""
    lines = [line[4:] if line.startswith("    ") else line.strip() for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def build(faq: Path, out: Path) -> dict:
    return write_set(sections(read_faq(faq)), out, "debian", MARKER, faq, RULE, DISTRACTORS)


def main(argv: list[str] | None = None) -> int:
    return faqset.main(argv, __doc__.split("\n")[0], build, DEFAULT_FAQ, DEFAULT_OUT,
                       "apt-get install debian-faq")


if __name__ == "__main__":
    sys.exit(main())
