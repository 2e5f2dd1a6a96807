"""Writing the question: the completion request a task needs (prompt, grammar, sampling seed and
the copy bias's words to avoid), for each kind of task: a passage (free answers), an answer
sentence (answer-first), a multi-hop pair or its second part, a near miss."""

from __future__ import annotations

import zlib
from typing import Optional

from curator.core.generation import capability
from curator.core.generation import copybias
from curator.core.generation import examples as examples_mod
from curator.core.generation import multihop
from curator.core.generation import needfirst
from curator.core.generation import prompts
from curator.core.generation.backends import Request
from curator.core.generation.config import GenerationConfig, Task
from curator.core.generation.plan import need_first

MAX_PASSAGE_CHARS = 2400  # keeps prompt + answer inside n_ctx=2048 for two passages


def _truncate(text: str) -> str:
    return prompts.cut_at_word(text, MAX_PASSAGE_CHARS)


def build_request(task: Task, config: GenerationConfig, shown: Optional[examples_mod.ExampleSet] = None,
                  steering: Optional[copybias.Steering] = None) -> Request:
    """The completion a task needs; the task rides along as the request's tag. ``shown``: the
    project's examples of how people ask (answer-first prompts); ``steering``: the run's copy bias."""
    seed = config.seed + zlib.crc32(task.chunks[0]["id"].encode()) % 10_000 + 10_000 * task.attempt
    if task.query_type == "multi_hop" and task.option and task.option.get("first_question"):
        # the first part is given (a kept row's question, or one made by rule); the model asks for the
        # second sentence, answer-first, the entity in the heading it is shown (a heading path helps it
        # name the subject)
        title = task.option.get("second_title") or task.chunks[0]["title"]
        shown_chunk = {**task.chunks[0], "title": f"{title} > {task.option['entity']}"}
        second = Task("factoid", [shown_chunk], task.attempt, task.option["sentences"][1])
        request = build_request(second, config, shown)
        request.tag, request.messages = task, multihop.second_part_messages(task.option, shown_chunk["title"])
        request.grammar = multihop.part_grammar(task.option) or request.grammar
        return request
    if need_first(task.query_type, config.answers) and not task.option:
        return _need_first_request(task, config, shown, seed)
    if task.query_type == "multi_hop" and task.option:
        return Request(prompts.build_multi_hop_messages(*task.option["sentences"], task.option.get("entity")),
                       max_tokens=max(config.max_tokens, prompts.MULTI_HOP_MAX_TOKENS), temperature=config.temperature,
                       seed=seed, grammar=prompts.MULTI_HOP_GRAMMAR, tag=task)
    if task.answer:
        # A near miss is the factoid question its swapped sentence answers (generation.unanswerable).
        asked_type = "factoid" if task.query_type == "unanswerable" else task.query_type
        shots = shown.shots(asked_type, task.chunks[0]) if shown else None
        log_queries = shown.log_queries if shown else ()
        title = (task.option or {}).get("title") or task.chunks[0]["title"]  # a near miss names its setting
        task.avoid = _avoid(task, steering)
        return Request(prompts.build_answer_first_messages(asked_type, title, task.answer, shots, log_queries),
                       max_tokens=min(config.max_tokens, prompts.ASKED_MAX_TOKENS), temperature=config.temperature,
                       seed=seed, grammar=_asked_grammar(task, asked_type, bool(config.capable)), tag=task,
                       avoid=task.avoid)
    passages = [_truncate(c["text"]) for c in task.chunks]
    limits = capability.bounds(bool(config.capable))
    budget = max(config.max_tokens, prompts.max_reply_tokens(limits.question_chars, limits.answer_chars))
    return Request(prompts.build_messages(task.query_type, passages), max_tokens=budget, temperature=config.temperature,
                   seed=seed, grammar=prompts.grammar_for(task.query_type, limits.question_chars, limits.answer_chars),
                   tag=task)


# Need-first prompts show the same worked examples for every chunk (ExampleSet.fixed_shots), so the engine keeps them
# evaluated; bench/needfirst_prefix.py turns it off for the A/B against the examples nearest each chunk.
FIXED_NEED_FIRST_SHOTS = False


def _need_first_request(task: Task, config: GenerationConfig, shown: Optional[examples_mod.ExampleSet],
                        seed: int) -> Request:
    """A need-first request (generation.needfirst): the chunk, how people here ask, and a
    token budget the model's class sets (capability.Bounds)."""
    limits = capability.bounds(bool(config.capable))
    shots = None
    if shown:
        shots = (shown.fixed_shots if FIXED_NEED_FIRST_SHOTS else shown.shots)(task.query_type, task.chunks[0])
    style = shown.log_queries[:needfirst.STYLE_EXAMPLES] if shown and shown.kind == "real_log" else []
    texts = [c["text"] for c in task.chunks]  # one chunk, or a section's (needfirst.WHOLE_SECTION)
    passage = needfirst.passage_of(texts, MAX_PASSAGE_CHARS if len(texts) == 1 else needfirst.MAX_SECTION_CHARS)
    messages = needfirst.build_messages(task.query_type, passage, shots, style)
    # '.' units are two characters (prompts.MAX_REPLY_TOKENS): the question line never runs out of budget
    budget = len("Question: ") + 2 * limits.question_chars + quote_line_tokens(config)
    return Request(messages, max_tokens=budget, temperature=needfirst.retry_temperature(config.temperature, task.attempt),
                   seed=seed, grammar=needfirst.grammar(task.query_type, limits.question_chars), tag=task)


def quote_line_tokens(config: GenerationConfig) -> int:
    """The tokens a need-first reply's quote line may take: "Answer: ", the quote's budget (capability.Bounds) and
    the line's end. The batch decoder holds the quote to it once the question is written (backends.FirstLineGate);
    before, the question's unused budget went to the quote too, and the 1.5B model spent it copying its passage
    over again."""
    return len("Answer: ") + capability.bounds(bool(config.capable)).quote_tokens + 8


def _avoid(task: Task, steering: Optional[copybias.Steering]) -> Optional[copybias.Avoid]:
    """The words a plain answer-first question should not copy (a derived type's question must name its
    sentence's details, so it is not steered); None when the backend cannot apply the bias (an endpoint):
    no words are computed for a request that would ignore them."""
    if steering is None or not steering.applied or task.option is not None:
        return None
    return steering.avoid(task.answer, prompts.shown_title(task.chunks[0]["title"]))


# A near miss about a sentence that names its own setting ("... on Windows") must ask in that setting, or it
# is rejected (unanswerable.near_miss_question): shown the setting in the heading, the bundled model left it
# out of 6 of 24 near-miss candidates on the Python FAQ (bench/generate.py, 2026-12-05). The grammar spells
# the setting as a word of the question, as it spells a multi-hop second part's entity.
NEAR_MISS_NAMES_SETTING = True  # bench/generate.py turns it off for the A/B


def _asked_grammar(task: Task, asked_type: str, capable: bool = False) -> str:
    option = task.option or {}
    if NEAR_MISS_NAMES_SETTING and task.query_type == "unanswerable" and option.get("scope") == "sentence":
        return multihop.second_part_grammar(option["original"])
    return prompts.asked_grammar(asked_type, capable)
