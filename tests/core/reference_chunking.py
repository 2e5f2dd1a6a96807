"""The chunker as it was written first (sessions 1-3): slow, obvious, and the definition of every
chunk boundary, and so of every chunk id, that projects made so far hold. The fast chunker in
curator.core.corpus.chunking must produce exactly what this one does; tests/core/test_chunk_ids_stable.py
checks that on random text and on real corpora.
"""

from __future__ import annotations

import re

# What the fast chunker did not change is shared rather than copied.
from curator.core.corpus.chunking import (DEFAULT_CHUNK_SIZE, DEFAULT_OVERLAP, HEADING_SEPARATOR, Chunk,
                                   _split_long_unit, chunks_of_pieces)
from curator.core.corpus.loaders import LoadedDoc

_TOKEN = re.compile(r"\w+|[^\w\s]")
_UNIT_BOUNDARY = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")


def count_tokens(text: str) -> int:
    return _TOKEN.subn("", text)[1]


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


def chunk_document(doc: LoadedDoc, size: int = DEFAULT_CHUNK_SIZE, overlap: int = DEFAULT_OVERLAP) -> list[Chunk]:
    pieces = []
    for section in doc.sections:
        title = HEADING_SEPARATOR.join(section.heading_path) or doc.title
        pieces.extend([title, text, n] for text, n in _pack(section.text, size, overlap))
    return chunks_of_pieces(doc.key, pieces)
