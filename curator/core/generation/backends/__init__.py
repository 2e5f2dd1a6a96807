"""Text-generation backends: ``base`` (the abstraction and the fake), ``llama_cpp`` (a local
GGUF file), ``http`` (an OpenAI-compatible server), and ``open_backend`` to pick one.

Imports run one way: base <- llama_cpp <- llama_batch, base <- http, and this package
imports them all; none of them imports this package.
"""

from __future__ import annotations

from typing import Optional

from curator.core.generation.backends.base import (Backend, FakeBackend, FirstLineGate, Messages, Request,
                                                   RequestSource)
from curator.core.generation.backends.http import HttpBackend
from curator.core.generation.backends.llama_cpp import (DEFAULT_PARALLEL, LlamaCppBackend, check_gguf, free_cores,
                                                        physical_cores)

__all__ = ["Backend", "DEFAULT_PARALLEL", "FakeBackend", "FirstLineGate", "HttpBackend", "LlamaCppBackend", "Messages",
           "Request", "RequestSource", "check_gguf", "free_cores", "open_backend", "physical_cores"]


def open_backend(model_path: Optional[str] = None, endpoint: Optional[str] = None, n_ctx: int = 2048,
                 n_threads: Optional[int] = None, seed: int = 0, parallel: Optional[int] = None,
                 repack: bool = True, chat_format: Optional[str] = None) -> Backend:
    """The bundled model unless a GGUF path or an endpoint is given.

    The bundled model runs from its Q8_0 copy in the user's cache (generation.repack, written on
    first use) unless ``repack`` is off; a GGUF path given here always runs as it is, with the
    chat template it holds, or ``chat_format`` (a llama-cpp-python format name) when it holds none.
    """
    if endpoint:
        return HttpBackend(endpoint, parallel=parallel or 4)
    source = None
    if model_path is None:
        from curator.core.generation.repack import bundled_model_files

        files = bundled_model_files(repack)
        model_path, source = files.path, (files.source if files.repacked else None)
    return LlamaCppBackend(model_path, n_ctx=n_ctx, n_threads=n_threads, seed=seed,
                           parallel=parallel or DEFAULT_PARALLEL, source_model_path=source, chat_format=chat_format)
