"""Split documents into chunks: the unit a retriever returns and a gold label points to.

Token counts use an approximate tokenizer: a word (``\\w+``) or a single punctuation mark is
one token. It tracks subword tokenizers within about 20% on English prose and is fast.
"""

from __future__ import annotations

import hashlib
import re
from array import array
from dataclasses import dataclass

import numpy as np

from curator.core.corpus.loaders import LoadedDoc

DEFAULT_CHUNK_SIZE = 256
DEFAULT_OVERLAP = 32
MIN_CHUNK_TOKENS = 24  # shorter pieces are merged into a neighbour, never stored alone

_TOKEN = re.compile(r"\w+|[^\w\s]")
# A unit (sentence or line) ends at a whitespace run that follows . ! ? or holds a newline. The
# pattern starts at one of those four characters so that SRE skips to them with its fast
# first-character scan: the obvious r"(?<=[.!?])\s+|\s*\n\s*" tries a match at every position
# and was 4x slower. _unit_spans gives back the whitespace before a newline to the boundary.
_UNIT_BOUNDARY = re.compile(r"[.!?\n](?:(?<=\n)\s*|\s+)")
HEADING_SEPARATOR = " > "

_WHITESPACE, _WORD, _OTHER = 0, 1, 2
_WORD_CHAR = re.compile(r"\w")
_SPACE_CHAR = re.compile(r"\s")


def count_tokens(text: str) -> int:
    # subn counts matches without building a list of strings: ~1.5x faster than len(findall())
    return _TOKEN.subn("", text)[1]


def _char_class(char: str) -> int:
    """The class of one character under exactly the regular expressions count_tokens uses."""
    if _WORD_CHAR.match(char):
        return _WORD
    return _WHITESPACE if _SPACE_CHAR.match(char) else _OTHER


_ASCII_CLASSES = np.array([_char_class(chr(code)) for code in range(128)], dtype=np.uint8)


# Code points of the Basic Multilingual Plane by class, built on the first non-ASCII text.
_bmp_classes: np.ndarray | None = None


def _classes(text: str) -> np.ndarray:
    """The class of every character of a text, as a uint8 array."""
    global _bmp_classes
    if text.isascii():
        return _ASCII_CLASSES[np.frombuffer(text.encode("ascii"), dtype=np.uint8)]
    if _bmp_classes is None:  # 65,536 regex matches, about 40 ms, once per process
        _bmp_classes = np.array([_char_class(chr(code)) for code in range(0x10000)], dtype=np.uint8)
    # surrogatepass: a lone surrogate (from a lenient decode) is one code point like any other
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    classes = _bmp_classes[np.minimum(codes, 0xFFFF)]
    astral = np.flatnonzero(codes > 0xFFFF)
    for index in astral.tolist():  # emoji, rare scripts: few, and classified one by one
        classes[index] = _char_class(chr(codes[index]))
    return classes


class _TokenCounter:
    """Token counts of spans of one text; each span begins and ends next to whitespace (or at the
    ends of the text), so no token is cut in half and a count equals count_tokens(span).

    A token starts at every non-word, non-space character and at every word character that follows
    a non-word one; the sorted positions of those starts count any span with two binary searches.
    (Counting span by span with the regex instead is slower even on 450-character BEIR passages:
    the regex engine, not numpy's call overhead, is the cost.)

    Memory: the starts are found block by block and only their positions are kept (4 bytes per
    token). A running sum over every character (4 bytes per character) and the whole-text boolean
    temporaries behind it made a 50 MB one-line file need 1.3 GB to chunk.
    """

    BLOCK = 1 << 20  # characters classified at a time

    def __init__(self, text: str):
        self.text = text
        dtype = np.int32 if len(text) < 2**31 else np.int64
        parts, previous_word = [], False
        for offset in range(0, len(text), self.BLOCK):
            classes = _classes(text[offset : offset + self.BLOCK])
            word = classes == _WORD
            starts = classes == _OTHER
            starts[1:] |= word[1:] & ~word[:-1]
            starts[:1] |= word[:1] & (not previous_word)  # slices: an empty block has no first character
            previous_word = bool(word[-1])
            parts.append(np.flatnonzero(starts).astype(dtype) + offset)
        self.positions = np.concatenate(parts) if parts else np.zeros(0, dtype)

    def spans(self, starts: list[int], ends: list[int]) -> list[int]:
        return (np.searchsorted(self.positions, ends) - np.searchsorted(self.positions, starts)).tolist()

    def pieces(self, start: int, end: int, size: int) -> list[tuple[int, int, int]]:
        """``_split_long_unit(text[start:end], size)`` (offsets relative to ``start``) from the token
        positions: the regex's list of every token's match object took ~100 bytes per token."""
        first, last = np.searchsorted(self.positions, [start, end]).tolist()
        out = []
        for i in range(first, last, size):
            j = min(i + size, last)
            stop = int(self.positions[j]) if j < last else end
            while self.text[stop - 1].isspace():  # only whitespace lies between tokens
                stop -= 1
            out.append((int(self.positions[i]) - start, stop - start, j - i))
        return out


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


def _unit_spans(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Starts and ends of the sentences or lines of a text, without surrounding whitespace.

    Collected in ``array('q')`` (8 bytes an offset, a Python int in a list takes 36): a 50 MB file
    of short sentences has ~700,000 units."""
    starts, ends, start = array("q"), array("q"), 0
    for boundary in _UNIT_BOUNDARY.finditer(text):
        end = boundary.start()
        if text[end] == "\n":
            while end > start and text[end - 1].isspace():  # str.isspace is exactly regex \s
                end -= 1
        else:
            end += 1  # the sentence keeps its full stop
        if end > start:
            starts.append(start)
            ends.append(end)
        start = boundary.end()
    if start < len(text):
        starts.append(start)
        ends.append(len(text))
    return np.frombuffer(starts, dtype=np.int64), np.frombuffer(ends, dtype=np.int64)


def _split_long_unit(text: str, size: int) -> list[tuple[int, int, int]]:
    """A sentence longer than a chunk is cut at token boundaries (the definition: the chunker uses
    _TokenCounter.pieces, which gives the same pieces without a match object per token)."""
    tokens = list(_TOKEN.finditer(text))
    pieces = []
    for i in range(0, len(tokens), size):
        window = tokens[i : i + size]
        pieces.append((window[0].start(), window[-1].end(), len(window)))
    return pieces


def _units(text: str, counter: _TokenCounter, offset: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Starts, ends and token counts of every unit of a section that starts at ``offset`` in the
    counter's text, as arrays; a unit longer than ``size`` tokens is cut into pieces."""
    starts, ends = _unit_spans(text)
    counts = np.asarray(counter.positions.searchsorted(ends + offset) - counter.positions.searchsorted(starts + offset),
                        dtype=np.int64)
    long = np.flatnonzero(counts > size).tolist()
    if not long:
        return starts, ends, counts
    parts, previous = [], 0
    for k in long:
        parts.append((starts[previous:k], ends[previous:k], counts[previous:k]))
        pieces = np.array(counter.pieces(int(starts[k]) + offset, int(ends[k]) + offset, size), dtype=np.int64)
        parts.append((pieces[:, 0] + starts[k], pieces[:, 1] + starts[k], pieces[:, 2]))
        previous = k + 1
    parts.append((starts[previous:], ends[previous:], counts[previous:]))
    return tuple(np.concatenate([part[column] for part in parts]) for column in range(3))


def _pack(units: tuple[np.ndarray, np.ndarray, np.ndarray], text: str, size: int,
          overlap: int) -> list[tuple[str, int]]:
    """Greedily pack sentence units into windows of at most ``size`` tokens with overlap.

    With running token sums, both greedy steps are binary searches: the most whole units from
    ``i`` that fit in ``size`` (at least one), then the fewest trailing units of that window, worth
    at most ``overlap`` tokens, that the next window starts with. (Searching the whole running sum
    and clamping to [lo, hi] is what bisect's lo and hi do on a non-decreasing list.)
    """
    starts, ends, counts = units
    running = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=running[1:])
    windows, i, n = [], 0, len(counts)
    while i < n:
        j = max(min(int(running.searchsorted(running[i] + size, "right")), n + 1) - 1, i + 1)
        windows.append((text[int(starts[i]) : int(ends[j - 1])], int(running[j] - running[i])))
        if j >= n:
            break
        i = min(max(int(running.searchsorted(running[j] - overlap, "left")), i + 1), j)
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
    # One counter for the whole document: its set-up cost is paid once, not once per section.
    # The sections are joined by a newline, whitespace, so no token spans two of them.
    counter = _TokenCounter("\n".join(section.text for section in doc.sections))
    pieces, offset = [], 0
    for section in doc.sections:
        title = HEADING_SEPARATOR.join(section.heading_path) or doc.title
        units = _units(section.text, counter, offset, size)
        pieces.extend([title, text, n] for text, n in _pack(units, section.text, size, overlap))
        offset += len(section.text) + 1
    return chunks_of_pieces(doc.key, pieces)


def chunks_of_pieces(doc_key: str, pieces: list[list]) -> list[Chunk]:
    """Chunks with ids from [title, text, tokens] pieces, short ones merged first."""
    chunks, seen = [], {}
    for ord_, (title, text, n) in enumerate(_merge_short(pieces)):
        occurrence = seen.get(text, 0)
        seen[text] = occurrence + 1
        chunks.append(Chunk(chunk_id(doc_key, text, occurrence), ord_, title, text, n))
    return chunks
