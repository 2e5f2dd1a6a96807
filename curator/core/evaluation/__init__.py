"""Evaluation stage: retrievers (``retrievers``), trec_eval-exact metrics (``metrics``), scoring a
retriever or a TREC run on the gold set (``evaluate``) and comparing runs (``compare``)."""
