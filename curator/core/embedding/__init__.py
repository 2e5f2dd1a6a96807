"""Text embedders (TF-IDF, MiniLM, a GGUF embedding model) and the project's vector cache;
used by clustering and by the dense retrievers."""
