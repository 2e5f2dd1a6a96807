"""The LLM claim judge scored by P(yes), its verdict cache, the calibration and the routing by the
default judge's measured reliability: fast fakes for the arithmetic, the real bundled model for the
mechanics (it judges poorly, so only the mechanics are asserted), a stdlib HTTP server for an
endpoint with and without log-probabilities."""

from __future__ import annotations

import json
import math
import os
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from curator.core.diagnosis.faithfulness import claim_verdicts, judge_traces
from curator.core.diagnosis.llm_judge import (LlmJudge, VerdictCache, calibrated, judge_messages, share_of_yes,
                                              yes_no_mass)
from curator.core.diagnosis.routing import agreement, expected_wrong, fit_routing, reliable
from curator.core.diagnosis.traces import import_traces
from curator.core.generation.backends import FakeBackend, HttpBackend
from scripted import fixed_claim_judge

ROUTING = {"reliable_below": 0.1, "reliable_above": 0.9,
           "bins": [[0.0, 0.1, 40, 0.97], [0.1, 0.9, 60, 0.7], [0.9, 1.0, 40, 0.96]]}


class ScriptedLogprobs(FakeBackend):
    """A backend that gives first-token log-probabilities: P(yes) per claim word."""

    def __init__(self, p_yes: dict[str, float]):
        super().__init__(["(sampled: never asked)"])
        self.p_yes, self.scored = p_yes, []

    def next_token_logprobs(self, messages, top=40):
        claim = messages[-1]["content"].split("Claim: ")[1].split("\n\n")[0]
        self.scored.append(claim)
        p = next(v for word, v in self.p_yes.items() if word in claim)
        return [(" yes", math.log(p * 0.6)), ("Yes", math.log(p * 0.3)), ("No", math.log((1 - p) * 0.9)),
                ("The", math.log(0.1))]


def test_yes_and_no_variants_are_summed_and_shared():
    top = [("Yes", math.log(0.5)), (" yes", math.log(0.1)), ("No", math.log(0.2)), (" no.", math.log(0.1)),
           ("Maybe", math.log(0.1))]
    yes, no = yes_no_mass(top)
    assert yes == pytest.approx(0.6) and no == pytest.approx(0.3)
    assert share_of_yes(yes, no) == pytest.approx(2 / 3) and share_of_yes(0.0, 0.0) == 0.5


def test_calibration_is_a_logistic_on_the_log_odds():
    assert calibrated(0.8, None) == 0.8
    assert calibrated(0.5, {"a": 2.0, "b": 0.0}) == pytest.approx(0.5)
    assert calibrated(0.8, {"a": 1.0, "b": 0.0}) == pytest.approx(0.8)
    assert calibrated(0.8, {"a": 1.0, "b": -math.log(4)}) == pytest.approx(0.5)  # a shifted threshold


def test_prompt_puts_the_context_first_and_the_claim_last():
    first, second = judge_messages(["A context."], "Claim one."), judge_messages(["A context."], "Claim two.")
    assert first[0]["content"] == "You check whether a claim is fully supported by a context."
    text = first[1]["content"]
    assert text.startswith("Context:\nA context.") and text.endswith(
        "Claim: Claim one.\n\nIs every part of the claim stated or directly implied by the context? A claim that says "
        "the opposite of the context, or adds a number, limit, option or other detail the context does not give, is "
        "not supported. Answer yes or no.")
    shared = os.path.commonprefix([first[1]["content"], second[1]["content"]])
    assert shared == "Context:\nA context.\n\nClaim: Claim "  # everything before the claim is shared


def test_scores_come_from_logprobs_and_a_second_run_hits_the_cache(tmp_path):
    backend = ScriptedLogprobs({"alpha": 0.9, "beta": 0.2})
    cache = VerdictCache(tmp_path / "verdicts.sqlite")
    judge = LlmJudge(backend, calibration={"models": {}}, cache=cache)
    items = [(1, ["ctx"], "alpha holds"), (2, ["ctx"], "beta holds")]
    first = dict(judge.judge(items))
    assert first[1]["p_yes"] == pytest.approx(0.9) and first[1]["verdict"] == "supported"
    assert first[2]["p_yes"] == pytest.approx(0.2) and first[2]["verdict"] == "not supported"
    assert first[1]["method"] == "logprobs" and not first[1]["cached"] and first[1]["sampled"] == "yes"
    again = dict(LlmJudge(backend, calibration={"models": {}}, cache=cache).judge(items))
    assert all(v["cached"] for v in again.values()) and len(backend.scored) == 2  # not asked again
    assert again[1]["p_yes"] == first[1]["p_yes"]


def test_routing_table_from_labelled_scores():
    scored = ([(0.02, False)] * 30 + [(0.03, True)] + [(0.3, True), (0.3, False)] * 5 + [(0.7, True), (0.7, False)] * 5
              + [(0.97, True)] * 30)
    table = fit_routing(scored, (0.0, 0.05, 0.5, 0.95, 1.0), fitted_on="test")
    assert table["reliable_below"] == 0.05 and table["reliable_above"] == 0.95
    assert table["bins"][0] == [0.0, 0.05, 31, round(30 / 31, 4)]
    assert table["region"] == {"claims": 81, "reliable": 61, "agreement": round(60 / 61, 4)}
    assert reliable(0.01, table) and reliable(0.99, table) and not reliable(0.5, table)
    assert agreement(0.3, table) == agreement(0.7, table) == 0.5 and agreement(1.0, table) == 1.0
    assert agreement(0.01, table) == round(30 / 31, 4)
    assert expected_wrong([0.5, 0.5], table) == pytest.approx(1.0)
    never = fit_routing([(0.02, True), (0.98, False)], (0.0, 0.5, 1.0), fitted_on="test")
    assert not reliable(0.02, never) and not reliable(0.98, never)  # no region holds: every claim is unsure


def _one_trace(db, tmp_path, response: str, context: str) -> str:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"user_input": "q", "retrieved_contexts": [context], "response": response}) + "\n")
    import_traces(db, path)
    return db.execute("SELECT id FROM traces").fetchone()[0]


def test_routed_llm_with_scripted_logprobs_records_who_judged(sample_db, tmp_path, monkeypatch):
    from curator.core.diagnosis import routing

    monkeypatch.setattr(routing, "load_routing", lambda path=None: ROUTING)
    trace_id = _one_trace(sample_db, tmp_path, "Alpha keys rotate weekly. Beta keys never expire at all. "
                                                "Gamma keys are kept.", "Keys rotate weekly.")
    backend = ScriptedLogprobs({"Alpha": 0.1, "Beta": 0.8, "Gamma": 0.3})
    llm = LlmJudge(backend, calibration={"models": {}}, cache=VerdictCache(tmp_path / "v.sqlite"))
    summary = judge_traces(sample_db, judge=fixed_claim_judge({"Alpha": 0.95, "Beta": 0.5, "Gamma": 0.02}), llm=llm)
    assert backend.scored == ["Beta keys never expire at all."]  # the only claim outside the reliable region
    assert summary["by_llm"] == 1 and summary["llm_method"] == "log-probabilities"
    claims = claim_verdicts(sample_db, trace_id)
    assert [c["judged_by"] for c in claims] == ["default judge", "LLM judge", "default judge"]
    assert claims[1]["llm_probability"] == pytest.approx(0.8) and claims[1]["verdict"] == "supported"
    assert [c["verdict"] for c in claims] == ["supported", "supported", "not supported"]


def test_every_claim_option_sends_all_default_verdicts_to_the_llm(sample_db, tmp_path, monkeypatch):
    from curator.core.diagnosis import routing

    monkeypatch.setattr(routing, "load_routing", lambda path=None: ROUTING)
    _one_trace(sample_db, tmp_path, "Alpha keys rotate weekly. Beta keys never expire at all.", "Keys rotate weekly.")
    backend = ScriptedLogprobs({"Alpha": 0.1, "Beta": 0.8})
    llm = LlmJudge(backend, calibration={"models": {}}, cache=VerdictCache(tmp_path / "v.sqlite"))
    judge_traces(sample_db, judge=fixed_claim_judge({"Alpha": 0.95, "Beta": 0.02}), llm=llm, every_claim=True)
    assert len(backend.scored) == 2
    again = judge_traces(sample_db, judge=fixed_claim_judge({"Alpha": 0.95, "Beta": 0.02}), llm=llm, every_claim=True)
    assert again["by_llm"] == 0  # an LLM verdict is newest: nothing is judged twice


class _Endpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint answering "yes"; with logprobs only when ``with_logprobs``."""

    with_logprobs = False
    bodies: list = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        choice = {"message": {"role": "assistant", "content": "yes"}, "index": 0}
        if self.with_logprobs and body.get("logprobs"):
            choice["logprobs"] = {"content": [{"token": "yes", "logprob": math.log(0.7), "top_logprobs": [
                {"token": "yes", "logprob": math.log(0.7)}, {"token": "no", "logprob": math.log(0.3)}]}]}
        data = json.dumps({"choices": [choice]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("with_logprobs", [True, False])
def test_endpoint_with_logprobs_is_scored_and_without_them_falls_back_to_the_sampled_word(tmp_path, with_logprobs):
    handler = type("Handler", (_Endpoint,), {"with_logprobs": with_logprobs, "bodies": []})
    server = HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        backend = HttpBackend(f"http://127.0.0.1:{server.server_port}", parallel=1, retries=0)
        judge = LlmJudge(backend, cache=VerdictCache(tmp_path / "v.sqlite"))
        (_, verdict), = judge.judge([(1, ["ctx"], "a claim")])
    finally:
        server.shutdown()
    assert verdict["verdict"] == "supported"
    if with_logprobs:
        assert verdict["method"] == "logprobs" and verdict["p_yes"] == pytest.approx(0.7) and judge.logprobs
        assert len(handler.bodies) == 1 and handler.bodies[0]["top_logprobs"] == 20
    else:
        assert verdict["method"] == "sampled" and verdict["probability"] is None and not judge.logprobs
        assert len(handler.bodies) == 2 and handler.bodies[1]["max_tokens"] == 3  # asked again for the word


def test_real_bundled_model_scores_routes_and_caches(sample_db, tmp_path, bundled_model, monkeypatch):
    """The bundled 135M model through LlamaCppBackend.next_token_logprobs: probabilities in [0, 1],
    the context prefix reused by the trace's next claim, the claims outside the reliable region
    routed to it, its verdicts named, and a second run answered from the cache."""
    from curator.core.diagnosis import routing
    from curator.core.generation.backends import open_backend

    monkeypatch.setattr(routing, "load_routing", lambda path=None: ROUTING)
    context = "Keys are rotated weekly by the admins. Backups run every night and are kept for 30 days."
    trace_id = _one_trace(sample_db, tmp_path, "Keys are rotated weekly. Backups are kept for 90 days. "
                                                "Admins rotate the keys.", context)
    backend = open_backend(bundled_model, parallel=1)
    cache = VerdictCache(tmp_path / "v.sqlite")
    llm = LlmJudge(backend, cache=cache)
    summary = judge_traces(sample_db, judge=fixed_claim_judge({"weekly": 0.97, "Backups": 0.5, "Admins": 0.4}), llm=llm)
    assert summary["by_llm"] == 2 and summary["llm_method"] == "log-probabilities" and summary["unparsed"] == 0
    assert backend.prompt_tokens["reused"] > 0  # the second claim reused the shared context prefix
    claims = claim_verdicts(sample_db, trace_id)
    assert [c["judged_by"] for c in claims] == ["default judge", "LLM judge", "LLM judge"]
    assert all(0.0 <= c["llm_probability"] <= 1.0 for c in claims[1:])
    assert all(c["judge"] == f"llm-judge:{bundled_model.name}" and c["llm_method"] == "logprobs" for c in claims[1:])
    raw = [json.loads(r) for (r,) in sample_db.execute("SELECT raw FROM judgements WHERE judge LIKE 'llm-judge%'")]
    assert all(0.0 <= r["p_yes"] <= 1.0 and 0.0 < r["yes_no_mass"] <= 1.0 for r in raw)
    again = LlmJudge(backend, cache=cache)
    second = dict(again.judge([(c["claim_id"], [context], c["text"]) for c in claims[1:]]))
    assert again.asked == 0 and again.hits == 2 and all(v["cached"] for v in second.values())
    assert [second[c["claim_id"]]["p_yes"] for c in claims[1:]] == [r["p_yes"] for r in raw]


def test_the_evidence_prompt_shows_the_sentences_nearest_the_claim_with_their_neighbours():
    """bench/diagnose_route.py --evidence N: the N context sentences sharing most words with the claim, each with its
    neighbours in the same context, in order, "..." at a gap; cached apart from the whole-context prompt."""
    from curator.core.diagnosis import llm_judge

    context = ("Fetchmail polls the server every five minutes. It keeps no state between runs. The weather was fine. "
               "Nobody asked. Use the --limit option to skip messages larger than a given size. Logs go to syslog.")
    shown = llm_judge.evidence_text([context, "An unrelated second context about printers."],
                                    "The --limit option skips messages larger than a size.", sentences=1)
    assert shown == ("Nobody asked. Use the --limit option to skip messages larger than a given size. "
                     "Logs go to syslog.")
    two = llm_judge.evidence_text([context], "Fetchmail polls every five minutes and --limit skips large messages.",
                                  sentences=2)
    assert two.startswith("Fetchmail polls") and " ... " in two and "printers" not in two
    assert (llm_judge.VerdictCache.key("m", [context], "c")
            != llm_judge.VerdictCache.key("m", [context], "c", f"{llm_judge.PROMPT_VERSION}|evidence-3"))


def test_the_nearest_prompt_shows_the_two_sentences_sharing_most_words_without_neighbours():
    from curator.core.diagnosis.llm_judge import nearest_messages

    context = ("Fetchmail polls the server every five minutes. It keeps no state between runs. The weather was fine. "
               "Use the --limit option to skip messages larger than a given size. Logs go to syslog.")
    shown = nearest_messages([context, "A second context about printers."],
                             "Fetchmail polls every five minutes and --limit skips large messages.")[1]["content"]
    assert shown.startswith("Context:\nFetchmail polls the server every five minutes. Use the --limit option to skip "
                            "messages larger than a given size.\n\nClaim: Fetchmail polls")


COMBINED = {"weights": [1.0, 2.0, 0.5], "intercept": -0.25, "heldout_balanced_accuracy": 0.9}


class ScriptedCombined(ScriptedLogprobs):
    """Also a local model's claim-token log-probabilities: the prompt is the claim's words, one token each, and
    each word's log-probability is -1 with a context, -3 without one, and -9 after a context for the word 'flipped'."""

    def __init__(self, p_yes):
        super().__init__(p_yes)
        self.model_path, self.prompts = None, []

    def chat_prompt(self, messages):
        return messages[-1]["content"].split(), []

    def prompt_logprobs(self, tokens, span, top=40):
        self.prompts.append(" ".join(tokens))
        alone = "(no context)" in " ".join(tokens)
        said = [-3.0 if alone else (-9.0 if w == "flipped" else -1.0) for w in tokens[span[0]:span[1]]]
        return said, self.next_token_logprobs([{"content": " ".join(tokens).replace("Claim: ", "Claim: ", 1)}])


def test_the_combined_judge_weighs_both_prompts_and_the_lowest_context_gain(tmp_path, monkeypatch):
    """A model calibrated with "combined": P(supported) = sigmoid(w . [logit P(yes) whole, logit P(yes) nearest,
    lowest gain] + b), a trace's claims judged against the whole contexts first (prefix kept), then nearest, then
    alone; the cache key names the combined judge."""
    from curator.core.diagnosis import llm_judge
    from curator.core.diagnosis.llm_judge import combined_probability

    backend = ScriptedCombined({"flipped": 0.6, "alpha": 0.8})  # P(yes) 0.6 alone would say "supported"
    monkeypatch.setattr(llm_judge, "model_key", lambda backend: "m")
    judge = LlmJudge(backend, calibration={"models": {"m": {"a": 1.0, "b": 0.0, "combined": COMBINED}}},
                     cache=VerdictCache(tmp_path / "v.sqlite"))
    verdicts = dict(judge.judge([(1, ["Alpha holds here."], "alpha holds here"),
                                 (2, ["Alpha holds here."], "alpha flipped here")]))
    assert verdicts[1]["min_gain"] == pytest.approx(2.0) and verdicts[2]["min_gain"] == pytest.approx(-6.0)
    expected = combined_probability({"whole": 0.8, "nearest": 0.8, "min_gain": 2.0}, COMBINED)
    logit = math.log(0.8 / 0.2)
    assert expected == pytest.approx(1 / (1 + math.exp(-(logit + 2 * logit + 1.0 - 0.25))))
    assert verdicts[1]["probability"] == pytest.approx(expected, abs=1e-4) and verdicts[1]["verdict"] == "supported"
    assert verdicts[2]["verdict"] == "not supported"  # the context made one word far less likely
    whole = [i for i, p in enumerate(backend.prompts) if "Alpha holds here." in p]
    assert whole == [0, 1]  # both claims against the whole context before anything else
    assert judge.agreement() == 0.9
    assert VerdictCache.key("m", ["c"], "x", judge.prompt) != VerdictCache.key("m", ["c"], "x")


def test_real_bundled_model_gives_the_claims_own_token_logprobs(bundled_model):
    """LlamaCppBackend.prompt_logprobs on the bundled model: the claim's span found in the chat prompt, its tokens'
    log-probabilities equal to a full logits_all evaluation (to 1e-3), the next-token list equal to
    next_token_logprobs', and the context prefix reused by the next claim."""
    import numpy as np
    from llama_cpp import Llama

    from curator.core.diagnosis.llm_judge import claim_span, judge_messages
    from curator.core.generation.answers import token_logprobs
    from curator.core.generation.backends import open_backend

    backend = open_backend(bundled_model, parallel=1)
    context = ["Backups run every night and are kept for 30 days. Keys are rotated weekly by the admins."]
    tokens, (start, end) = claim_span(backend, context, "Backups are kept for 90 days.")
    assert backend.llm.detokenize(tokens[start:end]).decode().strip().startswith("Backups are kept for 90 days")
    said, top = backend.prompt_logprobs(tokens, (start, end))
    reference = Llama(model_path=str(bundled_model), n_ctx=1024, n_threads=1, logits_all=True, verbose=False)
    reference.eval(tokens)
    expected = token_logprobs(np.asarray(reference.scores[start - 1:end - 1], dtype=np.float64), tokens[start:end])
    assert np.allclose(said, expected, atol=1e-3)
    assert [t for t, _ in top[:5]] == [t for t, _ in backend.next_token_logprobs(judge_messages(context, "Backups are "
                                                                                                 "kept for 90 days."))[:5]]
    before = dict(backend.prompt_tokens)
    tokens, span = claim_span(backend, context, "Keys are rotated weekly.")
    backend.prompt_logprobs(tokens, span)
    assert backend.prompt_tokens["reused"] - before["reused"] >= span[0] - 1  # the context was not evaluated again
