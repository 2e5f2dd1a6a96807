"""What one llama_decode pass costs by the number of tokens in it, with logits kept for the last token only (a prompt
chunk, or several sequences' next tokens) or for every token (a token and its drafts, checked in one pass): the
figure that decides whether drafted decoding or more sequences at once can pay on this machine. Prints, asserts
nothing.

    .venv/bin/python bench/pass_cost.py [MODEL.gguf] [--threads 2] [--passes 10] [--widths 1,2,3,4,5,6]

Without MODEL, the bundled model (as `make bench` runs it).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    import llama_cpp
    from llama_cpp import _internals

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", nargs="?", help="a GGUF file (default: the bundled model)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--passes", type=int, default=10, help="passes timed per width")
    parser.add_argument("--widths", default="1,2,3,4,5,6")
    args = parser.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    if args.model is None:
        from curator.core.generation.repack import bundled_model_files

        args.model = str(bundled_model_files(repack=False).path)
    llm = llama_cpp.Llama(args.model, n_ctx=2048, n_threads=args.threads, n_threads_batch=args.threads, verbose=False)
    text = "The quick brown fox jumps over the lazy dog while the keeper reads the manual again. " * 80
    tokens = llm.tokenize(text.encode())
    prefix = 300
    assert len(tokens) >= prefix + args.passes * max(widths), "text too short for these widths"
    ctx = _internals.LlamaContext(model=llm._model, params=llm.context_params, verbose=False)
    batch = _internals.LlamaBatch(n_tokens=512, embd=0, n_seq_max=1, verbose=False)

    def decode(part: list[int], start: int, every: bool) -> None:
        batch.reset()
        b = batch.batch
        for j, token in enumerate(part):
            b.token[j], b.pos[j], b.n_seq_id[j] = token, start + j, 1
            b.seq_id[j][0], b.logits[j] = 0, every or j == len(part) - 1
        b.n_tokens = len(part)
        ctx.decode(batch)

    decode(tokens[:prefix], 0, False)  # a prompt the passes follow, as in a reply
    single = None
    for width in widths:
        row = []
        for every in (False, True):
            llama_cpp.llama_memory_seq_rm(ctx.memory, 0, prefix, -1)
            start = time.perf_counter()
            for i in range(args.passes):
                decode(tokens[prefix + i * width: prefix + (i + 1) * width], prefix + i * width, every)
            ms = (time.perf_counter() - start) * 1000 / args.passes
            single = single or ms
            row.append(f"{ms:.0f} ms ({ms / single:.2f}x one token; {ms / width:.0f} ms a token)")
        print(f"{width} tokens a pass: logits of the last {row[0]}; logits of every token {row[1]}", flush=True)


if __name__ == "__main__":
    main()
