"""Cluster labels from class-based TF-IDF (c-TF-IDF): terms frequent in one cluster, rare elsewhere."""

from __future__ import annotations

import numpy as np

STOP_EXTRA = {"does", "use", "using", "used", "way", "get", "make"}


def ctfidf_labels(texts: list[str], labels, k: int, top_n: int = 3) -> dict[int, tuple[str, list[str]]]:
    """``{cluster: (label "a · b · c", top terms)}``; each cluster's texts are joined into one class document."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

    labels = np.asarray(labels)
    docs = [" ".join(t for t, l in zip(texts, labels) if l == c) for c in range(k)]
    stop = list(ENGLISH_STOP_WORDS | STOP_EXTRA)
    try:
        counts = CountVectorizer(stop_words=stop, token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z0-9_]+\b").fit(docs)
    except ValueError:  # no usable words at all
        return {c: (f"cluster {c}", []) for c in range(k)}
    tf = counts.transform(docs).toarray().astype(np.float64)
    vocab = counts.get_feature_names_out()
    # c-TF-IDF: term frequency per class, scaled by log(1 + average words per class / term frequency overall).
    avg = tf.sum() / max(1, k)
    idf = np.log1p(avg / np.maximum(tf.sum(axis=0), 1))
    row_sums = np.maximum(tf.sum(axis=1, keepdims=True), 1)
    scores = tf / row_sums * idf
    out = {}
    for c in range(k):
        order = [i for i in np.argsort(-scores[c], kind="stable") if scores[c, i] > 0][:top_n]
        terms = [str(vocab[i]) for i in order]
        out[c] = (" · ".join(terms) if terms else f"cluster {c}", terms)
    return out
