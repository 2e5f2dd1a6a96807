"""The copy bias (generation.copybias, issue 27): which words an answer-first question is steered away
from, which token ids that biases, and that the bundled model then avoids them."""

from __future__ import annotations

import json
import math

from curator.core.generation import copybias, prompts
from curator.core.generation.backends import FakeBackend, LlamaCppBackend, Request
from curator.core.generation.copybias import (Avoid, CopyBias, CorpusWords, Steering, avoided_words, names_in,
                                              token_bias)
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.queries import words as qwords

CORPUS = CorpusWords([
    "Packages are installed with apt from the archive.",
    "The archive holds packages for every release.",
    "Each release keeps its packages in the archive.",
    "Security fixes go to the stable release; we backport them.",
])


def test_rare_words_of_the_sentence_are_avoided_but_the_heading_and_names_are_kept():
    sentence = "Packages in the archive are backported by the Security Team using `dpkg-source' quickly."
    rare = CopyBias(rare_share=0.25)  # rare: in at most one of the four chunks
    # "packages" and "archive" are common; "backported" (stem "backp", as "backport") is in one chunk,
    # "quickly" and "using" in none; Security and Team are capitalised inside the sentence, dpkg-source quoted
    assert avoided_words(sentence, None, CORPUS, rare) == ["backported", "quickly", "using"]
    assert avoided_words(sentence, "Archive maintenance > Using backports", CORPUS, rare) == ["quickly"]
    assert avoided_words(sentence, None, CORPUS, CopyBias(rare_share=0.25, keep_names=False)) == [
        "backported", "dpkg", "quickly", "security", "source", "team", "using"]
    assert names_in(sentence) == {"security", "team", "dpkg", "source"}  # not "packages", the first word


def test_an_apostrophe_inside_a_word_is_no_quote_mark():
    # before: the apostrophes of "Debian's" and "won't" made "security team won" a quoted name, kept from the bias
    assert names_in("Debian's security team won't backport the fix") == set()
    assert names_in("Use `dselect' or ‘aptitude’, not 'apt-cache', to pick packages") >= {"dselect", "aptitude", "apt", "cache"}
    assert "pick" not in names_in("Use `dselect' or ‘aptitude’, not 'apt-cache', to pick packages")
    sentence = "Debian's security team won't backport the fix."
    assert {"security", "team"} <= set(avoided_words(sentence, None, CORPUS, CopyBias(rare_share=0.25)))


def test_idf_of_a_word_is_that_of_its_stem_over_the_counted_chunks():
    # "packages" is in 3 of the 4 chunks, "backported" (as "backport") in 1, "lark" in none
    assert CORPUS.idf("packages") == CORPUS.stem_idf(qwords.stem("packages")) == math.log(5 / 3.5)
    assert CORPUS.idf("backported") == math.log(5 / 1.5) and CORPUS.idf("lark") == math.log(5 / 0.5)


def test_a_larger_rare_share_avoids_more_words():
    sentence = "Security fixes reach the stable release."
    assert avoided_words(sentence, None, CORPUS, CopyBias(rare_share=0.0)) == ["reach"]
    assert avoided_words(sentence, None, CORPUS, CopyBias(rare_share=0.3)) == ["fixes", "reach", "security", "stable"]


# A toy tokenizer: known whole-word pieces, else a 4-letter prefix piece, else one piece per character.
VOCAB = {" pool": 1, "pool": 2, " Pool": 3, "Pool": 4, " back": 5, "port": 6, " Back": 7, " syll": 8, "able": 9,
         " d": 10, "select": 11, "Syll": 12}


def _tokenize(text: str) -> list[int]:
    if text in VOCAB:
        return [VOCAB[text]]
    for cut in range(len(text) - 1, 0, -1):
        if text[:cut] in VOCAB:
            return [VOCAB[text[:cut]]] + _tokenize(text[cut:])
    return [100 + ord(c) for c in text]


def _piece(token: int) -> str:
    return next((text for text, i in VOCAB.items() if i == token), chr(token - 100) if token >= 100 else "?")


def test_token_selection_biases_whole_words_and_specific_prefixes_only():
    corpus = CorpusWords(["go back to the pool", "back up first", "back again", "turn back"])
    settings = CopyBias(bias=-7.5, rare_share=0.3)
    # "pool": every spelling is one token; "backport": its prefix " back" is a common word here, so not biased;
    # "syllable": " syll" is a 4-letter prefix no word of the corpus; "dselect": " d" is too short to bias
    bias = token_bias(["pool", "backport", "syllable", "dselect"], _tokenize, _piece, corpus, settings)
    assert bias == {1: -7.5, 2: -7.5, 3: -7.5, 4: -7.5, 8: -7.5, 12: -7.5}
    assert list(bias) == sorted(bias)  # a pure function of its inputs, in a fixed order


class Recording(FakeBackend):
    """A fake backend that keeps every request it answers; ``biases_logits``: whether it claims to apply the
    copy bias (as a local GGUF does) or not (as an endpoint)."""

    def __init__(self, responses, biases_logits: bool = False):
        super().__init__(responses)
        self.biases_logits = biases_logits
        self.seen: list[Request] = []

    def _complete_request(self, request: Request) -> str:
        self.seen.append(request)
        return super()._complete_request(request)


LARK_REPLY = "Question: How do I stop the lark server from running at night?\n"


def test_generation_records_the_bias_and_says_when_the_backend_cannot_apply_it(sample_db, monkeypatch):
    counted = []
    monkeypatch.setattr(copybias, "avoided_words", lambda *a: counted.append(a) or ["lark"])
    backend = Recording(lambda messages: LARK_REPLY)
    summary = generate(sample_db, GenerationConfig(count=2, mix={"factoid": 1}, copy_bias=CopyBias(-4.0), retries=0),
                       backend=backend, answer_check=None)
    run = json.loads(sample_db.execute("SELECT params FROM generation_runs").fetchone()[0])
    assert run["copy_bias"]["bias"] == -4.0 and run["copy_bias"]["applied"] is False
    assert run["copy_bias"]["chunks_counted"] is None  # not applied: the corpus is not counted
    assert any("copy bias not applied" in w for w in summary["warnings"])
    stored = [json.loads(r[0] or "{}") for r in sample_db.execute("SELECT quality_signals FROM queries")]
    assert stored and not any("avoided_words" in s for s in stored)  # nothing was steered, so no row says it was
    assert backend.seen and all(r.avoid is None for r in backend.seen) and not counted  # no words computed


def test_a_backend_that_applies_the_bias_gets_the_words_and_each_row_shows_them(sample_db, monkeypatch):
    calls = []
    real = copybias.avoided_words
    monkeypatch.setattr(copybias, "avoided_words", lambda *a: calls.append(a) or real(*a))
    backend = Recording(lambda messages: LARK_REPLY, biases_logits=True)
    generate(sample_db, GenerationConfig(count=2, mix={"factoid": 1}, copy_bias=CopyBias(rare_share=0.5), retries=0),
             backend=backend, answer_check=None)
    steered = [r for r in backend.seen if r.avoid is not None]
    assert steered, "answer-first requests carry the words to avoid"
    for request in steered:
        sentence = request.messages[-1]["content"].split("Answer: ", 1)[1]
        assert set(request.avoid.words) <= qwords.content_words(sentence)
    assert len(calls) == len(backend.seen)  # once per request: judging a reply reads its task's words back
    shown = [json.loads(r[0]).get("avoided_words") for r in sample_db.execute("SELECT quality_signals FROM queries")]
    assert any(shown) and all(tuple(w) in {r.avoid.words for r in steered} for w in shown if w)


def test_generation_without_the_option_steers_nothing(sample_db):
    backend = Recording(["Question: How do I stop the lark server at night?\n"], biases_logits=True)
    generate(sample_db, GenerationConfig(count=1, mix={"factoid": 1}, retries=0), backend=backend, answer_check=None)
    run = json.loads(sample_db.execute("SELECT params FROM generation_runs").fetchone()[0])
    assert run["copy_bias"] is None and backend.seen and all(r.avoid is None for r in backend.seen)


def test_steering_not_applied_counts_nothing_and_steers_nothing(sample_db):
    steering = Steering(sample_db, CopyBias(), applied=False)
    sentence = sample_db.execute("SELECT text FROM chunks WHERE active = 1 ORDER BY id LIMIT 1").fetchone()[0]
    assert steering.corpus is None and steering.avoid(sentence, None) is None
    assert steering.describe()["applied"] is False and steering.warnings()


def test_a_backend_overriding_only_the_request_hook_is_used_by_iter_complete():
    class Tagged(FakeBackend):
        def _complete_request(self, request):
            return super()._complete_request(request) + f" [{request.seed}]"

    for parallel in (1, 2):
        backend = Tagged(["reply"], parallel=parallel)
        assert backend.complete_many([Request([], seed=3), Request([], seed=4)]) == ["reply [3]", "reply [4]"]


SENTENCE = ("The Debian Security Team will backport the necessary fixes to the version of the software "
            "distributed in stable.")


def _question(backend, avoid) -> str:
    request = Request(prompts.build_answer_first_messages("factoid", "section-001", SENTENCE), max_tokens=60,
                      temperature=0, grammar=prompts.asked_grammar("factoid"), avoid=avoid)
    return prompts.parse_query(backend.complete_many([request])[0])


def test_real_bundled_model_avoids_the_biased_words_on_both_decoding_paths(bundled_model):
    corpus = CorpusWords(["Debian packages are installed with apt.", "The Security Team answers mail.",
                          "Go back to the last release."] * 10)  # "back" is a common word here
    words = avoided_words(SENTENCE, None, corpus, CopyBias())
    assert {"backport", "stable", "version"} <= set(words)
    avoid = Avoid(tuple(words), CopyBias(), corpus)
    stems = {qwords.stem(w) for w in words}
    backend = LlamaCppBackend(bundled_model, n_threads=1, parallel=1)  # one load serves both paths
    for decoder in (True, False):  # the batch decoder's sampler chain, and llama-cpp-python's own sampling
        backend.decoder_for_one = decoder
        free, steered = _question(backend, None), _question(backend, avoid)
        assert qwords.stems(free) & stems, f"unsteered, the model copies a rare word: {free!r}"
        assert not qwords.stems(steered) & stems, f"steered, it copies none: {steered!r}"
        assert free != steered
    ids = backend.token_bias(Request([], avoid=avoid))
    assert ids and set(ids.values()) == {CopyBias().bias}
    assert backend.llm.tokenize(b" backport", add_bos=False)[0] not in ids  # " back" is a word of its own


def test_steering_is_a_pure_function_of_the_project(sample_db):
    first, second = Steering(sample_db, CopyBias()), Steering(sample_db, CopyBias())
    sentence = sample_db.execute("SELECT text FROM chunks WHERE active = 1 ORDER BY id LIMIT 1").fetchone()[0]
    avoid = first.avoid(sentence, None)
    assert avoid is not None and avoid == second.avoid(sentence, None)
    assert avoid.token_bias(_tokenize, _piece) == second.avoid(sentence, None).token_bias(_tokenize, _piece)


def test_a_resumed_run_keeps_the_copy_bias_it_started_with(sample_db):
    reply = [LARK_REPLY,
             "Question: Why does the lark daemon stop answering after an update?\n",
             "Question: Where do I look when the lark queue fills up?\n"]
    first = generate(sample_db, GenerationConfig(count=3, mix={"factoid": 1}, copy_bias=CopyBias(-2.5), retries=0),
                     backend=Recording(reply[:1], biases_logits=True), answer_check=None)
    assert first["accepted"] < 3  # one reply, asked again: duplicates, so the run is left short
    resumed = Recording(reply, biases_logits=True)
    generate(sample_db, GenerationConfig(resume=True), backend=resumed, answer_check=None)
    steered = [r for r in resumed.seen if r.avoid is not None]
    assert steered and all(r.avoid.settings == CopyBias(-2.5) for r in steered)
