"""Time reading a GGUF file's chat template, as a run does before its first row: the gguf package's GGUFReader
(what gguf_string and repack.gguf_file_type used until 2026-12-07) against Curator's own header reader
(modelfiles.header, what they use now), in one process, each read from a warm page cache. Prints, asserts nothing.

    .venv/bin/python bench/header_read.py [MODEL.gguf ...]     # default: the bundled model
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from curator.core.generation.backends.llama_cpp import CHAT_TEMPLATE_KEY, gguf_string  # noqa: E402
from curator.core.resources import bundled_model_path  # noqa: E402


def seconds(read, path: Path, rounds: int = 3) -> float:
    """The best of ``rounds`` reads (the first one also warms the page cache)."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        read(path)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    import gguf

    for path in [Path(p) for p in sys.argv[1:]] or [bundled_model_path()]:
        package = seconds(lambda p: gguf.GGUFReader(str(p)).fields.get(CHAT_TEMPLATE_KEY), path)
        own = seconds(lambda p: gguf_string(p, CHAT_TEMPLATE_KEY), path)
        print(f"{path.name}: gguf package {package:.3f} s, Curator's header reader {own:.4f} s "
              f"({package / own:.0f}x); a run reads the template twice before its first row")


if __name__ == "__main__":
    main()
