"""Time ``curator models --json`` on a fake home of 50 GGUF files spread over the tools' stores.

Ten files each in Ollama's store (manifests naming blobs), LM Studio's folder, the Hugging Face hub
cache (snapshot symlinks into blobs), GPT4All's folder and llama.cpp's cache; each header carries a
32,000-word vocabulary (as a 7B Llama's does) and 290 tensor infos, so the walk steps over what a
real header holds. Prints the wall seconds of the whole command (a new Python process: imports
included; the first process reads every header and caches what they say, the next ones read the
cache) and of the discovery alone in one process, cold and warm; asserts nothing. Usage:
    PYTHONPATH=. .venv/bin/python bench/models_scan.py [--files 50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from gguf_bytes import gguf_bytes, model_metadata  # noqa: E402

VOCAB = [f"tok{i}" for i in range(32_000)]
TENSORS = [(f"blk.{i // 9}.w{i % 9}", (4096, 4096), 12) for i in range(290)]
CLI = "from curator.cli.main import cli; cli()"
STORES = ("ollama", "lmstudio", "huggingface", "gpt4all", "llama.cpp")


def header(i: int) -> bytes:
    return gguf_bytes(model_metadata(f"model {i}", **{"tokenizer.ggml.tokens": VOCAB}), TENSORS)


def place(home: Path, store: str, i: int, data: bytes) -> None:
    if store == "ollama":
        root = home / ".ollama" / "models"
        digest = hashlib.sha256(data).hexdigest()
        (root / "blobs").mkdir(parents=True, exist_ok=True)
        (root / "blobs" / f"sha256-{digest}").write_bytes(data)
        manifest = root / "manifests" / "registry.ollama.ai" / "library" / f"m{i}" / "latest"
        manifest.parent.mkdir(parents=True, exist_ok=True)
        layer = {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}"}
        manifest.write_text(json.dumps({"layers": [layer]}))
        return
    if store == "huggingface":
        repo = home / ".cache" / "huggingface" / "hub" / f"models--org--m{i}"
        (repo / "blobs").mkdir(parents=True, exist_ok=True)
        (repo / "blobs" / "b").write_bytes(data)
        (repo / "snapshots" / "rev").mkdir(parents=True, exist_ok=True)
        (repo / "snapshots" / "rev" / f"m{i}.gguf").symlink_to(repo / "blobs" / "b")
        return
    folder = {"lmstudio": home / ".lmstudio" / "models" / "pub" / f"m{i}",
              "gpt4all": home / ".local" / "share" / "nomic.ai" / "GPT4All",
              "llama.cpp": home / ".cache" / "llama.cpp"}[store]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"m{i}.gguf").write_bytes(data)


def fake_home(files: int) -> Path:
    home = Path(tempfile.mkdtemp(prefix="models-scan-"))
    for i in range(files):
        place(home, STORES[i % len(STORES)], i, header(i))
    return home


def time_command(home: Path) -> tuple[float, int]:
    env = {**os.environ, "HOME": str(home), "CURATOR_CONFIG_DIR": str(home / "config")}
    for name in ("OLLAMA_MODELS", "HF_HOME", "HF_HUB_CACHE", "LLAMA_CACHE", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        env.pop(name, None)
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CLI, "models", "--json"], env=env, capture_output=True,
                         text=True, check=True, cwd=Path(__file__).resolve().parents[1])
    seconds = time.perf_counter() - started
    return seconds, len(json.loads(out.stdout)["models"])


def time_discovery(home: Path) -> tuple[float, float, float]:
    from curator.core.modelfiles import discover as discover_mod
    from curator.core.modelfiles.places import Place, tool_places

    places = tool_places(env={}, home=home, platform="linux")
    started, cpu = time.perf_counter(), time.process_time()
    discover_mod.discover(places, bundled=False)
    cold, cold_cpu = time.perf_counter() - started, time.process_time() - cpu
    started = time.perf_counter()
    discover_mod.discover(places, bundled=False)
    return cold, cold_cpu, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    home = fake_home(args.files)
    os.environ["XDG_CACHE_HOME"] = str(home / ".cache")  # the listing's header cache stays in the fake home
    size = sum(f.stat().st_size for f in home.rglob("*") if f.is_file() and not f.is_symlink())
    print(f"fake home {home}: {args.files} GGUF headers, {size / 1e6:.1f} MB; load {os.getloadavg()[0]:.1f}")
    cold, cold_cpu, warm = time_discovery(home)
    print(f"discovery alone in one process: {cold:.3f} s wall ({cold_cpu:.3f} s CPU) reading every header, "
          f"{warm:.3f} s again; "
          f"load {os.getloadavg()[0]:.1f}")
    for cache in (home / ".cache" / "curator").rglob("headers.json"):
        cache.unlink()  # the first command reads every header again
    for r in range(args.rounds):
        seconds, listed = time_command(home)
        what = "reading every header" if r == 0 else "headers cached"
        print(f"round {r + 1}: curator models --json {seconds:.2f} s wall ({what}, a new Python process), "
              f"{listed} models listed (the 50 and the bundled one); load {os.getloadavg()[0]:.1f}")

if __name__ == "__main__":
    main()
