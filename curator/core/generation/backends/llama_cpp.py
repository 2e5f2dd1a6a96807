"""A local GGUF model run in-process by llama-cpp-python, loaded lazily on first use, with the
chat template stored in the file. With ``parallel > 1`` it decodes several requests at once
(one llama.cpp sequence id each, see ``llama_batch.BatchDecoder``).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Iterable, Iterator, Optional, Union

from curator.core.cachefiles import check_gguf_header
from curator.core.errors import InputError, ModelFileError
from curator.core.generation.backends.base import Backend, Messages, Request, native_log_held
from curator.core.modelfiles.header import GGUF_MAGIC, read_header

MIN_GGUF_BYTES = 1024
_LOAD_LOCK = threading.Lock()  # model loads that patch llama-cpp-python defaults, one at a time
_TEMPLATE_LOCK = threading.Lock()  # model loads that keep llama-cpp-python from compiling templates
DEFAULT_PARALLEL = 8  # sequences decoded together by default (figures: bench/generate.py)


def physical_cores() -> int:
    """Physical cores (llama.cpp gains nothing from hyper-threads); else the logical count."""
    cores, package = set(), None
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("physical id"):
                    package = line.split(":", 1)[1].strip()
                elif line.startswith("core id"):
                    cores.add((package, line.split(":", 1)[1].strip()))
    except OSError:
        pass
    return len(cores) or os.cpu_count() or 1


def free_cores() -> int:
    """Physical cores not already kept busy by other processes, at least 1.

    Why: this build runs ggml's threads under OpenMP, and a thread waiting at a barrier for one the
    OS has descheduled spins. On the shared 2-core machine here (load average ~8.5), bench/generate.py
    measured the bundled model at 1 thread against 2: prompt 245-265 vs 112-170 tokens/s (Q8_0),
    164-167 vs 44-131 (Q4_1); one-sequence decode 49-50 vs 23-27 (Q8_0), 61-65 vs 26-32 (Q4_1).
    On an idle machine every physical core is free (2 threads: prompt 462-464 vs 242-244 tokens/s).
    """
    cores = physical_cores()
    busy = busy_cpus()
    if busy is None:
        return cores
    logical = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or cores)
    return max(1, min(cores, logical - busy))


def busy_cpus(samples: int = 5, interval: float = 0.02) -> Optional[int]:
    """CPUs other processes keep busy now: the median count of runnable tasks in /proc/loadavg over
    ~0.1 s, less this process; the 1-minute load average where that file is missing (not Linux).

    Not the load average on Linux: it lags a minute, so a run started right after another (or
    after a test suite) saw the finished work as load and took 1 thread on an idle 2-core machine.
    """
    counts = []
    for i in range(samples):
        try:
            with open("/proc/loadavg") as fh:
                counts.append(int(fh.read().split()[3].split("/")[0]) - 1)  # "running/total"; - ourselves
        except (OSError, IndexError, ValueError):
            break
        if i + 1 < samples:
            time.sleep(interval)
    if counts:
        return sorted(counts)[len(counts) // 2]
    try:
        return int(os.getloadavg()[0] + 0.5)
    except OSError:
        return None


def check_gguf(path: Union[str, Path]) -> Path:
    """Refuse a missing, truncated or non-GGUF model file before any work starts."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise ModelFileError(f"{path}: model file not found; pass --model PATH to a .gguf file.")
    size = path.stat().st_size
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic != GGUF_MAGIC:
        raise ModelFileError(f"{path}: not a GGUF model file (it does not start with 'GGUF').")
    if size < MIN_GGUF_BYTES:
        raise ModelFileError(f"{path}: GGUF file is truncated ({size} bytes).")
    check_gguf_header(path)
    return path


CHAT_TEMPLATE_KEY = "tokenizer.chat_template"


def gguf_string(path: Union[str, Path], key: str) -> Optional[str]:
    """A string value of a GGUF file's metadata header, or None when the file has no such key or is not GGUF.

    Through Curator's own header reader (modelfiles.header), which steps over the vocabulary: the gguf package's
    reader decodes every vocabulary string and tensor entry into numpy objects, 12 s a call on the 1.5B bench
    model's header on 2 cores, and a run read the template twice before its first row (bench/needfirst_prefix.py
    under cProfile, 2026-12-07). A damaged header is a one-line ModelFileError naming the file.
    """
    with open(path, "rb") as fh:
        if fh.read(4) != GGUF_MAGIC:
            return None
    value = read_header(path, tensors=False).get(key)
    return value if isinstance(value, str) else None


def template_warnings(path: Union[str, Path], has_template: Optional[bool] = None,
                      chat_format: Optional[str] = None) -> list[str]:
    """What a user must hear before a run with a GGUF file that holds no chat template (``has_template``
    read from the file when not given) and no --chat-format."""
    if chat_format:
        return []
    if has_template is None:  # read before the backend opens it: refuse a bad file as the backend would
        has_template = gguf_string(check_gguf(path), CHAT_TEMPLATE_KEY) is not None
    if has_template:
        return []
    # llama-cpp-python then guesses a format and falls back to llama-2's [INST] markup: right for
    # Llama 2 only. A file without a template is often a base model, which writes poor rows anyway.
    return [f"{Path(path).name} holds no chat template ({CHAT_TEMPLATE_KEY}), so prompts are wrapped in "
            "llama-cpp-python's fallback (llama-2) format; if this is a base model rather than an instruct "
            "model its rows will be poor. Use an instruct GGUF, or name its format with --chat-format "
            "(chatml, gemma, llama-3, mistral-instruct, ...)."]


def _known_chat_format(name: Optional[str]) -> Optional[str]:
    """``name`` if llama-cpp-python has that chat format; refused before any model loads otherwise."""
    if name is None:
        return None
    from llama_cpp import llama_chat_format

    known = sorted(llama_chat_format.LlamaChatCompletionHandlerRegistry()._chat_handlers)
    if name not in known:
        raise InputError(f"unknown chat format {name!r}; llama-cpp-python knows: {', '.join(known)}")
    return name


def _use_extra_buffer_types() -> bool:
    """Whether llama.cpp may repack weights into its extra CPU buffer types (AMX among them).

    On a CPU that advertises AMX, llama.cpp routes Q4/Q8 matmuls to its AMX kernels, and in a
    VM that lists the AMX flags without enabling the tile state those kernels segfault
    (seen here: ggml_backend_amx_mul_mat, SIGSEGV on the first decode). So they are off on
    such CPUs unless CURATOR_LLAMA_EXTRA_BUFTS=1 says the host really runs AMX. The Makefile's
    build has no AMX kernels (GGML_NATIVE=OFF), and there the other extra types (AVX2 repacking
    of Q4 weights) stay on; this guard is for a user's own -march=native build.
    """
    forced = os.environ.get("CURATOR_LLAMA_EXTRA_BUFTS")
    if forced is not None:
        return forced == "1"
    try:
        with open("/proc/cpuinfo") as fh:
            cpu_has_amx = "amx_tile" in fh.read()
    except OSError:
        return True
    return not (cpu_has_amx and _build_has_amx())


def _build_has_amx() -> bool:
    import llama_cpp

    return b"AMX_INT8 = 1" in llama_cpp.llama_print_system_info()


@contextlib.contextmanager
def _extra_buffer_types(enabled: bool):
    """``Llama()`` has no argument for ``use_extra_bufts``: patch its defaults while it loads."""
    import llama_cpp.llama as high_level

    if enabled:
        yield
        return
    with _LOAD_LOCK:
        original = high_level.llama_cpp.llama_model_default_params

        def defaults():
            params = original()
            params.use_extra_bufts = False
            return params

        high_level.llama_cpp.llama_model_default_params = defaults
        try:
            yield
        finally:
            high_level.llama_cpp.llama_model_default_params = original


@contextlib.contextmanager
def _templates_uncompiled():
    """``Llama()`` compiles every chat template of the file's header while it loads, so a template
    with a syntax error aborted the load with a traceback, even when --chat-format named another
    format. Loads skip that here; the file's template is rendered by template_guard instead."""
    import llama_cpp.llama as high_level

    with _TEMPLATE_LOCK:
        original = high_level.llama_chat_format.Jinja2ChatFormatter
        high_level.llama_chat_format.Jinja2ChatFormatter = _UncompiledTemplate
        try:
            yield
        finally:
            high_level.llama_chat_format.Jinja2ChatFormatter = original


class _UncompiledTemplate:
    """Stands in for llama-cpp-python's Jinja2ChatFormatter while a model loads (_templates_uncompiled)."""

    def __init__(self, template: str, *args, **kwargs):
        self.template = template

    def to_chat_handler(self):
        def not_guarded(**_):
            raise ModelFileError("a GGUF chat template was about to be rendered outside curator's guard")
        return not_guarded


def _guarded_template_handler(llm, model_path: Path, template: str):
    """A chat handler for the file's own template, as llama-cpp-python builds one (same prompt,
    stop string and end-of-generation check), rendering through a TemplateGuard."""
    from llama_cpp import llama as high_level, llama_chat_format

    from curator.core.generation.backends.template_guard import TemplateGuard

    eos_id, bos_id = llm.token_eos(), llm.token_bos()
    eos = llm._model.token_get_text(eos_id) if eos_id != -1 else ""
    bos = llm._model.token_get_text(bos_id) if bos_id != -1 else ""
    guard = TemplateGuard(model_path, template, bos, eos)

    def format_messages(*, messages, **_):
        stop_at_eos = high_level.StoppingCriteriaList([lambda tokens, logits: tokens[-1] in (eos_id,)])
        return llama_chat_format.ChatFormatterResponse(prompt=guard.render(messages), stop=[eos],
                                                       stopping_criteria=stop_at_eos, added_special=True)

    return llama_chat_format.chat_formatter_to_chat_completion_handler(format_messages)




class LlamaCppBackend(Backend):
    """A GGUF model run in-process by llama-cpp-python."""

    id = "llama-cpp"
    biases_logits = True

    def __init__(self, model_path: Union[str, Path], n_ctx: int = 2048, n_threads: Optional[int] = None,
                 seed: int = 0, parallel: int = 1, source_model_path: Union[str, Path, None] = None,
                 n_threads_batch: Optional[int] = None, chat_format: Optional[str] = None):
        self.model_path = check_gguf(model_path)
        # A llama-cpp-python chat format name (chatml, gemma, llama-3, ...) for a file that holds no
        # chat template; None uses the template the file holds.
        self.chat_format = _known_chat_format(chat_format)
        self.chat_template = gguf_string(self.model_path, CHAT_TEMPLATE_KEY)
        self.has_chat_template = self.chat_template is not None
        # The file model_path was made from (a repacked copy's original), named in the run record.
        self.source_model_path = Path(source_model_path) if source_model_path else None
        # llama-cpp-python's defaults (n_ctx=512, half the cores) are too small and too slow.
        self.n_ctx = n_ctx
        # Decode (a token per sequence per pass) and prompt evaluation (batches of tokens) each get a
        # pool; bench/generate.py measures both phases. By default both take the free cores: on the
        # 2-core machine measured, the best count was the same for both phases (see free_cores).
        self.n_threads = n_threads or free_cores()
        self.n_threads_batch = n_threads_batch or self.n_threads
        self.seed = seed
        self.parallel = max(1, parallel)
        self._llm = None
        self._decoder = None
        self._grammars: dict[str, object] = {}
        self.engine_choice: Optional[dict] = None  # why this file and parallel were chosen (optimize.choose_engine)
        # One sequence through the batch decoder too, not llama-cpp-python's high-level API: the decoder
        # checks only the sampled token against a grammar, the high-level API filters the whole vocabulary
        # by it (and by repeat penalties) for every token. Greedy replies are the same either way.
        self.decoder_for_one = False
        # (prompts, cells) the batch decoder keeps for their prefix; None: its default (a need-first run sets
        # llama_batch.NEED_FIRST_KEEP).
        self.prompt_keep: Optional[tuple[int, int]] = None

    @property
    def llm(self):
        if self._llm is None:
            from llama_cpp import Llama  # heavy: imported on first use only

            try:
                with native_log_held() as said, _templates_uncompiled(), \
                        _extra_buffer_types(_use_extra_buffer_types()):
                    llm = Llama(model_path=str(self.model_path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                                n_threads_batch=self.n_threads_batch, seed=self.seed, chat_format=self.chat_format,
                                verbose=False)
            except (ValueError, RuntimeError) as exc:
                reason = f"; llama.cpp said: {' / '.join(said)}" if said else ""
                raise ModelFileError(f"{self.model_path}: llama.cpp could not load this model ({exc}{reason}).") \
                    from None
            if llm.chat_format == "chat_template.default":  # the file's template (not a known format's copy)
                template = llm.metadata.get(CHAT_TEMPLATE_KEY, self.chat_template)  # what llama-cpp-python uses
                llm._chat_handlers[llm.chat_format] = _guarded_template_handler(llm, self.model_path, template)
            self._llm = llm
        return self._llm

    def grammar(self, text: Optional[str]):
        """The compiled llama.cpp grammar for a GBNF text (compiled once per text), or None."""
        if text is None:
            return None
        if text not in self._grammars:
            from llama_cpp import LlamaGrammar

            self._grammars[text] = LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[text]

    def token_bias(self, request: Request) -> dict[int, float]:
        """{token id: bias} steering ``request`` away from its words to avoid (generation.copybias), in this
        model's own token ids; empty when it has none."""
        if request.avoid is None:
            return {}
        llm = self.llm
        return request.avoid.token_bias(lambda text: llm.tokenize(text.encode("utf-8"), add_bos=False, special=False),
                                        lambda token: llm.detokenize([token]).decode("utf-8", errors="replace"))

    def count_tokens(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False))

    def complete(self, messages: Messages, *, max_tokens: int = 128, temperature: float = 0.7,
                 seed: int = 0, grammar: Optional[str] = None, logit_bias: Optional[dict] = None) -> str:
        out = self.llm.create_chat_completion(messages, max_tokens=max_tokens, temperature=temperature,
                                              seed=seed, grammar=self.grammar(grammar), logit_bias=logit_bias or None)
        return out["choices"][0]["message"]["content"] or ""

    def _complete_request(self, request: Request) -> str:
        """llama-cpp-python's own sampling, with the request's copy bias (generation.copybias) if any."""
        return self.complete(request.messages, **request.params(), logit_bias=self.token_bias(request))

    def iter_complete(self, requests: Iterable[Optional[Request]]) -> Iterator[tuple[Request, str]]:
        if self.parallel <= 1 and not self.decoder_for_one:
            yield from super().iter_complete(requests)
            return
        yield from self._batch_decoder().run(requests)

    def score(self, tokens: list[int], first: int):
        """Log-probabilities of ``tokens[first:]`` under this model, each given the tokens before it,
        computed on the batch decoder's own context (its scoring sequence): no second copy of the
        model, and logits only where they are read. Safe between the results of ``iter_complete``."""
        return self._batch_decoder().score(tokens, first)

    def next_token_logprobs(self, messages: Messages, top: int = 40) -> list[tuple[str, float]]:
        """The ``top`` likeliest first tokens of the reply to ``messages`` (text, log-probability),
        likeliest first: prompt evaluation only, no sampling (the claim judge reads "yes"/"no" off
        them, diagnosis.llm_judge). Runs on llama-cpp-python's own context and keeps the longest
        prefix shared with the previous prompt in its KV cache, so prompts that differ only at the
        end (a trace's claims after its context) pay for their tail only; ``prompt_tokens`` counts
        the tokens evaluated and reused."""
        tokens, _ = self.chat_prompt(messages)
        return self._top_of(self._evaluate(tokens, [len(tokens) - 1])[-1], top)

    def prompt_logprobs(self, tokens: list[int], span: tuple[int, int], top: int = 40):
        """For a prompt given as tokens: the log-probability of each token of ``tokens[span[0]:span[1]]``
        given the tokens before it, and the ``top`` likeliest next tokens after the whole prompt (as
        next_token_logprobs). The claim judge reads how likely the claim's own words are after the
        context (diagnosis.llm_judge). The shared prefix is reused up to the span's start."""
        from curator.core.generation.answers import token_logprobs

        start, end = span
        rows = self._evaluate(tokens, list(range(start - 1, end - 1)) + [len(tokens) - 1])  # row i: tokens[start + i]
        said = token_logprobs(rows[: end - start], tokens[start:end])
        return [float(v) for v in said], self._top_of(rows[-1], top)

    def _evaluate(self, tokens: list[int], read: list[int]):
        """Evaluate ``tokens`` on llama-cpp-python's context, keeping the longest prefix shared with the
        previous prompt, and return the logits at the positions ``read`` (ascending; float64 rows, each
        predicting the token after its position). Without logits_all llama-cpp-python keeps no scores, so the
        batch asks for logits only where they are read: each costs a pass through the output layer."""
        import numpy as np

        llm = self.llm
        wanted = set(read)
        shared = min(llm.longest_token_prefix(llm._input_ids.tolist(), tokens), read[0], len(tokens) - 1)
        llm.n_tokens = shared
        llm._ctx.kv_cache_seq_rm(-1, shared, -1)  # drop the cells after the shared prefix
        counts = self.__dict__.setdefault("prompt_tokens", {"evaluated": 0, "reused": 0})
        counts["evaluated"] += len(tokens) - shared
        counts["reused"] += shared
        rows = []
        for i in range(shared, len(tokens), llm.n_batch):
            chunk = tokens[i: i + llm.n_batch]
            llm._batch.set_batch(batch=chunk, n_past=i, logits_all=False)
            here = [j for j in range(len(chunk)) if i + j in wanted]
            for j in range(len(chunk)):
                llm._batch.batch.logits[j] = j in here or j == len(chunk) - 1  # the last: llama.cpp wants one
            llm._ctx.decode(llm._batch)
            llm.input_ids[i: i + len(chunk)] = chunk
            llm.n_tokens = i + len(chunk)
            rows += [np.ctypeslib.as_array(llm._ctx.get_logits_ith(j), shape=(llm.n_vocab(),)).astype(np.float64)
                     for j in here]
        return np.array(rows)

    def _top_of(self, logits, top: int) -> list[tuple[str, float]]:
        import numpy as np

        logprobs = logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())
        best = np.argsort(-logprobs)[:top]
        return [(self.llm.detokenize([int(t)]).decode("utf-8", errors="replace"), float(logprobs[t])) for t in best]

    def _batch_decoder(self):
        from curator.core.generation.backends.llama_batch import KEEP_CELLS, KEEP_PROMPTS, BatchDecoder

        keep = self.prompt_keep or (KEEP_PROMPTS, KEEP_CELLS)
        if self._decoder is None or len(self._decoder.slots) != self.parallel or self._decoder.keep != keep:
            self._decoder = None  # parallel or the kept prompts changed: free the old context before the new one
            self._decoder = BatchDecoder(self, self.parallel, keep)
        return self._decoder

    def chat_prompt(self, messages: Messages) -> tuple[list[int], list[bytes]]:
        """Prompt tokens and stop strings exactly as ``create_chat_completion`` builds them.

        llama-cpp-python has no 'format only' call, and chat handlers differ per model, so we
        run the model's own handler against a stand-in whose ``create_completion`` records its
        arguments instead of generating: the batched path then sees the very same prompt.
        """
        from llama_cpp import llama_chat_format

        llm, seen = self.llm, {}

        class StandIn:
            def __getattr__(self, name):
                return getattr(llm, name)

            def create_completion(self, prompt, stop=None, **_):
                seen.update(prompt=prompt, stop=stop)
                raise _Captured

        handler = (llm.chat_handler or llm._chat_handlers.get(llm.chat_format)
                   or llama_chat_format.get_chat_completion_handler(llm.chat_format))
        try:
            handler(llama=StandIn(), messages=messages)
        except _Captured:
            pass
        stops = [seen["stop"]] if isinstance(seen["stop"], str) else list(seen["stop"] or [])
        return list(seen["prompt"]), [s.encode("utf-8") for s in stops]

    def warnings(self) -> list[str]:
        return template_warnings(self.model_path, self.has_chat_template, self.chat_format)

    def describe(self) -> dict:
        described = {"backend": self.id, "model_path": str(self.model_path), "n_ctx": self.n_ctx,
                     "n_threads": self.n_threads, "n_threads_batch": self.n_threads_batch, "parallel": self.parallel,
                     # None: the template the file holds, or llama-cpp-python's fallback when it holds none
                     "chat_format": self.chat_format, "chat_template_in_file": self.has_chat_template,
                     "decoder": "batch" if self.parallel > 1 or self.decoder_for_one else "llama-cpp-python"}
        if self.source_model_path is not None:
            described["source_model_path"] = str(self.source_model_path)
        if self.engine_choice is not None:
            described["engine_choice"] = self.engine_choice
        return described


class _Captured(Exception):
    """Raised by the stand-in of ``LlamaCppBackend.chat_prompt`` once it has the prompt."""
