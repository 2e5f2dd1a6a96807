"""Judging a near miss the model wrote (generation.unanswerable): its question put in the swapped
setting (near_miss_question), the checks a candidate must pass (judge), the evidence stored with the
row for the reviewer (evidence: the corpus counts and the nearest chunks by full text and by the
sentence embedder) and its one line in the Review tab (explain).
"""

from __future__ import annotations

import atexit
import re
from typing import Optional

import numpy as np
import sqlite_utils

from curator.core.corpus.search import search_chunks
from curator.core.generation.answers import MIN_ANSWER_GAIN
from curator.core.generation.near_miss_details import (LEARNED, Detail, _holds, _stems, chunks_with,
                                                       corpus_mentions, corpus_subject, details,
                                                       learned_details, learned_kinds)
from curator.core.generation.near_miss_options import SETTING_KINDS, swap_in
from curator.core.queries.words import content_words, stem

NEAREST = 3  # nearest chunks kept as evidence, per retriever
DENSE_POOL = 8  # chunks full-text search finds, per text, among which the embedder's nearest are taken
# The question must be about its (swapped) sentence. H3's labelled runs measured this with MiniLM's
# cosine (0.7: below it near misses were muddled, "remove the ability to use micropython in
# Windows" at 0.58); MiniLM is the dense retriever under test, so the generating model's likelihood
# gain decides, at the answer-first floor (answers.MIN_ANSWER_GAIN), as it does for every row.
MIN_NEAR_MISS_GAIN = MIN_ANSWER_GAIN


# One sentence embedder per thread count for the life of the process: a run (and every later run of
# a GUI session or a bench) loads MiniLM once, not once per run.
_EVIDENCE_EMBEDDERS: dict = {}
atexit.register(_EVIDENCE_EMBEDDERS.clear)  # freed before interpreter teardown, when llama.cpp's frees still work


def evidence_embedder(n_threads: Optional[int] = None):
    """The sentence embedder (MiniLM on llama.cpp) that finds a near miss's nearest chunks, on
    ``n_threads`` threads: the generating engine's count (the cores other processes leave free), not
    MiniLM's own default of every core. With 2 threads on the 2-core machine at load 4-6, the evidence
    of 6 near misses took 4-51 s, against 3-11 s on 1 thread (ggml's OpenMP threads spin while one
    of them waits for a core; docs/generate.md, "Where an answer-first row's time goes").
    None without the MiniLM package."""
    from curator.core.embedding.embed import minilm_available

    if not minilm_available():
        return None
    key = n_threads or 0
    if key not in _EVIDENCE_EMBEDDERS:
        from curator.core.embedding.minilm_gguf import MiniLMLlamaEmbedder

        _EVIDENCE_EMBEDDERS[key] = MiniLMLlamaEmbedder(n_threads=n_threads)
    return _EVIDENCE_EMBEDDERS[key]


def _dense_nearest(db: sqlite_utils.Database, embedder, question: str, sentence: str) -> tuple[list, str]:
    """The chunks nearest the question in the sentence embedder, among those full-text search finds
    for the question or for its source sentence (embedding a whole corpus for the first near miss
    took minutes on a loaded laptop; these vectors are cached in the project), and that scope."""
    from curator.core.embedding.embed import embed_texts

    pool = {h["id"]: h["text"] for text in (question, sentence) for h in search_chunks(db, text, limit=DENSE_POOL)}
    if not pool:
        return [], "no chunk shares a word with the question"
    ids = list(pool)
    vectors = embed_texts(db, embedder, [pool[i] for i in ids])
    scores = vectors @ embedder.embed_batch([question])[0]
    nearest = [(ids[i], float(scores[i])) for i in np.argsort(-scores)[:NEAREST]]
    return nearest, f"the {len(ids)} chunks full-text search finds for the question or its source sentence"


def _chunk_says(db: sqlite_utils.Database, chunk_id: str, term: str) -> bool:
    text = db.execute("SELECT text FROM chunks WHERE id = ?", [chunk_id]).fetchone()
    return bool(text) and term.lower() in text[0].lower()


def evidence(db: sqlite_utils.Database, question: str, option: dict, embedder=None) -> dict:
    """Why the near miss is believed unanswerable, for the reviewer: the swap, how many chunks
    mention the replacement (0) and the original, and the nearest chunks by full text and by the
    sentence embedder, each marked with whether it holds the original detail (what it does answer)."""
    original = option["original"]
    fts = [{"chunk": h["id"], "bm25": round(h["score"], 2), "holds_original": _chunk_says(db, h["id"], original)}
           for h in search_chunks(db, question, limit=NEAREST)]
    nearest, scope = _dense_nearest(db, embedder, question, option["sentence"]) if embedder else ([], None)
    dense = [{"chunk": cid, "cosine": round(score, 3), "holds_original": _chunk_says(db, cid, original)}
             for cid, score in nearest]
    return {"method": "near miss: the question a sentence of the corpus answers, asked in a setting no chunk "
                      "mentions",
            "sentence": option["sentence"], "detail_kind": option["kind"], "original": original,
            "replacement": option["replacement"], "replacement_mentions": corpus_mentions(db, option["replacement"]),
            "original_mentions": corpus_mentions(db, original), "nearest_fts": fts, "nearest_dense": dense,
            "embedder": getattr(embedder, "id", None), "dense_scope": scope,
            **(_learned_evidence(db, question, option) if option["kind"].startswith(LEARNED) else {})}


def _learned_evidence(db: sqlite_utils.Database, question: str, option: dict) -> dict:
    """For a peer of a learned kind (which the corpus mentions): its kind's names and that no chunk
    names it with what the question asks."""
    return {"method": "near miss: the question a sentence of the corpus answers, asked of a peer the corpus "
                      "lists with its setting but never names with what is asked",
            "learned_kind": sorted(learned_kinds(db).get(option["kind"], ())),
            "replacement_with_question_words": len(chunks_with(db, option["replacement"], question,
                                                               (option["original"],)))}


def near_miss_question(question: str, option: dict) -> Optional[tuple[str, str]]:
    """The model's question (written for the original sentence) put in the swapped setting, and how:
    'swapped' when it named the original (every spelling replaced), 'kept' when it already named the
    replacement, 'added' when it names neither and its sentence comes from a chunk about the setting
    (scope 'chunk'; the setting phrase goes before the final '?'). None for a question that leaves
    out the setting its own sentence names: the model did not ask about it, and added it made 0 of
    10 labelled near misses usable ("was the 32-bit s390 port replaced on riscv64?"). Labelled
    (bench/quality_labels_issue28.jsonl, code issue28_v7): 8 of 9 usable when the question named the
    setting itself, 4 of 8 when a chunk's setting was added ("How to use non-blocking sockets with
    Python on ChromeOS?" is answered in general terms), so the model is shown the setting (title)."""
    detail = Detail(option["original"], option["kind"])
    if _holds(question, option["original"]):
        return swap_in(question, detail, option["replacement"], ignore_case=True), "swapped"
    if _holds(question, option["replacement"]):
        return question, "kept"
    if option.get("scope") != "chunk":
        return None
    body = question.rstrip().rstrip("?").rstrip()
    return f"{body} {option['setting']}?", "added"


# What a user does that depends on where: a near miss about a technical setting must ask to do one
# of these ("How do I install Python on ChromeOS?"). Asked about anything else (opening a file,
# exiting a script, speed), the corpus answers it in general terms wherever it runs. Of the labelled
# near misses naming the corpus's subject (codes v6 to v9), on the Python FAQ 9 of the 12 asking one
# of these were usable, 8 of the 26 that did not; on the Debian FAQ 19 of 22 and 1 of 2. Counted on
# the rows the rule was read from; the fresh rows since are code issue28_v12. "run" is in too ("the
# server runs under systemd"), though it let in 3 usable and 4 rejected ones ("run a Python script on
# a ChromeOS laptop", answered in general terms).
SETTING_ACTIONS = frozenset({"install", "installs", "installed", "installing", "uninstall", "reinstall", "set",
                             "setup", "configure", "configuring", "start", "starts", "starting", "boot",
                             "enable", "disable", "upgrade", "upgrading", "remove", "removing", "run", "runs",
                             "running", "launch"})


def asks_setting_action(question: str) -> bool:
    return bool(SETTING_ACTIONS & set(re.findall(r"[a-z]+", question.lower())))


def names_subject(db: sqlite_utils.Database, question: str) -> bool:
    subject = corpus_subject(db)
    return not subject or stem(subject) in {stem(w) for w in content_words(question)}


def shared_words(question: str, option: dict) -> set[str]:
    """The stems the question shares with its sentence, the setting's names left out."""
    names = (option["original"], option["replacement"])
    return _stems(question, names) & _stems(option["sentence"], names)


# Two near misses whose content words (stems, generic words left out) differ by at most this many ask
# the same thing: "How do I install Python on ChromeOS?", "How can I install Python on my ChromeOS
# PC?", "How do I install the Python interpreter on ChromeOS?". The run's duplicate check saw only the
# model's question, written for the original setting, and its content-word Jaccard floor (0.8) lets a
# three-word question and its four-word variant through. By this rule the labelled near misses (code
# issue28_v12, six runs pooled) asked "install Python on ChromeOS" 5 times in 14 Python FAQ rows, and
# "install Debian on ChromeOS" 5 times and "install Debian with Upstart" 4 times in 14 Debian FAQ rows.
REPEAT_MAX_DIFFERENT_WORDS = 1


def repeated_near_miss(db: sqlite_utils.Database, question: str) -> Optional[str]:
    """An unanswerable row of the project (any source, any status) that asks what ``question`` asks,
    in other words (REPEAT_MAX_DIFFERENT_WORDS), or None."""
    asked = _stems(question, ())
    for (text,) in db.execute("SELECT text FROM queries WHERE query_type = 'unanswerable' ORDER BY created_at"):
        earlier = _stems(text, ())
        if asked and earlier and len(asked ^ earlier) <= REPEAT_MAX_DIFFERENT_WORDS:
            return text
    return None


def judge(db: sqlite_utils.Database, question: str, option: dict, answer_check=None,
          embedder=None) -> tuple[Optional[str], Optional[dict]]:
    """(None, evidence) for the question the model wrote from the original sentence, or (reason, None).

    The question must be about its sentence: share a word with it besides the setting and generic
    verbs (of 10 labelled near misses from two earlier runs, the 6 that shared none were 2 usable,
    the other 4 were 2 usable; "How can I check if my home network is connected on Android?" came
    from a sentence about virus scanners), and pass ``answer_check``, the generating model's likelihood gain of the sentence
    given the question, at least MIN_NEAR_MISS_GAIN (a near miss is only as plausible as the real
    question it mirrors). It must name what the corpus is about (corpus_subject): of the 46 near misses
    labelled before this rule (bench/quality_labels_issue28.jsonl, codes v1 to v6), 10 of the 17 that
    named it were usable ("How to install Python on Android?"), 2 of the 29 that did not ("How do I
    stop running Android in a bug report?"). It must not name another thing of the swapped kind ("on
    Windows or Linux": the corpus answers the other). The near miss is that question in the swapped
    setting (near_miss_question); it is in the evidence as "question", the model's own as
    "model_question". A near miss that asks what an earlier one of the project asks, in other
    words, is a repeat (repeated_near_miss). ``embedder`` only finds the nearest chunks shown as evidence."""
    named = learned_details(db, question) if option["kind"].startswith(LEARNED) else details(question)
    others = [d.text for d in named if d.kind == option["kind"]
              and d.text not in (option["original"], option["replacement"])]
    if others:
        return f"unanswerable: the question names another {option['kind']} ('{others[0]}')", None
    asked = near_miss_question(question, option)
    if asked is None:
        return f"unanswerable: the question left out its setting ('{option['original']}')", None
    near, made = asked
    if not shared_words(question, option):
        return "unanswerable: the question shares no word with its sentence besides the setting", None
    if not names_subject(db, near):
        return f"unanswerable: the question does not name what the corpus is about ('{corpus_subject(db)}')", None
    learned = option["kind"].startswith(LEARNED)
    if (option["kind"] in SETTING_KINDS or learned) and not asks_setting_action(near):
        return "unanswerable: the question asks nothing that depends on its setting (install, configure, start...)", None
    answering = chunks_with(db, option["replacement"], near, (option["original"],)) if learned else []
    if answering:
        return (f"unanswerable: a chunk names '{option['replacement']}' with what the question asks "
                f"({answering[0]})"), None
    earlier = repeated_near_miss(db, near)
    if earlier is not None:
        return f"unanswerable: asks what an earlier near miss asks ('{earlier}')", None
    gain = answer_check.gain(question, option["sentence"]) if answer_check is not None else None
    if gain is not None and gain < MIN_NEAR_MISS_GAIN:  # last: it costs a pass of the model
        return f"question does not lead to its answer sentence (likelihood gain {gain:.2f})", None
    found = evidence(db, near, option, embedder)
    found.update(question=near, model_question=question, setting_made=made, scope=option.get("scope"),
                 answer_gain=round(gain, 3) if gain is not None else None)
    return None, found


def explain(found: dict) -> str:
    """One line for the reviewer: what was swapped and what the corpus holds."""
    nearest = (found.get("nearest_dense") or found.get("nearest_fts") or [{}])[0]
    if found.get("learned_kind"):
        line = (f"near miss: '{found['original']}' swapped for '{found['replacement']}', listed with it in the corpus "
                f"but named by no chunk with what is asked (full text; '{found['replacement']}' is in "
                f"{found['replacement_mentions']} chunks)")
    else:
        line = (f"near miss: '{found['original']}' swapped for '{found['replacement']}', which no chunk mentions "
                f"(full text; '{found['original']}' is in {found['original_mentions']})")
    if nearest.get("chunk"):
        line += f"; nearest chunk {nearest['chunk']}" + (" speaks of the original" if nearest.get("holds_original") else "")
    return line
