"""What a GGUF file says about itself, read from its header only, never loading the model.

Why a reader of our own rather than the gguf package's ``GGUFReader``: that reader decodes every
tensor and every vocabulary string into numpy objects (~0.5 s per file, 7 s under load) and fails
deep inside numpy on a header claiming 2**62 keys. A listing of a user's models reads many files,
some damaged or half-downloaded, so this walk skips what it does not need (a 150k-word vocabulary
is stepped over, not decoded) and checks every count and length against the bytes that are left:
a hostile header is a ``ModelFileError`` with the reason, in bounded time.

Only regular files are opened: a FIFO named ``model.gguf`` would block a reader forever, so the
caller's ``stat`` comes first (``read_header`` refuses anything else).
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from curator.core.errors import ModelFileError

GGUF_MAGIC = b"GGUF"
# Far above any real model (a 671B MoE holds ~1,000s of tensors, ~50 keys, a 256k-word vocabulary),
# far below what would make the walk take minutes: beyond them the header is called hostile.
MAX_KEYS = 100_000
MAX_TENSORS = 1_000_000
MAX_ARRAY = 20_000_000
MAX_DIMS = 8  # ggml has 4; a larger count is a damaged entry

# GGUF metadata value types (gguf.GGUFValueType): fixed sizes, struct codes of the scalars we keep.
_STRING, _ARRAY = 8, 9
_FIXED = {k: struct.Struct(code) for k, code in
          {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}.items()}
_U32, _U64 = _FIXED[4], _FIXED[10]

# llama.cpp's llama_ftype (general.file_type), named as gguf.LlamaFileType without "MOSTLY_".
FILE_TYPES = {0: "ALL_F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
              11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M",
              18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S",
              25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M",
              32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE"}
# ggml_type of a tensor, for a file that declares no general.file_type (its commonest weight type).
TENSOR_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K",
                11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS",
                18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8",
                25: "I16", 26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0",
                39: "MXFP4"}


class _Short(Exception):
    """The header runs past the end of the file (or claims more than it holds)."""


@dataclass
class GGUFHeader:
    """The header's metadata (scalars and strings; an array is kept as its length) and, when the
    tensor infos were read, the parameter count they add up to and the weight types they use."""

    version: int
    metadata: dict[str, Any]
    tensor_count: int
    tensor_parameters: Optional[int] = None
    tensor_types: Counter = field(default_factory=Counter)

    def get(self, key: str, default: Any = None) -> Any:
        return self.metadata.get(key, default)

    def arch_value(self, suffix: str) -> Any:
        """``{general.architecture}.{suffix}``, e.g. ``llama.context_length``."""
        return self.metadata.get(f"{self.get('general.architecture')}.{suffix}")


class _Cursor:
    """A position in the mapped file; every read is checked against the bytes that are left."""

    def __init__(self, buf, size: int) -> None:
        self.buf, self.size, self.pos = buf, size, 0

    def left(self) -> int:
        return self.size - self.pos

    def skip(self, n: int) -> None:
        if n < 0 or n > self.left():
            raise _Short(f"an entry claims {n} bytes where {self.left()} are left")
        self.pos += n

    def unpack(self, code: struct.Struct):
        if code.size > self.left():
            raise _Short("the header ends in the middle of a value")
        (value,) = code.unpack_from(self.buf, self.pos)
        self.pos += code.size
        return value

    def string(self) -> str:
        n = self.unpack(_U64)
        start = self.pos
        self.skip(n)
        return bytes(self.buf[start:self.pos]).decode("utf-8", "replace")

    def skip_string(self) -> None:
        self.skip(self.unpack(_U64))

    def skip_strings(self, count: int) -> None:
        """Step over ``count`` strings: a vocabulary of 150k words, so one tight loop, not a call each."""
        pos, size, unpack = self.pos, self.size, _U64.unpack_from
        for _ in range(count):
            if pos + 8 > size:
                raise _Short("a string array runs past the end of the file")
            pos += 8 + unpack(self.buf, pos)[0]
        if pos > size:
            raise _Short("a string array runs past the end of the file")
        self.pos = pos


def _value(cur: _Cursor, kind: int, depth: int = 0) -> Any:
    if kind in _FIXED:
        return cur.unpack(_FIXED[kind])
    if kind == _STRING:
        return cur.string()
    if kind == _ARRAY and depth < 2:
        return _skip_array(cur, depth)
    raise _Short(f"unknown value type {kind}")


def _skip_array(cur: _Cursor, depth: int) -> int:
    """Step over an array (a vocabulary, its scores, merges) and return its length."""
    kind, count = cur.unpack(_U32), cur.unpack(_U64)
    if count > MAX_ARRAY:
        raise _Short(f"an array claims {count} elements")
    if kind in _FIXED:
        cur.skip(count * _FIXED[kind].size)
    elif kind == _STRING:
        if count * 8 > cur.left():
            raise _Short(f"an array claims {count} strings where {cur.left()} bytes are left")
        cur.skip_strings(count)
    else:  # arrays of arrays: each inner one takes 12 bytes at least (its type and length)
        if count * 12 > cur.left():
            raise _Short(f"an array claims {count} arrays where {cur.left()} bytes are left")
        for _ in range(count):
            _value(cur, kind, depth + 1)
    return count


def _tensor_infos(cur: _Cursor, count: int, header: GGUFHeader) -> None:
    """Add up the tensors' elements (the parameter count) and their types' element counts."""
    total = 0
    for _ in range(count):
        cur.skip_string()  # the tensor's name
        dims = cur.unpack(_U32)
        if dims > MAX_DIMS:
            raise _Short(f"a tensor claims {dims} dimensions")
        elements = 1
        for _ in range(dims):
            elements *= cur.unpack(_U64)
        kind = cur.unpack(_U32)
        cur.skip(8)  # data offset
        total += elements
        header.tensor_types[TENSOR_TYPES.get(kind, str(kind))] += elements
    header.tensor_parameters = total


def _parse(buf, size: int, tensors: bool) -> GGUFHeader:
    cur = _Cursor(buf, size)
    if size < 4 or bytes(buf[:4]) != GGUF_MAGIC:
        raise ModelFileError("not a GGUF file (it does not start with 'GGUF')")
    cur.skip(4)
    version = cur.unpack(_U32)
    if version not in (2, 3):
        raise ModelFileError(f"GGUF version {version} is not one llama.cpp reads (2 or 3)")
    tensor_count, key_count = cur.unpack(_U64), cur.unpack(_U64)
    if key_count > MAX_KEYS or tensor_count > MAX_TENSORS or tensor_count * 24 + key_count * 13 > size:
        raise ModelFileError(f"damaged header: it claims {tensor_count} tensors and {key_count} metadata keys "
                             f"in a file of {size} bytes")
    header = GGUFHeader(version, {}, tensor_count)
    for _ in range(key_count):
        key = cur.string()
        header.metadata[key] = _value(cur, cur.unpack(_U32))
    if tensors:
        _tensor_infos(cur, tensor_count, header)
    return header


def read_header(path: Union[str, Path], tensors: bool = True) -> GGUFHeader:
    """The GGUF header of ``path`` (its tensor infos too, unless ``tensors`` is off).

    Raises ModelFileError with the reason for anything that is not a whole, sane GGUF header: not
    a regular file (a FIFO, a folder), unreadable, not GGUF, truncated, or claiming absurd counts."""
    path = Path(path)
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise ModelFileError(f"{path}: not a regular file, so it is not read")
        with open(path, "rb") as fh:
            if st.st_size == 0:
                raise ModelFileError(f"{path}: empty file")
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                return _parse(buf, len(buf), tensors)
    except ModelFileError as exc:
        raise ModelFileError(_named(path, str(exc))) from None
    except _Short as exc:
        raise ModelFileError(f"{path}: truncated or damaged header ({exc}); download the file again") from None
    except (OSError, ValueError, OverflowError) as exc:  # unreadable, a symlink loop, mmap refusing
        raise ModelFileError(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None


def _named(path: Path, message: str) -> str:
    return message if message.startswith(str(path)) else f"{path}: {message}"


def file_type_name(header: GGUFHeader) -> Optional[str]:
    """The weights' type (e.g. 'Q4_K_M'): ``general.file_type``, else the type most weights use."""
    declared = header.get("general.file_type")
    if isinstance(declared, int):
        return FILE_TYPES.get(declared, str(declared))
    weights = {k: v for k, v in header.tensor_types.items() if k not in ("F32",)} or header.tensor_types
    return max(weights, key=weights.get) if weights else None


def parameter_count(header: GGUFHeader) -> tuple[Optional[int], Optional[str]]:
    """(parameters, where the figure came from): ``general.parameter_count``, else ``general.size_label``
    ("1.5B": the makers' figure, as users know the model), else the tensors' elements added up. The
    tensors can say more than the label: a converter may store a tied output head twice (Qwen2.5
    1.5B's file holds 1.78B elements), so the sum comes last and is kept apart (``tensor_parameters``)."""
    declared = header.get("general.parameter_count")
    if isinstance(declared, int) and declared > 0:
        return declared, "general.parameter_count"
    label = _label_count(header.get("general.size_label"))
    if label:
        return label, "general.size_label"
    if header.tensor_parameters:
        return header.tensor_parameters, "tensors"
    return None, None


def _label_count(label: Any) -> Optional[int]:
    """'135M' -> 135_000_000, '1.5B' -> 1_500_000_000; None for '8x7B' or anything else."""
    if not isinstance(label, str) or not label or label[-1].upper() not in "KMBT":
        return None
    try:
        number = float(label[:-1])
    except ValueError:
        return None
    return int(number * {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[label[-1].upper()])
