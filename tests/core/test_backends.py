"""Backends: the lazy request protocol, scheduling of batched generation, and the real
batched llama.cpp path against the one-at-a-time path."""

from __future__ import annotations

import json
import threading
import time

import pytest

from curator.core.generation import plan as plan_module
from curator.core.generation import prompts
from curator.core.generation.backends import Backend, FakeBackend, HttpBackend, LlamaCppBackend, Request
from curator.core.generation.backends import llama_batch
from curator.core.generation.backends.llama_batch import common_prefix
from curator.core.generation.generate import DEFAULT_MIX, GenerationConfig, generate
from curator.core.generation.plan import allocate
from curator.core.store import open_project
from curator.core.progress import CancelToken
from scripted import cancel_at_call, good_reply


def _requests(n: int, log: list) -> object:
    for i in range(n):
        log.append(f"pull {i}")
        yield Request([{"role": "user", "content": str(i)}], tag=i)


def test_base_backend_pulls_each_request_only_after_the_previous_reply():
    log: list = []
    backend = FakeBackend(lambda m: m[-1]["content"])
    for request, text in backend.iter_complete(_requests(3, log)):
        log.append(f"got {text}")
    assert log == ["pull 0", "got 0", "pull 1", "got 1", "pull 2", "got 2"]


def test_complete_many_keeps_request_order_when_replies_come_out_of_order():
    backend = FakeBackend(lambda m: m[-1]["content"].upper(), parallel=3)
    requests = [Request([{"role": "user", "content": c}]) for c in "abcde"]
    assert backend.complete_many(requests) == list("ABCDE")
    assert backend.peak_in_flight == 3


def test_none_from_the_source_waits_for_a_reply_and_ends_when_nothing_is_in_flight():
    backend = FakeBackend(lambda m: m[-1]["content"], parallel=4)
    order = []

    def source():
        yield Request([{"role": "user", "content": "a"}])
        yield None  # nothing more until 'a' is answered
        order.append("resumed")
        yield Request([{"role": "user", "content": "b"}])
        yield None  # nothing in flight once 'b' is answered: the stream ends

    for _, text in backend.iter_complete(source()):
        order.append(text)
    assert order == ["a", "resumed", "b"]
    assert list(Backend.iter_complete(backend, iter([None]))) == []


class _SlowHttp(HttpBackend):
    """The HTTP backend's thread pool, with ``complete`` replaced by a timed echo."""

    def __init__(self, parallel: int):
        super().__init__("http://127.0.0.1:9", parallel=parallel)
        self.active = self.peak = 0
        self.lock = threading.Lock()

    def complete(self, messages, **params):
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(0.05)
        with self.lock:
            self.active -= 1
        return messages[-1]["content"]


def test_http_backend_keeps_parallel_requests_in_flight_and_pulls_lazily():
    backend = _SlowHttp(parallel=3)
    log: list = []
    results = backend.iter_complete(_requests(7, log))
    first = next(results)
    assert log == ["pull 0", "pull 1", "pull 2"]  # no more than `parallel` started
    rest = list(results)
    assert sorted(int(t) for _, t in [first, *rest]) == list(range(7))
    assert backend.peak == 3


def test_http_backend_drops_replies_in_flight_when_the_caller_stops():
    backend = _SlowHttp(parallel=2)
    results = backend.iter_complete(_requests(10, []))
    next(results)
    results.close()  # a cancelled run: the pool shuts down without waiting for the rest


# The default mix without near misses and multi-hop rows: the fake model's "What is known about ..." asks
# nothing that depends on a setting, which a near miss must, and names no shared entity in a second part,
# which a multi-hop row must (tests/core/test_unanswerable.py and test_multihop_rules.py cover them).
FAKE_MIX = {t: w for t, w in DEFAULT_MIX.items() if t not in ("unanswerable", "multi_hop")}


@pytest.mark.parametrize("parallel", [2, 5])
def test_batched_generation_meets_the_mix_exactly_and_commits_each_reply(sample_db, sample_project_path, parallel):
    committed = []

    def reply(messages):
        # A separate connection sees what generate has committed before this reply.
        other = open_project(sample_project_path)
        committed.append(other.execute("SELECT (SELECT COUNT(*) FROM queries) + "
                                       "(SELECT COUNT(*) FROM rejected_candidates)").fetchone()[0])
        other.close()
        return good_reply(messages)

    backend = FakeBackend(reply, parallel=parallel)
    summary = generate(sample_db, GenerationConfig(count=10, seed=3, mix=FAKE_MIX), backend=backend)
    assert summary["accepted"] == 10 and summary["status"] == "complete"
    assert summary["by_type"] == allocate(10, FAKE_MIX)
    assert backend.peak_in_flight == parallel
    # Reply i is produced only after replies 0..i-parallel were judged and committed.
    assert all(n >= i - parallel + 1 for i, n in enumerate(committed))
    texts = [r[0] for r in sample_db.execute("SELECT text_norm FROM queries")]
    assert len(texts) == len(set(texts))


def test_scheduler_stops_asking_for_a_type_that_has_its_rows(sample_db):
    backend = FakeBackend(good_reply, parallel=8)
    summary = generate(sample_db, GenerationConfig(count=2, mix={"factoid": 1.0}, seed=1), backend=backend)
    assert summary["accepted"] == 2
    # Every reply is accepted by the fake model: with 2 rows wanted, at most 4 are asked for
    # (need / acceptance estimate), not a full batch of 8, and once both rows are in, the
    # rest are abandoned unanswered (a batching backend stops decoding them).
    assert len(backend.prompts) == 2
    assert 2 < backend.peak_in_flight <= 4


def test_cancel_during_a_batched_run_then_resume_reaches_the_target(sample_db):
    cancel = CancelToken()
    first = generate(sample_db, GenerationConfig(count=12, seed=4),
                     backend=FakeBackend(cancel_at_call(cancel, 5), parallel=4), cancel=cancel)
    assert first["status"] == "cancelled" and first["accepted"] < 12
    second = generate(sample_db, GenerationConfig(resume=True, seed=4), backend=FakeBackend(good_reply, parallel=4))
    assert second["run_id"] == first["run_id"] and second["accepted"] == 12
    texts = [r[0] for r in sample_db.execute("SELECT text_norm FROM queries")]
    assert len(texts) == len(set(texts)) == 12


@pytest.mark.slow
def test_real_batched_decoding_agrees_with_one_at_a_time_under_greedy_sampling(bundled_model, sample_corpus):
    """Three prompts decoded together versus llama-cpp-python's high-level API one at a time,
    at temperature 0.

    Exact equality holds for the sequence whose KV cells start at cell 0, as in the
    sequential context. The others sit further along the shared (unified) cache, so the
    attention sums run in other SIMD lanes and round differently; on this 135M model that
    flips greedy near-ties (seen: the third of three prompts diverged after 'Question:').
    Every output is still a well-formed reply.
    """
    passages = [(sample_corpus / name).read_text()[:700] for name in
                ("api/authentication.md", "billing/refunds.md", "api/rate_limits.rst", "billing/invoices.txt")]
    kinds = ["factoid", "keyword", "vague", "factoid"]
    requests = [Request(prompts.build_messages(k, [p]), max_tokens=24, temperature=0.0, grammar=prompts.grammar_for(k))
                for k, p in zip(kinds, passages)]
    backend = LlamaCppBackend(bundled_model, parallel=3)
    batched = backend.complete_many(requests)
    # The fourth prompt waited for a free sequence and started from cells already cached.
    assert backend._decoder.stats["reused_tokens"] > 0
    backend.parallel = 1
    one_at_a_time = backend.complete_many(requests)
    assert batched[0] == one_at_a_time[0]
    assert all(text.startswith("Query: " if k == "keyword" else "Question: ") for k, text in zip(kinds, batched))


@pytest.mark.slow
def test_real_batched_generation_stores_valid_rows(sample_db, bundled_model, monkeypatch):
    monkeypatch.setattr(plan_module, "ATTEMPTS_PER_ROW", 2)  # bounded: 2 candidates per wanted row, no retries
    backend = LlamaCppBackend(bundled_model, parallel=3)
    summary = generate(sample_db, GenerationConfig(count=2, mix={"factoid": 1.0, "keyword": 1.0}, seed=0,
                                                   parallel=3, retries=0), backend=backend)
    assert summary["status"] in {"complete", "exhausted"}
    stored = summary["accepted"] + summary["rejected"]
    assert 1 <= stored <= 6  # 4 in the first pass, 2 more if one type's row goes to the other (refill)
    chunk_ids = {r[0] for r in sample_db.execute("SELECT id FROM chunks")}
    for text, gold, raw in sample_db.execute("SELECT text, gold_chunk_ids, raw_output FROM queries"):
        assert text and raw and set(json.loads(gold)) <= chunk_ids and json.loads(gold)
    for reason, raw in sample_db.execute("SELECT reason, raw_output FROM rejected_candidates"):
        assert reason and raw is not None
    run = json.loads(sample_db.execute("SELECT params FROM generation_runs").fetchone()[0])
    assert run["parallel"] == 3


@pytest.mark.slow
def test_real_retry_of_a_prompt_reuses_all_its_cached_cells(bundled_model, sample_corpus):
    """What makes a retry cheap on the batched path: a prompt asked again (another seed) after
    its first reply finished starts from that sequence's cells, all but the last token."""
    messages = prompts.build_messages("factoid", [(sample_corpus / "billing/refunds.md").read_text()[:700]])
    first, retry = (Request(messages, max_tokens=8, temperature=0.7, seed=seed) for seed in (1, 2))
    backend = LlamaCppBackend(bundled_model, parallel=2)
    answered = []

    def requests():
        yield first
        while not answered:
            yield None  # wait for the first reply, as generate() does before it asks again
        yield retry

    for request, _ in backend.iter_complete(requests()):
        answered.append(request)
    prompt_tokens = len(backend.chat_prompt(messages)[0])
    assert answered == [first, retry]
    stats = backend._decoder.stats
    assert (stats["prompt_tokens"], stats["reused_tokens"]) == (2 * prompt_tokens, prompt_tokens - 1)


@pytest.mark.slow
def test_real_one_sequence_keeps_each_types_prompt_for_the_next_request_of_that_type(bundled_model):
    """Issue 33: answer-first prompts of one type share their instructions and worked examples, and
    each type has its own, so one sequence alternating types evaluated whole prompts again. The
    decoder keeps the prompt a sequence moves away from: the fourth request (factoid, after factoid,
    keyword, vague) starts from the first one's cells, and greedy replies stay reproducible."""
    sentences = ["Guest accounts expire after seven days unless an administrator extends them.",
                 "The backup job runs every night and keeps the last fourteen copies.",
                 "Invoices above five thousand euros need a second approval before payment.",
                 "Firmware updates are installed at the next restart of the printer."]
    kinds = ["factoid", "keyword", "vague", "factoid"]

    def run(keep: int) -> tuple[list[str], int, int]:
        backend = LlamaCppBackend(bundled_model, n_threads=1, parallel=1)
        backend.decoder_for_one = True
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(llama_batch, "KEEP_PROMPTS", keep)
            requests = [Request(prompts.build_answer_first_messages(k, "Manual", s), max_tokens=20, temperature=0.0,
                                grammar=prompts.asked_grammar(k)) for k, s in zip(kinds, sentences)]
            texts = backend.complete_many(requests)
        prompt = backend.chat_prompt(requests[0].messages)[0]
        fourth = backend.chat_prompt(requests[3].messages)[0]
        return texts, backend._decoder.stats["reused_tokens"], common_prefix(prompt, fourth)

    kept, reused, shared = run(llama_batch.KEEP_PROMPTS)
    plain, reused_without, _ = run(0)
    # the factoid prefix was not evaluated again (without kept prompts each request shares only the few
    # tokens that open every chat prompt)
    assert shared > 150 and reused - reused_without >= 0.9 * shared
    # Greedy replies are reproducible with kept prompts. They need not equal the no-kept-prompts
    # decoder's token for token: evaluating a tail on cached cells sums in another order than
    # evaluating the whole prompt, and the subject-naming prompt turned one such tie into
    # "a product" against "a refund".
    assert run(llama_batch.KEEP_PROMPTS)[0] == kept and all(kept) and all(plain)
    assert all(text.startswith(("Question:", "Query:")) for text in kept)


def test_threads_default_to_the_cores_other_processes_leave_free(monkeypatch, bundled_model):
    """Under OpenMP a thread waiting for a descheduled one spins: on a loaded machine fewer threads
    run faster (bench/generate.py); on an idle one every physical core is used."""
    from curator.core.generation.backends import llama_cpp as module

    monkeypatch.setattr(module, "physical_cores", lambda: 2)
    monkeypatch.setattr(module.os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    for busy, free in ((0, 2), (8, 1), (1, 1), (None, 2)):  # None: no load figure at all
        monkeypatch.setattr(module, "busy_cpus", lambda busy=busy: busy)
        assert module.free_cores() == free
    monkeypatch.setattr(module, "busy_cpus", lambda: 1)
    backend = module.LlamaCppBackend(bundled_model)
    assert backend.n_threads == backend.n_threads_batch == 1
    assert module.LlamaCppBackend(backend.model_path, n_threads=2).n_threads_batch == 2


def test_busy_cpus_counts_what_runs_now_not_the_lagging_load_average(monkeypatch, tmp_path):
    """The 1-minute load average still counts a run that just ended: the next run would take
    1 thread on an idle machine. /proc/loadavg's runnable count is now; this process is left out."""
    from curator.core.generation.backends import llama_cpp as module

    readings = iter(["9.50 4.00 2.00 1/300 999\n", "9.50 4.00 2.00 3/300 999\n", "9.50 4.00 2.00 1/300 999\n"])
    real_open = open
    monkeypatch.setattr(module, "open", lambda path, *a, **k: __import__("io").StringIO(next(readings))
                        if path == "/proc/loadavg" else real_open(path, *a, **k), raising=False)
    assert module.busy_cpus(samples=3, interval=0) == 0  # median of 0, 2, 0 runnable others
    def missing(path, *a, **k):
        raise FileNotFoundError(path)
    monkeypatch.setattr(module, "open", missing, raising=False)
    monkeypatch.setattr(module.os, "getloadavg", lambda: (2.6, 1.0, 1.0))
    assert module.busy_cpus(samples=3, interval=0) == 3  # no /proc: the load average, rounded


def test_llama_cpps_load_warnings_are_held_and_a_failed_load_names_the_file(bundled_model, tmp_path, capsys):
    """llama-cpp-python prints llama.cpp's warnings to stderr even with verbose=False ("n_ctx_seq (N) >
    n_ctx_train (8192)" when the cell pool is larger than one sequence's training context): held, not shown."""
    from curator.core.errors import ModelFileError

    backend = LlamaCppBackend(bundled_model, n_ctx=16384)  # above SmolLM2's 8192: llama.cpp warns
    assert backend.llm is not None
    assert "n_ctx_train" not in capsys.readouterr().err
    pooled = LlamaCppBackend(bundled_model, n_ctx=4096, parallel=4)  # the batch decoder's pool: 4 x 4096 cells
    assert pooled.complete_many([Request([{"role": "user", "content": "Hi"}], max_tokens=2, temperature=0.0)] * 2)
    assert "n_ctx_train" not in capsys.readouterr().err
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(bundled_model.read_bytes()[:4_000_000])  # a GGUF header, the tensors cut off
    with pytest.raises(ModelFileError, match="cut.gguf: llama.cpp could not load this model"):
        LlamaCppBackend(cut, n_ctx=1024).llm
