"""``curator model optimize``: a user's GGUF rewritten in a type llama.cpp's CPU kernels repack,
with the speed of both files measured on this machine, so the user sees what changed and decides.

Never done silently: generation only ever runs a user's file as given; this writes a second file
(beside the original, or in the cache) and reports its type, size and tokens/s against the original.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional, Union

from curator.core import cachefiles
from curator.core.errors import InputError
from curator.core.generation import repack
from curator.core.generation.backends.llama_cpp import LlamaCppBackend, check_gguf

# A fixed English text to time prompt evaluation and decode on (the same tokens for both files).
_SAMPLE = ("Audit log entries are kept for ninety days. Administrators can export them as CSV files from the "
           "audit page, filter them by user, action and date, and forward them to a syslog server. ") * 12


def beside_path(source: Path, type_name: str) -> Path:
    """``model.Q4_1.gguf`` -> ``model.Q4_1.q8_0.gguf`` in the same folder."""
    return source.with_name(f"{source.name.removesuffix('.gguf')}.{type_name}.gguf")


def measure_speed(path: Union[str, Path], threads: Optional[int] = None, prompt_tokens: int = 256,
                  decode_tokens: int = 48) -> dict:
    """Prompt-evaluation and one-sequence decode tokens/s of a model file on this machine.

    Prompt: ``prompt_tokens`` tokens in one batch from an empty cache. Decode: ``decode_tokens``
    forward passes of one token each after it (the same tokens for every file, no sampling), so
    only the weights' kernels differ between two files.
    """
    backend = LlamaCppBackend(path, n_ctx=prompt_tokens + decode_tokens + 16, n_threads=threads)
    llm = backend.llm
    tokens = llm.tokenize(_SAMPLE.encode(), add_bos=True)[: prompt_tokens + decode_tokens]
    llm.eval(tokens[:16])  # warm-up: first-call allocations and weight repacking
    llm.reset()
    llm._ctx.kv_cache_clear()
    start = time.perf_counter()
    llm.eval(tokens[:prompt_tokens])
    prompt_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for token in tokens[prompt_tokens:]:
        llm.eval([token])
    decode_seconds = time.perf_counter() - start
    del backend, llm  # free the weights before the next file is loaded
    return {"prompt_tokens_per_s": round(prompt_tokens / prompt_seconds, 1),
            "decode_tokens_per_s": round((len(tokens) - prompt_tokens) / decode_seconds, 1)}


def _describe(path: Path) -> dict:
    return {"path": str(path), "type": repack.gguf_file_type(path), "bytes": path.stat().st_size}


def optimize_model(source: Union[str, Path], type_name: str = repack.DEFAULT_TYPE, into_cache: bool = False,
                   threads: Optional[int] = None) -> dict:
    """Write the ``type_name`` copy of ``source`` (beside it, or in the cache) and measure both files.

    An existing copy is reused only when its sidecar says it was made from this very ``source`` (by
    hash) and its bytes still match: a copy beside a model that changed since (same name, other
    weights) or a damaged one is written again, and ``replaced`` says why.
    """
    source = check_gguf(source)
    before = _describe(source)
    if (before["type"] or "").lower() == type_name:
        raise InputError(f"{source}: already {before['type']}; nothing to optimize.")
    out = repack.cached_copy_path(source, type_name) if into_cache else beside_path(source, type_name)
    why = cachefiles.problem(out, repack.file_sha256(source))
    reused = why is None
    if not reused:
        if why != "missing":
            cachefiles.discard(out)
        repack.quantize_copy(source, out, type_name)
    after = _describe(out)
    before.update(measure_speed(source, threads))
    after.update(measure_speed(out, threads))
    return {"source": before, "copy": after, "reused_existing_copy": reused,
            "replaced": None if why == "missing" else why, "where": "cache" if into_cache else "beside",
            "prompt_speedup": round(after["prompt_tokens_per_s"] / before["prompt_tokens_per_s"], 2),
            "decode_speedup": round(after["decode_tokens_per_s"] / before["decode_tokens_per_s"], 2)}
