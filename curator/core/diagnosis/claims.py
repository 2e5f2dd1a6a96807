"""Atomic claims without an LLM: a response (or a reference answer) split into sentences, and a
sentence into coordinated clauses, each split shown with the rule that made it.

Why rules and not a model: a 135M model asked to list a response's statements returns malformed
lists, and a rule can say why it cut where it did, so a reviewer can check the split.

Rules, in order:
- sentences end at ``.``, ``!`` or ``?`` before a capital letter, digit or quote (not after an
  abbreviation such as "e.g."); a question asserts nothing and is left out;
- a sentence is cut at ``;`` when both sides have at least MIN_CLAUSE_WORDS words;
- a sentence is cut before a coordinating conjunction (``and``, ``but``, ``while``, ``whereas``,
  ``so``, ``yet``) when the clause after it starts with its own subject (a pronoun, an article or
  demonstrative, a capitalised word or a code name) and both sides have MIN_CLAUSE_WORDS words:
  "sort() works in place, and it returns None" is two claims; "tea and coffee are sold" is one,
  because "coffee are sold" has no subject of its own.
A piece of fewer than MIN_CLAIM_WORDS words is not a claim (a lone "Yes." asserts nothing to check).
"""

from __future__ import annotations

import re

MIN_CLAIM_WORDS = 3
MIN_CLAUSE_WORDS = 4
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Za-z0-9])")
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|etc|vs|Dr|Mr|Mrs|Ms|No|Fig|cf|approx)\.$", re.IGNORECASE)
_CONJUNCTION = re.compile(r",?\s+\b(and|but|while|whereas|so|yet)\s+(?=\S)", re.IGNORECASE)
_SUBJECT_WORDS = {"i", "you", "he", "she", "it", "we", "they", "this", "that", "these", "those", "the", "a", "an",
                  "its", "their", "his", "her", "our", "your", "my", "there", "each", "every", "all", "some",
                  "no", "none", "one", "both", "neither", "either", "many", "most", "several", "users", "people"}
_CODE_NAME = re.compile(r"[`_()/]|\w\.\w|[a-z][A-Z]")


def sentences(text: str) -> list[str]:
    """The text's sentences, whitespace collapsed (an abbreviation's full stop does not end one)."""
    pieces, current = [], ""
    for part in _SENTENCE_END.split(" ".join((text or "").split())):
        current = f"{current} {part}".strip()
        if not _ABBREVIATION.search(current):
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return pieces


def _is_question(sentence: str) -> bool:
    return sentence.rstrip("\"')").endswith("?")


def _starts_with_subject(clause: str) -> bool:
    """Whether a clause opens with a subject of its own (so it is a claim, not a list's tail)."""
    first = clause.split()[0] if clause.split() else ""
    bare = first.strip("\"'(`")
    return (bare.lower() in _SUBJECT_WORDS or bool(_CODE_NAME.search(first))
            or (bare[:1].isupper() and bare.lower() not in {"and", "or"}))


def _cut_semicolons(sentence: str) -> list[tuple[str, str]]:
    parts = [p.strip() for p in sentence.split(";")]
    if len(parts) > 1 and all(len(p.split()) >= MIN_CLAUSE_WORDS for p in parts):
        return [(p, "clause: ';'") for p in parts]
    return [(sentence, "sentence")]


def _cut_conjunctions(piece: str, rule: str) -> list[tuple[str, str]]:
    """Cut before the first conjunction whose right side is a clause with its own subject."""
    for match in _CONJUNCTION.finditer(piece):
        left, right = piece[:match.start()].strip(" ,"), piece[match.end():].strip()
        if (len(left.split()) >= MIN_CLAUSE_WORDS and len(right.split()) >= MIN_CLAUSE_WORDS
                and _starts_with_subject(right)):
            word = match.group(1).lower()
            return [(left, rule)] + _cut_conjunctions(right, f"clause: '{word}'")
    return [(piece, rule)]


def explain_split(text: str) -> list[dict]:
    """Every sentence of the text with the claims cut from it: ``sentence`` (its text), ``question``
    (True: left out), ``claims`` (each ``text`` and ``rule``: 'sentence', "clause: ';'", "clause:
    'and'" ...; pieces too short to be claims are listed with ``rule`` 'too short')."""
    out = []
    for sentence in sentences(text):
        entry = {"sentence": sentence, "question": _is_question(sentence), "claims": []}
        if not entry["question"]:
            for piece, rule in _cut_semicolons(sentence):
                for clause, how in _cut_conjunctions(piece, rule):
                    short = len(clause.split()) < MIN_CLAIM_WORDS
                    entry["claims"].append({"text": clause, "rule": "too short" if short else how})
        out.append(entry)
    return out


def split_claims(text: str) -> list[str]:
    """The claims of a response, in order (see the module's rules)."""
    return [c["text"] for entry in explain_split(text) for c in entry["claims"] if c["rule"] != "too short"]


def split_statements(reference: str) -> list[str]:
    """The reference answer's statements; a short answer ("Use pip.") is one statement."""
    return split_claims(reference) or ([" ".join(reference.split())] if reference and reference.strip() else [])
