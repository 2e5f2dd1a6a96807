"""Tiny GGUF files for tests: a header as llama.cpp's writers lay it out, with a few tensor infos
and no weights worth loading. Written byte by byte, so a test can also damage any field."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, Optional

_SCALARS = {bool: (7, "<?"), int: (4, "<I"), float: (6, "<f")}


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def _value(value: Any) -> bytes:
    if isinstance(value, str):
        return struct.pack("<I", 8) + _string(value)
    if isinstance(value, list):  # a list of strings, as a vocabulary is
        return struct.pack("<IIQ", 9, 8, len(value)) + b"".join(_string(v) for v in value)
    if isinstance(value, int) and value >= 2**32:
        return struct.pack("<I", 10) + struct.pack("<Q", value)
    kind, code = _SCALARS[type(value)]
    return struct.pack("<I", kind) + struct.pack(code, value)


def gguf_bytes(metadata: dict[str, Any], tensors: list[tuple[str, tuple[int, ...], int]] = (),
               tensor_count: Optional[int] = None, key_count: Optional[int] = None, padding: int = 256) -> bytes:
    """A GGUF v3 file: ``metadata`` (str, int, float, bool, list of str), ``tensors`` as
    (name, shape, ggml type); ``tensor_count``/``key_count`` override the counts (a hostile header)."""
    out = [b"GGUF", struct.pack("<I", 3),
           struct.pack("<QQ", len(tensors) if tensor_count is None else tensor_count,
                       len(metadata) if key_count is None else key_count)]
    for key, value in metadata.items():
        out += [_string(key), _value(value)]
    for name, shape, kind in tensors:
        out += [_string(name), struct.pack("<I", len(shape)), *(struct.pack("<Q", d) for d in shape),
                struct.pack("<IQ", kind, 0)]
    return b"".join(out) + b"\0" * padding


def model_metadata(name: str, arch: str = "llama", file_type: int = 15, context: int = 4096, template: bool = True,
                   **extra: Any) -> dict[str, Any]:
    """The keys a converted instruct model carries (general.file_type 15 is Q4_K_M)."""
    meta = {"general.architecture": arch, "general.name": name, "general.file_type": file_type,
            f"{arch}.context_length": context, f"{arch}.block_count": 2, f"{arch}.embedding_length": 64,
            f"{arch}.attention.head_count": 4, f"{arch}.attention.head_count_kv": 2,
            "tokenizer.ggml.tokens": ["<s>", "</s>", "a", "b"]}
    if template:
        meta["tokenizer.chat_template"] = "{% for m in messages %}{{ m.content }}{% endfor %}"
    meta.update(extra)
    return meta


TWO_TENSORS = [("token_embd.weight", (64, 1000), 12), ("output_norm.weight", (64,), 0)]  # 64,064 parameters


def write_model(path: Path, name: str, tensors=TWO_TENSORS, **meta: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gguf_bytes(model_metadata(name, **meta), list(tensors)))
    return path
