"""Answer-first generation: the reference answer is a sentence of the chunk, the model writes only
the question that sentence answers.

Why: asked for a question *and* an answer about a whole passage, the bundled 135M model wrote rows
a reviewer kept about one time in sixteen (bench/quality.py, issue 14): answers that restate the
question, are cut off, or say something the chunk does not. Reversing the order removes the
answer's failure modes by construction (the reference is the chunk's own words, so it is correct
for its gold chunk and says something), and leaves the model the easier half of the task: turning
one statement into the question it answers, shown three worked examples (prompts.ANSWER_FIRST_SHOTS).
This is answer-aware question generation, as in SQuAD-style QG.

No embedder checks the question against its answer sentence any more. A MiniLM cosine floor did
(0.65) until issue 27: MiniLM is the dense retriever under test, so the floor kept the questions
dense finds, and on the labelled quality-bench rows it did not sort usable from unusable ones
(bench/quality.py --labels; docs/benchmarks.md, "Answer check"), while it was most of the rejections.
"""

from __future__ import annotations

import random
import re
from typing import Optional

# A sentence ends at . ! ? followed by space and a capital, a quote, a backtick or a digit, except
# after an abbreviation ("e.g. \u201c2.2+\u201d" cut a reference answer in two in the quality bench).
_SENTENCE_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?<!\bvs\.)(?<!\bcf\.)(?<=[.!?])\s+(?=[A-Z\"'`\u201c0-9])")
_BLOCK = re.compile(r"\n\s*\n")
MIN_WORDS, MAX_WORDS = 8, 40
# A sentence opening with one of these leans on the one before it ("However, ...", "Yes, ..."), so
# as a reference answer it would not stand alone ("This ...", "It ..." are caught by the sets below).
LEANING_OPENERS = {"its", "however", "but", "so", "and", "or", "see", "note", "thus", "therefore", "hence",
                   "similarly", "otherwise", "instead", "again", "both", "he", "she", "we", "finally", "first",
                   "second", "next", "likewise", "yet", "still", "yes", "no", "probably", "often", "even",
                   "several", "many", "some", "other", "another", "once"}
# Words that point back at text the answer does not hold ("this defines", "merge them", "is then
# used", "the same approach", "also requires"): from the quality bench's labelled answer sentences,
# where such sentences made rows a reviewer rejected.
LEANING_WORDS = {"this", "these", "those", "them", "then", "also", "same", "such", "above", "below",
                 "following", "former", "latter", "either"}
# These lean back only near the start ("... prior to it are positional-only" refers inside the sentence).
LEANING_NEAR_START = {"that", "it", "they", "here", "there"}
_CODE_LINE = re.compile(r"^\s*(>>>|\.\.\.|\$ |#|[-*+|]\s|\d+[.)]\s|```|    )")


def answer_sentences(text: str) -> list[str]:
    """Sentences of a chunk that can serve as a reference answer on their own: prose (not code,
    lists or headings), 8-40 words, a full sentence that does not lean on the one before it."""
    found = []
    for block in _BLOCK.split(text or ""):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines or any(_CODE_LINE.match(line) for line in lines):
            continue
        for sentence in _SENTENCE_END.split(" ".join(" ".join(lines).split())):
            if _is_answer_like(sentence):
                found.append(sentence)
    return found


def _is_answer_like(sentence: str) -> bool:
    words = sentence.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or not sentence.endswith(".") or not sentence[0].isupper():
        return False
    if sentence.rstrip(".").endswith((":", ";", ",")) or "?" in sentence:
        return False
    if any(w.endswith(":") for w in words[:3]):  # a label ("Answer 1: ...", "Note: ..."), not prose
        return False
    # "That\u2019s because", "like this.": each word without punctuation or a contraction's tail.
    bare = [re.split(r"[\u2019']", w.lower().strip(",;:.()\"\u201c\u201d"))[0] for w in words]
    if bare[0] in LEANING_OPENERS or LEANING_WORDS & set(bare) or LEANING_NEAR_START & set(bare[:4]):
        return False
    letters = sum(ch.isalpha() for ch in sentence)
    return letters >= 0.7 * len(sentence.replace(" ", ""))  # code and tables spell few letters


def pick_answer(chunk: dict, attempt: int, seed: int) -> Optional[str]:
    """The answer sentence of a chunk for a given attempt: a seeded order per chunk, so a retry
    asks about the next sentence (a new question, not the same failure again)."""
    sentences = answer_sentences(chunk["text"])
    if not sentences:
        return None
    order = list(range(len(sentences)))
    random.Random(f"{seed}:{chunk['id']}").shuffle(order)
    return sentences[order[attempt % len(order)]]
