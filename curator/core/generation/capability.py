"""Which generation mode a model gets: extractive for a tiny model, need-first for a capable one (issue 39).

A model's size is its parameter count, read from the GGUF file's own header without loading it, as
``curator models`` reads it (modelfiles.header.parameter_count: the header's declared count or size label, else
the tensors' elements), else a guess from the file size. An endpoint is a served model whose size is
unknown; servers run instruct models of a few billion parameters and more, so it gets need-first. The user can force either mode (``--mode``).

Why a parameter count and not a probe: the measured difference is between the bundled 135M model, which writes
a usable question from one answer sentence a third of the time and cannot write one from a whole passage, and a
1.5B instruct model, which can (bench/needfirst_probe.py, docs/benchmarks.md "Need-first questions"). A 1B line
sits between them; a probe would cost minutes of a capable model's time on every new file.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional, Union

from curator.core.errors import ModelFileError
from curator.core.modelfiles import header

MODES = ("auto", "extractive", "need-first")
# At or above this many parameters a local model writes need-first questions when the mode is auto.
NEED_FIRST_MIN_PARAMS = 1_000_000_000
BYTES_PER_PARAM_GUESS = 0.6  # a Q4_K_M file holds about 0.6 bytes per parameter (1.5B: 1.12 GB for 1.78e9)


@dataclass
class ModelSize:
    params: Optional[int]  # None: unknown (an endpoint)
    how: str  # where the figure came from, for the run record


def model_size(path: Union[str, Path]) -> ModelSize:
    """The parameter count of a GGUF file: from its header, else guessed from its file size;
    remembered while the file's size and time stay the same (a run asks once, a test suite many times)."""
    st = Path(path).stat()
    return _model_size(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=32)
def _model_size(path: str, size: int, _mtime: int) -> ModelSize:
    # the header reader `curator models` uses (modelfiles.header): one reading of a GGUF header, hostile ones refused
    try:
        params, source = header.parameter_count(header.read_header(path))
    except ModelFileError:
        params, source = None, None
    if params:
        return ModelSize(params, f"the GGUF header's {source}")
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
