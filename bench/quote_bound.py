"""What the need-first quote bound (issue 42) would change in rows a run kept before it: each kept need-first row's
reply is cut where the bound now stops it (its question line, then asking.quote_line_tokens of the capable bounds, in
the generating model's own tokens) and located again. Prints how many references stay the same, come out shorter,
or are lost (no sentence located, or the cut reference adds no word to the question). Asserts nothing.

    .venv/bin/python bench/quote_bound.py --model QWEN_1_5B /tmp/nq/deb-nf.curator /tmp/nq/zsh-nf.curator ...
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from curator.core.generation import filters, needfirst  # noqa: E402
from curator.core.generation.asking import quote_line_tokens  # noqa: E402
from curator.core.generation.config import GenerationConfig  # noqa: E402

KEPT = """SELECT text, raw_output, reference, source_chunk_ids FROM queries WHERE source = 'synthetic'
          AND json_extract(quality_signals, '$.mode') = 'need-first'"""


def cut_reply(raw: str, tokenize, detokenize, bound: int) -> str:
    head, _, rest = raw.partition("\n")
    return head + "\n" + detokenize(tokenize(rest)[:bound])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="the GGUF that generated the rows (its tokenizer only)")
    parser.add_argument("projects", nargs="+", type=Path)
    args = parser.parse_args()
    import llama_cpp

    llm = llama_cpp.Llama(args.model, vocab_only=True, verbose=False)
    bound = quote_line_tokens(GenerationConfig(capable=True))
    tokenize = lambda text: llm.tokenize(text.encode(), add_bos=False)  # noqa: E731
    detokenize = lambda tokens: llm.detokenize(tokens).decode("utf-8", "ignore")  # noqa: E731
    counts = {"same": 0, "shorter": 0, "lost": 0}
    for project in args.projects:
        db = sqlite3.connect(project)
        for question, raw, reference, ids in db.execute(KEPT):
            chunk = db.execute("SELECT text FROM chunks WHERE id = ?", [json.loads(ids)[0]]).fetchone()[0]
            parsed = needfirst.parse(cut_reply(raw, tokenize, detokenize, bound))
            located = needfirst.reference(parsed[1], [chunk]) if parsed else None
            if located is None or filters.check_adds_to_question(question, located):
                counts["lost"] += 1
                print(f"lost ({project.name}): {question}")
            elif located == reference:
                counts["same"] += 1
            else:
                counts["shorter"] += 1
                print(f"shorter ({project.name}): {len(reference)} -> {len(located)} characters")
    print(f"quote bound {bound} tokens: {counts}")


if __name__ == "__main__":
    main()
