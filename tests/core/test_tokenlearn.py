"""Tokenlearn for the static embedder: the training texts, the weights and the ridge fit.

The fit is checked against exact answers on small problems (a dense solve of the same normal
equations, a table recovered from texts it generated); the real table is checked in
test_static_embed.py, where the shipped file is loaded as a user's run would load it.
"""

import numpy as np
import pytest
from scipy.sparse import csr_matrix

from curator.core.embedding import tokenlearn as tl


def test_sentences_of_folds_whitespace_and_drops_fragments():
    text = "Return the   number of items.\nIt counts\nthem all, one by one.  x = f(1)  OK."
    assert tl.sentences_of([text], shortest=10) == ["Return the number of items.", "It counts them all, one by one."]


def test_docstring_paragraphs_reads_module_class_and_function_docstrings():
    source = '"""Module doc.\n\nSecond paragraph."""\nclass A:\n    """Class doc."""\n    def f(self):\n        """Method doc."""\n'
    assert tl.docstring_paragraphs(source) == ["Module doc.", "Second paragraph.", "Class doc.", "Method doc."]
    assert tl.docstring_paragraphs("def broken(:\n") == []  # a file that does not parse gives nothing


def test_stdlib_texts_are_unique_docstring_sentences():
    texts = tl.stdlib_texts(limit=20000)
    assert 10000 < len(texts) <= 20000 and len(set(texts)) == len(texts)
    assert all(30 < len(t) < 300 for t in texts)
    assert any("exception" in t.lower() for t in texts)


def test_weight_matrix_rows_are_weighted_means():
    weights = np.array([1.0, 2.0, 0.5, 1.0], np.float32)
    matrix = tl.weight_matrix([[0, 1, 1], [2], []], 4, weights).toarray()
    np.testing.assert_allclose(matrix[0], [1 / 5, 4 / 5, 0, 0], rtol=1e-6)  # token 1 twice, weight 2
    np.testing.assert_allclose(matrix[1], [0, 0, 1, 0])
    assert not matrix[2].any()  # a text without tokens is a zero row, not a division by zero


def test_ridge_cg_solves_the_normal_equations():
    rng = np.random.default_rng(0)
    a = csr_matrix(rng.random((60, 20)) * (rng.random((60, 20)) < 0.3))
    y = rng.normal(size=(60, 4)).astype(np.float32)
    prior = rng.normal(size=(20, 4)).astype(np.float32)
    exact = np.linalg.solve(a.T @ a + 0.1 * np.eye(20), a.T @ y + 0.1 * prior)
    np.testing.assert_allclose(tl.ridge_cg(a, y, prior, 0.1, iterations=200), exact, atol=1e-3)


def test_fit_table_recovers_a_table_from_the_texts_it_made():
    """Texts' targets made from a hidden table: the fit brings their predictions much closer to the
    targets than the prior does, and the weights end up baked into the rows."""
    rng = np.random.default_rng(1)
    vocab, dim = 50, 8
    hidden = rng.normal(size=(vocab, dim)).astype(np.float32)
    texts = [list(rng.integers(0, vocab, size=rng.integers(3, 9))) for _ in range(400)]
    ones = np.ones(vocab, np.float32)
    targets = np.asarray(tl.weight_matrix(texts, vocab, ones) @ hidden, np.float32)
    prior = rng.normal(size=(vocab, 5)).astype(np.float32)  # another space, another width
    fitted = tl.fit_table(prior, texts, targets, ones, lam=1e-4, iterations=200)
    assert fitted.shape == (vocab, dim)
    predicted = tl.weight_matrix(texts, vocab, ones) @ fitted
    assert np.abs(predicted - targets).mean() < 0.05 * np.abs(targets).mean()
    halves = np.full(vocab, 0.5, np.float32)
    np.testing.assert_allclose(tl.fit_table(prior, texts, targets, halves, lam=1e-4, iterations=200),
                               0.5 * fitted, rtol=1e-3, atol=1e-3)


def test_sif_weights_fall_with_frequency():
    weights = tl.sif_weights([[0, 0, 0, 1], [0, 2]], 5, sif=1e-1)
    assert weights[0] < weights[1] == weights[2] < weights[3] == weights[4] < 1.0
    assert weights[0] == pytest.approx(0.1 / (0.1 + 5 / 11))
