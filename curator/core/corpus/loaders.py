"""Turn files into clean text split into sections (heading path, text).

Each loader returns ``LoadedDoc`` objects; a JSONL corpus file yields one per line, every
other format one per file. Loaders raise ``InputError`` with the file (and line) named.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from curator.core.errors import InputError

SUPPORTED_SUFFIXES = {".txt", ".md", ".markdown", ".rst", ".html", ".htm", ".pdf", ".jsonl"}


@dataclass
class Section:
    heading_path: tuple[str, ...]
    text: str


@dataclass
class LoadedDoc:
    key: str  # the document's identity in the project: a path, or path#id for JSONL rows
    title: str
    format: str
    sections: list[Section]
    metadata: dict = field(default_factory=dict)
    bytes: int = 0  # UTF-8 size of the text, kept once the sections are dropped after chunking
    line: int = 0  # a JSONL record's line number, for messages (0: the whole file)

    @property
    def text(self) -> str:
        return "\n\n".join(s.text for s in self.sections)


def decode_bytes(data: bytes, path: Path, allow_nul: bool = False) -> str:
    """UTF-8 (with or without BOM) first, then UTF-16 by BOM, then cp1252, then Latin-1.

    ``allow_nul``: line-based files (logs) keep going, so one corrupt line is reported on its own
    instead of the whole file being refused as binary.
    """
    utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))
    if not allow_nul and not utf16 and b"\x00" in data[:4096]:
        raise InputError(f"{path}: looks binary (NUL bytes), skipped.")
    if utf16:
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise InputError(f"{path}: starts with a UTF-16 byte-order mark but is not valid UTF-16; skipped.") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def decode_lines(data: bytes, path: Path, line_errors: list[str], allow_nul: bool = False) -> str:
    """Decode a line-based file (JSONL corpus, query log) line by line.

    One invalid UTF-8 byte used to send the whole file to cp1252, so every other line came out
    as mojibake. Now only a line that is not UTF-8 is read as cp1252 (Latin-1 at worst), and it
    is reported as file:line."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or (not allow_nul and b"\x00" in data[:4096]):
        return decode_bytes(data, path, allow_nul)  # UTF-16, or refused as binary
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    return "\n".join(decode_line(line, number, path, line_errors) for number, line in enumerate(lines, 1))


def decode_line(line: bytes, number: int, path: Path, line_errors: list[str]) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_errors.append(f"{path}:{number}: not valid UTF-8 (byte 0x{line[exc.start]:02x} at column "
                           f"{exc.start + 1}); the line was read as cp1252, check it.")
    try:
        return line.decode("cp1252")
    except UnicodeDecodeError:
        return line.decode("latin-1")


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc}).") from None


def read_text(path: Path, allow_nul: bool = False) -> str:
    return decode_bytes(read_bytes(path), path, allow_nul)


def record_lines(text: str) -> list[str]:
    """The lines of a JSONL file: split at \\n only (\\r\\n too), never at U+2028, form feed and the
    other breaks ``str.splitlines`` knows, which are legal inside a JSON string."""
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


# ---------------------------------------------------------------- Markdown

# The heading's text is cut in Python (_heading_text): "(.*?)\s*#*\s*$" backtracked cubically, so
# "# a" + 2,000 spaces + "b" took 27 s.
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_MD_FENCE = re.compile(r"^\s*(```|~~~)")
_MD_MARKERS = "#`~=-"  # the first non-space character of every heading, fence or underline line
_MD_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)\s*$")  # "Title\n=====" is level 1, "-----" level 2


# Known HTML tags only: <your-server> is content. The rest of the tag, "(?:\s[^>\n]*)?/?>", is
# matched by _tag_end: as a regex it rescanned the line from every opener ("<a " * 20,000: 65 s).
_MD_INLINE_TAG_OPEN = re.compile(r"</?(?:a|b|i|u|s|em|strong|br|span|div|p|sup|sub|kbd|code|img|small|mark|details"
                                 r"|summary)(?=[\s/>])", re.I)


def _heading_text(rest: str) -> str:
    r"""What "(.*?)\s*#*\s*$" captured: the text without trailing spaces, closing #s, spaces."""
    return rest.rstrip().rstrip("#").rstrip()


def _strip_links(text: str, opener: str, empty_ok: bool) -> str:
    r"""``opener``TEXT](URL) -> TEXT, exactly as re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1") did, in
    linear time: the regex scanned to the next "]" from every "[" ("[a " * 20,000: 7 s)."""
    out, pos, i = [], 0, 0
    while (i := text.find(opener, i)) != -1:
        start = i + len(opener)
        close = text.find("]", start)
        if close == -1:
            break  # no later opener can find a "]" either
        if (close == start and not empty_ok) or text[close + 1 : close + 2] != "(":
            i = close + 1  # every opener before this "]" ends at it, so fails the same way
            continue
        end = text.find(")", close + 2)
        if end == -1:
            break
        out += [text[pos:i], text[start:close]]
        pos = i = end + 1
    return "".join(out) + text[pos:]


def _strip_inline_tags(text: str) -> str:
    out, pos = [], 0
    next_gt = next_nl = -2  # cached positions of the next ">" and "\n" (-1: none left)
    for match in _MD_INLINE_TAG_OPEN.finditer(text):
        if match.start() < pos:
            continue
        end = match.end()
        if text.startswith(">", end) or text.startswith("/>", end):
            stop = text.index(">", end)
        elif text[end].isspace():  # then anything but ">" or a newline up to ">"
            if next_gt != -1 and next_gt <= end:
                next_gt = text.find(">", end + 1)
            if next_nl != -1 and next_nl <= end:
                next_nl = text.find("\n", end + 1)
            if next_gt == -1 or -1 < next_nl < next_gt:
                continue
            stop = next_gt
        else:
            continue
        out.append(text[pos : match.start()])
        pos = stop + 1
    return "".join(out) + text[pos:]


def _clean_markdown_inline(text: str) -> str:
    text = _strip_links(text, "![", empty_ok=True)  # images keep their alt text
    text = _strip_links(text, "[", empty_ok=False)  # links keep their words
    text = _strip_inline_tags(text)
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
    return text


def _markdown_heading(line: str, buffer: list[str]) -> tuple[int, str, bool] | None:
    """(level, text, is_setext) when ``line`` makes a heading. A setext underline only counts
    under a non-blank text line; after a blank line "---" is a thematic break."""
    match = _MD_HEADING.match(line)
    if match:
        return len(match.group(1)), _heading_text(match.group(2)), False
    underline = _MD_SETEXT_UNDERLINE.match(line)
    if underline and buffer and buffer[-1].strip() and not _MD_SETEXT_UNDERLINE.match(buffer[-1]):
        return (1 if underline.group(1)[0] == "=" else 2), buffer[-1], True
    return None


def parse_markdown(text: str) -> list[Section]:
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []  # (heading level, heading text) from the top down
    buffer: list[str] = []
    in_fence = False

    def flush() -> None:
        body = _clean_markdown_inline("\n".join(buffer)).strip()
        if body:
            sections.append(Section(tuple(title for _, title in stack), body))
        buffer.clear()

    for line in text.splitlines():
        first = line.lstrip()[:1]
        if not first or first not in _MD_MARKERS:  # most lines: no regex can match, skip all three
            buffer.append(line)
            continue
        if _MD_FENCE.match(line):
            in_fence = not in_fence
            continue
        heading = None if in_fence else _markdown_heading(line, buffer)
        if heading:
            if heading[2]:
                buffer.pop()  # the underlined line is the heading's text, not body
            flush()
            level, title = heading[0], heading[1]
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, _clean_markdown_inline(title).strip()))
        else:
            buffer.append(line)
    flush()
    return sections


# ---------------------------------------------------------------- reStructuredText

_RST_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+:._])\1{2,}\s*$")
_RST_DIRECTIVE = re.compile(r"^(\s*)\.\.\s+([\w:-]+)::\s*(.*)$")
_RST_COMMENT_OR_TARGET = re.compile(r"^\s*\.\.(\s+_[^:]+:.*|\s*$|\s+[^\w].*|\s+\w[^:]*$)")
# "<[^>`]*>", not "<[^>]*>": a target never holds a backtick, and "[^>]" ran to the end of the text
# from every opener ("`a <b " * 20,000: 5.5 s).
_RST_ROLE = re.compile(r":[\w:-]+:`([^`<]*?)(?:\s*<[^>`]*>)?`")
# Directives whose body is prose worth keeping; others (image, toctree, raw, ...) are dropped.
_RST_PROSE_DIRECTIVES = {"note", "warning", "tip", "important", "caution", "hint", "attention",
                         "danger", "error", "admonition", "seealso", "topic", "code-block",
                         "code", "sourcecode", "versionadded", "versionchanged", "deprecated"}


def _clean_rst_inline(text: str) -> str:
    text = _RST_ROLE.sub(r"\1", text)
    text = re.sub(r"`([^`<]+?)\s*<[^>`]+>`_+", r"\1", text)  # `text <url>`_
    text = re.sub(r"``(.+?)``", r"\1", text)
    text = re.sub(r"`([^`]+)`_*", r"\1", text)
    text = re.sub(r"(\*\*|\*)(.+?)\1", r"\2", text)
    text = re.sub(r"\|([\w -]+)\|", r"\1", text)  # substitution references
    return text


def _strip_rst_directives(lines: list[str]) -> list[str]:
    """Replace directive markup by its prose body (or nothing), keeping ordinary lines."""
    out: list[str] = []
    skip_indent: int | None = None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if skip_indent is not None:
            if line.strip() and indent <= skip_indent:
                skip_indent = None
            else:
                continue
        directive = _RST_DIRECTIVE.match(line)
        if directive:
            name = directive.group(2).lower()
            if name in _RST_PROSE_DIRECTIVES:
                argument = directive.group(3).strip()
                if argument and name not in {"code-block", "code", "sourcecode"}:
                    out.append(argument)
            else:
                skip_indent = indent
            continue
        if _RST_COMMENT_OR_TARGET.match(line):
            skip_indent = indent
            continue
        if re.match(r"^\s+:[\w-]+:", line):  # directive options such as :linenos:
            continue
        out.append(line.rstrip())
    return out


def parse_rst(text: str) -> list[Section]:
    lines = _strip_rst_directives(text.splitlines())
    sections: list[Section] = []
    levels: list[str] = []  # adornment characters in order of first appearance
    path: list[str] = []
    buffer: list[str] = []

    def flush() -> None:
        body = _clean_rst_inline("\n".join(b for b in buffer if not _RST_ADORNMENT.match(b))).strip()
        body = re.sub(r"::\s*$", ":", body, flags=re.M)
        if body:
            sections.append(Section(tuple(path), body))
        buffer.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        is_title = line.strip() and _RST_ADORNMENT.match(nxt) and len(nxt.strip()) >= len(line.strip()) - 1
        if is_title and not _RST_ADORNMENT.match(line):
            flush()
            char = nxt.strip()[0]
            if char not in levels:
                levels.append(char)
            level = levels.index(char)
            del path[level:]
            path.append(_clean_rst_inline(line.strip()))
            i += 2
            continue
        buffer.append(line)
        i += 1
    flush()
    return sections


# ---------------------------------------------------------------- HTML

_BLOCK_TAGS = {"p", "div", "li", "ul", "ol", "table", "tr", "br", "section", "article",
               "pre", "blockquote", "dd", "dt", "header", "footer", "main", "td", "th"}
_SKIP_TAGS = {"script", "style", "noscript", "template", "svg", "head", "nav"}
_HEADING_TAGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}


class _HtmlSections(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.sections: list[Section] = []
        self._path: list[str] = []
        self._buffer: list[str] = []
        self._heading: list[str] | None = None
        self._heading_level = 0
        self._skip_depth = 0
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        if tag == "title":
            self._in_title = True
        elif tag in _SKIP_TAGS:
            self._skip_depth += 1
        elif tag in _HEADING_TAGS and not self._skip_depth:
            self._flush()
            self._heading, self._heading_level = [], _HEADING_TAGS[tag]
        elif tag in _BLOCK_TAGS:
            self._buffer.append("\n" if tag not in {"td", "th"} else " | ")

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False
        elif tag in _SKIP_TAGS:
            self._skip_depth = max(0, self._skip_depth - 1)
        elif tag in _HEADING_TAGS and self._heading is not None:
            level = self._heading_level
            del self._path[level - 1 :]
            self._path.append(" ".join("".join(self._heading).split()))
            self._heading = None
        elif tag in _BLOCK_TAGS and tag not in {"td", "th"}:
            self._buffer.append("\n")

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        elif self._skip_depth:
            return
        elif self._heading is not None:
            self._heading.append(data)
        else:
            self._buffer.append(data)

    def _flush(self) -> None:
        lines = [" ".join(line.split()) for line in "".join(self._buffer).split("\n")]
        body = "\n".join(line for line in lines if line.strip(" |"))
        if body.strip():
            self.sections.append(Section(tuple(p for p in self._path if p), body.strip()))
        self._buffer.clear()

    def close(self):
        super().close()
        self._flush()


def _escape_unclosed_tail(text: str) -> str:
    """Write each "<" after the last ">" as "&lt;". HTMLParser rescans to the end from every such
    "<" (20,000 unclosed "<a ": 65 s) and then gives them back as text: the text is the same."""
    last = text.rfind(">")
    return text[: last + 1] + text[last + 1 :].replace("<", "&lt;")


def parse_html(text: str) -> tuple[str, list[Section]]:
    parser = _HtmlSections()
    parser.feed(_escape_unclosed_tail(text))
    parser.close()
    return html.unescape(parser.title.strip()), parser.sections


# ---------------------------------------------------------------- plain text and PDF

def parse_plain(text: str) -> list[Section]:
    """Plain text; a short first line followed by a blank line is taken as the title."""
    body = text.replace("\r\n", "\n").strip()
    first, _, rest = body.partition("\n")
    if rest.startswith("\n") and len(first) <= 100 and rest.strip():
        return [Section((first.strip(),), rest.strip())]
    return [Section((), body)] if body else []


def load_pdf(path: Path) -> list[Section]:
    import pypdf  # imported here: only PDF ingest pays for it

    try:
        reader = pypdf.PdfReader(str(path))
        pages = [page.extract_text() or "" for page in reader.pages]
    except Exception as exc:  # pypdf raises many types for broken files
        raise InputError(f"{path}: not a readable PDF ({type(exc).__name__}: {exc}).") from None
    sections = [Section((f"Page {i}",), t.strip()) for i, t in enumerate(pages, 1) if t.strip()]
    if not sections:
        raise InputError(f"{path}: the PDF has no text layer (scanned?); skipped.")
    return sections


# ---------------------------------------------------------------- JSONL corpora (BEIR)

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_json_object(line: str) -> dict:
    """One JSONL record; every way a line can be bad is a ValueError (nesting too deep included)."""
    try:
        record = json.loads(line)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    # JSON may escape half of a surrogate pair (\ud800) on its own; Python decodes it to a string
    # that UTF-8, and so SQLite and every hash, cannot store. Checked only when such an escape exists.
    if _SURROGATE_ESCAPE.search(line):
        try:
            json.dumps(record, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a \\u escape encodes half of a surrogate pair, which is not text") from None
    return record


_ID_FORMULA_STARTS = "=+-@"


def check_corpus_id(doc_id: str) -> None:
    """Refuse an id that would corrupt the TSV and TREC files it is written to raw.

    A tab or newline splits or adds a qrels line (an injected judgement); a space splits a TREC
    field; a leading = + - @ is a formula to a spreadsheet that opens the TSV."""
    bad = next((c for c in doc_id if c.isspace() or unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")), None)
    if bad is not None:
        raise ValueError(f"id {doc_id!r} holds {unicodedata.name(bad, repr(bad))}; ids cannot hold spaces or "
                         "control characters")
    if doc_id[0] in _ID_FORMULA_STARTS:
        raise ValueError(f"id {doc_id!r} starts with {doc_id[0]!r}, which spreadsheets read as a formula")


def load_jsonl_corpus(path: Path, errors: list[str]) -> list[LoadedDoc]:
    """One document per line with ``_id``/``id``, ``title`` and ``text``; bad lines go to errors."""
    docs, first_line = [], {}
    for number, line in enumerate(record_lines(decode_lines(read_bytes(path), path, errors)), 1):
        if not line.strip():
            continue
        try:
            record = parse_json_object(line)
            text = str(record.get("text") or "").strip()
            doc_id = str(record.get("_id", record.get("id", ""))).strip()
            if not text or not doc_id:
                raise ValueError("needs non-empty 'text' and '_id' (or 'id')")
            check_corpus_id(doc_id)
            if not isinstance(record.get("metadata") or {}, dict):
                raise ValueError("'metadata' must be a JSON object")
            if doc_id in first_line:  # qrels name passages by id: two passages cannot share one
                raise ValueError(f"id {doc_id!r} was already used on line {first_line[doc_id]}")
        except ValueError as exc:
            errors.append(f"{path}:{number}: {exc}; line skipped.")
            continue
        first_line[doc_id] = number
        title = str(record.get("title") or "").strip()
        metadata = {"corpus_id": doc_id, **(record.get("metadata") or {})}
        sections = [Section((title,) if title else (), text)]
        docs.append(LoadedDoc(f"{path}#{doc_id}", title or doc_id, "jsonl", sections, metadata, line=number))
    return docs


def load_file(path: Path, errors: list[str]) -> list[LoadedDoc]:
    """Load one supported file into documents; raise InputError if the whole file is bad."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return load_jsonl_corpus(path, errors)
    if suffix == ".pdf":
        sections = load_pdf(path)
        return [LoadedDoc(str(path), path.stem, "pdf", sections)]
    text = read_text(path)
    title = ""
    if suffix in {".md", ".markdown"}:
        sections, fmt = parse_markdown(text), "md"
    elif suffix == ".rst":
        sections, fmt = parse_rst(text), "rst"
    elif suffix in {".html", ".htm"}:
        (title, sections), fmt = parse_html(text), "html"
    else:
        sections, fmt = parse_plain(text), "txt"
    if not sections:
        raise InputError(f"{path}: no text found; skipped.")
    title = title or (sections[0].heading_path[0] if sections[0].heading_path else path.stem)
    return [LoadedDoc(str(path), title, fmt, sections)]
