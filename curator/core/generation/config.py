"""What a generation run is given and what its steps pass along: the run's settings
(GenerationConfig), what a front end hears while it runs (GenerationEvents) and one question to
ask (Task). The steps: generation.plan chooses chunks, generation.asking writes the request,
generation.checks judges the reply, generation.generate runs the loop and stores the rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from curator.core.generation import copybias
from curator.core.generation import prompts

QUERY_TYPES = ("factoid", "keyword", "vague", "multi_hop", "unanswerable")
DEFAULT_MIX = {"factoid": 0.4, "keyword": 0.2, "vague": 0.15, "multi_hop": 0.1, "unanswerable": 0.15}
# A rejected candidate is asked again, this many times: on the same prompt with another seed, whose
# cells are still cached then (llama-cpp-python keeps the last prompt, the batch decoder every
# finished sequence's), so a retry costs only its reply, while a fresh chunk costs a prompt
# evaluation that takes about 70% of a row's time on the bundled model. An answer-first retry asks
# about the chunk's next answer sentence instead: its prompt shares the cached worked examples.
RETRIES_PER_CHUNK = 2


@dataclass
class GenerationConfig:
    count: int = 20
    mix: Optional[dict] = None
    seed: int = 0
    model_path: Optional[str] = None
    endpoint: Optional[str] = None
    threads: Optional[int] = None
    n_ctx: int = 2048
    resume: bool = False
    cluster: Optional[int] = None
    temperature: float = 0.7
    max_tokens: int = prompts.MAX_REPLY_TOKENS  # the grammars bound a reply: it is never cut short
    parallel: Optional[int] = None  # requests generated together (default: the backend's own)
    retries: int = RETRIES_PER_CHUNK  # new seeds for a rejected (type, chunk) before moving on
    min_quality: float = 0.0  # rows scoring below it are rejected (generation.quality); 0 keeps all
    repack: bool = True  # run the bundled model from its cached Q8_0 copy (generation.repack); False: the Q4_1 file
    chat_format: Optional[str] = None  # a llama-cpp-python chat format for a GGUF that holds no chat template
    # "extractive": factoid, keyword and vague rows take a sentence of the chunk as their reference
    # answer and the model writes the query it answers (generation.answers); "need-first": the model writes
    # what a user with the chunk's need asks, then quotes the answer (generation.needfirst); "free": the model
    # writes both. Set from ``mode`` when the run starts (generation.capability.resolve), unless "free".
    answers: str = "extractive"
    # "auto": need-first for a capable model (1B+ parameters, or an endpoint), extractive for a small one;
    # or either forced (--mode).
    mode: str = "auto"
    capable: Optional[bool] = None  # the model's class (capability.resolve): which length bounds apply
    # Coverage-aimed generation (issue 28, curator.core.clustering.coverage.target_chunks): chunk ids
    # asked about in this order, instead of the shuffled corpus; replaces ``cluster``'s choice.
    chunk_ids: Optional[list] = None
    # Answer-first questions steered at decoding time away from their answer's rare words (issue 27,
    # generation.copybias); None: off.
    copy_bias: Optional[copybias.CopyBias] = None


def ignore_event(*_args) -> None:
    """The default of every generation event: nothing listens."""


@dataclass
class GenerationEvents:
    """What a front end hears while ``generate`` runs, called in the generating thread at the
    moment each thing happens (the row is already committed); a GUI turns them into signals."""

    accepted: Callable[[dict], None] = ignore_event  # the stored query row, as get_query reads it
    rejected: Callable[[str, Optional[str], str], None] = ignore_event  # query type, candidate text, reason
    progress: Callable[[int, int, str], None] = ignore_event  # accepted so far, rows wanted, message


NO_EVENTS = GenerationEvents()


@dataclass
class Task:
    query_type: str
    chunks: list[dict]  # the source chunk first; multi_hop adds its partner
    attempt: int = 0  # retries of this (type, chunk) so far, each with another seed
    answer: Optional[str] = None  # answer-first: the chunk's sentence the query must be answered by
    # Derived types (issue 28, DERIVED_TYPES): what the corpus gave the task (a sentence with a detail
    # to swap, or a sentence pair), one of ``options``; a retry takes the next option.
    option: Optional[dict] = None
    options: Optional[list] = None
    # The copy bias's words for this task's request (set by build_request, read by judge to show on the row).
    avoid: Optional[copybias.Avoid] = None
