"""Faster copies of GGUF models: the same weights in a type llama.cpp's CPU backend repacks.

Why: on AVX2, llama.cpp rearranges Q4_0, Q8_0 (and Q4_K, IQ4_NL) weights at load time into
interleaved blocks its GEMM kernels read fast; Q4_1, the bundled model's type, is not among them.
bench/generate.py measured the bundled 135M model's batched decode at 75 tokens/s as Q4_1 and
175 as Q8_0. Q4_1 -> Q8_0 keeps the weights' information: an 8-bit block holds each 4-bit value
(scale and minimum re-expressed) to within rounding, so replies stay the same or nearly so.

The copy is written once through llama.cpp's own quantize API (requantizing allowed), to a
temporary file renamed into place, so a kill mid-write leaves no torn model behind. The bundled
model's copy lives in the user's cache folder under a name keyed by the source's SHA-256, with a
sidecar of its own hash (cachefiles): a damaged copy is written again before it is used. A user's
model is only ever converted on request (``curator model optimize``), never silently.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from curator.core import cachefiles
from curator.core.cachefiles import file_sha256  # noqa: F401 (generation and tests import it from here)
from curator.core.errors import ModelFileError
from curator.core.modelfiles.header import file_type_name, read_header

REPACK_FORMAT = 1  # bump when the conversion changes: the cache name includes it
# llama.cpp's llama_ftype values (llama.h) of the types we write, by name.
FTYPES = {"q8_0": 7, "q4_0": 2}
DEFAULT_TYPE = "q8_0"  # keeps a Q4_1 model's weights; Q4_0 would lose half its precision


@dataclass(frozen=True)
class ModelFiles:
    """The model file that runs and the file it was made from (the same path when not repacked)."""

    path: Path
    source: Path

    @property
    def repacked(self) -> bool:
        return self.path != self.source


def cached_copy_path(source: Union[str, Path], type_name: str = DEFAULT_TYPE) -> Path:
    """Where the cache keeps the ``type_name`` copy of ``source`` (named by the source's hash)."""
    source = Path(source)
    stem = source.name.removesuffix(".gguf")
    source_sha = file_sha256(source)
    return cachefiles.cache_file("models", f"{stem}.{source_sha[:16]}.v{REPACK_FORMAT}.{type_name}.gguf", source_sha)


@contextlib.contextmanager
def _quiet_llama_log():
    """llama.cpp logs a line per tensor while quantizing; keep only its errors."""
    import llama_cpp._logger as llama_logger

    level = llama_logger.logger.level
    llama_logger.logger.setLevel(40)  # logging.ERROR
    try:
        yield
    finally:
        llama_logger.logger.setLevel(level)


def quantize_copy(source: Union[str, Path], out: Union[str, Path], type_name: str = DEFAULT_TYPE,
                  threads: int = 0) -> Path:
    """Write ``source`` requantized to ``type_name`` at ``out``, atomically; return ``out``.

    The bytes go to ``out.<pid>.<random>.part`` in the same folder and are renamed into place only
    once llama.cpp has written them all, so readers see either no file or a whole one. (Not
    files.atomic_file: its temporary name carries no pid, and a killed writer's leftover, as big
    as the model, could not be told from a live writer's and cleared.)
    """
    import llama_cpp

    source, out = Path(source), Path(out)
    if type_name not in FTYPES:
        raise ModelFileError(f"unknown model type {type_name!r}; use one of {', '.join(FTYPES)}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = cachefiles.new_part(out)
    try:
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype, params.allow_requantize, params.nthread = FTYPES[type_name], True, threads
        with _quiet_llama_log():
            llama_cpp.llama_backend_init()
            failed = llama_cpp.llama_model_quantize(str(source).encode(), tmp.encode(), ctypes.byref(params))
        if failed:
            raise ModelFileError(f"{source}: llama.cpp could not write a {type_name} copy (error {failed}).")
        cachefiles.publish_part(tmp, out)  # mkstemp makes it owner-only; a model file is not secret
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    cachefiles.record(out, file_sha256(source))
    return out


def bundled_model_files(repack: bool = True) -> ModelFiles:
    """The bundled model to run: its cached Q8_0 copy (written on first use) unless ``repack`` is off."""
    from curator.core.resources import bundled_model_path

    source = bundled_model_path()
    if not repack:
        return ModelFiles(source, source)
    out = cachefiles.ensure(cached_copy_path(source), file_sha256(source), lambda path: quantize_copy(source, path))
    return ModelFiles(out, source)


def gguf_file_type(path: Union[str, Path]) -> Optional[str]:
    """The weights' type a GGUF file declares (``general.file_type``), e.g. 'Q4_1', or None. Read with Curator's
    own header reader (milliseconds; the gguf package's reader took 2.7 s on the bundled model's header and 10.8 s
    on a 1.5B model's): a damaged header is a one-line ModelFileError naming the file."""
    return file_type_name(read_header(path, tensors=False))
