"""Load the realq benchmark (real Python FAQ questions), building it first if it is missing.

    from bench.realq.load import ensure, questions
    out = ensure()                 # /tmp/realq, built on first use (needs python3.11-doc)
    corpus = out / "corpus"        # ingest this folder
    for q in questions(out):       # {"id", "question", "gold_path", "page", "anchor"}
        ...                        # gold_path is relative to corpus/
"""

from __future__ import annotations

import json
from pathlib import Path

try:
    from . import build as _build
except ImportError:  # loaded as a top-level module, with this folder on sys.path
    import build as _build  # type: ignore[no-redef]

DEFAULT_OUT = _build.DEFAULT_OUT


def is_built(out: Path) -> bool:
    """A finished set: build.py swaps the folder in whole, so questions.jsonl means complete."""
    return (out / "questions.jsonl").is_file() and (out / "corpus").is_dir()


def ensure(out: Path = DEFAULT_OUT, docs: Path = _build.DEFAULT_DOCS) -> Path:
    """The set's folder, building it from ``docs`` first when it is not there yet."""
    out = Path(out)
    if not is_built(out):
        code = _build.main(["--out", str(out), "--docs", str(docs)])
        if code != 0:
            # build.main has already printed why (docs not installed, --out not ours).
            raise RuntimeError(f"could not build the realq benchmark in {out} (exit code {code})")
    return out


def questions(out: Path = DEFAULT_OUT) -> list[dict]:
    """The questions of a built set, in file order."""
    with open(Path(out) / "questions.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
