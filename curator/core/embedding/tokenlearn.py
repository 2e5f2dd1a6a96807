"""Tokenlearn for the static embedder: fit the token vectors so a text's mean regresses onto MiniLM.

Why: the plain distillation (static.py) embeds each vocabulary token alone, so a token's vector is
what MiniLM makes of it out of context; the published potion models gain most of their quality
from a second step (MinishLab's Tokenlearn) that fits the token table on the teacher's embeddings of
real texts. Here, with numpy only and no network, on texts every Python install carries: the
sentences of the standard library's docstrings and of ``pydoc_data.topics`` (the language
reference). Neither the Python FAQ nor the Debian FAQ (the benchmark corpora) is among them.

The fit is ridge regression, solved by conjugate gradient on the normal equations::

    min_E  || A E - Y ||^2  +  lam * || E - E0 ||^2

``A`` is the texts x vocabulary matrix of token weights (each row sums to 1: the weighted mean),
``Y`` the teacher's L2-normalised vectors of the texts, ``E0`` the prior table (the plain
distillation mapped into MiniLM's 384-d space by a least-squares linear map, so tokens absent from
the training texts keep a sensible vector), ``lam`` pulls rarely seen tokens towards the prior. CG
needs only products with ``A`` and ``A.T`` (sparse), so a fit over 20k texts takes seconds.
"""

from __future__ import annotations

import ast
import re
import sysconfig
from pathlib import Path
from typing import Callable, Iterable, Optional

import numpy as np

SENTENCE_SPLIT = re.compile(r"(?<=[.?!])\s+")
SKIPPED_PARTS = {"test", "tests", "site-packages", "idlelib", "lib2to3"}


def sentences_of(paragraphs: Iterable[str], shortest: int = 30, longest: int = 300) -> list[str]:
    """Sentences of ``paragraphs`` (whitespace folded) between ``shortest`` and ``longest`` chars
    with some lower-case words in them (drops signatures, tables and headings)."""
    out = []
    for para in paragraphs:
        for sentence in SENTENCE_SPLIT.split(" ".join(para.split())):
            if shortest < len(sentence) < longest and re.search("[a-z]{3}", sentence):
                out.append(sentence)
    return out


def docstring_paragraphs(source: str) -> list[str]:
    """The paragraphs of every module, class and function docstring of one Python source."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            if doc:
                out.extend(re.split(r"\n\s*\n", doc))
    return out


def stdlib_texts(limit: Optional[int] = None) -> list[str]:
    """Training texts every Python install has: stdlib docstring sentences, then the language
    reference's (``pydoc_data.topics``); deduplicated, in a fixed order (the fit is reproducible)."""
    from pydoc_data.topics import topics

    root = Path(sysconfig.get_paths()["stdlib"])
    paragraphs: list[str] = []
    for path in sorted(root.rglob("*.py")):
        if SKIPPED_PARTS.intersection(path.relative_to(root).parts):
            continue
        try:
            paragraphs += docstring_paragraphs(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    paragraphs += [topics[name] for name in sorted(topics)]
    texts = list(dict.fromkeys(sentences_of(paragraphs)))
    return texts[:limit] if limit else texts


def weight_matrix(token_ids: list[list[int]], vocab_size: int, token_weights: np.ndarray):
    """Sparse texts x vocabulary matrix: each row is the text's token weights, summing to 1."""
    from scipy.sparse import csr_matrix

    lengths = np.fromiter((len(x) for x in token_ids), np.int64, len(token_ids))
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    flat = np.fromiter((i for x in token_ids for i in x), np.int64, int(indptr[-1]))
    matrix = csr_matrix((token_weights[flat].astype(np.float32), flat, indptr), shape=(len(token_ids), vocab_size))
    matrix.sum_duplicates()
    sums = np.asarray(matrix.sum(axis=1)).ravel()
    sums[sums == 0] = 1.0
    return csr_matrix(matrix.multiply(1.0 / sums[:, None]))


def linear_map(features: np.ndarray, targets: np.ndarray, ridge: float = 1e-3) -> np.ndarray:
    """Least-squares map (with a small ridge) from ``features`` rows onto ``targets`` rows."""
    gram = features.T @ features
    gram += ridge * np.trace(gram) / gram.shape[0] * np.eye(gram.shape[0], dtype=gram.dtype)
    return np.linalg.solve(gram, features.T @ targets).astype(np.float32)


def ridge_cg(matrix, targets: np.ndarray, prior: np.ndarray, lam: float, iterations: int = 60,
             on_step: Optional[Callable[[int, float], None]] = None) -> np.ndarray:
    """Solve ``(A'A + lam I) E = A'Y + lam E0`` by conjugate gradient, all columns at once (each
    column is its own system; the step sizes are per column)."""
    at = matrix.T.tocsr()

    def apply(e: np.ndarray) -> np.ndarray:
        return at @ (matrix @ e) + lam * e

    table = prior.astype(np.float32).copy()
    residual = at @ targets + lam * prior - apply(table)
    direction = residual.copy()
    rr = (residual * residual).sum(axis=0)
    start = float(rr.sum())
    for step in range(iterations):
        ad = apply(direction)
        alpha = rr / np.maximum((direction * ad).sum(axis=0), 1e-30)
        table += direction * alpha
        residual -= ad * alpha
        rr_new = (residual * residual).sum(axis=0)
        if on_step:
            on_step(step, float(rr_new.sum()) / max(start, 1e-30))
        if rr_new.sum() <= 1e-10 * start:
            break
        direction = residual + direction * (rr_new / np.maximum(rr, 1e-30))
        rr = rr_new
    return table


def sif_weights(token_ids: list[list[int]], vocab_size: int, sif: float) -> np.ndarray:
    """``sif / (sif + p(token))`` with ``p`` the token's frequency in the training texts (add-one)."""
    counts = np.bincount(np.fromiter((i for x in token_ids for i in x), np.int64), minlength=vocab_size)
    proba = (counts + 1.0) / (counts.sum() + vocab_size)
    return (sif / (sif + proba)).astype(np.float32)


def fit_table(prior: np.ndarray, token_ids: list[list[int]], targets: np.ndarray, token_weights: np.ndarray,
              lam: float, iterations: int = 60, on_step=None) -> np.ndarray:
    """The Tokenlearn table: ``prior`` (vocabulary x d) mapped linearly onto the teacher's space,
    then fitted by ridge CG so each text's weighted token mean regresses onto its ``targets`` row.

    The weights are baked into the returned rows (a text's vector is then the plain sum of its
    tokens' rows, normalised: the same direction as the weighted mean), so the embedder needs none.
    """
    matrix = weight_matrix(token_ids, prior.shape[0], token_weights)
    start_map = linear_map(np.asarray(matrix @ prior, np.float64), targets.astype(np.float64))
    start = (prior @ start_map).astype(np.float32)
    table = ridge_cg(matrix, targets.astype(np.float32), start, lam, iterations, on_step)
    return (table * token_weights[:, None]).astype(np.float32)
