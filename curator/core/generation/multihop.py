"""Multi-hop rows: two chunks about one specific entity, one answer sentence from each, and one
two-part question that needs both (issue 28).

The corpus supplies what holds a row together before the model writes a word: a sentence of chunk A
and one of chunk B both name a specific entity (a command, an option, a module, a product: code-like,
a manual-page name, a proper name) near their start, written the same way, and B's sentence adds facts
A's does not. The reference answer is both sentences; both chunks are gold.

Who writes the two parts. With answer-first rows a reviewer approved in the project, the first part
is one of those questions and the model writes only the second, answer-first, for B's sentence
(built_on_rows). Without any (every new project), a rule writes both: where both sentences open with
the entity as their subject ("IDLE is ...", "The `gc` module provides ...", "... are guarded by the
GIL"), each has the question it answers ("What is IDLE?"), and the pair is joined (both_by_rule). The
bundled 135M model's own parts were measured and are off by default (MODEL_WRITES_SECOND_PART): asked
for both questions at once it kept about one pair in 70, all muddled; with a rule's first part and its
own second, 3 of 15 kept rows were usable (docs/benchmarks.md, "Multi-hop rows"). A run
reads the corpus's names and the approved rows once (RunScope, made by plan.plan_tasks) and gives
each approved row to one task.

A question is kept only when neither sentence alone answers it: each part names the entity, the
joined question holds words only sentence A holds and words only sentence B holds (not asked of a
row made by rule, whose words are its sentences' subject and verb), and each part leads to its own
sentence (the generating model's likelihood gain at least MIN_SENTENCE_GAIN) more than to the other.
Entity and partner are found with the project's full-text index, never with a retriever under test.
"""

from __future__ import annotations

import json
import random
import re
from functools import cached_property
from typing import Optional

import sqlite_utils

from curator.core import store
from curator.core.generation import filters
from curator.core.generation.answers import MIN_ANSWER_GAIN, answer_sentences
from curator.core.generation.prompts import (ASKED_QUESTION_UNITS, QUESTION_OPENER_RULE, _UNIT_RULE,
                                             build_answer_first_messages, parse_query, parse_question_pair)
from curator.core.generation.unanswerable import DETAIL_FAMILIES, corpus_mentions
from curator.core.generation.multihop_rules import (ARTICLES, URL, named, names_entity, rule_pair_differs,
                                                 rule_question, second_stands_alone, spelled_alike)
from curator.core.queries.words import STOPWORDS, content_words, stems

_KNOWN_NAMES = {name for names in DETAIL_FAMILIES.values() for name in names}
# An entity: `code`, a dotted or underscored name, a call "f()", an option "--all", a CamelCase or
# ALLCAPS name, or a word with letters and digits ("ext4", "utf8").
_CODE = re.compile(r"`([^`\s]{2,40})`")
_ENTITY = re.compile(r"(?<![\w.-])(--?[a-z][\w-]+|[A-Za-z_]\w*(?:[._]\w+)+(?:\(\))?|[A-Za-z_]\w*\(\)"
                     r"|[A-Z][a-z]+[A-Z]\w*|[A-Z]{2,}[0-9]*|[a-z]+[0-9]+[a-z0-9]*)(?![\w-])")
_CAPITALISED = re.compile(r"(?<=\s)([A-Z][a-z]{2,})\b")
# Plain-text manuals name their commands without backticks ("dpkg", "apt-get" in the Debian FAQ);
# the corpus itself says which words are names where it cites their manual page: "apt-get(8)". (A
# word before an option, "dpkg --list", also took prose: "specify -O".)
_NAME_IN_USE = re.compile(r"(?<![\w/.-])([a-z][a-z0-9+.-]*[a-z0-9])\([1-8]\)")
_MID_SENTENCE_CAPITAL = re.compile(r"(?<=[a-z,] )([A-Z][a-z]{2,})\b")
# A sentence that sends the reader elsewhere answers no question of its own ("Read apt's manual pages
# for more information.", "Consult the guide for complete documentation for pip.").
_POINTER = re.compile(r"\b(for (more|further|complete) (information|info|details|documentation)|for details"
                      r"|more info|refer to|please see|consult|see the|read the)\b", re.I)
MAX_ENTITY_SHARE = 0.2  # an entity in more chunks than this share names the corpus's subject, not one thing
MIN_ENTITY_CAP = 6
TOPIC_WORDS = 12  # the entity must be among a sentence's first words: what the sentence is about
MIN_NEW_WORDS = 3  # content words sentence B must add to sentence A, and A to B, to be a second fact
MAX_SHARED = 0.5  # Jaccard of the two sentences' stems above which they say the same thing
MAX_OPTIONS = 6  # sentence pairs kept per chunk (each retry asks about the next)
PARTNER_CHUNKS = 8  # chunks naming the entity looked at, per entity
RULE_PARTNER_CHUNKS = 60  # the same for pairs made wholly by rule (both_by_rule)
MIN_SENTENCE_GAIN = MIN_ANSWER_GAIN  # each question of the pair against its sentence, as an answer-first row
# How much more a part must raise its own sentence's likelihood than the other sentence's (nats per
# answer token): above zero, so a part both sentences answer alike does not count as needing its own.
MIN_OWN_MARGIN = 0.0
_NOT_NAMES = {"i.e", "e.g", "etc", "vs"}  # abbreviations the dotted-name pattern takes for names


def corpus_names(db: sqlite_utils.Database) -> frozenset[str]:
    """Words the corpus writes as command or program names (it cites their manual page, "x(8)"), read
    from the active chunks as they are now (a run reads them once: RunScope)."""
    found, capitalised, lower = set(), set(), set()
    for (text,) in db.execute("SELECT text FROM chunks WHERE active = 1"):
        text = URL.sub(" ", text)
        found.update(m.group(1) for m in _NAME_IN_USE.finditer(text))
        capitalised.update(_MID_SENTENCE_CAPITAL.findall(text))
        lower.update(re.findall(r"\b[a-z]\w+", text))
    # A proper name: written capitalised after a lowercase word, never in lower case ("Jessie",
    # "Hurd", "Tkinter"; not "Package" in a title-cased heading that also says "package").
    found |= {w for w in capitalised if w.lower() not in lower}
    return frozenset(n for n in found if n.lower() not in STOPWORDS and len(n) >= 3)


class RunScope:
    """What one generation run reads once and shares among its multi-hop tasks: the corpus's names,
    the chunk count, the approved rows that may start a row, and the ones a task of this run has
    claimed. Made per run (plan.plan_tasks), so chunks ingested or rows approved between runs
    are seen by the next one, and no module-level cache keeps a project connection alive."""

    def __init__(self, db: sqlite_utils.Database):
        self.db = db
        self.claimed: set[str] = set()  # first_row ids a task of this run already asks with

    @cached_property
    def names(self) -> frozenset[str]:
        return corpus_names(self.db)

    @cached_property
    def total(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM chunks WHERE active = 1").fetchone()[0]

    @cached_property
    def first_parts(self) -> list[dict]:
        """Approved answer-first rows not yet the first part of a stored multi-hop row, by quality."""
        return _first_part_rows(self.db)

    @cached_property
    def builds_on_rows(self) -> bool:
        """Whether the project holds any approved row of a first-part type (then the run builds on
        them and asks no sentence pairs)."""
        return _has_first_parts(self.db)

    @cached_property
    def used_sentences(self) -> set[str]:
        """Sentences already a part of a stored multi-hop row, and of the first pair a task of this run
        asks (rule_first_pairs adds them): one sentence makes one row. Without this, the Python FAQ's
        three Cython sentences made two rows that share one ("What are Cython and Pyrex, and what can
        Cython do?", "What does Cython compile, and what are Cython and Pyrex?")."""
        used = set()
        for (signals,) in self.db.execute("SELECT quality_signals FROM queries WHERE query_type = 'multi_hop'"):
            used.update((json.loads(signals or "{}").get("multi_hop") or {}).get("sentences") or [])
        return used

    def claim(self, found: list[dict]) -> list[dict]:
        """``found`` without options whose first row another task of this run claimed; claims the rest.
        Two tasks in flight asking with one approved question made two rows with the same first part."""
        kept = [o for o in found if o.get("first_row") not in self.claimed]
        self.claimed.update(o["first_row"] for o in kept if o.get("first_row"))
        return kept


def entities(sentence: str, names: frozenset[str] = frozenset()) -> list[str]:
    """Specific names in a sentence, in order: code, dotted names, options, acronyms, known products,
    and ``names`` (the corpus's own command names). Addresses are not names: "www.gnu.org" in two
    links says nothing about what the two sentences share."""
    sentence = URL.sub(" ", sentence)
    found = [m.group(1) for m in _CODE.finditer(sentence)]
    found += [m.group(1) for m in _ENTITY.finditer(sentence)]
    # A capitalised word counts only as a known name ("Moreover", "United" after a bracket are not entities).
    found += [w for w in _CAPITALISED.findall(sentence) if w in _KNOWN_NAMES]
    found += [w for w in re.findall(r"[A-Za-z][A-Za-z0-9+.-]*[A-Za-z0-9]", sentence) if w in names and named(w, sentence)]
    return [e for e in dict.fromkeys(found) if len(e) >= 2 and e.lower() not in STOPWORDS | _NOT_NAMES]


def _fact(sentence: str) -> bool:
    return not _POINTER.search(sentence)


def same_sense(entity: str, first: str, second: str) -> bool:
    """Whether two sentences name the entity the same way: written as `code` in one, it must be code in
    the other too (the `global` statement is not "a global interpreter lock")."""
    return (f"`{entity}" in first) == (f"`{entity}" in second)


def about(entity: str, sentence: str) -> bool:
    """Whether the sentence is about the entity: it names it among its first TOPIC_WORDS words.
    Linking "Eric is an IDE ..." and "IDLE is an IDE ..." through "IDE" made a muddle of a question."""
    return named(entity, " ".join(URL.sub(" ", sentence).split()[:TOPIC_WORDS]))


def _specific(db: sqlite_utils.Database, entity: str, total: int) -> bool:
    """Named in at least two chunks (another one to link to) and in few enough to mean one thing."""
    mentions = corpus_mentions(db, entity)
    return 2 <= mentions <= max(MIN_ENTITY_CAP, MAX_ENTITY_SHARE * total)


def _chunks_naming(db: sqlite_utils.Database, entity: str, exclude: str, limit: int = PARTNER_CHUNKS) -> list[dict]:
    """Active chunks whose text spells the entity as a whole word, other than ``exclude``, by id."""
    words = re.findall(r"\w+", entity.lower())
    rows = store.rows(db, """SELECT c.id, c.doc_id, c.title, c.text FROM chunks_fts JOIN chunks c
                             ON c.rowid = chunks_fts.rowid WHERE chunks_fts MATCH ? AND c.active = 1 AND c.id != ?
                             ORDER BY c.id LIMIT ?""", ['"' + " ".join(words) + '"', exclude, limit * 4])
    return [r for r in rows if named(entity, r["text"])][:limit]


def second_fact(first: str, second: str) -> bool:
    """Whether ``second`` says something ``first`` does not, and the other way round."""
    a, b = stems(first), stems(second)
    if not a or not b or len(a & b) / len(a | b) > MAX_SHARED:
        return False
    return len(b - a) >= MIN_NEW_WORDS and len(a - b) >= MIN_NEW_WORDS


def options(db: sqlite_utils.Database, chunk: dict, seed: int, scope: Optional[RunScope] = None) -> list[dict]:
    """What a multi-hop task about ``chunk`` may ask: when the project holds approved answer-first rows,
    one of those questions (about another chunk's sentence) joined to the question the model writes
    for a sentence of ``chunk`` about the same entity (built_on_rows); in a project without any, a
    pair of sentences for the model to write both questions of (sentence_pairs). Seeded order.
    ``scope``: the run's shared reads and claims (a one-task scope without it)."""
    scope = scope or RunScope(db)
    if scope.builds_on_rows:  # a chunk with no row to build on is skipped, not asked the weak way
        return scope.claim(built_on_rows(db, chunk, seed, scope))
    return rule_first_pairs(db, chunk, seed, scope)


# Whether a project without approved rows also gets rows whose second part the model writes (a rule
# writing the first). Labelled on the Python FAQ (2026-12-05 night, code s37_mh in
# bench/quality_labels_issue28.jsonl): 3 of 15 such rows usable (1 of 11 with the prompt kept), against
# the 3 distinct rows made wholly by rule on the Python and Debian FAQs, all usable. A wrong multi-hop
# row costs a reviewer more than a missing one, so they are off (bench/multihop.py --model-parts).
MODEL_WRITES_SECOND_PART = False


def rule_first_pairs(db: sqlite_utils.Database, chunk: dict, seed: int, scope: Optional[RunScope] = None) -> list[dict]:
    """Options of ``chunk`` whose first part a rule writes (rule_question), that sentence first: pairs
    whose second sentence has a rule question too (the row is made by rule; both_by_rule), then
    sentence_pairs with one such sentence, the model to write the other part. The other sentence's
    chunk heading goes with each, for the model's prompt. A pair with no such sentence is not asked."""
    scope = scope or RunScope(db)
    found = both_by_rule(db, chunk, scope)
    for option in (sentence_pairs(db, chunk, seed, scope) if MODEL_WRITES_SECOND_PART else []):
        titles = [chunk.get("title") or "", option["partner"].get("title") or ""]
        for i in (0, 1):
            question = rule_question(option["sentences"][i], option["entity"])
            if question and second_stands_alone(option["sentences"][1 - i]):
                sentences = [option["sentences"][i], option["sentences"][1 - i]]
                found.append({**option, "sentences": sentences, "answer": " ".join(sentences),
                              "first_question": question, "first_by": "rule", "second_title": titles[1 - i]})
                break
    seen, kept = set(), []
    for option in found:  # one option per pair of sentences, the rule-made one first
        key = frozenset(option["sentences"])
        if key not in seen and not key & scope.used_sentences:
            seen.add(key)
            kept.append(option)
    if kept and made_by_rule(kept[0]):  # the task asks its first option, which no likelihood check rejects
        scope.used_sentences.update(kept[0]["sentences"])
    return kept[:MAX_OPTIONS]


def made_by_rule(option: Optional[dict]) -> bool:
    """Whether a rule wrote both parts of the option's row (both_by_rule): asking again gives the same."""
    return bool(option and option.get("second_question") and option.get("first_by") == "rule")


def both_by_rule(db: sqlite_utils.Database, chunk: dict, scope: RunScope) -> list[dict]:
    """Pairs of a sentence of ``chunk`` and one of another chunk, both about one specific entity and
    each with a rule question: every sentence of the chunks naming the entity is looked at (not only
    the first that fits, as sentence_pairs does). The model's request then spells the second rule
    question by grammar (part_grammar), so the row goes through the same checks as any other."""
    found = []
    for first in filter(_fact, answer_sentences(chunk["text"])):
        for entity in (e for e in entities(first, scope.names) if about(e, first)):
            question = rule_question(first, entity)
            if not question or not _specific(db, entity, scope.total):
                continue
            # every chunk naming the entity: few of their sentences have a rule question
            for partner in _chunks_naming(db, entity, chunk["id"], RULE_PARTNER_CHUNKS):
                for second in filter(_fact, answer_sentences(partner["text"])):
                    other = rule_question(second, entity)
                    if (other and same_sense(entity, first, second) and second_fact(first, second)
                            and rule_pair_differs(question, other) and spelled_alike(entity, first, second)):
                        found.append({"answer": f"{first} {second}", "sentences": [first, second], "entity": entity,
                                      "partner": {"id": partner["id"], "title": partner["title"], "text": partner["text"]},
                                      "first_question": question, "first_by": "rule", "second_question": other,
                                      "second_title": partner["title"]})
    return found


# Shown the entity only in the heading, the model left it out of most parts; spelled by the grammar
# (second_part_grammar) it was always there but the words after it were often garbled ("... and how,
# logging, is it supported?"). Which costs fewer usable rows is measured (docs/benchmarks.md).
FORCE_ENTITY = False


def part_grammar(option: dict) -> Optional[str]:
    """The grammar of the second part: the rule's question spelled whole when a rule wrote it
    (both_by_rule); else the entity spelled in it (FORCE_ENTITY), or None for the plain answer-first
    question grammar (the part is then checked for naming it)."""
    if option.get("second_question"):
        literal = option["second_question"].replace("\\", "\\\\").replace('"', '\\"')
        return f'root ::= "Question: {literal}\\n"\n'
    return second_part_grammar(option["entity"]) if FORCE_ENTITY else None


# The examples the model is shown for the second part. The built-in answer-first examples ask in
# everyday words without naming the subject ("How do I wipe everything I changed on my router?"): after
# them the model left the entity out of most second parts. Examples that name their subject, and last
# the row's own first part (its sentence and question), took the parts passing the naming and row
# filters from 17 to 29 of 48 on the Python FAQ (2026-12-05, docs/benchmarks.md).
NAMED_SHOTS = [
    ("rsync manual > --delete", "The --delete option removes files from the destination that no longer exist in "
     "the source.", "What does the --delete option of rsync remove?"),
    ("Printer guide > Toner", "Replace the toner cartridge when the status light blinks orange twice.",
     "When should I replace the toner cartridge?"),
    ("Git book > git stash", "Running git stash saves your uncommitted changes and gives you a clean working tree.",
     "What does git stash do with my uncommitted changes?"),
]


def second_part_messages(option: dict, title: str) -> list[dict]:
    """The answer-first prompt for the second sentence: examples that name their subject, then the
    row's first part as the last example, then the second sentence under ``title``."""
    shots = NAMED_SHOTS + [(title, option["sentences"][0], option["first_question"])]
    return build_answer_first_messages("factoid", title, option["sentences"][1], shots)


def part_reason(question: Optional[str], sentence: str, option: dict) -> Optional[str]:
    """The first lexical reason to reject the part the model wrote for ``sentence`` (None = keep): the
    answer-first row filters against its own sentence (shape, loops, invented names, it shares a word
    with the sentence, the sentence adds to it)."""
    reason = filters.check_row(question or "", sentence, "factoid", [sentence], sentence,
                               filters.DuplicateIndex([]), extractive=True)
    return f"multi-hop part: {reason}" if reason else None


def _has_first_parts(db: sqlite_utils.Database) -> bool:
    marks = ",".join("?" * len(FIRST_PART_TYPES))
    return bool(db.execute(f"SELECT 1 FROM queries WHERE source = 'synthetic' AND answerable = 1 AND status = ? "
                           f"AND query_type IN ({marks}) LIMIT 1", [FIRST_PART_STATUS, *FIRST_PART_TYPES]).fetchone())


# Asked to write two questions at once, the bundled model kept a pair about one time in 70
# (2026-12-05: 1 kept of 72 candidates, 3 runs, all muddled): it drops the entity, repeats its first
# question or mixes the two facts. It writes one question for one sentence better (answer-first rows,
# about 35% kept). So a multi-hop row reuses an answer-first question a reviewer approved as its first
# part, and the model writes only the second, for one sentence, with the answer-first prompt. Only
# approved ones: built on kept but unreviewed rows (2-3 in 10 usable), the first parts were as bad as
# the rows they came from ("How to add a PEP 5 to a website without changing any pages?").
FIRST_PART_TYPES = ("factoid",)
FIRST_PART_STATUS = "approved"


def built_on_rows(db: sqlite_utils.Database, chunk: dict, seed: int, scope: Optional[RunScope] = None) -> list[dict]:
    """Options joining a kept answer-first row of another chunk (its question and answer sentence)
    to a sentence of ``chunk`` about the same entity that says something else; rows ``scope``
    claimed for other tasks are not offered, and one row starts one option at most."""
    scope = scope or RunScope(db)
    found, offered = [], set(scope.claimed)
    for second in filter(_fact, answer_sentences(chunk["text"])):
        for entity in (e for e in entities(second, scope.names) if about(e, second) and _specific(db, e, scope.total)):
            row = next((r for r in _rows_about(scope.first_parts, entity, chunk["id"])
                        if r["id"] not in offered and _fact(r["reference"]) and about(entity, r["reference"])
                        and same_sense(entity, r["reference"], second)
                        and second_fact(r["reference"], second)), None)
            if row is None:
                continue
            partner = store.rows(db, "SELECT id, title, text FROM chunks WHERE id = ?", [row["chunk_id"]])
            if partner:
                offered.add(row["id"])
                found.append({"answer": f"{row['reference']} {second}", "sentences": [row["reference"], second],
                              "entity": entity, "first_question": row["text"], "first_row": row["id"],
                              "partner": partner[0]})
    random.Random(f"{seed}:{chunk['id']}:multi_hop").shuffle(found)
    return found[:MAX_OPTIONS]


def _first_part_rows(db: sqlite_utils.Database) -> list[dict]:
    """Approved answer-first rows from one chunk each, not yet the first part of a stored multi-hop
    row, by quality score: read once per run (RunScope), then matched to entities in Python."""
    marks = ",".join("?" * len(FIRST_PART_TYPES))
    rows = store.rows(db, f"""SELECT id, text, reference, source_chunk_ids FROM queries q
                             WHERE source = 'synthetic' AND answerable = 1 AND status = ?
                             AND query_type IN ({marks})
                             AND NOT EXISTS (SELECT 1 FROM queries m WHERE m.query_type = 'multi_hop'
                                             AND instr(m.quality_signals, '"first_row":"' || q.id || '"'))
                             ORDER BY quality DESC, id""", [FIRST_PART_STATUS, *FIRST_PART_TYPES])
    kept = []
    for row in rows:
        sources = json.loads(row["source_chunk_ids"] or "[]")
        if len(sources) == 1 and row["reference"]:
            kept.append({**row, "chunk_id": sources[0]})
    return kept


def _rows_about(rows: list[dict], entity: str, exclude_chunk: str) -> list[dict]:
    """Of ``rows`` (_first_part_rows), those whose question names the entity and whose answer
    spells it, from a chunk other than ``exclude_chunk``, in their order."""
    spelled = entity.lower()
    return [r for r in rows if r["chunk_id"] != exclude_chunk and spelled in r["reference"].lower()
            and names_entity(r["text"], entity)]


# The second part's words before and after the entity, in grammar units: together with the opener, the
# entity, the space before it and the '?' they fit an answer-first question (ASKED_QUESTION_GRAMMAR,
# QUESTION_CHARS). Unbounded (80 + 80) they let a part run to about 330 characters.
SECOND_PART_MIN_BEFORE = 4


def second_part_grammar(entity: str) -> str:
    """The answer-first question grammar with the entity spelled as a word of its own: shown it in
    the heading, the model still left it out of 11 of 18 (Debian) and 16 of 27 (Python) second parts.
    The words around the entity share the answer-first question's length: half before, half after."""
    literal = '"' + entity.replace("\\", "\\\\").replace('"', '\\"') + '"'
    room = max(2 * SECOND_PART_MIN_BEFORE, ASKED_QUESTION_UNITS - len(entity) - 1)
    before = max(SECOND_PART_MIN_BEFORE, room // 2)
    return (f'\nroot ::= "Question: " opener unit{{{SECOND_PART_MIN_BEFORE},{before}}} " " {literal} tail "?\\n"\n'
            f'tail ::= "" | [ ,\'] unit{{0,{room - before - 1}}}\n' + QUESTION_OPENER_RULE + _UNIT_RULE + "\n")


def sentence_pairs(db: sqlite_utils.Database, chunk: dict, seed: int, scope: Optional[RunScope] = None) -> list[dict]:
    """Sentence pairs a multi-hop task may ask the model both questions of: a sentence of ``chunk`` and one of another chunk,
    both about the same specific entity (naming it near their start), chunks of other documents
    first; seeded order."""
    scope = scope or RunScope(db)
    found = []
    for first in filter(_fact, answer_sentences(chunk["text"])):
        for entity in (e for e in entities(first, scope.names) if about(e, first) and _specific(db, e, scope.total)):
            partners = _chunks_naming(db, entity, chunk["id"])
            partners.sort(key=lambda p: p.get("doc_id") == chunk.get("doc_id"))
            for partner in partners:
                pair = next((s for s in answer_sentences(partner["text"])
                             if _fact(s) and about(entity, s) and same_sense(entity, first, s)
                             and second_fact(first, s)), None)
                if pair:
                    found.append({"answer": f"{first} {pair}", "sentences": [first, pair], "entity": entity,
                                  "partner": {"id": partner["id"], "title": partner["title"], "text": partner["text"]}})
                    break
    random.Random(f"{seed}:{chunk['id']}:multi_hop").shuffle(found)
    return found[:MAX_OPTIONS]


def join(first: str, second: str, entity: Optional[str] = None) -> str:
    """One two-part question: "How do I reset my router, and what is the Wi-Fi password afterwards?".
    Given the entity, a phrase naming it that the second part repeats from the first becomes "it"
    ("What is the GIL, and where is it used?"): both parts must name the entity, and said twice it
    read as a loop (the repetition check rejected 26 of 72 candidates for it)."""
    if entity:
        second = _refer_back(first, second, entity)
    return f"{first.rstrip(' ?')}, and {second[:1].lower()}{second[1:]}"


def _refer_back(first: str, second: str, entity: str) -> str:
    """``second`` with its longest word span that ``first`` also holds and that names ``entity``
    (from an article to the entity or one word past it, three words or more) replaced by "it";
    unchanged when there is none."""
    words_1, words_2 = first.rstrip(" ?").split(), second.rstrip(" ?").split()
    lower_1 = [w.lower() for w in words_1]
    best = None
    for i in range(len(words_2)):
        for j in range(len(words_2), i, -1):
            span = [w.lower() for w in words_2[i:j]]
            if (best and j - i <= best[1] - best[0]) or not _contains(lower_1, span):
                continue
            named_at = [k for k in range(i, j) if names_entity(words_2[k], entity)]
            # a noun phrase of three words or more, from an article to the entity or one word past it
            # ("the `re` module"): the bare entity is often a modifier ("the HTTP method" is not "the it method")
            if named_at and span[0] in ARTICLES and j - i >= 3 and j - 1 - named_at[-1] <= 1:
                best = (i, j)
    if best is None or best[0] == 0:  # the question's first word stays a question word
        return second
    i, j = best
    tail = "its" if words_2[j - 1].lower().endswith(("'s", "\u2019s")) else "it"
    return " ".join(words_2[:i] + [tail] + words_2[j:]) + "?"


def _contains(words: list[str], span: list[str]) -> bool:
    return any(words[k:k + len(span)] == span for k in range(len(words) - len(span) + 1))


def parts_of(raw: str, option: dict) -> Optional[tuple[str, str]]:
    """The two questions of a multi-hop row: the kept row's question and the reply's one
    'Question:' line (built_on_rows), or the reply's two 'Question N:' lines (sentence_pairs)."""
    if option.get("first_question"):
        second = parse_query(raw)
        return (option["first_question"], second) if second else None
    return parse_question_pair(raw)


def joined(raw: str, option: Optional[dict] = None) -> Optional[str]:
    """The joined question of a multi-hop reply, or None."""
    parts = parts_of(raw, option or {})
    return join(*parts, (option or {}).get("entity")) if parts else None


def capped_text(option: Optional[dict], raw: str, question: str) -> Optional[str]:
    """What of a multi-hop question the chunk-overlap cap judges (checks._overlap_check): the part
    the model wrote. A rule's question copies its sentence's subject and verb by design ("What does
    the gc module provide?"), which put joined questions over the cap (11 of 83 candidates in one
    run); a row made wholly by rule has no model part to cap (None)."""
    if not option or not option.get("first_question"):
        return question
    return None if option.get("second_question") else parse_query(raw)


def hits(question: str, sentences: list[str]) -> tuple[set[str], set[str]]:
    """The question's stems found only in the first sentence, and only in the second."""
    asked, (a, b) = stems(question), (stems(s) for s in sentences)
    return asked & (a - b), asked & (b - a)


def judge(raw: str, option: dict, answer_check=None) -> tuple[Optional[str], dict]:
    """(reason to reject or None, signals) of a multi-hop reply. Each question of the pair must name
    the entity, and the joined question must hold words only the first sentence holds and words only
    the second holds. Then, with the likelihood check: each part must lead to its own sentence (gain at
    least MIN_SENTENCE_GAIN) and more than to the other sentence, so neither sentence alone answers
    the joined question and the two parts do not ask one thing twice."""
    parts = parts_of(raw, option) or ("", "")
    first, second = hits(join(*parts), option["sentences"])  # the parts as written: "it" holds no word
    signals = {"entity": option["entity"], "sentences": option["sentences"], "partner": option["partner"]["id"],
               **({"first_row": option["first_row"]} if option.get("first_row") else {}),
               "parts": list(parts), "words_only_in_first": sorted(first), "words_only_in_second": sorted(second)}
    unnamed = [i for i, part in enumerate(parts) if not names_entity(part, option["entity"])]
    if unnamed:
        return f"multi-hop: the {('first', 'second')[unnamed[0]]} question does not name '{option['entity']}'", signals
    by_rule = made_by_rule(option)
    if by_rule:
        signals["made_by"] = "rule"
    elif option.get("first_question"):  # the part the model just wrote, as an answer-first row of its sentence
        reason = part_reason(parts[1], option["sentences"][1], option)
        if reason:
            return reason, signals
    # A rule asks with the sentence's own subject and verb ("What can Cython do, and what does Cython
    # compile?"): its words say little of which sentence answers, so the likelihood margins decide.
    if not by_rule and (not first or not second):
        alone = "first" if first else "second" if second else "either"
        return (f"multi-hop: the question asks about the {alone} sentence only" if alone != "either"
                else "multi-hop: the question holds no word of either sentence beyond what they share"), signals
    if filters.jaccard(content_words(parts[0]), content_words(parts[1])) >= filters.NEAR_DUPLICATE_JACCARD:
        return "multi-hop: the two questions ask the same thing", signals
    if answer_check is None:
        return None, signals
    reason = _likelihood_reason(answer_check, parts, option["sentences"], signals)
    if reason and by_rule and not RULE_ROWS_FILTERED_BY_LIKELIHOOD:
        signals["likelihood_note"] = reason  # shown to the reviewer, not a reason to reject (see the flag)
        return None, signals
    return reason, signals


# Whether the likelihood check rejects rows a rule wrote both parts of. Each part is written from its
# own sentence and the two differ by MIN_RULE_PAIR_DIFFERENCE words, so neither sentence alone answers
# the pair by construction; the bundled model's gains on such short questions did not tell usable rows
# from others: labelled on the Python and Debian FAQs (bench/quality_labels_s38_mh.jsonl, 2026-12-06),
# it kept 9 rows, all usable, and rejected 13 distinct ones, 12 of them usable (code s38_mh_rejected).
# The gains stay in the row's signals, with the reason the check would have given ("likelihood_note").
RULE_ROWS_FILTERED_BY_LIKELIHOOD = False


def _likelihood_reason(answer_check, parts, sentences, signals: dict) -> Optional[str]:
    """Why the parts fail the likelihood check (None = they pass), the gains stored in ``signals``:
    own[i] is part i's gain on its sentence, other[i] on the other one."""
    own = [answer_check.gain(part, sentence) for part, sentence in zip(parts, sentences)]
    signals["sentence_gains"] = [round(g, 3) for g in own]
    weaker = "first" if own[0] < own[1] else "second"
    if min(own) < MIN_SENTENCE_GAIN:
        return f"multi-hop: the {weaker} question does not lead to its sentence (likelihood gain {min(own):.2f})"
    other = [answer_check.gain(part, sentence) for part, sentence in zip(parts, reversed(sentences))]
    signals["other_sentence_gains"] = [round(g, 3) for g in other]
    margins = [o - x for o, x in zip(own, other)]
    if min(margins) <= MIN_OWN_MARGIN:
        which = ("first", "second")[margins.index(min(margins))]
        return (f"multi-hop: the {which} question leads to the other sentence as well as its own "
                f"(gain {own[margins.index(min(margins))]:.2f} against {other[margins.index(min(margins))]:.2f})")
    return None


def explain(found: dict) -> str:
    """One line for the reviewer: what links the two gold chunks and what the question asks of each."""
    return (f"multi-hop via '{found['entity']}' (chunk {found['partner']}): asks "
            f"{', '.join(found['words_only_in_first'][:3])} of the first sentence and "
            f"{', '.join(found['words_only_in_second'][:3])} of the second")
