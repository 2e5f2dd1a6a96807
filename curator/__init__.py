"""Curator: build reviewed retrieval-evaluation gold sets from a folder of documents, offline."""

__version__ = "0.1.0"
