"""``curator models`` and the model pickers: the models found, whether each suits this machine, and
(with a project) what each did there, plus the cost per row of a bigger model than the bundled one.

Without a project nothing is hashed. With one, only files whose size matches a size the project's
runs recorded are hashed (through cachefiles.file_sha256, which remembers hashes on disk while a
file is unchanged), and an Ollama blob's name is already its SHA-256.
"""

from __future__ import annotations

import os
from typing import Optional

import sqlite_utils

from curator.core.cachefiles import file_sha256
from curator.core.modelfiles.discover import FoundModel, discover
from curator.core.modelfiles.places import Place, all_places
from curator.core.modelfiles.usage import generation_by_model, judge_agreement_by_file, recorded_sizes

# Seconds per accepted row for each GB of model file, when nothing was measured in the project:
# the bundled 98 MB model wrote about 10 accepted rows/min on the Python FAQ on 2 cores (docs/
# benchmarks.md), ~6 s a row; decoding on a CPU is bound by reading the weights, so time grows
# with the file. A rough figure, said to be one wherever it is shown.
SECONDS_PER_ROW_PER_GB = 60.0
STORE_NAMES = {"bundled": "bundled with Curator", "ollama": "Ollama", "lmstudio": "LM Studio",
               "huggingface": "Hugging Face cache", "gpt4all": "GPT4All", "jan": "Jan", "llama.cpp": "llama.cpp cache",
               "folder": "your folder"}


def store_name(store: str) -> str:
    """The store as a user names it ("LM Studio", "your folder")."""
    return STORE_NAMES.get(store, store)


def available_memory() -> Optional[int]:
    """Memory a new model could take now: MemAvailable on Linux, else free pages; None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def human_bytes(n: Optional[int]) -> str:
    if n is None:
        return "?"
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def human_parameters(n: Optional[int]) -> str:
    if not n:
        return "?"
    return f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.0f}M" if n >= 1e6 else f"{n / 1e3:.0f}K"


def project_numbers(row: dict) -> str:
    """A model's numbers in the project in words ("" when it has none): the CLI's and the pickers'."""
    p, j = row.get("project"), row.get("judge")
    parts = []
    if p:
        parts.append(f"{p['accepted']}/{p['candidates']} kept, {p['approved']} approved, {p['edited']} edited, "
                     f"{p['rejected']} rejected" + (f", {p['rows_per_minute']:.1f} rows/min" if p["rows_per_minute"] else ""))
    if j:
        parts.append(f"judge kept {j['kept']}/{j['claims_checked']} checked verdicts")
    return "; ".join(parts)


def fit(model: dict, available: Optional[int]) -> tuple[Optional[bool], str]:
    """(suits this machine, why): the memory it needs (file, 2048-token KV cache, buffers) vs free."""
    if not model["readable"]:
        return False, "unreadable (see its problem)"
    need = model["memory_needed_bytes"]
    if available is None or need is None:
        return None, "free memory unknown"
    if need > available:
        return False, f"needs about {human_bytes(need)} of memory, {human_bytes(available)} free"
    return True, f"needs about {human_bytes(need)}, {human_bytes(available)} free"


def _attach_usage(db: sqlite_utils.Database, rows: list[dict]) -> list[dict]:
    """Each row's numbers in the project; returns the project's models not found on this machine."""
    by_sha, judges, sizes = generation_by_model(db), judge_agreement_by_file(db), recorded_sizes(db)
    for row in rows:
        if row["readable"] and row["sha256"] is None and row["size_bytes"] in sizes:
            row["sha256"] = file_sha256(row["path"])
        row["project"] = by_sha.get(row["sha256"]) if row["sha256"] else None
        row["judge"] = judges.get(row["file_name"])
    matched = {row["sha256"] for row in rows}
    return [{"sha256": sha, **numbers} for sha, numbers in by_sha.items() if sha not in matched]


def list_models(db: Optional[sqlite_utils.Database] = None, places: Optional[list[Place]] = None,
                bundled: bool = True) -> dict:
    """Every model found (``discover``), with its fit to this machine, and with ``db`` its numbers
    in that project (``project``: generation; ``judge``: agreement where a reviewer checked it)."""
    places = all_places() if places is None else places
    available = available_memory()
    rows = []
    for model in discover(places, bundled):
        row = model.to_dict()
        row["fits"], row["fit_reason"] = fit(row, available)
        rows.append(row)
    result = {"models": rows, "available_memory_bytes": available,
              "searched": [{"store": p.store, "folder": str(p.folder)} for p in places if p.folder.is_dir()]}
    if db is not None:
        result["not_found_here"] = _attach_usage(db, rows)
    return result


# -- a bigger model than the bundled one -------------------------------------------------------

def row_cost(model: dict, rows: list[dict]) -> tuple[float, str]:
    """(seconds per accepted row, how the figure was had): measured in the project for this model,
    else scaled by file size from a model measured there, else the rough figure per GB."""
    own = (model.get("project") or {}).get("seconds_per_row")
    if own:
        return own, "measured in this project"
    measured = [r for r in rows if (r.get("project") or {}).get("seconds_per_row") and r["size_bytes"]]
    if measured:
        ref = max(measured, key=lambda r: r["project"]["accepted"])
        scaled = ref["project"]["seconds_per_row"] * model["size_bytes"] / ref["size_bytes"]
        return round(scaled, 1), f"estimated from {ref['name']}'s rows here, scaled by file size"
    return round(SECONDS_PER_ROW_PER_GB * model["size_bytes"] / 1e9, 1), "rough estimate from its file size"


def bigger_model_hint(rows: list[dict]) -> Optional[dict]:
    """The biggest model that suits this machine and has more parameters than the bundled one (a chat
    template preferred), with what it costs per row here; None when there is none."""
    bundled = next((r for r in rows if r["store"] == "bundled" and r["readable"]), None)
    floor = (bundled or {}).get("parameters") or 0
    bigger = [r for r in rows if r["readable"] and r["fits"] is not False and (r["parameters"] or 0) > floor]
    if not bigger:
        return None
    best = max(bigger, key=lambda r: (bool(r["chat_template"]), r["parameters"]))
    seconds, basis = row_cost(best, rows)
    text = (f"Found {best['name']} ({human_parameters(best['parameters'])} parameters, {best['quantization']}, "
            f"{human_bytes(best['size_bytes'])}, in {store_name(best['store'])}): a bigger model than the bundled one usually writes "
            f"more usable rows. Here it costs about {seconds:.0f} s per row ({basis}).")
    return {"model": best, "seconds_per_row": seconds, "basis": basis, "text": text}

