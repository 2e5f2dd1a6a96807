"""Retrieval over the project's chunks: the built-in retrievers (BM25, TF-IDF, dense, hybrid),
used by evaluation to score them and by review to suggest gold chunks; ``ranking`` holds the
run type and trec_eval's ordering rule that both share."""
