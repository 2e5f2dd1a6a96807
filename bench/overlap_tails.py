"""How often a project's rows reach real questions' median, upper quartile and 100% chunk overlap, real (log) rows
against synthetic ones (issue 39's overlap quota). Prints, asserts nothing.

    .venv/bin/python bench/overlap_tails.py P [P ...]     # projects built by bench/validity.py
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from curator.core.queries import realism  # noqa: E402


def overlaps(db: sqlite3.Connection, source: str) -> np.ndarray:
    """Chunk overlap of every approved answerable row of ``source`` with gold (multi-hop rows: made by rule)."""
    texts = dict(db.execute("SELECT id, text FROM chunks"))
    found = []
    for text, gold, kind in db.execute("""SELECT text, gold_chunk_ids, query_type FROM queries WHERE source = ?
                                          AND status = 'approved' AND answerable = 1""", [source]):
        gold_texts = [texts[c] for c in json.loads(gold) if c in texts]
        if gold_texts and kind != "multi_hop":
            found.append(realism.chunk_overlap(text, gold_texts))
    return np.asarray(found, dtype=float)


def main() -> None:
    for path in sys.argv[1:]:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        real, synthetic = overlaps(db, "log"), overlaps(db, "synthetic")
        shares = " | ".join(f">= {point:.2f}: real {share:.0%}, synthetic "
                            f"{realism.share_at_least(synthetic, point):.0%}" for point, share in realism.tails_of(real))
        print(f"{Path(path).name} ({len(real)} real, {len(synthetic)} synthetic): {shares}")


if __name__ == "__main__":
    main()
