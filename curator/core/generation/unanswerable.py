"""Unanswerable rows as near misses: a sentence of the corpus whose setting (the platform, editor,
init system, toolkit... it holds for) is swapped for one the corpus never mentions, and the question
that sentence answers, asked in the swapped setting (issue 28).

Why: asked to invent a question its passage does not answer, the bundled 135M model wrote nonsense
or a question the corpus does answer (2 of 9 and 0 of 9 usable in the labelled quality-bench runs).
So the model is no longer asked to invent. A chunk's answer sentence that names the setting of what
it says ("On Windows, use ...", "a Python mode for Emacs": SETTING_KINDS after a setting preposition,
not a thing "supported" or "built on") is picked, or any sentence of a chunk about one setting (its
name twice, once as a setting: the Python FAQ's Windows entries, the Debian FAQ's systemd entry);
the best-known thing of its kind that no chunk mentions is the replacement ("Emacs" -> "Vim",
"Windows" -> "ChromeOS"). The model writes the question the ORIGINAL sentence answers (the
answer-first factoid prompt: a real sentence, so a real question; its document title names the
setting, "Python on Windows"), and a rule puts the question in the swapped setting: the original's
name in it is replaced by the replacement's; a question about a sentence of a chunk about the
setting, which need not name it, gets the setting phrase added ("... on ChromeOS?"); a question
that leaves out the setting its own sentence names is rejected. So every near miss names the
replacement (asked to write from the swapped sentence, the model dropped it in 52 of 62 candidates),
and the model is judged on the question it wrote for a sentence it read (a shared word, the
likelihood gain), and the near miss must name what the corpus is about ("Python"). A sentence that
says its statement holds only in its setting ("winreg is only provided on Windows" answers "on
Android?": no) or in any is not used. A corpus that names no technical setting at all (a handbook)
swaps countries and languages instead (FALLBACK_KINDS).

The question stays one a user of this corpus could ask (same topic, a peer of its setting) while its
key detail is absent from the whole corpus, which full-text search shows. The evidence (the swap,
the replacement's zero mentions, the nearest chunks by full text and by the sentence embedder, and
whether they hold the original detail) is stored with the row in its quality signals, so a reviewer
sees why it is believed unanswerable; the reviewer still decides, since a corpus can answer a near
miss in general terms. The evidence is never a filter: the full-text and dense retrievers are the
ones under test.

Versions are not swapped (the labelled runs: a later version is answered by the corpus's "3.10 and
newer", an earlier one by "before 3.9" or never existed, "Python 2.9").

The steps live in three modules, whose names other modules and the tests use from here: near_miss_details
(the named things and the corpus's counts of them), near_miss_options (which sentence, which swap:
options) and near_miss_judge (a candidate's checks and evidence: judge, explain).
"""

from curator.core.generation.near_miss_details import (_MENTIONS, DETAIL_FAMILIES, LEARNED, Detail, corpus_mentions,
                                                       corpus_subject, details, learned_kinds)
from curator.core.generation.near_miss_judge import (evidence, evidence_embedder, explain, judge, near_miss_question,
                                                     shared_words)
from curator.core.generation.near_miss_options import (FALLBACK_KINDS, SETTING_KINDS, chunk_setting, options,
                                                       replacements, setting_kinds, setting_preposition, swap_in,
                                                       swappable)

__all__ = ["DETAIL_FAMILIES", "FALLBACK_KINDS", "LEARNED", "SETTING_KINDS", "Detail", "chunk_setting",
           "corpus_mentions", "corpus_subject", "details", "evidence", "evidence_embedder", "explain", "judge",
           "learned_kinds", "near_miss_question", "options", "replacements", "setting_kinds", "setting_preposition",
           "shared_words", "swap_in", "swappable", "_MENTIONS"]
