"""Need-first generation (issue 39): the mode follows the model's size, the reply's quote is located in its chunk,
the run records the mode, and the keyword grammar no longer glues words at its word limit."""

from __future__ import annotations

import json
import struct

import pytest

from curator.core.generation import capability, filters, needfirst, prompts
from curator.core.generation.backends import FakeBackend, LlamaCppBackend, Request
from curator.core.generation.generate import GenerationConfig, generate
from scripted import need_first_reply, passages_of

CHUNK = ("You can do this easily enough with a sequence of `if... elif... elif... else`. For literal values, or "
         "constants within a namespace, you can also use a \u201cmatch ... case\u201d statement.\n\n"
         "For cases where you need to choose from a very large number of possibilities, you can create a "
         "dictionary mapping case values to functions to call.")


@pytest.mark.parametrize("quote, expected", [
    ("You can do this easily enough with a sequence of if... elif... elif... else.", [0]),  # backticks dropped
    ('For literal values, or constants within a namespace, you can also use a "match ... case" statement.', [1]),
    ("you can create a dictionary mapping case values to functions to call", [2]),  # a part of one sentence
    ("You can do this easily enough with a sequence of if... elif... elif... else. For literal values, or "
     "constants within a namespace, you can also use a", [0]),  # cut at the token budget: the whole one only
    ("You can do this easily enough with a sequence of `if... elif... elif... else`. For cases where you need to "
     "choose from a very large number of possibilities, you can create a dictionary mapping case values to "
     "functions to call.", [0, 2]),
])
def test_a_quote_locates_the_chunks_own_sentences(quote, expected):
    sentences = needfirst.sentences(CHUNK)
    assert needfirst.locate(quote, CHUNK) == " ".join(sentences[i] for i in expected)


@pytest.mark.parametrize("quote", ["Use a switch statement, as in C.", "", "call", "Yes, it does."])
def test_a_quote_the_chunk_does_not_hold_is_not_located(quote):
    assert needfirst.locate(quote, CHUNK) is None


def test_an_answer_in_the_models_own_words_locates_the_sentence_holding_most_of_them():
    """The 1.5B model's first need-first reply on the Debian FAQ answered in its words instead of quoting."""
    answer = "Make a dictionary that maps each case value to the function to call for it."
    assert needfirst.locate(answer, CHUNK) == needfirst.sentences(CHUNK)[2]


def test_parse_reads_the_query_and_one_quote_per_passage():
    assert needfirst.parse("Question: How do I switch on a value?\nAnswer: You can do this\n") == \
        ("How do I switch on a value?", ["You can do this"])
    assert needfirst.parse("Question: Q?\nAnswer 1: first\nAnswer 2: second\n", parts=2) == ("Q?", ["first", "second"])
    assert needfirst.parse("Question: Q?\nAnswer 1: first\n", parts=2) is None  # a pair needs both quotes
    assert needfirst.parse("Sure! Here is a question.") is None


def test_a_need_first_run_stores_rows_whose_reference_is_their_chunks_sentences(sample_db):
    said = []
    summary = generate(sample_db, GenerationConfig(count=6, mode="need-first", mix={"factoid": 1, "keyword": 1,
                                                                                    "vague": 1}),
                       backend=FakeBackend(need_first_reply), on_progress=lambda _d, _t, message: said.append(message))
    assert summary["accepted"] == 6 and set(summary["by_type"]) == {"factoid", "keyword", "vague"}
    assert said[0] == "mode need-first: chosen by the user (--mode need-first)"  # before the first candidate
    chunks = {r["id"]: r["text"] for r in sample_db.query("SELECT id, text FROM chunks")}
    for row in sample_db.query("SELECT query_type, text, reference, source_chunk_ids, gold_chunk_ids FROM queries"):
        sources = json.loads(row["source_chunk_ids"])
        assert set(sources) <= set(json.loads(row["gold_chunk_ids"]))
        own = [s for cid in sources for s in needfirst.sentences(chunks[cid])]
        first = own[0] if not own[0].endswith(":") else " ".join(own[:1 + needfirst.FOLLOWING_SENTENCES])
        assert row["reference"] == first  # the quoted first sentence (and what it introduces, on a colon)
        assert len(sources) == 1
        assert own  # the reference came from the chunks, not from the reply's wording
    params = json.loads(sample_db.execute("SELECT params FROM generation_runs").fetchone()[0])
    assert params["mode"] == {"requested": "need-first", "chosen": "need-first",
                              "why": "need-first: chosen by the user (--mode need-first)"}
    assert params["answers"] == "need-first"


def test_how_people_ask_is_shown_as_worked_examples_never_as_a_list_to_copy(sample_db):
    """Shown real questions as a list, the 1.5B model copied them for passages about other things (issue 39): the
    prompt shows each as an earlier turn about its own passage; the project's real questions with gold when it has
    them (never one about the chunk's own document), the built-in ones when it has none."""
    from curator.core.queries.rows import add_query

    builtin = needfirst.build_messages("factoid", ["Passage text."])
    assert [m["role"] for m in builtin] == ["system"] + ["user", "assistant"] * 3 + ["user"]
    assert "How do I wipe everything I changed on my router?" in builtin[6]["content"]
    assert all("- " not in m["content"] for m in builtin if m["role"] == "system")  # no list of questions
    keyword = needfirst.build_messages("keyword", ["Passage text."])
    assert keyword[2]["content"].startswith("Query: dishwasher quits halfway")

    chunks = list(sample_db.query("SELECT id, doc_id, text FROM chunks ORDER BY doc_id, ord"))
    other_docs = [c for c in chunks if c["doc_id"] != chunks[0]["doc_id"]][:4]
    asked = ["How can I get my laptop back to how it was?", "Why is the thing so slow on monday?",
             "What do I do when it will not start?", "How do I make it stop beeping?"]
    for chunk, question in zip(other_docs, asked):
        qid = add_query(sample_db, question, "log", gold_chunk_ids=[chunk["id"]])
        sample_db["queries"].update(qid, {"status": "approved"})
    prompts_seen = []

    def reply(messages):
        prompts_seen.append(messages)
        return need_first_reply(messages)
    generate(sample_db, GenerationConfig(count=1, mode="need-first", mix={"factoid": 1}, retries=0),
             backend=FakeBackend(reply))
    shown = [m["content"].split("\n")[0] for m in prompts_seen[0] if m["role"] == "assistant"]
    assert shown and all(line.removeprefix("Question: ") in asked for line in shown)
    asked_about = prompts_seen[0][-1]["content"]
    own_doc = {c["doc_id"] for c in chunks if c["text"][:60] in asked_about}
    assert not own_doc & {c["doc_id"] for c, q in zip(other_docs, asked) if f"Question: {q}" in shown}


def test_multi_hop_rows_stay_made_by_rule_in_need_first_mode(docs_project, monkeypatch):
    """Written by the 1.5B model from two passages, 0 of 6 multi-hop rows were usable (blind labels, three FAQs);
    its rule-made ones 4 of 5: a need-first run asks for multi-hop rows as the rule path does, never the need-first
    prompt."""
    from curator.core.generation import multihop

    monkeypatch.setattr(multihop, "MODEL_WRITES_SECOND_PART", True)  # this corpus has no pair made by rule alone
    small_db = docs_project({
        "sync.md": "# Sync\n\nThe `sync_interval` option sets how often the agent uploads changed files to the "
                   "server.\n\nUploads pause while the laptop runs on battery below twenty percent charge.\n",
        "tuning.md": "# Tuning\n\nSetting `sync_interval` to ten minutes or more saves bandwidth on metered mobile "
                     "links.\n\nLogs of every upload are written to the agent folder under the user profile.\n"})
    asked = []

    def reply(messages):
        asked.append(messages)
        return "Question: How often does the agent upload?\n"
    generate(small_db, GenerationConfig(count=2, mode="need-first", mix={"multi_hop": 1}, retries=0),
             backend=FakeBackend(reply))
    assert asked  # this corpus offers rule-made multi-hop tasks
    assert not [m for m in asked if m[0]["content"].startswith(needfirst.SYSTEM.split("{")[0])]


def test_a_quote_the_model_made_up_is_rejected_with_a_reason(sample_db):
    def invented(messages):  # a question on the passage (it passes the screen), an answer from nowhere
        return need_first_reply(messages).split("\n")[0] + "\nAnswer: Back them up to a floppy disk every night.\n"
    summary = generate(sample_db, GenerationConfig(count=2, mode="need-first", mix={"factoid": 1}, retries=0),
                       backend=FakeBackend(invented))
    assert summary["accepted"] == 0
    assert summary["rejected_by_reason"] == {"quoted answer not found in its chunk": summary["rejected"]}


def test_a_resumed_need_first_run_stays_need_first(sample_db):
    config = GenerationConfig(count=2, mode="need-first", mix={"factoid": 1})
    generate(sample_db, config, backend=FakeBackend(need_first_reply))
    resumed = GenerationConfig(count=4, resume=True)  # mode auto: the bundled model would be extractive
    generate(sample_db, resumed, backend=FakeBackend(need_first_reply))
    assert resumed.answers == "need-first"


def _gguf_header(path, label=None, tensor_dims=()):
    """A GGUF v3 header holding ``general.size_label`` and tensors of ``tensor_dims`` (no weights follow)."""
    def text(value: str) -> bytes:
        return struct.pack("<Q", len(value)) + value.encode()
    keys = [text("general.size_label") + struct.pack("<I", 8) + text(label)] if label else []
    tensors = [text(f"t{i}") + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
               + struct.pack("<IQ", 0, 0) for i, dims in enumerate(tensor_dims)]
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(keys))
    path.write_bytes(head + b"".join(keys) + b"".join(tensors) + b"\0" * 4096)
    return path


def test_the_mode_follows_the_models_parameter_count(tmp_path, bundled_model):
    assert capability.choose_mode("auto", bundled_model, None).mode == "extractive"  # 135M parameters, counted
    big = _gguf_header(tmp_path / "big.gguf", "1.5B", [(1536, 151936), (8960, 1536, 100)])
    assert capability.model_size(big).params == 1_500_000_000  # the label, as `curator models` reads it
    unlabelled = _gguf_header(tmp_path / "unlabelled.gguf", None, [(1536, 151936), (8960, 1536, 100)])
    assert capability.model_size(unlabelled).params == 1536 * 151936 + 8960 * 1536 * 100  # the tensors, counted
    assert capability.choose_mode("auto", big, None).mode == "need-first"
    labelled = _gguf_header(tmp_path / "labelled.gguf", "7B")  # no tensor counted: the header's label says
    assert capability.model_size(labelled).params == 7_000_000_000
    assert capability.choose_mode("auto", labelled, None).mode == "need-first"
    assert capability.choose_mode("auto", _gguf_header(tmp_path / "small.gguf", "360M"), None).mode == "extractive"
    assert capability.choose_mode("auto", None, "http://127.0.0.1:8080").mode == "need-first"
    assert capability.choose_mode("extractive", big, None).mode == "extractive"  # forced
    assert "1.5B" in capability.choose_mode("auto", big, None).why or "parameters" in capability.choose_mode(
        "auto", big, None).why


def test_an_unlabelled_damaged_header_falls_back_to_the_file_size(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 2**40, 2**40) + b"\0" * 600_000)
    size = capability.model_size(broken)
    assert "file size" in size.how and size.params == int(broken.stat().st_size / capability.BYTES_PER_PARAM_GUESS)


def test_auto_mode_with_the_bundled_model_stays_extractive(sample_db):
    config = GenerationConfig(count=1, mix={"factoid": 1})
    summary = generate(sample_db, config, backend=FakeBackend(lambda m: "Question: What is known about it?\n"))
    assert config.answers == "extractive" and config.capable is False and summary["run_id"]


def test_free_answers_of_a_capable_model_get_the_longer_bound():
    long_answer = "It " + "works " * 60 + "fine."
    assert filters.check_answer_complete(long_answer[:160]) is not None  # the small model's bound cuts it
    bound = prompts.answer_tail(capability.CAPABLE_BOUNDS.answer_chars)
    assert filters.check_answer_complete(long_answer, bound) is None
    grammar = prompts.grammar_for("factoid", 220, capability.CAPABLE_BOUNDS.answer_chars)
    assert "{0,%d}" % (bound - 1) in grammar and "unit{9,219}" in grammar


@pytest.mark.slow
def test_the_keyword_grammar_lets_a_long_query_run_on_without_gluing_words(bundled_model):
    """The bundled model told to copy a 16-word query: at the old six-word limit it glued "fetchingmail"; now the
    grammar lets it write its words apart (the query is then too long for filters.check_length, and rejected)."""
    backend = LlamaCppBackend(bundled_model, n_ctx=512, n_threads=1, chat_format="chatml")
    backend.decoder_for_one = True
    text = "how to fix an error with older curl versions when fetching mail through a proxy server"
    messages = [{"role": "system", "content": "Copy the user's text exactly, after 'Query: '."},
                {"role": "user", "content": text}]
    words = text.split()
    glued = {a + b for a, b in zip(words, words[1:])}
    reply = next(iter(backend.iter_complete([Request(messages, max_tokens=80, temperature=0.0, seed=0,
                                                     grammar=prompts.CAPABLE_ASKED_KEYWORD_GRAMMAR)])))[1]
    written = prompts.parse_query(reply).lower().replace("-", " ").split()
    assert not [w for w in written if any(g in w for g in glued)], reply
    assert {"fetching", "mail"} <= set(written)


@pytest.mark.slow
def test_need_first_with_the_real_bundled_model_parses_and_locates(sample_db, bundled_model):
    """Real llama.cpp through the need-first grammar: every reply is in the format (the grammar holds the
    quote line whatever the budget) and every kept row's reference is its chunk's own sentences."""
    summary = generate(sample_db, GenerationConfig(count=1, mode="need-first", mix={"factoid": 1}, retries=0,
                                                   threads=1, chat_format="chatml"))
    reasons = summary["rejected_by_reason"]
    assert "output not in the Question/Answer format" not in reasons, reasons
    assert summary["accepted"] + summary["rejected"] > 0
    chunks = {r["id"]: r["text"] for r in sample_db.query("SELECT id, text FROM chunks")}
    for row in sample_db.query("SELECT reference, source_chunk_ids FROM queries WHERE source = 'synthetic'"):
        source = chunks[json.loads(row["source_chunk_ids"])[0]]
        assert all(s in needfirst.sentences(source) for s in needfirst.sentences(row["reference"]))


def test_need_first_rows_reusing_their_chunk_are_kept_up_to_the_real_share():
    """Real questions reuse their chunk's words to a spread of degrees: need-first rows reaching a point of that upper
    tail are kept while they stay within real questions' share there (plus one row), and refused past it, with the
    reason; rows below every point are always kept."""
    from curator.core.generation import checks as checks_mod

    chunk = ["Set up anti-spam exclusions in sendmail with a database of filter rules."]
    copying = "How can I set up anti-spam exclusions in sendmail?"  # every word in the chunk
    halfway = "How do I stop junk mail getting through sendmail?"  # one word of six in the chunk
    plain = "Why does my server let junk through and how do I stop it?"
    checks = checks_mod.Checks(duplicates=filters.DuplicateIndex([]), overlap_tails=((0.15, 0.5), (1.0, 0.25)))
    said = []
    for question in [copying, copying, halfway, plain, plain, copying, halfway, halfway, halfway, plain, copying]:
        reason = checks_mod._need_first_overlap(question, chunk, checks)
        said.append(reason is None)
        if reason is None:
            checks_mod._count_need_first(question, chunk, checks)
        else:
            assert "real questions" in reason and "share" in reason
    assert said == [True, False, True, True, True, True, True, False, False, True, True]
    kept = checks.need_first_kept
    assert checks.need_first_at_least[1.0] <= 0.25 * kept + 1 and checks.need_first_at_least[0.15] <= 0.5 * kept + 1


def test_a_resumed_run_counts_its_kept_need_first_rows_toward_the_real_share(sample_db):
    """The share holds across --resume: the rows a run kept before are counted again from the project."""
    from curator.core.generation import checks as checks_mod
    from curator.core.queries.rows import add_query

    chunk = sample_db.execute("SELECT id, text FROM chunks ORDER BY id LIMIT 1").fetchone()
    run_id = sample_db["generation_runs"].insert({"created_at": "2026-12-07", "status": "cancelled"}).last_pk
    question = " ".join(sorted(filters.content_words(chunk[1]))[:5]) + "?"  # every word in the chunk
    qid = add_query(sample_db, question, "synthetic", source_chunk_ids=[chunk[0]], gold_chunk_ids=[chunk[0]],
                    reference=chunk[1][:40], run_id=run_id)
    sample_db.execute("UPDATE queries SET quality_signals = ? WHERE id = ?", [json.dumps({"mode": "need-first"}), qid])
    checks = checks_mod.Checks(duplicates=filters.DuplicateIndex([]), overlap_tails=((1.0, 0.25),))
    checks_mod.count_kept_need_first(sample_db, run_id, checks)
    assert checks.need_first_kept == 1 and checks.need_first_at_least == {1.0: 1}


def test_a_reply_that_is_a_query_the_project_has_is_not_asked_again(sample_db):
    """Asked again, a capable model writes the users' own question again: no retry after an exact duplicate, while
    another rejection is retried (hotter each time)."""
    from curator.core.queries.rows import add_query

    add_query(sample_db, "How do I sort out my trouble?", "log")

    def same_question(messages):
        return need_first_reply(messages).split("\n", 1)[0].split(":")[0] + ": How do I sort out my trouble?\n" + \
            need_first_reply(messages).split("\n", 1)[1]
    asked = []

    def counted(messages):
        asked.append(messages[-1]["content"])
        return same_question(messages)
    summary = generate(sample_db, GenerationConfig(count=2, mode="need-first", mix={"factoid": 1}, retries=2),
                       backend=FakeBackend(counted))
    assert summary["accepted"] == 0 and summary["rejected"] == len(asked)
    assert len(set(asked)) == len(asked)  # each chunk asked once, none again
    assert needfirst.retry_temperature(0.7, 0) == 0.7 < needfirst.retry_temperature(0.7, 1) < \
        needfirst.retry_temperature(0.7, 2) <= needfirst.MAX_RETRY_TEMPERATURE


def test_a_capable_models_keyword_reply_may_end_at_its_end_of_turn(bundled_model):
    """The 1.5B model ends its turn right after a keyword query; with the newline required the decoder sampled more
    words instead, and every answer-first keyword candidate looped to the word bound. A capable model's keyword
    grammar lets the reply end there; the bundled model's keeps its newline."""
    from curator.core.generation.backends.llama_batch import BatchDecoder

    backend = LlamaCppBackend(bundled_model, n_threads=1)
    decoder = BatchDecoder(backend, 1)
    eos = backend.llm.token_eos()

    def may_end_after(grammar_text: str, reply: str) -> bool:
        grammar = decoder._grammar_sampler(grammar_text)
        for token in backend.llm.tokenize(reply.encode(), add_bos=False, special=False):
            assert decoder._grammar_allows(grammar, token)
            grammar.accept(token)
        return decoder._grammar_allows(grammar, eos)
    assert may_end_after(prompts.asked_grammar("keyword", capable=True), "Query: apt sources list")
    assert not may_end_after(prompts.asked_grammar("keyword", capable=False), "Query: apt sources list")
    assert may_end_after(prompts.asked_grammar("keyword", capable=False), "Query: apt sources list\n")


def test_fixed_worked_examples_are_the_same_for_every_chunk_but_never_about_its_own_document():
    """Need-first prompts show one set of worked examples per run, so the engine keeps them evaluated (issue 42); a
    chunk of an example's document gets the next example instead."""
    from curator.core.generation.examples import Example, ExampleSet

    examples = [Example(f"q{i}", f"How do I fix thing {i}?", f"Thing {i} is fixed by turning it off.", "T",
                        {"thing"}, {f"doc{i}"}) for i in range(5)]
    shown = ExampleSet("real_gold", examples)
    first = shown.fixed_shots("factoid", {"doc_id": "doc9", "text": "Anything at all."})
    assert [q for _t, _a, q in first] == ["How do I fix thing 0?", "How do I fix thing 1?", "How do I fix thing 2?"]
    assert shown.fixed_shots("factoid", {"doc_id": "doc8", "text": "Thing 4 and thing 3."}) == first
    own = shown.fixed_shots("factoid", {"doc_id": "doc1", "text": "Thing 1."})
    assert [q for _t, _a, q in own] == ["How do I fix thing 0?", "How do I fix thing 2?", "How do I fix thing 3?"]


@pytest.mark.slow
def test_a_need_first_run_keeps_each_kind_of_prompt_evaluated(sample_db, bundled_model):
    """Three kinds of need-first prompt take turns; with one kept prompt per kind (llama_batch.NEED_FIRST_KEEP) a
    prompt after the first of its kind starts from the kept instructions and examples: with the default four prompts
    in 1,024 cells, one was kept and 7% of the 1.5B model's prompt tokens were reused (bench/needfirst_prefix.py)."""
    from curator.core.generation.backends.llama_batch import NEED_FIRST_KEEP

    backend = LlamaCppBackend(bundled_model, n_ctx=2048, n_threads=1, parallel=1, chat_format="chatml")
    backend.decoder_for_one = True
    generate(sample_db, GenerationConfig(count=6, mode="need-first", mix={"factoid": 1, "keyword": 1, "vague": 1},
                                         retries=0, threads=1, chat_format="chatml"), backend=backend)
    stats = backend._decoder.stats
    assert backend._decoder.keep == NEED_FIRST_KEEP
    assert stats["reused_tokens"] >= 0.4 * stats["prompt_tokens"], stats


def test_a_need_first_reply_whose_question_is_refused_stops_before_its_quote(sample_db):
    """The question is judged alone the moment its line is written (checks.screen_need_first, through the request's
    FirstLineGate): a refused one is stored with the question's own reason and no quote was decoded for it; a
    question that passes gets its quote."""
    from curator.core.queries.rows import add_query

    add_query(sample_db, "How do I sort out my trouble?", "log")
    replies = iter([0, 1] * 10)

    def every_other_a_duplicate(messages):
        reply = need_first_reply(messages)
        return "Question: How do I sort out my trouble?\n" + reply.split("\n", 1)[1] if next(replies) == 0 else reply
    backend = FakeBackend(every_other_a_duplicate)
    summary = generate(sample_db, GenerationConfig(count=2, mode="need-first", mix={"factoid": 1}, retries=0),
                       backend=backend)
    rejected = list(sample_db.query("SELECT text, reason, raw_output FROM rejected_candidates"))
    assert summary["accepted"] == 2 and len(rejected) == backend.gate_stops == 2
    for row in rejected:
        assert row["reason"].startswith(filters.EXACT_DUPLICATE) and row["text"] == "How do I sort out my trouble?"
        assert row["raw_output"] == "Question: How do I sort out my trouble?\n"  # stopped before "Answer:"
    assert all("\nAnswer: " in r["raw_output"] for r in sample_db.query("SELECT raw_output FROM queries "
                                                                          "WHERE source = 'synthetic'"))
    params = json.loads(sample_db.execute("SELECT params FROM generation_runs").fetchone()[0])
    assert params["need_first_screen"]["question_screened"] is True


@pytest.mark.slow
def test_the_batch_decoder_stops_a_refused_question_and_bounds_an_accepted_ones_quote(bundled_model):
    """Real llama.cpp: the gate is asked once, with the reply's first line; refused, the reply ends at that line;
    accepted, the quote gets at most rest_tokens more tokens (the 1.5B model's quotes ran on to 3,500 characters)."""
    from curator.core.generation.backends import FirstLineGate

    backend = LlamaCppBackend(bundled_model, n_ctx=2048, n_threads=1, parallel=1, chat_format="chatml")
    backend.decoder_for_one = True
    seen = []

    def asked(verdict):
        return lambda text: seen.append(text) or verdict
    messages = needfirst.build_messages("factoid", CHUNK)
    requests = [Request(messages, max_tokens=400, temperature=0.0, grammar=needfirst.grammar("factoid", 150),
                        gate=FirstLineGate(asked(verdict), rest_tokens=6)) for verdict in (False, True)]
    refused, accepted = backend.complete_many(requests)
    assert len(seen) == 2 and all(text.startswith("Question: ") and text.endswith("?\n") for text in seen)
    assert refused == seen[0]
    assert accepted.startswith(seen[1]) and accepted[len(seen[1]):].startswith("Answer:")
    assert backend.count_tokens(accepted) - backend.count_tokens(seen[1]) <= 6 + 1  # +1: the tokenizer's join
    assert backend._decoder.stats["gate_stops"] == 1 and backend._decoder.stats["gate_bounded"] == 1


@pytest.mark.parametrize("retries", [0, 2])
def test_the_question_screen_keeps_and_refuses_exactly_what_the_whole_reply_check_would(tmp_path, _ingested_template,
                                                                                       monkeypatch, retries):
    """The screen runs the question's own checks early, never other ones: with the same replies, a run with it and
    a run without keep the same rows and reject the same candidates for the same reasons (issue 42's "acceptance
    no lower"); only the refused replies are cut short."""
    import shutil

    from curator.core.generation import generate as generate_module
    from curator.core.queries.rows import add_query
    from curator.core.store import open_project

    kinds = iter(["duplicate", "good", "copied span", "made-up quote", "the passage", "good"] * 10)

    def reply(messages):
        good, kind = need_first_reply(messages), next(kinds)
        quote = good.split("\n", 1)[1]
        question = {"duplicate": "How do I sort out my trouble?",
                    "copied span": " ".join(passages_of(messages)[0].split()[:14]).rstrip(".") + "?",
                    "the passage": "What does the passage say about this?"}.get(kind)
        if kind == "made-up quote":
            return good.split("\n", 1)[0] + "\nAnswer: Curator reads the moon's phases before every run.\n"
        return f"Question: {question}\n{quote}" if question else good

    outcomes = {}
    for screened in (False, True):
        monkeypatch.setattr(generate_module, "SCREEN_NEED_FIRST", screened)
        path = tmp_path / f"screened-{screened}.curator"
        shutil.copy(_ingested_template, path)
        db = open_project(path)
        add_query(db, "How do I sort out my trouble?", "log")
        backend = FakeBackend(reply)
        generate(db, GenerationConfig(count=4, seed=3, mode="need-first", mix={"factoid": 1}, retries=retries),
                 backend=backend)
        kept = sorted(r["text"] for r in db.query("SELECT text FROM queries WHERE source = 'synthetic'"))
        rejected = [(r["text"], r["reason"]) for r in db.query("SELECT text, reason FROM rejected_candidates ORDER BY id")]
        cut = sum("Answer:" not in r["raw_output"] for r in db.query("SELECT raw_output FROM rejected_candidates"))
        outcomes[screened] = kept, rejected, backend.gate_stops, cut
        db.close()
    (kept, rejected, _, _), (kept_screened, rejected_screened, stops, cut) = outcomes[False], outcomes[True]
    assert len(kept) == 4 and kept_screened == kept
    assert rejected_screened == rejected and len(rejected) >= 4
    assert {reason.split(" (")[0] for _, reason in rejected} >= {"quoted answer not found in its chunk"}
    assert stops == cut == len(rejected) - sum(r == "quoted answer not found in its chunk" for _, r in rejected) >= 3


@pytest.mark.parametrize("gain, kept", [(0.02, False), (0.03, True)])
def test_the_need_first_likelihood_check_refuses_a_quote_its_question_does_not_lead_to(sample_db, monkeypatch, gain,
                                                                                      kept):
    """Blind labels rejected most need-first rows for a quote that does not answer the question (issue 39): with
    the check on, a row whose question raises its quote's likelihood by less than NEED_FIRST_MIN_GAIN is refused,
    and a kept row shows its gain."""
    from curator.core.generation import checks
    from scripted import Gains

    monkeypatch.setattr(checks, "NEED_FIRST_ANSWER_CHECK", True)
    summary = generate(sample_db, GenerationConfig(count=1, mode="need-first", mix={"factoid": 1}, retries=0),
                       backend=FakeBackend(need_first_reply), answer_check=Gains(gain))
    assert summary["accepted"] == int(kept)
    if kept:
        (signals,), = sample_db.execute("SELECT quality_signals FROM queries WHERE source = 'synthetic'")
        assert json.loads(signals)["answer_gain"] == gain
    else:
        assert set(summary["rejected_by_reason"]) == {"quoted answer does not follow from its question"}


def test_a_quote_ending_on_a_colon_takes_what_it_introduces():
    """The 1.5B model quoted a list's introduction and stopped (blind labels: "reference is only the intro
    sentence"); the reference takes the sentences after it too."""
    chunk = ("To identify the package that produced the file named foo execute either:\n\n* dpkg --search foo\n\n"
             "This searches for foo in installed packages. A faster alternative to this is the dlocate tool.\n\n"
             "dlocate -S foo")
    reference = needfirst.locate("To identify the package that produced the file named foo execute either:", chunk)
    assert reference == ("To identify the package that produced the file named foo execute either: "
                         "* dpkg --search foo This searches for foo in installed packages. "
                         "A faster alternative to this is the dlocate tool.")
    assert needfirst.locate("This searches for foo in installed packages.", chunk) == \
        "This searches for foo in installed packages."  # no colon: the quoted sentence alone


def test_a_sections_passage_joins_its_chunks_without_the_words_they_share():
    first = "Mail is fetched over POP3 or IMAP. The poll interval is set in the rc file with the daemon keyword."
    second = "set in the rc file with the daemon keyword. A server that refuses the login is skipped until later."
    joined = needfirst.passage_of([first, second], 4000)
    assert joined == first + "\nA server that refuses the login is skipped until later."
    assert needfirst.passage_of([first], 40) == "Mail is fetched over POP3 or IMAP. The ..."  # cut at a word's end


def test_whole_section_rows_ask_about_the_section_and_hold_all_its_chunks_as_gold(docs_project, monkeypatch):
    sentences = [f"Step {n} of setting up the mail relay checks the {w} option before the queue runs again."
                 for n, w in enumerate(["timeout", "retry", "spool", "alias", "bounce", "relay", "limit", "header",
                                        "socket", "domain", "policy", "cipher", "digest", "filter"] * 3)]
    db = docs_project({"relay.md": "# Setting up the relay\n\n" + " ".join(sentences) + "\n",
                       "other.md": "# Backups\n\n" + "The archive tool packs files into one tarball for backups, "
                                   "keeps their owners and modes, and can compress the result with gzip or xz. " * 2})
    sections = {}
    for chunk_id, doc_id, title in db.execute("SELECT id, doc_id, title FROM chunks WHERE active = 1 ORDER BY ord"):
        sections.setdefault((doc_id, title), []).append(chunk_id)
    assert max(len(ids) for ids in sections.values()) in range(2, needfirst.MAX_SECTION_CHUNKS + 1)
    shown = []

    def reply(messages):
        shown.append(passages_of(messages)[0])
        return need_first_reply(messages)

    monkeypatch.setattr(needfirst, "WHOLE_SECTION", True)
    generate(db, GenerationConfig(count=2, mode="need-first", mix={"factoid": 1}), backend=FakeBackend(reply))
    texts = {r["id"]: r["text"] for r in db.query("SELECT id, text FROM chunks")}
    rows = list(db.query("SELECT source_chunk_ids, gold_chunk_ids FROM queries WHERE query_type = 'factoid'"))
    assert len(rows) == 2
    for row in rows:
        sources = json.loads(row["source_chunk_ids"])
        assert sources in sections.values()  # the whole section, in document order
        assert set(sources) <= set(json.loads(row["gold_chunk_ids"]))
    long_section = max(sections.values(), key=len)
    asked = [p for p in shown if texts[long_section[-1]][-60:] in p]
    assert asked and texts[long_section[0]][:60] in asked[0]  # one passage holds the section from start to end
