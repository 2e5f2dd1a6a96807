"""The default claim judge: supported / not supported from the retrieved contexts, without an LLM.

For each claim it finds the evidence: the context sentence (or pair of adjacent sentences) that
best matches the claim by content-word overlap and MiniLM cosine together. It then measures what
plain word overlap misses, each as one feature (FEATURES):
- numbers, versions, dates and units in the claim that the evidence (or every context) lacks;
- negation added or dropped against the evidence sentence;
- named things (commands, options, file names, products: code-like or capitalised words) the
  contexts never mention, and words swapped for their opposite (first/last, install/remove);
- scope words (all, only, never, some, ...) the evidence does not use;
- a paraphrase: high cosine with little word overlap.
A logistic regression combines them; its weights were fitted on labelled claims and are committed
with the data they came from (curator/resources/judge/claim_judge.json, fitted by
bench/diagnose_fit.py on bench/diagnose_claims_hard.jsonl's train split), so the score is a
probability of "supported" whose calibration is measured on the held-out split (docs/diagnose.md).
Every verdict names its evidence sentence and the features that pushed it down.

The embedder is injected (``embed``: texts -> unit vectors), so tests can pass a fake and the
judge never loads a model it does not need; ``default_embed`` is MiniLM with an in-memory cache.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from curator.core.diagnosis.claims import sentences

JUDGE_ID = "claim-judge"
WEIGHTS = Path(__file__).resolve().parents[2] / "resources" / "judge" / "claim_judge.json"
# A verdict whose probability falls in this band is "unsure": an LLM judge, when one is given, checks it.
UNSURE = (0.25, 0.75)
FEATURES = ("cosine", "overlap_evidence", "overlap_contexts", "novel_words", "numbers_missing_evidence",
            "numbers_missing_contexts", "negation_flip", "names_missing", "names_missing_evidence",
            "scope_added", "opposite_swapped", "paraphrase", "word_alignment", "unaligned_words", "copy_conflict", "novel_alignment",
            "evidence_covered")
# A claim word counts as aligned with the evidence when its MiniLM cosine to some evidence word reaches this.
ALIGNED = 0.6
MAX_UNIT_WORDS = 80

_TOKEN = re.compile(r"[A-Za-z0-9_$/\-][A-Za-z0-9_$.+\-/(]*[A-Za-z0-9_)]|[A-Za-z0-9]")
_CLAUSE_CUT = re.compile(r"[,;:()]|\b(?:and|but|because|as|while|however|so|then|though|although|whereas)\b", re.I)
_NUMBER = re.compile(r"(?<![A-Za-z])[-+]?\d+(?:[.,]\d+)*(?:\.x)?")
NUMBER_WORDS = {"zero": "0", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
                "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
                "twenty": "20", "thirty": "30", "hundred": "100", "thousand": "1000", "million": "1000000",
                "dozen": "12", "twice": "2", "double": "2", "triple": "3"}
NEGATIONS = {"not", "no", "never", "none", "cannot", "nobody", "nothing", "neither", "nor", "without", "nowhere"}
SCOPE_WORDS = {"all", "every", "always", "only", "never", "none", "any", "everyone", "everybody", "anyone",
               "entire", "whole", "each", "must", "some", "most", "many", "few", "several", "often", "usually",
               "sometimes", "nearly", "almost", "rarely", "exactly", "just", "solely", "both"}
_OPPOSITES = [("first", "last"), ("start", "end"), ("before", "after"), ("more", "less"), ("increase", "decrease"),
              ("larger", "smaller"), ("faster", "slower"), ("higher", "lower"), ("enable", "disable"),
              ("add", "remove"), ("include", "exclude"), ("input", "output"), ("read", "write"), ("open", "close"),
              ("positive", "negative"), ("true", "false"), ("minimum", "maximum"), ("min", "max"),
              ("success", "failure"), ("allow", "forbid"), ("stop", "start"), ("inside", "outside"),
              ("upper", "lower"), ("old", "new"), ("older", "newer"), ("same", "different"), ("static", "dynamic"),
              ("public", "private"), ("client", "server"), ("install", "uninstall"), ("install", "remove"),
              ("hold", "unhold"), ("released", "unreleased"), ("keep", "delete"), ("keep", "lose"),
              ("import", "export"), ("upload", "download"), ("local", "remote"), ("begin", "end"),
              ("left", "right"), ("up", "down"), ("top", "bottom"), ("early", "late"), ("earlier", "later"),
              ("compile", "interpret"), ("preserve", "overwrite"), ("accept", "reject"), ("lock", "unlock"),
              ("always", "rarely"), ("always", "never"), ("always", "sometimes"), ("all", "some"), ("all", "none"),
              ("every", "some"), ("many", "few"), ("most", "few"), ("often", "rarely"), ("usually", "rarely"),
              ("must", "may"), ("required", "optional"), ("easy", "hard"), ("simple", "complex")]
OPPOSITE = {}
for _a, _b in _OPPOSITES:
    OPPOSITE.setdefault(_a, set()).add(_b)
    OPPOSITE.setdefault(_b, set()).add(_a)
STOP_WORDS = set("""a an the of to in on at by for with from as is are was were be been being it its this that these
those and or but if then than so such can could may might will would shall should do does did done has have had
having you your we our they their he she his her i me my us them which who whom whose what when where why how there
here into onto over under about also just very too more most much many some any each other all not no nor only own
same both few one up down out off again further once via per like use used using get gets got make makes made""".split())


def tokens(text: str) -> list[str]:
    return [t.lower().rstrip(".") for t in _TOKEN.findall(text or "")]


def stem(word: str) -> str:
    """A crude suffix stripper: enough to meet 'sorts'/'sorted'/'sorting' at 'sort'."""
    for suffix in ("ingly", "edly", "ing", "ed", "es", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_stems(text: str) -> set[str]:
    return {stem(t) for t in tokens(text) if t not in STOP_WORDS and t not in NEGATIONS and len(t) > 1}


def numbers(text: str) -> set[str]:
    found = {n.replace(",", "") for n in _NUMBER.findall(text or "")}
    return found | {NUMBER_WORDS[t] for t in tokens(text) if t in NUMBER_WORDS}


def negated(text: str) -> bool:
    low = (text or "").lower()
    return bool(set(tokens(low)) & NEGATIONS) or "n't" in low or "n’t" in low


def names(text: str) -> set[str]:
    """Named things: code-like tokens (dots, underscores, slashes, options, brackets, digits in words)
    and capitalised words after the first word of the text."""
    out = set()
    for i, raw in enumerate(_TOKEN.findall(text or "")):
        word = raw.rstrip(".")
        code_like = bool(re.search(r"[_/()$]|\w\.\w|^-|[a-z][A-Z]|[A-Za-z]\d|\d[A-Za-z]", word))
        capitalised = i > 0 and word[:1].isupper() and word.lower() not in STOP_WORDS
        if code_like or capitalised or (len(word) > 1 and word.isupper()):
            out.add(word.lower())
    return out


def swapped_commands(claim: str, contexts_text: str) -> set[str]:
    """Hyphenated names of the claim the contexts lack while naming a sibling ('apt-get' where the
    contexts say 'apt-mark', 'dpkg-source' for 'dpkg-deb'); a plain hyphenated word ('low-level')
    has no sibling and is not a name."""
    theirs = {t for t in tokens(contexts_text) if "-" in t.strip("-")}
    heads = {t.strip("-").split("-")[0] for t in theirs}
    return {t for t in tokens(claim) if "-" in t.strip("-") and t not in theirs and t.strip("-").split("-")[0] in heads}


def clauses(text: str) -> list[str]:
    return [c for c in _CLAUSE_CUT.split(text or "") if len(tokens(c)) >= 2]


def negation_flips(claim: str, unit_text: str) -> int:
    """Clauses of the claim whose closest clause of the evidence (sharing at least half their words)
    differs in negation: "sorts in place and returns the list" against "sorts in place; it does not
    return the list" flips its second clause only."""
    evidence = [(c, content_stems(c)) for c in clauses(unit_text)]
    flips = 0
    for clause in clauses(claim):
        stems = content_stems(clause)
        if not stems or not evidence:
            continue
        best, best_stems = max(evidence, key=lambda e: _coverage(stems, e[1]))
        flips += _coverage(stems, best_stems) >= 0.5 and negated(clause) != negated(best)
    return flips


def closest_sentence(claim_stems: set[str], unit_text: str) -> str:
    """The sentence of an evidence unit sharing most words with the claim (a pair's other sentence
    may hold an unrelated 'not')."""
    said = sentences(unit_text) or [unit_text]
    return max(said, key=lambda s: _coverage(claim_stems, content_stems(s)))


def context_sentences(contexts: list[str]) -> list[tuple[int, str]]:
    """(1-based context index, sentence) for every sentence of every context, paragraphs read in
    order, long sentences cut to MAX_UNIT_WORDS."""
    return [(index, " ".join(s.split()[:MAX_UNIT_WORDS])) for index, context in enumerate(contexts, 1)
            for paragraph in re.split(r"\n\s*\n", context or "") for s in sentences(paragraph)]


def context_units(contexts: list[str]) -> list[tuple[int, str, tuple[int, ...]]]:
    """Evidence candidates: every sentence and every pair of adjacent sentences of one context (a
    claim may join two; a line ending "... using" and the command on the next line are one
    statement), each with the positions of its sentences in context_sentences."""
    said = context_sentences(contexts)
    units = [(index, text, (i,)) for i, (index, text) in enumerate(said)]
    units += [(said[i][0], f"{said[i][1]} {said[i + 1][1]}", (i, i + 1)) for i in range(len(said) - 1)
              if said[i][0] == said[i + 1][0]]
    return units


def _coverage(claim_stems: set[str], text_stems: set[str]) -> float:
    return len(claim_stems & text_stems) / len(claim_stems) if claim_stems else 1.0


def _in_text(item: str, text: str) -> bool:
    """Whether a name occurs in the text, line wrapping ignored ("GNU /Linux" holds "gnu/linux")."""
    return re.sub(r"\s+", "", item) in re.sub(r"\s+", "", (text or "").lower())


def features(claim: str, contexts: list[str], unit_text: str, cosine: float,
             alignment: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)) -> dict[str, float]:
    """The judge's features of one claim against its evidence unit and all the contexts;
    ``alignment`` is (mean best word cosine, words without a match) from ``word_alignment``."""
    everything = "\n".join(contexts)
    claim_stems, unit_stems, all_stems = content_stems(claim), content_stems(unit_text), content_stems(everything)
    overlap = _coverage(claim_stems, unit_stems)
    claim_numbers = numbers(claim)
    claim_names = names(claim)
    claim_words = set(tokens(claim))
    unit_words = set(tokens(unit_text))
    swapped = [w for w in claim_words - unit_words if OPPOSITE.get(w, set()) & unit_words]
    claim_names |= swapped_commands(claim, everything)
    flips = negation_flips(claim, unit_text)
    conflicts = [len(claim_numbers - numbers(unit_text)) > 0, flips > 0,
                 any(not _in_text(n, unit_text) for n in claim_names), bool(swapped),
                 bool((claim_words & SCOPE_WORDS) - unit_words)]
    return {
        "cosine": cosine,
        "overlap_evidence": overlap,
        "overlap_contexts": _coverage(claim_stems, all_stems),
        "novel_words": float(len(claim_stems - all_stems)),
        "numbers_missing_evidence": float(len(claim_numbers - numbers(unit_text))),
        "numbers_missing_contexts": float(len(claim_numbers - numbers(everything))),
        "negation_flip": float(flips),
        "names_missing": float(sum(not _in_text(n, everything) for n in claim_names)),
        "names_missing_evidence": float(sum(not _in_text(n, unit_text) for n in claim_names)),
        "scope_added": float(len((claim_words & SCOPE_WORDS) - unit_words)),
        "opposite_swapped": float(len(swapped)),
        "paraphrase": max(0.0, cosine - overlap),
        "word_alignment": alignment[0],
        "unaligned_words": alignment[1],
        "novel_alignment": alignment[2],
        "evidence_covered": alignment[3],
        # a near copy of the evidence that differs in one checked detail: the changed-detail lie
        "copy_conflict": overlap * sum(conflicts),
    }


REASONS = {
    "numbers_missing_evidence": "a number or version the evidence does not give",
    "negation_flip": "negation added or dropped against the evidence",
    "names_missing": "a name the contexts never mention",
    "names_missing_evidence": "a name the evidence does not mention",
    "scope_added": "a scope word (all, only, never, ...) the evidence does not use",
    "opposite_swapped": "a word swapped for its opposite",
}


def measure(embed, claims: list[str], contexts: list[str]) -> list[tuple[Optional[tuple[int, str]], dict]]:
    """(evidence unit, features) of each claim: the unit ranks by cosine and word overlap together,
    so a paraphrase (high cosine) and a near copy (high overlap) both find their sentence."""
    units = context_units(contexts)
    if not units:
        return [(None, features(c, contexts, "", 0.0)) for c in claims]
    if not claims:
        return []
    # sentences are embedded once; a pair's vector is the normalised sum of its two (MiniLM mean-pools
    # tokens, so this is close to embedding the pair, at half the cost)
    said = [text for _, text in context_sentences(contexts)]
    vectors = embed(list(claims) + said)
    claim_vecs, sentence_vecs = vectors[: len(claims)], vectors[len(claims):]
    unit_vecs = np.vstack([sentence_vecs[list(parts)].sum(axis=0) for _, _, parts in units])
    unit_vecs /= np.maximum(np.linalg.norm(unit_vecs, axis=1, keepdims=True), 1e-12)
    cos = claim_vecs @ unit_vecs.T
    unit_stems = [content_stems(u[1]) for u in units]
    out = []
    for i, claim in enumerate(claims):
        stems = content_stems(claim)
        scores = [0.5 * float(c) + 0.5 * _coverage(stems, u) for c, u in zip(cos[i], unit_stems)]
        best = int(np.argmax(scores))
        unit = units[best][:2]
        alignment = word_alignment(embed, claim, closest_sentence(stems, unit[1]))
        out.append((unit, features(claim, contexts, unit[1], float(cos[i][best]), alignment)))
    return out


def _content_words(text: str) -> list[str]:
    return list(dict.fromkeys(t for t in tokens(text) if t not in STOP_WORDS and t not in NEGATIONS and len(t) > 1))


def word_alignment(embed, claim: str, unit_text: str) -> tuple[float, float, float, float]:
    """How well the claim's content words are matched by the evidence's words: the mean of each
    claim word's best cosine (1 for a shared stem) and how many have none reaching ALIGNED. A
    paraphrase swaps words for near synonyms (aligned); an unsupported claim brings new ones.
    Also the mean best cosine of the claim's new words alone, and the share of the evidence's
    words the claim matches (a paraphrase restates its sentence; an added fact leaves it uncovered)."""
    words, evidence = _content_words(claim), _content_words(unit_text)
    if not words or not evidence:
        return (0.0, float(len(words)), 0.0, 0.0)
    evidence_stems, claim_stems = {stem(w) for w in evidence}, {stem(w) for w in words}
    vectors = embed(words + evidence)
    sims = vectors[: len(words)] @ vectors[len(words):].T
    best = [1.0 if stem(w) in evidence_stems else float(sims[i].max()) for i, w in enumerate(words)]
    novel = [b for b, w in zip(best, words) if stem(w) not in evidence_stems]
    back = [1.0 if stem(w) in claim_stems else float(sims[:, j].max()) for j, w in enumerate(evidence)]
    return (float(np.mean(best)), float(sum(b < ALIGNED for b in best)), float(np.mean(novel)) if novel else 1.0,
            float(np.mean(back)))


class ClaimJudge:
    """Judges claims against contexts with the fitted weights; ``embed`` maps texts to unit vectors."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray], weights: Optional[dict] = None):
        self.embed = embed
        self.weights = weights or load_weights()
        self.id = f"{JUDGE_ID}:{self.weights.get('version', '1')}"

    def probability(self, values: dict[str, float]) -> float:
        w = self.weights
        z = w["intercept"] + sum(c * (values[f] - m) / s for f, c, m, s in zip(w["features"], w["coef"], w["mean"], w["scale"]))
        return 1.0 / (1.0 + math.exp(-z))

    def judge(self, claims: list[str], contexts: list[str]) -> list[dict]:
        """One verdict per claim of one trace (the contexts' sentences are embedded once)."""
        return [self._verdict(unit, values) for unit, values in measure(self.embed, claims, contexts)]

    def _verdict(self, unit: Optional[tuple[int, str]], values: dict[str, float]) -> dict:
        p = self.probability(values)
        return {"verdict": "supported" if p >= 0.5 else "not supported", "probability": round(p, 4),
                "context_index": unit[0] if unit else None, "evidence": unit[1] if unit else None,
                "reasons": self.reasons(values), "features": {k: round(v, 4) for k, v in values.items()}}

    def reasons(self, values: dict[str, float]) -> list[str]:
        """The mismatches found between the claim and its evidence (facts, whatever the verdict),
        and a paraphrase when the claim is close in meaning with few shared words."""
        out = [text for feature, text in REASONS.items() if values[feature] > 0]
        if values["paraphrase"] > 0.3:
            out.append("a paraphrase: close in meaning, few shared words")
        return out


def unsure(verdict: dict) -> bool:
    return UNSURE[0] <= verdict["probability"] <= UNSURE[1]


@lru_cache(maxsize=1)
def load_weights(path: Optional[str] = None) -> dict:
    return json.loads(Path(path or WEIGHTS).read_text(encoding="utf-8"))


def default_embed() -> Callable[[list[str]], np.ndarray]:
    """MiniLM (the project's sentence embedder) with a per-process cache of vectors by text."""
    from curator.core.embedding.embed import get_embedder

    embedder = get_embedder("minilm")
    cache: dict[str, np.ndarray] = {}

    def embed(texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in cache))
        if missing:
            for text, vector in zip(missing, embedder.embed_batch(missing)):
                cache[text] = vector
        return np.vstack([cache[t] for t in texts])

    return embed


def lazy_default_judge() -> ClaimJudge:
    """The default claim judge, its MiniLM loaded on the first claim it judges (the CLI and the
    Diagnose tab both build it so: a project with every claim judged never loads MiniLM)."""
    embed: list = []

    def lazy(texts: list[str]) -> np.ndarray:
        if not embed:
            embed.append(default_embed())
        return embed[0](texts)

    return ClaimJudge(lazy)
