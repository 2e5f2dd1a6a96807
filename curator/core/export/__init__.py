"""Export stage: the gold set as JSONL (RAGAS names), a BEIR folder and TREC qrels with a
manifest (``writers``), and seeded dev/test splits (``splits``)."""
