"""Build a small retrieval benchmark of REAL user questions from the Python 3.11 FAQ.

Source: Debian's ``python3.11-doc`` package (``apt-get install python3.11-doc``), whose HTML
docs live under /usr/share/doc/python3.11/html/. Each FAQ entry there is a heading holding a
real user question ("How do I make an executable from a Python script?") and its answer.

Writes to ``--out`` (default /tmp/realq):
- ``corpus/faq/<page>/<slug>.md``: one file per FAQ answer, the answer text ONLY (the question
  heading is removed, so a retriever cannot win by matching it);
- ``corpus/docs/{tutorial,howto}/<page>.md``: the tutorial and howto pages with Markdown
  headings, as distractors so that retrieval is not trivial;
- ``questions.jsonl``: {"id", "question", "gold_path", "page", "anchor"}, one line per kept entry;
- ``README.txt``: counts and how the set was built.

By default the answer files are named by their position (``entry-017``), not by a slug of the
question: Curator takes a heading-less Markdown file's title from its file name and indexes
title + text, so a heading slug would put the question's words back into the indexed text.
``--heading-slugs`` names them after the heading anchor instead (readable, but leaky).

Standard library only (it runs with the system python3):
    python3 bench/realq/build.py [--out /tmp/realq] [--docs /usr/share/doc/python3.11/html]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

DEFAULT_DOCS = Path("/usr/share/doc/python3.11/html")
DEFAULT_OUT = Path("/tmp/realq")
FAQ_PAGES = ("general", "programming", "design", "library", "extending", "windows", "gui", "installed")
DISTRACTOR_DIRS = ("tutorial", "howto")
MIN_ANSWER_WORDS = 15
# A heading is a question if it ends in "?" or opens with one of these words ("How do you
# remove multiple items from a list" has no "?" but is still a question).
QUESTION_WORDS = {"how", "what", "why", "is", "can", "are", "do", "does", "where", "when", "which", "should"}
# The first line of README.txt: an existing --out folder is only replaced when it carries it,
# so a mistyped --out (say, a home folder) is never deleted.
MARKER = "Curator realq benchmark"

VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
BLOCK_TAGS = {"address", "article", "aside", "blockquote", "caption", "dd", "div", "dl", "dt", "figcaption",
              "figure", "footer", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "ol",
              "p", "pre", "section", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul"}
HEADING_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
# Never text: page chrome, the local table of contents (nav.contents) and embedded assets.
SKIP_TAGS = {"script", "style", "nav", "form", "input", "button", "svg", "img", "head", "title", "hr"}
# Sphinx decorations: the "¶" permalink and "4.1. " section numbers.
SKIP_CLASSES = {"headerlink", "section-number"}
MAX_DEPTH = 200  # deeper elements are flattened into their parent: bounds recursion on bad input
MAX_CLOSE_SCAN = 64  # an end tag only closes an element this near the top of the stack
BR = "\ue000"  # a private-use character standing for <br> while whitespace is collapsed


# ---------------------------------------------------------------- HTML to a small tree

@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list["Node | str"] = field(default_factory=list)

    def has_class(self, name: str) -> bool:
        return name in self.attrs.get("class", "").split()


class TreeBuilder(HTMLParser):
    """Build a Node tree with html.parser; tolerant of unclosed and stray tags.

    Linear in the input: an end tag looks at most MAX_CLOSE_SCAN elements down the stack, and
    nesting stops growing at MAX_DEPTH.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID_TAGS and len(self.stack) < MAX_DEPTH:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, max(0, len(self.stack) - 1 - MAX_CLOSE_SCAN), -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse_html(text: str) -> Node:
    builder = TreeBuilder()
    builder.feed(text)
    builder.close()
    return builder.root


def iter_nodes(root: Node):
    """Every element under root, depth first in document order (iterative: no recursion limit)."""
    pending = [root]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(reversed([c for c in node.children if isinstance(c, Node)]))


def main_content(root: Node) -> Node | None:
    """Sphinx puts the page body in <div class="body" role="main">; the rest is navigation."""
    return next((n for n in iter_nodes(root) if n.attrs.get("role") == "main"), None)


# ---------------------------------------------------------------- tree to Markdown-ish text

def skipped(node: Node) -> bool:
    return node.tag in SKIP_TAGS or any(node.has_class(c) for c in SKIP_CLASSES)


def collapse(text: str) -> str:
    """HTML whitespace rules: runs of whitespace become one space; <br> becomes a newline."""
    lines = (" ".join(part.split()) for part in text.split(BR))
    return "\n".join(line for line in lines if line)


def plain_text(node: Node) -> str:
    """Descendant text without markup or decorations, whitespace kept as in the source."""
    parts = []
    for child in node.children:
        if isinstance(child, str):
            parts.append(child)
        elif not skipped(child):
            parts.append(plain_text(child))
    return "".join(parts)


def wrap(inner: str, mark: str) -> str:
    """``*inner*`` with the inner text's outer spaces moved outside, as Markdown wants them."""
    core = inner.strip()
    if not core:
        return inner
    lead = " " if inner[:1].isspace() else ""
    tail = " " if inner[-1:].isspace() else ""
    return f"{lead}{mark}{core}{mark}{tail}"


def render_inline(node: Node) -> str:
    """Inline markup: `code`, *emphasis*, **strong**; links keep their text only."""
    if skipped(node):
        return ""
    if node.tag == "br":
        return BR
    if node.tag in {"code", "kbd", "samp", "tt"}:
        # Sphinx splits a literal into <span class="pre"> words; join them as one code span.
        return wrap(plain_text(node), "`")
    inner = "".join(c if isinstance(c, str) else render_inline(c) for c in node.children)
    if node.tag in {"em", "i", "cite"}:
        return wrap(inner, "*")
    if node.tag in {"strong", "b"}:
        return wrap(inner, "**")
    return inner


def indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else line for line in text.split("\n"))


def render_code(node: Node) -> list[str]:
    """A <pre> block as text indented by four spaces (Markdown's indented code block)."""
    lines = plain_text(node).expandtabs().rstrip().split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    return ["\n".join(("    " + line).rstrip() for line in lines)] if lines else []


def render_list(node: Node) -> list[str]:
    """<ul>/<ol> as one block of "- item" / "1. item" lines; an item's later blocks indented."""
    items, number = [], 0
    for child in node.children:
        if not isinstance(child, Node) or child.tag != "li":
            continue
        number += 1
        marker = f"{number}. " if node.tag == "ol" else "- "
        body = "\n".join(render_blocks(child))
        if body:
            items.append(marker + indent(body, " " * len(marker))[len(marker):])
    return ["\n".join(items)] if items else []


def table_rows(node: Node):
    """The <tr> rows of a table, looking through thead/tbody/tfoot but not nested tables."""
    for child in node.children:
        if isinstance(child, Node):
            if child.tag == "tr":
                yield child
            elif child.tag in {"thead", "tbody", "tfoot"}:
                yield from table_rows(child)


def render_table(node: Node) -> list[str]:
    """A table as "| a | b |" lines, with a separator under a header row."""
    lines = []
    for row in table_rows(node):
        cells = [c for c in row.children if isinstance(c, Node) and c.tag in {"td", "th"}]
        texts = [" ".join(" ".join(render_blocks(c)).split()).replace("|", "\\|") for c in cells]
        lines.append("| " + " | ".join(texts) + " |")
        if len(lines) == 1 and all(c.tag == "th" for c in cells):
            lines.append("|" + "---|" * len(cells))
    return ["\n".join(lines)] if lines else []


def render_block(node: Node) -> list[str]:
    """The Markdown blocks of one block-level element."""
    if node.tag in HEADING_TAGS:
        title = clean_heading(plain_text(node))
        return [f"{'#' * int(node.tag[1])} {title}"] if title else []
    if node.tag == "pre":
        return render_code(node)
    if node.tag in {"ul", "ol"}:
        return render_list(node)
    if node.tag == "table":
        return render_table(node)
    if node.tag == "dd":
        # Definitions indented by two spaces: readable, and not four, which would mean code.
        return [indent(block, "  ") for block in render_blocks(node)]
    return render_blocks(node)


def render_blocks(node: Node, skip: Node | None = None) -> list[str]:
    """The Markdown blocks (paragraphs, code, lists...) of node's children, ``skip`` left out.

    Consecutive text and inline elements make one paragraph; a block element ends it.
    """
    blocks: list[str] = []
    inline: list[str] = []

    def flush() -> None:
        text = collapse("".join(inline))
        inline.clear()
        if text:
            blocks.append(text)

    for child in node.children:
        if isinstance(child, str):
            inline.append(child)
        elif child is skip or skipped(child):
            continue
        elif child.tag in BLOCK_TAGS:
            flush()
            blocks.extend(render_block(child))
        else:
            inline.append(render_inline(child))
    flush()
    return blocks


def to_markdown(blocks: list[str]) -> str:
    return "\n\n".join(blocks).strip() + "\n"


# ---------------------------------------------------------------- FAQ entries

def clean_heading(text: str) -> str:
    """One line of heading text without "¶" or a leading "4.1." section number."""
    words = text.replace("\u00b6", " ").split()
    if words and words[0].rstrip(".").replace(".", "").isdigit():
        words = words[1:]
    return " ".join(words)


def is_question(heading: str) -> bool:
    words = heading.split()
    return bool(words) and (heading.endswith("?") or words[0].lower() in QUESTION_WORDS)


def slugify(text: str, limit: int = 80) -> str:
    """Lowercase ASCII letters and digits joined by single hyphens, at most ``limit`` long."""
    out, dash = [], False
    for ch in text.lower():
        if ch.isascii() and ch.isalnum():
            out.append(ch)
            dash = False
        elif out and not dash:
            out.append("-")
            dash = True
    return "".join(out)[:limit].strip("-")


@dataclass
class Entry:
    page: str
    anchor: str  # the section id in the HTML page, for tracing an entry back to its source
    question: str
    answer: str  # Markdown text, heading removed


def faq_entries(page: str, html_text: str) -> list[Entry]:
    """Every FAQ entry of a page: a <section> with no nested section, its heading the question.

    Sections holding other sections are group titles ("Core Language"), not entries.
    """
    main = main_content(parse_html(html_text))
    if main is None:
        return []
    entries = []
    for section in (n for n in iter_nodes(main) if n.tag == "section"):
        if any(n.tag == "section" for n in iter_nodes(section) if n is not section):
            continue
        heading = next((c for c in section.children if isinstance(c, Node) and c.tag in HEADING_TAGS), None)
        if heading is None:
            continue
        answer = to_markdown(render_blocks(section, skip=heading))
        entries.append(Entry(page, section.attrs.get("id", ""), clean_heading(plain_text(heading)), answer))
    return entries


def page_markdown(html_text: str) -> str:
    """A whole tutorial/howto page as Markdown, its headings as #, ##, ..."""
    main = main_content(parse_html(html_text))
    return to_markdown(render_blocks(main)) if main is not None else ""


# ---------------------------------------------------------------- writing the set

@dataclass
class Counts:
    faq_docs: int = 0
    distractor_docs: int = 0
    bytes: int = 0
    questions: int = 0
    skipped_not_question: list[str] = field(default_factory=list)
    skipped_short: list[str] = field(default_factory=list)


def write_doc(corpus: Path, rel: str, text: str, counts: Counts) -> None:
    path = corpus / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    path.write_bytes(data)
    counts.bytes += len(data)


def build_faq(docs: Path, corpus: Path, counts: Counts, heading_slugs: bool) -> list[dict]:
    """Write one answer file per FAQ entry; return the questions kept, in page order.

    Every entry with an answer becomes a document, even one skipped as a question (too short,
    or a heading that is a statement): it stays in the corpus as a realistic near-distractor.
    """
    questions = []
    for page in FAQ_PAGES:
        number = 0
        for position, entry in enumerate(faq_entries(page, (docs / "faq" / f"{page}.html").read_text("utf-8")), 1):
            if not entry.answer.strip():
                continue  # a group heading with nothing under it ("General GUI Questions")
            slug = (slugify(entry.anchor) or slugify(entry.question)) if heading_slugs else ""
            rel = f"faq/{page}/{slug or f'entry-{position:03d}'}.md"
            write_doc(corpus, rel, entry.answer, counts)
            counts.faq_docs += 1
            if not is_question(entry.question):
                counts.skipped_not_question.append(f"{page}: {entry.question}")
            elif len(entry.answer.split()) < MIN_ANSWER_WORDS:
                counts.skipped_short.append(f"{page}: {entry.question}")
            else:
                number += 1
                questions.append({"id": f"faq-{page}-{number}", "question": entry.question,
                                  "gold_path": rel, "page": page, "anchor": entry.anchor})
    return questions


def build_distractors(docs: Path, corpus: Path, counts: Counts) -> None:
    """The tutorial and howto pages (not their index pages, which are only link lists)."""
    for folder in DISTRACTOR_DIRS:
        for page in sorted((docs / folder).glob("*.html")):
            if page.stem == "index":
                continue
            text = page_markdown(page.read_text("utf-8"))
            if text.strip():
                write_doc(corpus, f"docs/{folder}/{page.stem}.md", text, counts)
                counts.distractor_docs += 1


def readme(counts: Counts, docs: Path) -> str:
    lines = [
        MARKER,
        "",
        "Real user questions from the Python 3.11 FAQ (Debian package python3.11-doc), with the",
        "FAQ answer as the single gold document.",
        "",
        f"Documents: {counts.faq_docs + counts.distractor_docs} ({counts.faq_docs} FAQ answers, "
        f"{counts.distractor_docs} tutorial/howto distractor pages), {counts.bytes} bytes",
        f"Questions: {counts.questions}",
        "",
        "Built by: python3 bench/realq/build.py (Curator repository), from " + str(docs),
        "- corpus/faq/<page>/entry-NNN.md (anchor slugs with --heading-slugs): one file per FAQ entry (a <section> with no nested",
        "  section), the answer only: the question heading is removed. NNN is the entry's position",
        "  on its page; questions.jsonl's \"anchor\" is its HTML section id.",
        "- corpus/docs/tutorial|howto/<page>.md: whole pages, headings as #, ##, ...",
        "- questions.jsonl: the heading text of each entry whose heading is a question (ends in",
        f"  '?' or starts with {'/'.join(sorted(QUESTION_WORDS))}) and whose answer has at least",
        f"  {MIN_ANSWER_WORDS} words. gold_path is relative to corpus/.",
        "- Caveat: the tutorial/howto pages sometimes answer a FAQ question too (floating point,",
        "  sorting, Unicode), so a 'miss' is not always wrong.",
        "",
        f"Entries kept as documents but not as questions ({len(counts.skipped_not_question)} not a question, "
        f"{len(counts.skipped_short)} answer under {MIN_ANSWER_WORDS} words):",
    ]
    lines += [f"  not a question: {q}" for q in counts.skipped_not_question]
    lines += [f"  short answer:   {q}" for q in counts.skipped_short]
    return "\n".join(lines) + "\n"


def build(docs: Path, out: Path, heading_slugs: bool = False) -> Counts:
    """Build the set in a fresh folder next to ``out``, then swap it in, so a reader never sees
    half a set and a failed build leaves the old one intact."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        counts = Counts()
        questions = build_faq(docs, staging / "corpus", counts, heading_slugs)
        build_distractors(docs, staging / "corpus", counts)
        counts.questions = len(questions)
        with open(staging / "questions.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(q, ensure_ascii=False) + "\n" for q in questions)
        (staging / "README.txt").write_text(readme(counts, docs), encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return counts


def check_out(out: Path) -> str | None:
    """Why ``out`` must not be replaced, or None: only an empty folder or an earlier set is."""
    if not out.exists():
        return None
    if not out.is_dir():
        return f"{out} exists and is not a folder."
    marker = out / "README.txt"
    if any(out.iterdir()) and not (marker.is_file() and marker.read_text("utf-8", "replace").startswith(MARKER)):
        return f"{out} is not empty and was not made by this script; choose another --out."
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS, help=f"HTML docs root (default {DEFAULT_DOCS})")
    parser.add_argument("--heading-slugs", action="store_true",
                        help="name answer files after their heading (readable, but leaks the question into the title)")
    args = parser.parse_args(argv)

    missing = [p for p in [args.docs / "faq" / f"{page}.html" for page in FAQ_PAGES]
               + [args.docs / d for d in DISTRACTOR_DIRS] if not p.exists()]
    if missing:
        print(f"error: the Python HTML docs are not at {args.docs} (missing {missing[0]}).\n"
              "Install them with:  apt-get install python3.11-doc   (or pass --docs PATH)", file=sys.stderr)
        return 2
    problem = check_out(args.out.resolve())
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2

    counts = build(args.docs, args.out.resolve(), args.heading_slugs)
    documents = counts.faq_docs + counts.distractor_docs
    print(f"wrote {args.out}")
    print(f"documents: {documents} ({counts.faq_docs} FAQ answers + {counts.distractor_docs} distractors)")
    print(f"bytes: {counts.bytes} ({counts.bytes / 1e6:.2f} MB)")
    print(f"questions: {counts.questions} (skipped: {len(counts.skipped_not_question)} not a question, "
          f"{len(counts.skipped_short)} short answer)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
