"""Build a retrieval benchmark of REAL user questions from the fetchmail FAQ (mail retrieval; not Python, Debian, zsh).

Source: the FAQ that Debian's ``fetchmail`` package ships as /usr/share/doc/fetchmail/fetchmail-FAQ.html, with
the package's other documentation around it. The package need not be installed; fetch and unpack it without root:

    apt-get download fetchmail && dpkg -x fetchmail_*.deb DIR
    # then --faq DIR/usr/share/doc/fetchmail/fetchmail-FAQ.html

Each entry "G3. heading" whose heading holds a '?' is a question people asked ("How can I use fetchmail
with GMail/Google Mail?", "Why do deleted messages show up again when I take a connection down?"), and its
body is the answer. Entries the FAQ strikes out (retired: "B1. Make coughs and dies ...") never become
questions.

Writes to ``--out`` (default /tmp/realq-fetchmail), for bench/realq/load.py, bench/validity.py and
bench/quality.py, the layout bench/realq/faqset.py writes (answers without their question heading, named by
position; questions.jsonl; README.txt). Distractors: the FAQ's entries whose heading is not a question
("Lex bombs out while building the fetchmail lexer."), struck-out entries, the FAQ's introduction and
chapter introductions, and the package's other documents found beside the FAQ, one file per section: the
manual page (../../man/man1/fetchmail.1.gz, split at its .SH/.SS headings), fetchmail-features.html,
design-notes.html, README.SSL.gz and README.Debian.gz. Many of them answer the same things the FAQ
answers in other words, as a real documentation set does.

Standard library only:  python3 bench/realq/build_fetchmail.py [--out /tmp/realq-fetchmail] [--faq FILE]
"""

from __future__ import annotations

import gzip
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script or loaded by path: faqset is beside it
import faqset  # noqa: E402
from faqset import write_set  # noqa: E402

DEFAULT_FAQ = Path("/usr/share/doc/fetchmail/fetchmail-FAQ.html")
DEFAULT_OUT = Path("/tmp/realq-fetchmail")
MARKER = "Curator realq benchmark (fetchmail FAQ)"
RULE = "each entry heading such as 'G3.' holding a '?' and not struck out"
# "G3. Something does not work ..."; the letter names the FAQ's chapter.
ENTRY = re.compile(r"^([A-Z])(\d+)\.\s*(.*)$", re.S)
# The package's other documents, relative to the FAQ's folder, in the order their chapters are numbered.
COMPANIONS = (("man", "../../man/man1/fetchmail.1.gz"), ("features", "fetchmail-features.html"),
              ("design", "design-notes.html"), ("ssl", "README.SSL.gz"), ("debian", "README.Debian.gz"))
FIRST_COMPANION_CHAPTER = 90
BLOCK_TAGS = {"p", "div", "ul", "ol", "li", "pre", "br", "blockquote", "dl", "dt", "dd", "table", "tr", "hr"}


# --- HTML: the FAQ and the HTML companions ---------------------------------------------------------------

class _Blocks(HTMLParser):
    """An HTML page as a sequence of ("heading", level, text, struck) and ("text", paragraph) items.
    Paragraphs are split at block tags; <pre> keeps its line breaks; list items start with '- '."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[tuple] = []
        self._words: list[str] = []
        self._heading: tuple[int, list[str]] | None = None
        self._struck = False
        self._pre = 0
        self._skip = 0  # inside <head>, <script> or <style>: not page text

    def handle_starttag(self, tag, attrs):
        if tag in ("head", "script", "style"):
            self._skip += 1
        elif tag in ("h1", "h2", "h3"):
            self._flush()
            self._heading, self._struck = (int(tag[1]), []), False
        elif tag in ("strike", "s", "del") and self._heading:
            self._struck = True
        elif tag in BLOCK_TAGS:
            self._flush()
            if tag == "pre":
                self._pre += 1
            if tag == "li":
                self._words.append("- ")

    def handle_endtag(self, tag):
        if tag in ("head", "script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag in ("h1", "h2", "h3") and self._heading:
            level, parts = self._heading
            self.items.append(("heading", level, " ".join("".join(parts).split()), self._struck))
            self._heading = None
        elif tag in BLOCK_TAGS:
            self._flush()
            if tag == "pre":
                self._pre = max(0, self._pre - 1)

    def handle_data(self, data):
        if self._skip:
            return
        if self._heading:
            self._heading[1].append(data)
        else:
            self._words.append(data)

    def close(self):
        super().close()
        self._flush()

    def _flush(self) -> None:
        text = "".join(self._words)
        self._words = []
        if self._pre:
            text = "\n".join(line.rstrip() for line in text.strip("\n").splitlines())
        else:
            text = " ".join(text.split())
        if text.strip() and text.strip() != "-":
            self.items.append(("text", text))


def html_blocks(html: str) -> list[tuple]:
    parser = _Blocks()
    parser.feed(html)
    parser.close()
    return parser.items


def read_text(path: Path) -> str:
    """A file's text, gunzipped when it ends in .gz. UTF-8, else ISO-8859-1 (what the HTML pages declare; every
    byte decodes, so an odd byte never stops a build)."""
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def faq_sections(html: str) -> list[dict]:
    """The FAQ's entries in order: {"number", "heading", "body", "chapter", "intro"}. Number "0" is the FAQ's
    introduction; each lettered chapter ("General problems") is an introduction; the two contents pages are
    left out. A struck-out entry is marked intro=True so that faqset never takes its heading for a question."""
    found: list[dict] = []
    chapters: dict[str, int] = {}
    current: dict | None = None
    for item in html_blocks(html):
        if item[0] == "text":
            if current is not None:
                current["body"].append(item[1])
            continue
        _, level, text, struck = item
        entry = ENTRY.match(text) if level == 2 else None
        if entry:
            letter, heading = entry.group(1), entry.group(3)
            chapter = chapters.setdefault(letter, len(chapters) + 1)
            current = {"number": f"{letter}{entry.group(2)}", "heading": heading, "chapter": str(chapter),
                       "intro": struck, "body": []}
        elif level == 1 and not found:
            current = {"number": "0", "heading": text, "chapter": "0", "intro": True, "body": []}
        elif level == 1 and "contents" not in text.lower():
            current = {"number": f"intro-{len(found)}", "heading": text, "chapter": str(len(chapters) + 1),
                       "intro": True, "body": []}
        else:  # the contents pages and their chapter headings: links only, not text
            current = None
            continue
        found.append(current)
    if not any(not s["intro"] and "?" in s["heading"] for s in found):
        raise ValueError("no entry heading such as 'G1. What is fetchmail?': is this the fetchmail FAQ?")
    for section in found:
        section["body"] = "\n\n".join(section["body"]).strip()
    return found


def html_sections(html: str, name: str, chapter: int) -> list[dict]:
    """Another HTML document, one section per heading (the text before the first heading is section 0)."""
    found = [{"number": f"{name}-0", "heading": name, "chapter": str(chapter), "intro": True, "body": []}]
    for item in html_blocks(html):
        if item[0] == "heading":
            found.append({"number": f"{name}-{len(found)}", "heading": item[2], "chapter": str(chapter),
                          "intro": True, "body": []})
        else:
            found[-1]["body"].append(item[1])
    for section in found:
        section["body"] = "\n\n".join(section["body"]).strip()
    return found


# --- The manual page (troff) -------------------------------------------------------------------------------

# Font changes (\fB, \f(CW, \f[I]) print nothing; the other escapes print these characters.
TROFF_FONT = re.compile(r"\\f(\[[^\]]*\]|\(..|.)")
TROFF_ESCAPES = ((r"\(em", "--"), (r"\(en", "-"), (r"\-", "-"), (r"\e", "\\"), (r"\&", ""), (r"\~", " "),
                 (r"\ ", " "), (r"\|", ""), (r"\['e]", "\u00e9"), (r"\['i]", "\u00ed"))
TROFF_ARGS = re.compile(r'"([^"]*)"|(\S+)')


def _unescape(text: str) -> str:
    text = TROFF_FONT.sub("", text)
    for escape, plain in TROFF_ESCAPES:
        text = text.replace(escape, plain)
    return text


def _macro_text(line: str) -> str:
    """The words a text-carrying macro line prints: '.BR fetchmail (1)' -> 'fetchmail(1)'; '.IP "x"' -> 'x'."""
    macro, _, rest = line[1:].partition(" ")
    args = [quoted or bare for quoted, bare in TROFF_ARGS.findall(rest)]
    if macro in ("BR", "RB", "IR", "RI", "BI", "IB"):
        return "".join(args)
    return " ".join(args)


def man_sections(troff: str, name: str, chapter: int) -> list[dict]:
    """A manual page, one section per .SH/.SS heading; macros give their text, formatting is dropped, and
    .nf/.fi blocks (examples) keep their line breaks."""
    found = [{"number": f"{name}-0", "heading": name, "chapter": str(chapter), "intro": True, "body": []}]
    paragraph: list[str] = []
    literal = False

    def end_paragraph() -> None:
        if paragraph:
            found[-1]["body"].append(("\n" if literal else " ").join(paragraph))
            paragraph.clear()

    for raw in troff.splitlines():
        line = _unescape(raw)
        if raw.startswith(('.\\"', "'\\\"")) or raw.strip() == ".":
            continue
        if raw.startswith((".SH", ".SS")):
            end_paragraph()
            found.append({"number": f"{name}-{len(found)}", "heading": _macro_text(line), "chapter": str(chapter),
                          "intro": True, "body": []})
        elif raw.startswith((".nf", ".fi")):
            end_paragraph()
            literal = raw.startswith(".nf")
        elif raw.startswith((".PP", ".P", ".LP", ".TP", ".sp", ".br", ".RS", ".RE", ".TS", ".TE", ".TH", ".UE")):
            end_paragraph()
        elif raw.startswith("."):  # .B, .I, .BR, .IP "tag", .UR address: their arguments are text
            if raw.startswith(".IP"):
                end_paragraph()
            words = _macro_text(line)
            if words:
                paragraph.append(words)
        elif line.strip() or literal:
            paragraph.append(line.replace("\t", " ").rstrip() if literal else " ".join(line.split()))
    end_paragraph()
    for section in found:
        section["body"] = "\n\n".join(p for p in section["body"] if p.strip()).strip()
    return found


# --- Plain-text companions ---------------------------------------------------------------------------------

def text_sections(text: str, name: str, chapter: int) -> list[dict]:
    """A README, one section per run of paragraphs up to about 200 words (they have no headings to split at)."""
    found: list[dict] = []
    paragraphs = [" ".join(p.split()) if not p.startswith((" ", "\t")) else p.rstrip()
                  for p in re.split(r"\n\s*\n", text) if p.strip()]
    for paragraph in paragraphs:
        if not found or len(found[-1]["body"].split()) >= 200:
            found.append({"number": f"{name}-{len(found)}", "heading": name, "chapter": str(chapter),
                          "intro": True, "body": ""})
        found[-1]["body"] = (found[-1]["body"] + "\n\n" + paragraph).strip()
    return found


def companion_sections(faq: Path) -> tuple[list[dict], list[str]]:
    """The package's other documents found beside the FAQ, as distractor sections, and their names."""
    found, used = [], []
    for offset, (name, relative) in enumerate(COMPANIONS):
        path = (faq.parent / relative).resolve()
        if not path.is_file():
            continue
        chapter = FIRST_COMPANION_CHAPTER + offset
        if name == "man":
            found += man_sections(read_text(path), name, chapter)
        elif path.name.endswith(".html"):
            found += html_sections(read_text(path), name, chapter)
        else:
            found += text_sections(read_text(path), name, chapter)
        used.append(path.name)
    return found, used


def build(faq: Path, out: Path) -> dict:
    try:
        found = faq_sections(read_text(faq))
    except ValueError as err:
        raise SystemExit(f"{faq}: {err}") from None
    companions, used = companion_sections(faq)
    distractors = ("FAQ entries whose heading is not a question or is struck out, the FAQ's and its chapters' "
                   f"introductions, and the package's other documents by section: {', '.join(used) or 'none found'}")
    return write_set(found + companions, out, "fetchmail", MARKER, faq, RULE, distractors)


def main(argv: list[str] | None = None) -> int:
    return faqset.main(argv, __doc__.split("\n")[0], build, DEFAULT_FAQ, DEFAULT_OUT,
                       ("apt-get download fetchmail && dpkg -x fetchmail_*.deb DIR, then --faq "
                        "DIR/usr/share/doc/fetchmail/fetchmail-FAQ.html"))


if __name__ == "__main__":
    sys.exit(main())
