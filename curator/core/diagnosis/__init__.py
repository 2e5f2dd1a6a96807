"""Diagnose a RAG system's answers from its traces: context recall, faithfulness, the 2x2."""
