"""Engine settings chosen by measurement (issue 33): which model file and how many sequences decode
together, per generation mode and model file, probed once and cached; the run records which ran and why."""

from __future__ import annotations

import json

import pytest

from curator.core.generation import optimize, prompts
from curator.core.generation.backends import LlamaCppBackend, Request
from curator.core.generation.engine import _engine_candidates
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.generation.optimize import EngineCandidate, choose_engine


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "curator"


class ScriptedProbe:
    """Stands in for measure_engines: rates from a function of the candidate; records each probe."""

    def __init__(self, rate):
        self.rate, self.calls = rate, []

    def __call__(self, candidates, mode, threads=None, n_ctx=2048, chat_format=None, cancel=None):
        self.calls.append((mode, threads, [c.label for c in candidates]))
        return {c: self.rate(c) for c in candidates}


def test_one_allowed_setting_is_taken_without_a_probe(own_cache, bundled_model, monkeypatch):
    probe = ScriptedProbe(lambda c: 1.0)
    monkeypatch.setattr(optimize, "measure_engines", probe)
    only = EngineCandidate(bundled_model, 1)
    chosen, why = choose_engine([only], "extractive", threads=1)
    assert chosen == only and probe.calls == [] and "only setting" in why["chosen_by"]


def test_the_fastest_candidate_is_chosen_and_cached_per_mode_and_threads(own_cache, bundled_model, monkeypatch):
    probe = ScriptedProbe(lambda c: {1: 10.0, 4: 30.0, 8: 20.0}[c.parallel])
    monkeypatch.setattr(optimize, "measure_engines", probe)
    candidates = [EngineCandidate(bundled_model, p) for p in (1, 4, 8)]
    chosen, why = choose_engine(candidates, "extractive", threads=2)
    assert chosen.parallel == 4 and why["chosen_by"] == "probe"
    assert why["probe_rows_per_min"] == {"Q4_1 x1": 10.0, "Q4_1 x4": 30.0, "Q4_1 x8": 20.0}
    # The same files, mode and threads again: the cached choice, no second probe.
    probe.rate = lambda c: {1: 50.0, 4: 1.0, 8: 1.0}[c.parallel]
    chosen, why = choose_engine(candidates, "extractive", threads=2)
    assert chosen.parallel == 4 and why["chosen_by"] == "probe (cached)" and len(probe.calls) == 1
    # Another mode, or another thread count, is measured on its own.
    assert choose_engine(candidates, "free", threads=2)[0].parallel == 1
    assert choose_engine(candidates, "extractive", threads=1)[0].parallel == 1
    assert [call[:2] for call in probe.calls] == [("extractive", 2), ("free", 2), ("extractive", 1)]
    assert len(json.loads((own_cache / "engine" / "choices.json").read_text())) == 3


def test_a_damaged_choices_file_is_measured_again(own_cache, bundled_model, monkeypatch):
    probe = ScriptedProbe(lambda c: float(c.parallel))
    monkeypatch.setattr(optimize, "measure_engines", probe)
    (own_cache / "engine").mkdir(parents=True)
    (own_cache / "engine" / "choices.json").write_text("{not json")
    chosen, why = choose_engine([EngineCandidate(bundled_model, p) for p in (1, 2)], "extractive", threads=1)
    assert chosen.parallel == 2 and why["chosen_by"] == "probe" and len(probe.calls) == 1


def test_real_probe_times_every_candidate_on_the_modes_requests(bundled_model, monkeypatch):
    """The probe runs the real model on both decode paths: a rate for each candidate."""
    monkeypatch.setattr(optimize, "PROBE_ROUNDS", 1)
    candidates = [EngineCandidate(bundled_model, 1), EngineCandidate(bundled_model, 2)]
    rates = optimize.measure_engines(candidates, "extractive", threads=1)
    assert set(rates) == set(candidates) and all(rate > 0 for rate in rates.values())
    asked = optimize.probe_requests("extractive")  # what answer-first runs send: no passage prompt
    assert len(asked) == optimize.PROBE_REQUESTS
    assert [r.grammar == prompts.MULTI_HOP_GRAMMAR for r in asked].count(True) == 1  # a multi-hop pair of facts
    assert all(r.grammar == prompts.asked_grammar(t) for r, t in zip(asked[:-1], ("factoid", "keyword", "vague") * 3))
    assert all(len(r.messages) == 2 for r in optimize.probe_requests("free"))  # passages, no worked examples


def test_the_batch_decoder_follows_a_change_of_parallel(bundled_model):
    backend = LlamaCppBackend(bundled_model, parallel=2, n_threads=1)
    request = [Request([{"role": "user", "content": "Say hi."}], max_tokens=2, temperature=0.0)]
    backend.complete_many(request * 2)
    assert len(backend._decoder.slots) == 2
    backend.parallel = 3
    backend.complete_many(request * 3)
    assert len(backend._decoder.slots) == 3


def test_answer_first_rows_with_the_bundled_model_run_the_measured_default_without_a_probe(
        own_cache, sample_db, bundled_model, monkeypatch):
    """Issue 33: for answer-first rows the bundled model's Q4_1 file, one sequence, was measured at least as
    fast as every setting the probe could choose, so no probe runs (it cost minutes on first use) and no
    Q8_0 copy is written; the run record says which setting ran and why."""
    probe = ScriptedProbe(lambda c: 99.0 if c.source is not None else 1.0)  # a probe would pick the Q8_0 copy
    monkeypatch.setattr(optimize, "measure_engines", probe)
    summary = generate(sample_db, GenerationConfig(count=1, mix={"factoid": 1.0}, seed=0, retries=0))
    assert summary["status"] in {"complete", "exhausted"} and probe.calls == []
    assert not (own_cache / "models").exists() or not any((own_cache / "models").glob("*.gguf"))
    (model_path, params), = sample_db.execute("SELECT model_path, params FROM generation_runs")
    params = json.loads(params)
    assert model_path == str(bundled_model) and params["parallel"] == 1 and params["decoder"] == "batch"
    assert params["engine_choice"]["chosen"] == "Q4_1 x1"
    assert "no probe" in params["engine_choice"]["chosen_by"] and "measured" in params["engine_choice"]["chosen_by"]


@pytest.mark.parametrize("config", [dict(answers="free"), dict(parallel=2), dict(model_path="bundled")],
                         ids=["free answers", "--parallel given", "a user's GGUF"])
def test_the_probe_still_decides_where_no_default_was_measured(own_cache, bundled_model, config):
    """--answers free, a --parallel over both files, or a model file of the user's: the probe's candidates."""
    from curator.core.generation.engine import _measured_default

    config = GenerationConfig(**{k: (str(bundled_model) if v == "bundled" else v) for k, v in config.items()})
    assert _measured_default(config, None) is None
    assert _measured_default(GenerationConfig(), {"model_path": str(bundled_model), "params": "{}"}) is None  # resumed
    assert len(_engine_candidates(config, None)) >= 2


def test_a_run_records_the_engine_it_ran_and_a_resume_keeps_it(own_cache, sample_db, bundled_model, monkeypatch):
    """Where the probe decides (here rows the model writes whole), generation runs its choice (the Q4_1
    file, 2 sequences), records it and why, and a resumed run keeps that file and parallel whatever a
    new probe would say."""
    probe = ScriptedProbe(lambda c: 99.0 if (c.source is None and c.parallel == 2) else 1.0)
    monkeypatch.setattr(optimize, "PARALLEL_CHOICES", (1, 2))
    monkeypatch.setattr(optimize, "measure_engines", probe)
    summary = generate(sample_db, GenerationConfig(count=1, mix={"factoid": 1.0}, seed=0, retries=0, answers="free"))
    assert summary["status"] in {"complete", "exhausted"}
    (model_path, params), = sample_db.execute("SELECT model_path, params FROM generation_runs")
    params = json.loads(params)
    assert model_path == str(bundled_model) and params["parallel"] == 2 and "source_model_path" not in params
    assert params["engine_choice"]["chosen"] == "Q4_1 x2" and params["engine_choice"]["chosen_by"] == "probe"
    assert set(params["engine_choice"]["probe_rows_per_min"]) == {"Q4_1 x1", "Q4_1 x2", "Q8_0 x1", "Q8_0 x2"}
    run = dict(zip(("model_path", "params"), (model_path, json.dumps(params))))
    assert _engine_candidates(GenerationConfig(), run) == [EngineCandidate(bundled_model, 2)]
    assert _engine_candidates(GenerationConfig(parallel=1), run) == [EngineCandidate(bundled_model, 1)]


def test_a_probe_stops_on_cancel_before_timing_a_candidate(bundled_model):
    """Stop in the Generate tab during a first-use probe (minutes on 2 cores) did nothing until it ended."""
    from curator.core.progress import CancelToken, Cancelled

    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        optimize.measure_engines([EngineCandidate(bundled_model, 1), EngineCandidate(bundled_model, 4)],
                                 "extractive", threads=1, cancel=token)


def test_a_model_file_is_hashed_once_until_it_changes_even_across_processes(own_cache, tmp_path, monkeypatch):
    """The probe's cache key and a run's record name a model file by its SHA-256; a big user GGUF is
    hashed once, not in every process (the per-process memory is cleared here), and again only when
    the file changes or the cache file is damaged."""
    import os

    from curator.core import cachefiles

    hashed = []
    real_digest = cachefiles._digest
    monkeypatch.setattr(cachefiles, "_digest", lambda path: hashed.append(path) or real_digest(path))
    monkeypatch.setattr(cachefiles, "_HASHES", {})
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 64)
    first = cachefiles.file_sha256(model)
    assert first == real_digest(model) and len(hashed) == 1
    cachefiles._HASHES.clear()  # a new process
    assert cachefiles.file_sha256(model) == first and len(hashed) == 1  # read from the disk cache
    model.write_bytes(b"GGUF" + b"\1" * 64)  # same size, new bytes and mtime
    stat = model.stat()
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert cachefiles.file_sha256(model) == real_digest(model) != first and len(hashed) == 2
    cachefiles._HASHES.clear()
    (own_cache / "hashes" / "files.json").write_text("{not json", encoding="utf-8")
    assert cachefiles.file_sha256(model) == real_digest(model) and len(hashed) == 3  # damaged cache: hashed again


def test_the_engine_choice_key_does_not_rehash_a_known_file(own_cache, bundled_model, monkeypatch):
    from curator.core import cachefiles

    monkeypatch.setattr(cachefiles, "_HASHES", {})  # a fresh process: nothing remembered yet
    candidates = [EngineCandidate(bundled_model, p) for p in (1, 4)]
    key = optimize._choice_key(candidates, "extractive", 1)
    cachefiles._HASHES.clear()  # the next process
    monkeypatch.setattr(cachefiles, "_digest", lambda path: pytest.fail(f"{path} hashed again"))
    assert optimize._choice_key(candidates, "extractive", 1) == key
