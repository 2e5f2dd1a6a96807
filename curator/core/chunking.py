"""Split documents into chunks: the unit a retriever returns and a gold label points to.

Token counts use an approximate tokenizer: a word (``\\w+``) or a single punctuation mark is
one token. It tracks subword tokenizers within about 20% on English prose and is fast.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from curator.core.loaders import LoadedDoc

DEFAULT_CHUNK_SIZE = 256
DEFAULT_OVERLAP = 32
MIN_CHUNK_TOKENS = 24  # shorter pieces are merged into a neighbour, never stored alone

_TOKEN = re.compile(r"\w+|[^\w\s]")
_UNIT_BOUNDARY = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")
HEADING_SEPARATOR = " > "


def count_tokens(text: str) -> int:
    # subn counts matches without building a list of strings: ~1.5x faster than len(findall())
    return _TOKEN.subn("", text)[1]


@dataclass
class Chunk:
    id: str
    ord: int
    title: str
    text: str
    tokens: int


def chunk_id(doc_key: str, text: str, occurrence: int) -> str:
    """Stable id from the document key and the chunk's own text (plus a repeat counter)."""
    digest = hashlib.sha1(f"{doc_key}\x00{occurrence}\x00{text}".encode("utf-8")).hexdigest()
    return "c_" + digest[:16]


def _units(text: str) -> list[tuple[int, int, int]]:
    """Sentence or line spans as (start, end, tokens)."""
    spans, start = [], 0
    for boundary in _UNIT_BOUNDARY.finditer(text):
        if boundary.start() > start:
            spans.append((start, boundary.start()))
        start = boundary.end()
    if start < len(text):
        spans.append((start, len(text)))
    return [(s, e, count_tokens(text[s:e])) for s, e in spans]


def _split_long_unit(text: str, size: int) -> list[tuple[int, int, int]]:
    """A sentence longer than a chunk is cut at token boundaries."""
    tokens = list(_TOKEN.finditer(text))
    pieces = []
    for i in range(0, len(tokens), size):
        window = tokens[i : i + size]
        pieces.append((window[0].start(), window[-1].end(), len(window)))
    return pieces


def _pack(text: str, size: int, overlap: int) -> list[tuple[str, int]]:
    """Greedily pack sentence units into windows of at most ``size`` tokens with overlap."""
    units: list[tuple[int, int, int]] = []
    for start, end, n in _units(text):
        if n > size:
            units.extend((start + s, start + e, m) for s, e, m in _split_long_unit(text[start:end], size))
        else:
            units.append((start, end, n))
    windows, i = [], 0
    while i < len(units):
        j, total = i, 0
        while j < len(units) and (total + units[j][2] <= size or j == i):
            total += units[j][2]
            j += 1
        windows.append((text[units[i][0] : units[j - 1][1]], total))
        if j >= len(units):
            break
        # Step back over whole trailing units worth at most `overlap` tokens.
        back, carried = j, 0
        while back - 1 > i and carried + units[back - 1][2] <= overlap:
            back -= 1
            carried += units[back][2]
        i = back
    return windows


def _merge_short(pieces: list[list]) -> list[list]:
    """Fold pieces under MIN_CHUNK_TOKENS into the previous piece (or the next one)."""
    merged: list[list] = []
    pending: list | None = None
    for piece in pieces:
        if pending is not None:
            piece = [piece[0], pending[1] + "\n" + piece[1], pending[2] + piece[2]]
            pending = None
        if piece[2] < MIN_CHUNK_TOKENS:
            if merged:
                last = merged[-1]
                merged[-1] = [last[0], last[1] + "\n" + piece[1], last[2] + piece[2]]
            else:
                pending = piece
            continue
        merged.append(piece)
    if pending is not None:
        merged.append(pending)  # the whole document is short: keep it as one chunk
    return merged


def chunk_document(doc: LoadedDoc, size: int = DEFAULT_CHUNK_SIZE, overlap: int = DEFAULT_OVERLAP) -> list[Chunk]:
    """Chunks of a document: split at headings first, then by sentences within a section."""
    if size < 16:
        raise ValueError("chunk size must be at least 16 tokens")
    if not 0 <= overlap < size:
        raise ValueError("overlap must be at least 0 and smaller than the chunk size")
    pieces = []
    for section in doc.sections:
        title = HEADING_SEPARATOR.join(section.heading_path) or doc.title
        pieces.extend([title, text, n] for text, n in _pack(section.text, size, overlap))
    chunks, seen = [], {}
    for ord_, (title, text, n) in enumerate(_merge_short(pieces)):
        occurrence = seen.get(text, 0)
        seen[text] = occurrence + 1
        chunks.append(Chunk(chunk_id(doc.key, text, occurrence), ord_, title, text, n))
    return chunks
