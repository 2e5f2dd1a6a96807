"""Multi-hop rows made by rule: the question a rule writes for a sentence whose subject is the entity
both of a row's sentences name ("IDLE is a cross-platform IDE ..." answers "What is IDLE?"), read from
the sentence's shape alone; and whether two such questions ask different things. generation.multihop
pairs the sentences and builds the rows."""

from __future__ import annotations

import re
from typing import Optional

from curator.core.generation.answers import WEAK_OPENERS
from curator.core.queries.words import STOPWORDS, content_words

# Addresses, including the ones a text conversion broke at a slash ("https://www.debian.org/ CD/netinst/").
URL = re.compile(r"(?:https?://|www\.)\s?\S+(?:(?<=/) \S+)*|<[^>\s]+@[^>\s]+>|\S+@\S+")
ARTICLES = {"the", "a", "an"}


def named(entity: str, sentence: str) -> bool:
    """Whether the sentence spells the entity as a whole word ("apt" is not named in "apt-get" or
    "adapt", "echo" not in "echoed"), outside addresses."""
    return bool(re.search(r"(?<![\w.-])" + re.escape(entity) + r"(?![\w-])", URL.sub(" ", sentence)))


def names_entity(question: str, entity: str) -> bool:
    """Whether a question names the entity (any case, backticks or not): a part that drops it does
    not stand alone ("What is a thread lock?" for a sentence about the GIL)."""
    return named(entity.lower(), question.lower().replace("`", ""))


# Rows without approved rows to build on (every new project). Asked for both questions in one reply,
# the bundled model kept about one pair in 70, all muddled; asked for each part in its own request
# (2026-12-05 night, 85 candidates) it kept 5, all unusable: its question for a sentence often asks
# something else ("Can I install a new router without a warranty?" for a PEP), and spelling the
# entity by grammar garbled the words after it. A sentence whose subject is the entity has a question
# a rule writes right: "IDLE is a cross-platform IDE ..." answers "What is IDLE?", "The `gc` module
# provides functions ..." answers "What does the gc module provide?". So the first part is made by
# rule from such a sentence, and the model writes only the second, for the other chunk's sentence,
# as on a row a reviewer approved.
_RULE_VERBS = {"provides", "returns", "takes", "accepts", "contains", "includes", "supports", "displays", "has",
               "matches", "signals", "merges", "describes", "checks", "creates", "allows", "lets", "offers",
               "gives", "defines", "stores", "produces", "implements", "sends", "raises", "calls", "uses",
               "provide", "return", "take", "accept", "contain", "include", "support", "have", "allow", "offer",
               "define", "store", "use", "is", "are", "can", "sets", "controls", "selects", "determines", "specifies",
               "enables", "disables", "prints", "shows", "lists", "runs", "installs", "removes", "manages", "handles",
               "reads", "writes", "opens", "starts", "stops", "keeps", "builds", "compiles", "converts", "adds",
               "updates", "answers", "works", "means", "helps", "requires", "expects", "needs", "receives",
               "represents", "saves", "splits", "tells", "waits", "wraps", "yields", "loads", "dumps", "accesses",
               "executes", "evaluates", "imports", "exports", "caches", "parses", "formats", "encodes", "decodes"}
_ARTICLE = re.compile(r"^(the|a|an)\b", re.I)
MAX_SUBJECT_WORDS = 5


_NOT_IN_SUBJECT = {"of", "being", "will", "would", "may", "might", "should", "must", "to", "for", "in", "on", "with",
                   "like", "if", "when", "since", "only", "also", "not", "now", "then", "this", "that"}


def _rule_subject(subject: str, entity: str) -> bool:
    """Whether the words before the verb are a plain noun phrase naming the entity: an article or the
    entity first, no clause or preposition in it ("On Windows, use ...", "The end of the RE has ...",
    "Sometimes using the re module is ..." are not)."""
    words = subject.split()
    if not words or not names_entity(subject, entity) or re.search(r"[,;:\[\]\"“‘]", subject.replace("()", "")):
        return False
    first_ok = words[0].lower() in ARTICLES or names_entity(words[0], entity)
    return first_ok and not any(w.lower() in _NOT_IN_SUBJECT for w in words)


# Manuals say how to use a command as advice to "you": "You can use aptitude through a visual interface
# ...", "To use apt-get, edit the /etc/apt/sources.list file ...", "Before you can use aptitude to make
# an upgrade, you'll have to edit ...": each answers the user's "how do I use it" question.
_YOU_CAN_USE = re.compile(r"^You can use (?P<e>\S+) (?:through|with|from|by|in|to|as)\b")
_TO_USE = re.compile(r"^To use (?P<e>\S+?),")
_BEFORE_USE = re.compile(r"^Before you can use (?P<e>\S+) to (?P<goal>[^,]{3,60}),")


# Two more shapes that name their question: what the entity does to something, said in the passive
# ("Changes to the refcount are guarded by the GIL." -> "What is guarded by the GIL?"), and a goal
# reached through it ("To prevent the TCP connect from blocking, you can set the socket to
# non-blocking mode." -> "How can I prevent the TCP connect from blocking?").
_PASSIVE_BY = re.compile(r"^[A-Z][^,;:]{3,60}? (?P<be>is|are) (?P<done>[a-z]+ed) by "
                         r"(?P<agent>(?:the |a |an )?\S+(?: [a-z]+){0,2})[.,]")
_TO_GOAL = re.compile(r"^To (?P<goal>(?!use\b)[a-z][^,]{5,70}), you (?:can|should|must|need to)\b")


def _other_shapes(sentence: str, entity: str) -> Optional[str]:
    passive = _PASSIVE_BY.match(sentence)
    if passive and names_entity(passive.group("agent"), entity):
        agent = passive.group("agent").replace("`", "")
        return f"What is {passive.group('done')} by {agent}?"
    goal = _TO_GOAL.match(sentence)
    if goal and names_entity(goal.group("goal"), entity):
        return f"How can I {goal.group('goal').replace('`', '')}?"
    return None


def _using_question(sentence: str, entity: str) -> Optional[str]:
    other = _other_shapes(sentence, entity)
    if other:
        return other
    found = _YOU_CAN_USE.match(sentence) or _TO_USE.match(sentence) or _BEFORE_USE.match(sentence)
    if not found or found.group("e").strip("`") != entity:
        return None
    if "goal" in found.groupdict():
        return f"What do I need to do before I can use {entity} to {found.group('goal')}?"
    return f"How can I use {entity}?" if found.re is _YOU_CAN_USE else f"What do I need to do to use {entity}?"


def rule_question(sentence: str, entity: str) -> Optional[str]:
    """The question a sentence answers when its subject names the entity and its verb says what the
    subject is, does or holds; None for any other sentence. "TCP is a reliable protocol ..." -> "What
    is TCP?"; "The `addstr()` method takes a Python string ..." -> "What does the addstr() method take?";
    "The `select` module is commonly used to help ..." -> "What is the select module used for?".
    A sentence that opens with a marker or a setting ("For instance, the built-in `range()` function
    expects ...", "In Python's string literals, `\\b` is ...") is asked without the marker and with
    the setting at the end ("What is \\b in Python's string literals?"); one that tells the reader to use
    the entity for a goal ("To read binary data, use the `struct` module.") asks what it is used for;
    one whose subject names the entity in the passive ("... the `NullHandler` class is defined in the
    core logging package.") asks where, how or by what (WIDER_SHAPES: issue 28, session 38)."""
    using = _using_question(sentence, entity)
    if using:
        return using
    direct = _subject_question(sentence, entity)
    if direct or not WIDER_SHAPES:
        return direct
    return _wider_question(sentence, entity)


# Words ending in -s after "are" that are no plural noun: adverbs and adjectives ("are always
# available", "are dangerous to mix", "are perhaps ...").
_NOT_PLURAL = frozenset({"always", "sometimes", "perhaps", "besides", "nowadays", "afterwards", "towards", "thus",
                         "whereas", "unless", "less", "various", "yours", "ours", "theirs", "hers", "its", "this",
                         "these", "those", "us", "was", "has", "does", "is", "yes"})


def _plural_noun(word: str) -> bool:
    """Whether a word after "are" reads as a plural noun ("compilers"), not an adverb or adjective
    ("always", "dangerous", "obvious"), nor a singular in -ss, -us or -is ("class", "status", "basis")."""
    return bool(re.fullmatch(r"[a-z]{4,}s", word)) and word not in _NOT_PLURAL \
        and not word.endswith(("ss", "us", "is", "wards"))


def _subject_question(sentence: str, entity: str) -> Optional[str]:
    """rule_question for a sentence that opens with its subject (no marker, no setting before it)."""
    words = sentence.split()
    verb_at = next((i for i, w in enumerate(words[:MAX_SUBJECT_WORDS + 1]) if w.lower() in _RULE_VERBS), None)
    if not verb_at:
        return None
    subject = " ".join(words[:verb_at]).replace("`", "")
    if not _rule_subject(subject, entity):
        return None
    subject = _ARTICLE.sub(lambda m: m.group(1).lower(), subject)
    verb, rest = words[verb_at].lower(), [w.lower().strip(",.;") for w in words[verb_at + 1:verb_at + 4]]
    if verb in ("is", "are"):
        if "used" in rest[:2]:
            return f"What {verb} {subject} used for?"
        if rest and rest[0] in ("a", "an", "the", "one"):
            return f"What {verb} {subject}?"
        if WIDER_SHAPES and verb == "are" and rest and _plural_noun(rest[0]):
            return f"What are {subject}?"  # "Cython and Pyrex are compilers that ..."
        return None
    if verb == "can":
        if rest[:2] == ["be", "used"]:
            return f"What can {subject} be used for?"
        # "`select` can be handy even with blocking sockets" does not say what select does
        return None if rest[:1] == ["be"] and WIDER_SHAPES else f"What can {subject} do?"
    plural = not verb.endswith("s")
    return f"What {'do' if plural else 'does'} {subject} {verb if plural else _base_form(verb)}?"


# Whether rule_question also reads the wider shapes below (a marker or a setting before the subject,
# "use X to ...", a passive whose subject names the entity). Session 37's rule found 4 pairs in the
# Python FAQ and 1 in the Debian FAQ; of the Python FAQ's 35 specific entities with one subject-first
# sentence and another chunk's sentence about them, most partner sentences have one of these shapes.
WIDER_SHAPES = True

# Markers that tie a sentence to what came before it and say nothing of its own: dropped before the
# subject ("For instance, the built-in `range()` function expects ..." -> "... range() function expect?").
_MARKER = re.compile(r"^(?:for (?:example|instance)|actually|also|however|similarly|likewise|in addition|"
                     r"in fact|by default|in general|in practice|of course|therefore|thus|so|now|note that|"
                     r"in particular|generally|usually|normally|typically|fortunately|unfortunately|in contrast|"
                     r"in short|in other words|in this case|in that case|in summary|in turn|on the other hand|"
                     r"on one hand|as you can see|as a result|as such)\b,?\s+", re.I)
# A setting before the subject, kept for the end of the question ("In Python's string literals, ..."):
# a short phrase after "in", "on", "under", "within" or "inside", ended by a comma.
# "since" only before a version or a number ("Since Python 3.8,"), not a cause ("Since the GIL is held,").
_LEADING_SETTING = re.compile(r"^(?P<setting>(?:(?:in|on|under|within|inside) [^,;:]{3,50}?|"
                              r"(?:since|as of|starting with) (?=[^,;:]{0,30}\d)[^,;:]{1,50}?)),"
                              r"\s+(?P<rest>.+)$", re.I)
# A setting that points back at what came before ("In the example above,", "In this case,") leans on
# its chunk: the sentence has no question of its own.
_POINTS_BACK = re.compile(r"\b(?:above|below|previous|preceding|following|this|that|these|those|such|"
                          r"the (?:example|case|code|snippet|listing)\b(?! of\b))", re.I)
# "Use X to <goal>", "To <goal>, use X", "For <goal>, use X", "it's best to use X": the sentence says
# what X is used for. The entity's phrase runs from "use" (or an article after it) to the entity and
# at most one word past it ("the `struct` module").
_USE_FOR = re.compile(r"^(?:(?:use|call|run|try)\s+(?P<a>[^,;:]+?)\s+to\s+\w|"
                      r"(?:to|for|if you (?:want|need|wish) to)\s+[^,;:]{5,90},\s+(?:(?:it[’']s|it is) "
                      r"(?:best|better|easiest|simplest) to |you (?:can|should|could) )?(?:use|call|run|try)"
                      r"(?:\s+using)?\s+(?:the command\s+|a command like\s+)?(?P<b>[^,;:]+?)\s*(?:\binstead\s*)?[.;]?$)", re.I)
# Where the phrase of the entity ends: "the `sorted()` function which returns a new sorted list".
_PHRASE_END = re.compile(r"\s+(?:which|that|instead|to|for|with|in|on|and|or)\b.*$")
MAX_USE_WORDS = 4
# The passive: "<subject> is/are <done> <preposition> ..." -> where / by what / from what / how.
_PASSIVE_SUBJECT = re.compile(r"^(?P<subject>.+?) (?P<be>is|are) (?:(?:usually|often|always|normally|"
                              r"typically|now|also|then|automatically) )?(?P<done>[a-z]+(?:ed|en|wn|lt|ne))"
                              r" (?P<prep>by|from|in|into|on|through|with|as|at|when|for)\b")
_PASSIVE_ASK = {"by": "What {be} {s} {done} by?", "from": "What {be} {s} {done} from?", "in": "Where {be} {s} {done}?",
                "into": "What {be} {s} {done} into?", "on": "Where {be} {s} {done}?", "at": "Where {be} {s} {done}?",
                "when": "When {be} {s} {done}?", "as": "How {be} {s} {done}?", "through": "How {be} {s} {done}?",
                "with": "How {be} {s} {done}?", "for": "What {be} {s} {done} for?"}


def _wider_question(sentence: str, entity: str) -> Optional[str]:
    """rule_question's wider shapes: a marker dropped, a leading setting moved to the end, "use X to",
    a passive, a modal verb, a subject "the <noun> of/to X", a gerund subject ("Passing X to Y makes ...")."""
    core = _MARKER.sub("", sentence, count=1)
    setting = _LEADING_SETTING.match(core)
    if setting:
        if _POINTS_BACK.search(setting.group("setting")):
            return None
        asked = _core_question(setting.group("rest"), entity)
        place = setting.group("setting").replace("`", "")
        if asked and not names_entity(place, entity):
            return f"{asked.rstrip('?')} {place[:1].lower()}{place[1:]}?"
        return None
    if core != sentence:
        return _core_question(core, entity)
    return (_use_question(sentence, entity) or _purpose_question(sentence, entity)
            or _core_question(sentence, entity, subject_first=False))


# "For usage in scripts or advanced use cases, apt-get is still preferable or needed." -> "What is
# apt-get preferable for?"
_FOR_PURPOSE = re.compile(r"^For [^,;:]{5,80}, (?P<subject>[^,;:]{2,40}?) (?P<be>is|are) (?:still |often |usually )?"
                          r"(?P<adj>preferable|recommended|needed|required|preferred|best|better|useful|suitable|"
                          r"necessary)\b")


def _purpose_question(sentence: str, entity: str) -> Optional[str]:
    found = _FOR_PURPOSE.match(sentence)
    if not found:
        return None
    subject = found.group("subject").replace("`", "")
    if not _rule_subject(subject, entity):
        return None
    subject = _ARTICLE.sub(lambda m: m.group(1).lower(), subject)
    return f"What {found.group('be')} {subject} {found.group('adj')} for?"


def _core_question(core: str, entity: str, subject_first: bool = True) -> Optional[str]:
    """The shapes of a sentence that opens with its subject, after any marker or setting."""
    return ((_subject_question(core, entity) if subject_first else None) or _passive_question(core, entity)
            or _modal_question(core, entity) or _of_subject_question(core, entity) or _gerund_question(core, entity))


# "dpkg will unpack the archive file ..." -> "What will dpkg unpack?"
_MODAL = re.compile(r"^(?P<subject>.+?) (?P<modal>will|may|should|must|would) (?P<verb>[a-z]{3,})\b(?P<rest>.*)$")
# "An alternative to aptitude is apt-get ...", "The first argument to `--install' option is the symlink ..."
_OF_SUBJECT = re.compile(r"^(?P<subject>(?:the|an?) [^,;:()]{2,40}? (?:of|to|for) [^,;:()]{1,40}?) (?P<be>is|are) "
                         r"(?P<rest>\S.*)$", re.I)
# "Passing the --log-option to dpkg makes dpkg log ..." -> "What does passing the --log-option to dpkg do?"
_GERUND = re.compile(r"^(?:Passing|Using|Running|Calling|Setting|Adding|Removing|Installing|Enabling|"
                     r"Disabling|Applying|Importing|Defining|Changing) [^,;:]+")
MAX_GERUND_ACT_CHARS = 60
# Verbs a gerund subject takes ("Installing Debian packages requires root"). Any other word in -s is
# a verb when an adverb precedes it ("Applying `iter()` to a dictionary always loops over its keys")
# or a word that starts its object follows it ("... eliminates duplicate elements"); a gerund's object
# often ends in a plural noun ("Debian packages requires", "packages with dpkg") that is no verb: one
# followed by another word in -s, a preposition or a conjunction (_NOT_OBJECT) is taken for a noun, and
# so is one before a later "is"/"can"/... ("Using escape sequences for code points greater than 127 is
# fine": the sentence's verb is "is", not "points").
_GERUND_VERBS = frozenset({"makes", "requires", "needs", "causes", "gives", "lets", "allows", "takes", "creates",
                           "returns", "ensures", "prevents", "breaks", "changes", "removes", "installs", "adds",
                           "sets", "runs", "saves", "costs", "helps", "means", "fails", "produces", "raises",
                           "triggers", "forces", "keeps", "enables", "disables", "turns", "puts", "calls", "updates",
                           "writes", "reads", "deletes", "overrides", "replaces", "avoids", "improves", "reduces",
                           "increases", "slows", "speeds", "stops", "starts", "tells", "shows", "affects", "loads",
                           "imports", "defines", "uses", "frees", "blocks", "hides", "skips", "checks", "copies"})
_OBJECT_STARTS = frozenset({"the", "a", "an", "it", "them", "its", "their", "your", "you", "this", "that", "these",
                            "those", "all", "any", "every", "each", "no", "some", "one"})
_GERUND_ADVERBS = ("always", "only", "also", "never", "usually", "often", "automatically", "simply", "just")
MAX_OF_SUBJECT_WORDS = 6
# A quoting mark ("`--install' option"), not an apostrophe inside a word ("Python's"), which stays.
_QUOTE_MARK = re.compile(r"(?<!\w)['‘’]|['‘’](?!\w)")
_NOT_AFTER_MODAL = {"be", "not", "also", "still", "only", "always", "never", "then", "now"}


# A word after the modal's verb that starts no object: a preposition, conjunction or adverb ("dpkg
# will fail if ...", "apt-get will complain about ...", "the server will start automatically").
_NOT_OBJECT = frozenset({"about", "above", "across", "after", "against", "along", "among", "around", "as", "at",
                         "before", "behind", "below", "beneath", "beside", "between", "beyond", "by", "despite",
                         "during", "except", "for", "from", "in", "inside", "into", "like", "near", "of", "off",
                         "on", "onto", "out", "outside", "over", "past", "since", "through", "throughout", "till",
                         "to", "toward", "towards", "under", "until", "up", "upon", "via", "with", "within",
                         "without", "down", "back", "away", "if", "when", "whenever", "while", "unless", "because",
                         "although", "though", "and", "or", "but", "so", "than", "then", "once", "where", "wherever",
                         "whether", "again", "anyway", "too", "either", "here", "there", "now", "soon", "later",
                         "first", "well", "even", "also", "not", "only", "just", "instead", "forever"})


_FOCUS_ADVERBS = frozenset({"only", "even", "just", "also", "still", "always", "never", "often", "usually"})


def _takes_object(rest: str) -> bool:
    """Whether the words after a modal's verb start its object: "dpkg will unpack the archive" does,
    "dpkg will fail if ..." and "will start automatically" do not (the question would ask a verb
    that takes none: "What will dpkg fail?")."""
    words = re.findall(r" +([\w`'\"][\w`'\".-]*)|([^ ])", rest)
    for word, sign in words:
        if sign:  # the sentence ends or a comma follows: no object
            return False
        if word.endswith((".", ",")) and word.rstrip(".,").endswith("ly"):  # "will start automatically."
            return False
        word = word.strip("`'\"").lower()
        if word not in _FOCUS_ADVERBS and not word.endswith("ly"):  # "will contain only log entries"
            return word not in _NOT_OBJECT
    return False


def _modal_question(core: str, entity: str) -> Optional[str]:
    found = _MODAL.match(core)
    if not found or found.group("verb") in _NOT_AFTER_MODAL or found.group("verb").endswith("ly") \
            or not _takes_object(found.group("rest")):
        return None
    subject = found.group("subject").replace("`", "")
    if len(subject.split()) > MAX_SUBJECT_WORDS or not _rule_subject(subject, entity) \
            or any(w.endswith("ed") for w in subject.split()[1:]):  # "The HTTPError instance raised will have"
        return None
    subject = _ARTICLE.sub(lambda m: m.group(1).lower(), subject)
    return f"What {found.group('modal')} {subject} {found.group('verb')}?"


def _of_subject_question(core: str, entity: str) -> Optional[str]:
    found = _OF_SUBJECT.match(_QUOTE_MARK.sub("", core.replace("`", "")))
    if not found or not names_entity(found.group("subject"), entity) or names_entity(found.group("rest"), entity):
        return None  # the entity after "of/to", not in the answer (then the subject asks for it)
    subject = " ".join(found.group("subject").split())
    if len(subject.split()) > MAX_OF_SUBJECT_WORDS:  # a longer one copies an 8-token span of its chunk
        return None
    return f"What {found.group('be')} {subject[:1].lower()}{subject[1:]}?"


_LATER_VERBS = frozenset({"is", "are", "was", "were", "can", "will", "may", "must", "should", "would", "could"})


def _in_s(word: str) -> bool:
    """Whether a word may be a verb in -s (or a plural noun): "requires", "packages"; not "is", "class"."""
    return bool(re.fullmatch(r"[a-z]{3,}s", word)) and not word.endswith(("ss", "us")) \
        and word not in ("is", "has", "was", "does", "this", "its")


def _gerund_act(core: str) -> Optional[str]:
    """The gerund subject of a sentence, up to its verb ("Installing Debian packages" of "Installing
    Debian packages requires root"), or None when no word reads as its verb (_GERUND_VERBS)."""
    found = _GERUND.match(core)
    if not found:
        return None
    words = found.group(0).split()
    for at in range(2, len(words)):
        word, after = words[at], (words[at + 1].lower() if at + 1 < len(words) else "")
        is_verb = word in _GERUND_VERBS or (
            _in_s(word) and not _LATER_VERBS.intersection(words[at + 1:])
            and (words[at - 1] in _GERUND_ADVERBS or after in _OBJECT_STARTS
                 or (after and not _in_s(after) and after not in _NOT_OBJECT)))
        if is_verb:
            act = " ".join(words[:at])
            while act.split()[-1] in _GERUND_ADVERBS:  # "Passing X only makes ...": the adverb is the verb's
                act = act.rsplit(" ", 1)[0]
            return act if len(act) <= MAX_GERUND_ACT_CHARS and len(act.split()) > 1 else None
    return None


def _gerund_question(core: str, entity: str) -> Optional[str]:
    act = _gerund_act(core)
    if not act or not names_entity(act, entity):
        return None
    act = act.replace("`", "")
    return f"What does {act[:1].lower()}{act[1:]} do?"


def _use_question(sentence: str, entity: str) -> Optional[str]:
    """"What can I use the struct module for?" for a sentence that says to use it for a goal."""
    found = _USE_FOR.match(sentence.rstrip())
    phrase = found and (found.group("a") or found.group("b"))
    if not phrase:
        return None
    phrase = _PHRASE_END.sub("", phrase.replace("`", "").rstrip("."))
    words = phrase.split()
    # the word is the entity, not a dotted name that starts with it ("collections.deque" is not collections)
    named_at = [i for i, w in enumerate(words) if names_entity(w, entity) and not re.search(r"\.\w", w.split(entity)[-1])]
    if named_at and named_at[0] == 0 and not entity[:1].isupper():  # a command line: "dpkg --list foo"
        words = words[:2]  # the command and its first word ("--list", "source"); the rest is its argument
    if not named_at or len(words) > MAX_USE_WORDS or len(words) - 1 - named_at[-1] > 1 \
            or not (words[0].lower() in ARTICLES or named_at[0] == 0):
        return None
    phrase = _ARTICLE.sub(lambda m: m.group(1).lower(), " ".join(words))
    return f"What can I use {phrase} for?"


def _passive_question(sentence: str, entity: str) -> Optional[str]:
    """"Where are the NullHandler, ... classes defined?" for "<subject naming the entity> are defined in
    ...": the subject a plain noun phrase (_rule_subject), the verb a past participle."""
    found = _PASSIVE_SUBJECT.match(sentence)
    if not found:
        return None
    subject = found.group("subject").replace("`", "")
    if len(subject.split()) > MAX_SUBJECT_WORDS or not _rule_subject(subject, entity):
        return None
    after = [w.lower().strip(",.;*") for w in sentence[found.end():].split()[:2]]
    if found.group("prep") in ("in", "on", "at") and after[:1] and after[0] not in ("the", "a", "an", "its", "their"):
        return None  # "executed in any event", "stored in Python 3": no place to ask "where" of
    if found.group("prep") in ("in", "on", "at") and after[1:] and after[1] in _NO_PLACE:
        return None  # "passed in the order y,x": how, not where
    if found.group("prep") == "for" and after[:1] and after[0].lower() in _EVERY:
        return None  # "called for every object": when it happens, not what it is for
    subject = _ARTICLE.sub(lambda m: m.group(1).lower(), subject)
    return _PASSIVE_ASK[found.group("prep")].format(be=found.group("be"), s=subject, done=found.group("done"))


_EVERY = frozenset({"each", "every", "all", "any"})
# Nouns after "in the" that name no place: "passed in the order *y,x*", "handled in the same way".
_NO_PLACE = frozenset({"order", "way", "manner", "same", "form", "case", "event", "end", "meantime", "future", "past",
                       "background", "usual", "opposite", "reverse"})
_IRREGULAR_BASE = {"has": "have", "does": "do", "goes": "go", "caches": "cache"}  # "caches" ends in -ches


def _base_form(verb: str) -> str:
    """The base form of a third-person verb: "matches" -> "match", "takes" -> "take", "caches" -> "cache"."""
    if verb in _IRREGULAR_BASE:
        return _IRREGULAR_BASE[verb]
    return verb[:-2] if verb.endswith(("ches", "shes", "sses", "xes")) else verb[:-1]


# A second sentence that leans on what came before it in its chunk ("On one hand, requiring `global`
# ...", "Actually, `select` can be handy ...", "For example, ...") has no question of its own.
_LEANING_SECOND = WEAK_OPENERS + ("actually", "on one hand", "on the other hand", "alternatively", "of course",
                                  "also", "if ", "after ", "look for", "let's", "now")


def second_stands_alone(sentence: str) -> bool:
    return not sentence.lower().startswith(_LEANING_SECOND)



# Verbs that ask "what is in it" of anything: two parts asking with them ask one thing twice ("What
# does the operator module have, and what does it contain?").
_GENERIC_VERBS = {"have", "contain", "provide", "offer", "include", "support"}


MIN_RULE_PAIR_DIFFERENCE = 2  # content words in one rule question of a pair and not the other


def rule_pair_differs(first: str, second: str) -> bool:
    """Whether two rule questions ask different things: not both with a generic verb, and their content
    words differ by MIN_RULE_PAIR_DIFFERENCE ("What can I use the sorted() function for?" and "... the
    built-in sorted() function for?" differ by one)."""
    if all(set(q.lower().rstrip("?").split()) & _GENERIC_VERBS for q in (first, second)):
        return False
    a, b = (content_words(q) - STOPWORDS for q in (first, second))
    return bool(a) and bool(b) and len(a ^ b) >= MIN_RULE_PAIR_DIFFERENCE


def spelled_alike(entity: str, first: str, second: str) -> bool:
    """Whether both sentences spell the entity in the same case ("the apt tool" is not "APT")."""
    pattern = r"(?<![\w.-])" + re.escape(entity) + r"(?![\w-])"
    return bool(re.search(pattern, first)) and bool(re.search(pattern, second))
