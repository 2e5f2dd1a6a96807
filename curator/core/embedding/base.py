"""What every embedder is: an ``id`` naming its vector space and L2-normalised float32 rows."""

from __future__ import annotations

import hashlib

import numpy as np


def text_hash(text: str) -> str:
    """The cache key of a text (sha1 of its UTF-8 bytes)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero) as float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32)


class Embedder:
    """Base: ``id`` names the vector space; ``embed_batch`` returns L2-normalised float32 rows."""

    id: str = "base"

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError
