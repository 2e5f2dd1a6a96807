"""Corpus stage: load files (``loaders``), cut them into chunks with stable ids (``chunking``),
store them (``ingest``), and read them back (``documents``, ``search``)."""
