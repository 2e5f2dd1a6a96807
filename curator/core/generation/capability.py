"""Which generation mode a model gets: extractive for a tiny model, need-first for a capable one (issue 39).

A model's size is its parameter count, read from the GGUF file's own header without loading it: the count of
every tensor's elements (exact), else the header's ``general.size_label`` ("1.5B", "135M"), else a guess from
the file size. An endpoint is a served model whose size is unknown; servers run instruct models of a few
billion parameters and more, so it gets need-first. The user can force either mode (``--mode``).

Why a parameter count and not a probe: the measured difference is between the bundled 135M model, which writes
a usable question from one answer sentence a third of the time and cannot write one from a whole passage, and a
1.5B instruct model, which can (bench/needfirst_probe.py, docs/benchmarks.md "Need-first questions"). A 1B line
sits between them; a probe would cost minutes of a capable model's time on every new file.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO, Optional, Union

MODES = ("auto", "extractive", "need-first")
# At or above this many parameters a local model writes need-first questions when the mode is auto.
NEED_FIRST_MIN_PARAMS = 1_000_000_000
BYTES_PER_PARAM_GUESS = 0.6  # a Q4_K_M file holds about 0.6 bytes per parameter (1.5B: 1.12 GB for 1.78e9)

# GGUF value types (gguf spec): fixed sizes; 8 = string, 9 = array
_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_SIZE_LABEL = re.compile(r"^\s*(?:(\d+)x)?(\d+(?:\.\d+)?)\s*([KMBT])\s*$", re.I)
_SCALE = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


@dataclass
class ModelSize:
    params: Optional[int]  # None: unknown (an endpoint)
    how: str  # where the figure came from, for the run record


def parse_size_label(label: str) -> Optional[int]:
    """'1.5B' -> 1500000000, '135M', '8x7B' (experts times size); None for anything else."""
    found = _SIZE_LABEL.match(label or "")
    if not found:
        return None
    experts, number, unit = found.groups()
    return int(float(number) * _SCALE[unit.upper()] * int(experts or 1))


def _read(fh: BinaryIO, fmt: str):
    data = fh.read(struct.calcsize(fmt))
    if len(data) < struct.calcsize(fmt):
        raise ValueError("truncated GGUF header")
    return struct.unpack(fmt, data)[0]


def _string(fh: BinaryIO) -> bytes:
    return fh.read(_read(fh, "<Q"))


def _skip_value(fh: BinaryIO, kind: int) -> None:
    if kind in _FIXED:
        fh.seek(_FIXED[kind], 1)
    elif kind == 8:
        fh.seek(_read(fh, "<Q"), 1)
    elif kind == 9:
        inner, count = _read(fh, "<I"), _read(fh, "<Q")
        if inner in _FIXED:
            fh.seek(_FIXED[inner] * count, 1)
        else:
            for _ in range(count):
                _skip_value(fh, inner)
    else:
        raise ValueError(f"unknown GGUF value type {kind}")


def header_size(path: Union[str, Path]) -> tuple[Optional[int], Optional[str]]:
    """(element count of every tensor, general.size_label) from a GGUF v2/v3 header, read as a stream:
    the file is never loaded (the gguf package's reader maps every tensor: 40 s for a 1.5B file under load)."""
    with open(path, "rb") as fh:
        if fh.read(4) != b"GGUF" or _read(fh, "<I") < 2:
            return None, None
        tensors, keys = _read(fh, "<Q"), _read(fh, "<Q")
        if tensors * 24 + keys * 13 > Path(path).stat().st_size:  # a damaged header (cachefiles.check_gguf_header)
            return None, None
        label = None
        for _ in range(keys):
            key, kind = _string(fh), _read(fh, "<I")
            if key == b"general.size_label" and kind == 8:
                label = _string(fh).decode("utf-8", "replace")
            else:
                _skip_value(fh, kind)
        total = 0
        for _ in range(tensors):
            _string(fh)
            dims = [_read(fh, "<Q") for _ in range(_read(fh, "<I"))]
            fh.seek(4 + 8, 1)  # type, offset
            count = 1
            for d in dims:
                count *= d
            total += count
        return total or None, label


def model_size(path: Union[str, Path]) -> ModelSize:
    """The parameter count of a GGUF file: counted from its tensors, else its size label, else its file size;
    remembered while the file's size and time stay the same (a run asks once, a test suite many times)."""
    st = Path(path).stat()
    return _model_size(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=32)
def _model_size(path: str, size: int, _mtime: int) -> ModelSize:
    try:
        counted, label = header_size(path)
    except (OSError, ValueError, struct.error):
        counted, label = None, None
    if counted:
        return ModelSize(counted, "counted from the GGUF header's tensors")
    if parse_size_label(label or ""):
        return ModelSize(parse_size_label(label), f"the GGUF header's general.size_label ({label})")
    return ModelSize(int(size / BYTES_PER_PARAM_GUESS), f"guessed from the file size ({size} bytes)")


@dataclass(frozen=True)
class ModeChoice:
    mode: str  # "extractive" or "need-first"
    why: str  # said on the progress line and kept in the run record


def choose_mode(requested: str, model_path: Optional[Union[str, Path]], endpoint: Optional[str]) -> ModeChoice:
    """The mode a run uses: the one the user forced, else need-first for an endpoint or a local model of
    NEED_FIRST_MIN_PARAMS or more, else extractive."""
    if requested not in MODES:
        raise ValueError(f"unknown mode {requested!r}")
    if requested != "auto":
        return ModeChoice(requested, f"{requested}: chosen by the user (--mode {requested})")
    if endpoint:
        return ModeChoice("need-first", "need-first: an endpoint serves a capable instruct model (its size is unknown)")
    size = model_size(model_path)
    mode = "need-first" if size.params >= NEED_FIRST_MIN_PARAMS else "extractive"
    relation = ">=" if mode == "need-first" else "<"
    return ModeChoice(mode, f"{mode}: {Path(model_path).name} has {size.params / 1e9:.2f}B parameters ({size.how}), "
                            f"{relation} {NEED_FIRST_MIN_PARAMS / 1e9:g}B")


@dataclass(frozen=True)
class Bounds:
    """Lengths the grammars and filters allow, by the model's class. The small model's were tuned on the bundled
    135M (generation.prompts: a longer bound let it run on); a capable model writes longer questions and
    answers, and 22 of 42 free-mode rejections with a 1.5B model were answers cut at the small bound (issue 39)."""

    question_chars: int  # a question's longest (the grammar)
    answer_chars: int  # a free answer's longest (the grammar, and filters.check_answer_complete's bound)
    quote_tokens: int  # the token budget of a need-first reply's quote line (a cut quote still locates)


SMALL_BOUNDS = Bounds(question_chars=150, answer_chars=160, quote_tokens=120)
CAPABLE_BOUNDS = Bounds(question_chars=220, answer_chars=600, quote_tokens=160)


CAPABLE_N_CTX = 4096


def bounds(capable: bool) -> Bounds:
    return CAPABLE_BOUNDS if capable else SMALL_BOUNDS


def resolve(config) -> ModeChoice:
    """Fix the run's mode on ``config`` (a GenerationConfig) before its tasks are planned: ``config.answers``
    becomes "extractive" or "need-first" (``--answers free`` stays free, with the bounds of the model's class)
    and ``config.capable`` says which bounds apply. A resumed run keeps what it recorded (plan.adopt_run_settings)."""
    if config.resume and config.capable is not None:
        return ModeChoice(config.answers, f"{config.answers}: as the resumed run was started")
    from curator.core.generation.repack import bundled_model_files

    model = config.model_path or (None if config.endpoint else bundled_model_files(repack=False).path)
    if model and not Path(model).is_file():  # the engine says so in one line, after the cheaper checks
        config.capable = False
        return ModeChoice(config.answers, f"{config.answers}: {model} cannot be read to size it")
    sized = choose_mode("auto", model, config.endpoint)
    choice = choose_mode(config.mode, model, config.endpoint) if config.mode != "auto" else sized
    config.capable = sized.mode == "need-first"
    if config.capable and config.n_ctx < CAPABLE_N_CTX:  # a whole passage (two for multi-hop) and a longer reply
        config.n_ctx = CAPABLE_N_CTX
    if config.answers == "free":
        return ModeChoice("free", f"free answers (--answers free), with the bounds of a "
                                  f"{'capable' if config.capable else 'small'} model ({sized.why.split(': ', 1)[1]})")
    config.answers = choice.mode
    return choice
