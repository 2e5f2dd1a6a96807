"""An LLM claim judge scored by the model's probability of answering "yes".

The prompt is the yes/no judge measured in issue 40 (a system line, the context, the claim, then
QUESTION: is every part of the claim stated or implied, naming contradictions and added details), with
the context first and the claim last, so a trace's claims share a prompt prefix: a local model
keeps it in its KV cache and evaluates only each claim's tail (LlamaCppBackend.next_token_logprobs).

The score is not the sampled word: it is the probability mass of the reply's first token on the
"yes" variants (" yes", "yes", "Yes", ...) against the "no" variants, read from the token
log-probabilities, then calibrated (a 1-D logistic fit on its log-odds, per model file, fitted on
labelled claims by bench/diagnose_route.py and committed in curator/resources/judge/
llm_calibration.json with the sets it came from). A model without a calibration uses the raw
share. An endpoint that returns no log-probabilities is asked for the word instead (greedy, at
most a few tokens), and its verdicts say "sampled".

For a model whose calibration holds a "combined" fit (Qwen2.5-Coder-1.5B today), a local model reads each claim
three ways and a logistic fit weighs them (LlmJudge._by_combined): P(yes) against the whole contexts, P(yes) against
the claim's two nearest sentences, and the claim's lowest context gain. On claim sets nothing was chosen on it is
better than P(yes) alone (docs/benchmarks.md, "The combined judge"); it costs about twice the prompt tokens.

Verdicts are cached in the user's cache by (model SHA-256 or endpoint and model name, prompt
version, contexts, claim): judging the same claim against the same contexts again costs nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Optional

from curator.core.diagnosis.judge import content_stems, context_sentences
from curator.core.files import cache_dir
from curator.core.generation.backends import Backend, Request
from curator.core.generation.backends.llama_batch import common_prefix

SYSTEM = "You check whether a claim is fully supported by a context."
# The last line names the two ways the 1.5B model was fooled most (a claim saying the opposite in the context's own
# words, a claim adding a plausible detail). Chosen by a rule fixed before its run, on the fit sets only: adopt it
# if its balanced accuracy there beats the plain line's ("Is every part ... implied by the context? Answer yes or
# no.", PROMPT_VERSION yes-no-1): raw P(yes) >= 0.5, mean 0.867 against 0.844 (docs/benchmarks.md, "Diagnosis
# judge"). The calibration in llm_calibration.json is fitted on this prompt.
QUESTION = ("Is every part of the claim stated or directly implied by the context? A claim that says the opposite of "
            "the context, or adds a number, limit, option or other detail the context does not give, is not "
            "supported. Answer yes or no.")
PROMPT_VERSION = "yes-no-2"
# The prompt fits a 2048-token context even for text dense in code (about 3 characters a token).
MAX_CONTEXT_CHARS = 4500
YES_NO_GRAMMAR = 'root ::= "yes" | "no"\n'
CALIBRATION = Path(__file__).resolve().parents[2] / "resources" / "judge" / "llm_calibration.json"
TOP_TOKENS = 40
LLM_JUDGE_ID = "llm-judge"
# The combined judge (a model whose calibration holds "combined"): three readings of one model, weighed by a
# logistic fit on labelled claims (bench/judge_combined.py): P(yes) against the whole contexts, P(yes) against the
# claim's NEAREST_SENTENCES nearest sentences, and the claim's lowest context gain (how much less likely the
# context makes the claim's least fitting token than no context does: a flipped word the context contradicts).
NEAREST_SENTENCES = 2
COMBINED_FEATURES = ("whole", "nearest", "min_gain")
COMBINED_VERSION = "combined-1"


def judge_messages(contexts: list[str], claim: str, question: str = QUESTION) -> list[dict]:
    """The yes/no prompt: the contexts first (the prefix a trace's claims share), the claim last."""
    return _messages(contexts_text(contexts), claim, question)


def nearest_messages(contexts: list[str], claim: str, sentences: int = NEAREST_SENTENCES) -> list[dict]:
    """The yes/no prompt shown only the ``sentences`` context sentences sharing most words with the claim, in
    their order, without neighbours: set beside the sentence it copies, a claim that flips one word of it is
    easier for a small model to catch than against whole pages (issue 40, bench/judge_combined.py)."""
    said = context_sentences(contexts)
    text = " ".join(said[i][1] for i in sorted(_nearest(said, claim, sentences))) if said else "(no context)"
    return _messages(text, claim)


def evidence_messages(contexts: list[str], claim: str, sentences: int = 3) -> list[dict]:
    """The yes/no prompt shown only the context sentences nearest the claim (evidence) with their neighbours
    instead of the whole contexts (measured by bench/diagnose_route.py --evidence, not adopted). Each trace's
    claims then differ from the first token of the context on, so no prefix is shared."""
    return _messages(evidence_text(contexts, claim, sentences), claim)


def _messages(context_text: str, claim: str, question: str = QUESTION) -> list[dict]:
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Context:\n{context_text}\n\nClaim: {claim}\n\n{question}"}]


def _nearest(said: list[tuple[int, str]], claim: str, sentences: int) -> list[int]:
    """Positions of the ``sentences`` sentences sharing most content words with the claim (ties: earlier)."""
    wanted = content_stems(claim)
    overlap = [len(wanted & content_stems(text)) for _index, text in said]
    return sorted(range(len(said)), key=lambda i: (-overlap[i], i))[:sentences]


def evidence_text(contexts: list[str], claim: str, sentences: int = 3) -> str:
    """The ``sentences`` context sentences sharing most content words with the claim (ties: earlier first),
    each with its neighbours in the same context, in the contexts' order; "..." marks a gap."""
    said = context_sentences(contexts)
    if not said:
        return "(no context)"
    best = _nearest(said, claim, sentences)
    kept = sorted({j for i in best for j in (i - 1, i, i + 1)
                   if 0 <= j < len(said) and said[j][0] == said[i][0]})
    parts, previous = [], None
    for j in kept:
        if previous is not None and j != previous + 1:
            parts.append("...")
        parts.append(said[j][1])
        previous = j
    return " ".join(parts)


def claim_span(backend, contexts: list[str], claim: str) -> tuple[list[int], tuple[int, int]]:
    """The yes/no prompt's tokens and where the claim's tokens stand in them: found by what changes when the
    claim's start and the question's start change, so any chat template and tokenizer give the right span."""
    text = contexts_text(contexts)
    tokens = backend.chat_prompt(_messages(text, claim))[0]
    start = common_prefix(tokens, backend.chat_prompt(_messages(text, "Zq" + claim))[0])
    end = common_prefix(tokens, backend.chat_prompt(_messages(text, claim, "Qz " + QUESTION))[0])
    return tokens, (start, max(end, start + 1))


def contexts_text(contexts: list[str], limit: int = MAX_CONTEXT_CHARS) -> str:
    """The retrieved contexts as one text, each cut to an equal share of the character budget."""
    if not contexts:
        return "(no context)"
    share = max(300, limit // len(contexts))
    return "\n\n".join(" ".join(text.split())[:share] for text in contexts)


def answer_word(token: str) -> Optional[str]:
    """'yes' or 'no' when a reply token (or reply) is one of their variants, else None."""
    word = token.strip().strip(".!,\"'").lower()
    return word if word in ("yes", "no") else None


def yes_no_mass(top: list[tuple[str, float]]) -> tuple[float, float]:
    """Probability mass of the "yes" variants and of the "no" variants among the top first tokens."""
    mass = {"yes": 0.0, "no": 0.0}
    for token, logprob in top:
        word = answer_word(token)
        if word:
            mass[word] += math.exp(logprob)
    return mass["yes"], mass["no"]


def share_of_yes(yes: float, no: float) -> float:
    """P(yes) / (P(yes) + P(no)); 0.5 when the model put no mass on either."""
    return yes / (yes + no) if yes + no > 0 else 0.5


def parse_yes_no(text: str) -> Optional[str]:
    """'supported' / 'not supported' from a sampled reply: yes/no (or the old verdict words)."""
    words = " ".join((text or "").lower().replace("_", " ").split()).strip(" .!\"'")
    if words.startswith(("not supported", "unsupported", "no")):
        return "not supported"
    if words.startswith(("supported", "yes")):
        return "supported"
    return None


@lru_cache(maxsize=1)
def load_calibration(path: Optional[str] = None) -> dict:
    file = Path(path or CALIBRATION)
    return json.loads(file.read_text(encoding="utf-8")) if file.exists() else {"models": {}}


def calibrated(p_yes: float, fit: Optional[dict]) -> float:
    """The calibrated probability that the claim is supported: sigmoid(a * logit(p_yes) + b)."""
    if not fit or "a" not in fit:  # no fit, or only a combined one (bench/judge_combined.py on a new model)
        return p_yes
    p = min(max(p_yes, 1e-6), 1 - 1e-6)
    return 1.0 / (1.0 + math.exp(-(fit["a"] * math.log(p / (1 - p)) + fit["b"])))


def log_odds(p: float) -> float:
    """log(p / (1 - p)), with p clipped at 1e-4 from either end."""
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def combined_features(readings: dict) -> list[float]:
    """The combined judge's inputs: the log-odds of both P(yes) and the lowest gain as is."""
    return [log_odds(readings["whole"]), log_odds(readings["nearest"]), readings["min_gain"]]


def combined_probability(readings: dict, fit: dict) -> float:
    """P(supported) = sigmoid(weights . features + intercept), the weights fitted by bench/judge_combined.py."""
    z = sum(w * x for w, x in zip(fit["weights"], combined_features(readings))) + fit["intercept"]
    return 1.0 / (1.0 + math.exp(-z))


class VerdictCache:
    """LLM verdicts by (model, prompt version, contexts, claim) in a small SQLite file of the user's
    cache, shared by every project; a file that cannot be opened just means no cache."""

    def __init__(self, path: Optional[Path] = None):
        self.path = Path(path or cache_dir() / "judge" / "llm_verdicts.sqlite")
        self._lock = threading.Lock()
        self._conn: Optional[sqlite3.Connection] = None

    def _db(self) -> Optional[sqlite3.Connection]:
        if self._conn is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
                self._conn.execute("CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            except (OSError, sqlite3.Error):
                return None
        return self._conn

    @staticmethod
    def key(model: str, contexts: list[str], claim: str, prompt: str = PROMPT_VERSION) -> str:
        return hashlib.sha256(json.dumps([model, prompt, contexts, claim]).encode("utf-8")).hexdigest()

    def get(self, key: str) -> Optional[dict]:
        with self._lock:
            db = self._db()
            row = db and db.execute("SELECT value FROM verdicts WHERE key = ?", [key]).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict) -> None:
        with self._lock:
            db = self._db()
            if db is not None:
                with db:
                    db.execute("INSERT OR REPLACE INTO verdicts VALUES (?, ?)", [key, json.dumps(value)])


class LlmJudge:
    """Judges claims with an LLM backend: P(yes) from log-probabilities where the backend gives
    them (a local GGUF; an endpoint that returns ``logprobs``), else the sampled word."""

    def __init__(self, backend: Backend, calibration: Optional[dict] = None, cache: Optional[VerdictCache] = None,
                 evidence: int = 0):
        self.backend = backend
        self.evidence = evidence  # > 0: show the model this many nearest sentences, not the whole contexts
        self.prompt = f"{PROMPT_VERSION}|evidence-{evidence}" if evidence else PROMPT_VERSION
        self.model_key = model_key(backend)
        fits = (calibration or load_calibration())["models"]
        self.fit = fits.get(self.model_key) if self.model_key else None
        # the combined judge needs the claim's own token log-probabilities: a local model's, not an endpoint's
        self.combined = (self.fit or {}).get("combined") if hasattr(backend, "prompt_logprobs") and not evidence \
            else None
        if self.combined:
            self.prompt = f"{PROMPT_VERSION}|{COMBINED_VERSION}"
        # a backend without a model file or endpoint (a scripted fake) has no identity to cache under
        self.cache = cache if cache is not None else (VerdictCache() if self.model_key else None)
        self.logprobs = hasattr(backend, "next_token_logprobs") or hasattr(backend, "endpoint")
        self.seconds = 0.0  # spent asking the model (cache hits cost none)
        self.asked = self.hits = 0

    @property
    def id(self) -> str:
        return f"{LLM_JUDGE_ID}:{_model_name(self.backend)}"

    def agreement(self) -> Optional[float]:
        """This model's measured balanced accuracy on the held-out claim sets (None: not measured)."""
        return (self.combined or self.fit or {}).get("heldout_balanced_accuracy")

    def judge(self, items: list[tuple[object, list[str], str]]) -> Iterator[tuple[object, dict]]:
        """(tag, verdict) for each (tag, contexts, claim); one trace's claims should come together,
        in order, so a local model reuses their shared context."""
        pending = []
        for tag, contexts, claim in items:
            found = self.cache and self.cache.get(VerdictCache.key(self.model_key, contexts, claim, self.prompt))
            if found is not None:
                self.hits += 1
                yield tag, {**found, "cached": True}
            else:
                pending.append((tag, contexts, claim))
        if self.combined:
            pending = yield from self._by_combined(pending)
        if self.logprobs:
            pending = yield from self._by_logprobs(pending)
        yield from self._by_sampling(pending)

    def _by_logprobs(self, pending: list) -> Iterator[tuple[object, dict]]:
        """Verdicts from P(yes); returns the items left for sampling (an endpoint without logprobs)."""
        for i, (tag, contexts, claim) in enumerate(pending):
            top = self._top_tokens(self.messages(contexts, claim))
            if top is None:
                self.logprobs = False
                return pending[i:]
            yield tag, self._remember(contexts, claim, self._scored(top))
        return []

    def _by_combined(self, pending: list) -> Iterator[tuple[object, dict]]:
        """Verdicts of the combined judge, one trace (a run of items with the same contexts) at a time: first
        every claim against the whole contexts (the context prefix stays in the KV cache), then against its
        nearest sentences, then with no context; a trace's verdicts are yielded (and committed) together."""
        start = 0
        while start < len(pending):
            end = start + 1
            while end < len(pending) and pending[end][1] == pending[start][1]:
                end += 1
            trace = pending[start:end]
            began = time.perf_counter()
            whole = [self._claim_logprobs(contexts, claim) for _tag, contexts, claim in trace]
            nearest = [self._nearest_reading(contexts, claim) for _tag, contexts, claim in trace]
            alone = [self._claim_logprobs([], claim, up_to_claim=True)[0] for _tag, _contexts, claim in trace]
            self.seconds += time.perf_counter() - began
            self.asked += 3 * len(trace)
            for (tag, contexts, claim), (said, top), p_near, base in zip(trace, whole, nearest, alone):
                yield tag, self._remember(contexts, claim, self._combined_verdict(top, p_near, said, base))
            start = end
        return []

    def _claim_logprobs(self, contexts: list[str], claim: str, up_to_claim: bool = False):
        """The claim tokens' log-probabilities in the yes/no prompt, and the reply's likeliest first tokens; with
        ``up_to_claim`` the question after the claim is not evaluated (nothing before the claim depends on it)."""
        tokens, span = claim_span(self.backend, contexts, claim)
        return self.backend.prompt_logprobs(tokens[:span[1]] if up_to_claim else tokens, span, TOP_TOKENS)

    def _nearest_reading(self, contexts: list[str], claim: str) -> float:
        return share_of_yes(*yes_no_mass(self.backend.next_token_logprobs(nearest_messages(contexts, claim),
                                                                         TOP_TOKENS)))

    def _combined_verdict(self, top, p_near: float, said: list[float], base: list[float]) -> dict:
        yes, no = yes_no_mass(top)
        p_yes = share_of_yes(yes, no)
        gain = min(c - b for c, b in zip(said, base)) if said and base else 0.0
        readings = {"whole": p_yes, "nearest": p_near, "min_gain": gain}
        probability = combined_probability(readings, self.combined)
        return {"verdict": "supported" if probability >= 0.5 else "not supported",
                "probability": round(probability, 4), "p_yes": round(p_yes, 4), "p_nearest": round(p_near, 4),
                "min_gain": round(gain, 4), "yes_no_mass": round(yes + no, 4),
                "sampled": answer_word(top[0][0]) if top else None, "method": "logprobs", "judge": COMBINED_VERSION,
                "calibrated": True}

    def _by_sampling(self, pending: list) -> Iterator[tuple[object, dict]]:
        requests = (Request(self.messages(contexts, claim), max_tokens=3, temperature=0.0, grammar=YES_NO_GRAMMAR,
                            tag=(tag, contexts, claim)) for tag, contexts, claim in pending)
        started = time.perf_counter()
        for request, reply in self.backend.iter_complete(requests):
            tag, contexts, claim = request.tag
            verdict = parse_yes_no(reply)
            self.asked += 1
            self.seconds += time.perf_counter() - started
            started = time.perf_counter()
            yield tag, self._remember(contexts, claim, {
                "verdict": verdict or "unparsed", "probability": None, "p_yes": None, "method": "sampled",
                "reply": reply[:40]}, keep=verdict is not None)

    def messages(self, contexts: list[str], claim: str) -> list[dict]:
        return evidence_messages(contexts, claim, self.evidence) if self.evidence else judge_messages(contexts, claim)

    def _top_tokens(self, messages: list[dict]) -> Optional[list[tuple[str, float]]]:
        started = time.perf_counter()
        if hasattr(self.backend, "next_token_logprobs"):
            top = self.backend.next_token_logprobs(messages, TOP_TOKENS)
        else:
            top = endpoint_logprobs(self.backend, messages)
        self.seconds += time.perf_counter() - started
        self.asked += 1
        return top

    def _scored(self, top: list[tuple[str, float]]) -> dict:
        yes, no = yes_no_mass(top)
        p_yes = share_of_yes(yes, no)
        probability = calibrated(p_yes, self.fit)
        return {"verdict": "supported" if probability >= 0.5 else "not supported",
                "probability": round(probability, 4), "p_yes": round(p_yes, 4), "yes_no_mass": round(yes + no, 4),
                "sampled": answer_word(top[0][0]) if top else None, "method": "logprobs",
                "calibrated": self.fit is not None}

    def _remember(self, contexts: list[str], claim: str, verdict: dict, keep: bool = True) -> dict:
        if keep and self.cache:
            self.cache.put(VerdictCache.key(self.model_key, contexts, claim, self.prompt), verdict)
        return {**verdict, "cached": False}


def model_key(backend: Backend) -> Optional[str]:
    """What a cached verdict and a calibration are keyed by: the model file's SHA-256, else the
    endpoint and model name (a server's weights cannot be hashed from here); None for neither."""
    path = getattr(backend, "model_path", None)
    if path is not None:
        from curator.core.cachefiles import file_sha256

        return file_sha256(path)
    endpoint = getattr(backend, "endpoint", None)
    return f"{endpoint}|{getattr(backend, 'model', '')}" if endpoint else None


def _model_name(backend: Backend) -> str:
    path = getattr(backend, "model_path", None) or getattr(backend, "endpoint", None)
    return getattr(path, "name", None) or str(path or backend.id)


def endpoint_logprobs(backend, messages: list[dict]) -> Optional[list[tuple[str, float]]]:
    """The first reply token's top log-probabilities from an OpenAI-compatible endpoint
    (``logprobs``/``top_logprobs``), or None when the server gives none or refuses the request (the
    judge then asks for the word through the backend, whose retries and errors say what went wrong)."""
    import urllib.error

    from curator.core.httpio import fetch_capped, json_request

    body = {"model": backend.model, "messages": messages, "max_tokens": 1, "temperature": 0.0,
            "logprobs": True, "top_logprobs": 20}
    try:
        raw = fetch_capped(json_request(backend._url(), body, backend.api_key), time.monotonic() + backend.deadline,
                           backend.timeout, backend.max_reply_bytes, f"{backend.endpoint}: the reply is too large")
    except (urllib.error.URLError, OSError):
        return None
    try:
        first = json.loads(raw)["choices"][0]["logprobs"]["content"][0]
        return [(t["token"], float(t["logprob"])) for t in first["top_logprobs"]]
    except (KeyError, IndexError, TypeError, ValueError):
        return None
