"""Export the gold set as JSONL (RAGAS field names), a BEIR folder or TREC qrels, plus a manifest.

Every file is written to a temporary name in the target folder and the whole set is published
at once (publish.py), so a crash leaves either the previous export or the complete new one,
never a truncated file or a manifest that describes other files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, Optional

import sqlite_utils

from curator import __version__
from curator.core import store
from curator.core.corpus.documents import get_chunks
from curator.core.errors import BadOption, InputError
from curator.core.queries.rows import list_queries
from curator.core.store.gold import broken_gold_ids, judged_not_relevant
from curator.core.export.splits import assign_splits
from curator.core.export import publish
from curator.core.files import current_umask, one_field, stage_lines, write_lines

FORMATS = ("jsonl", "beir", "trec")
DEFAULT_STATUSES = ("approved", "unanswerable")
STATUSES = ("pending", "approved", "rejected", "unanswerable")  # review.decisions.STATUSES (export sits beside review)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def select_rows(db: sqlite_utils.Database, statuses: Iterable[str] = DEFAULT_STATUSES, query_type=None,
                source=None, cluster=None) -> list[dict]:
    """The gold rows to export, in a deterministic order (by query id)."""
    wanted, broken = set(statuses), broken_gold_ids(db)  # a row breaking the gold invariant is never exported
    rows = [q for q in list_queries(db, query_type=query_type, source=source)
            if q["status"] in wanted and q["id"] not in broken]
    if cluster is not None:
        rows = [q for q in rows if q["cluster"] == cluster]
    return sorted(rows, key=lambda q: q["id"])


def _gold_chunks(db: sqlite_utils.Database, rows: list[dict]) -> dict[str, dict]:
    """Every gold chunk of the rows, fetched in batches (one query per row cost seconds at 100k)."""
    ids = sorted({cid for q in rows for cid in q["gold_chunk_ids"]})
    found: dict[str, dict] = {}
    for start in range(0, len(ids), 900):  # under SQLite's bound-parameter limit
        found.update((c["id"], c) for c in get_chunks(db, ids[start : start + 900]))
    return found


def jsonl_record(q: dict, chunks_by_id: dict[str, dict], split: Optional[str] = None) -> dict:
    chunks = [chunks_by_id[cid] for cid in q["gold_chunk_ids"] if cid in chunks_by_id]
    record = {
        "user_input": q["text"], "reference": q["reference"],
        "reference_contexts": [c["text"] for c in chunks], "reference_context_ids": [c["id"] for c in chunks],
        "id": q["id"], "answerable": bool(q["answerable"]) and q["status"] != "unanswerable",
        "query_type": q["query_type"], "source": q["source"],
        "cluster": None if q["cluster"] is None else {"id": q["cluster"], "label": q["cluster_label"]},
        "status": q["status"], "reviewer": q["reviewer"], "reviewed_at": q["reviewed_at"],
        "doc_ids": sorted({c["doc_id"] for c in chunks}), "generation_run": q["run_id"],
        "relevance": q["gold_grades"], "stale": bool(q["stale"]),
    }
    if split is not None:
        record["split"] = split
    return record


def _qrels(rows: list[dict]) -> list[tuple[str, str, int]]:
    """(query id, chunk id, grade), each id one field (files.one_field): one qrel stays one line.

    The gold chunks with their grades, then the chunks a reviewer judged not relevant (grade 0 in
    the pooled review) at level 0, as TREC writes a judged pool: trec_eval and BEIR count them as
    judged and not relevant, and a tool that measures judged@k can tell them from unjudged ones."""
    out = []
    for q in rows:
        if q["status"] == "unanswerable":
            continue
        qid, grades = one_field(q["id"]), q["gold_grades"]
        out += [(qid, one_field(cid), int(grades.get(cid, 1))) for cid in q["gold_chunk_ids"]]
        out += [(qid, one_field(cid), 0) for cid in judged_not_relevant(grades, q["gold_chunk_ids"])]
    return out


def _split_path(out: Path, split: str) -> Path:
    """gold.jsonl -> gold.dev.jsonl: one file per split beside the requested name."""
    return out.with_name(f"{out.stem}.{split}{out.suffix}")


def _export_beir(db, out: Path, rows: list[dict], splits: dict[str, str], manifest_for) -> dict:
    """A BEIR folder, its manifest included, built beside ``out`` and swapped in whole once complete."""
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    staging.chmod(0o777 & ~current_umask())  # mkdtemp makes it 0700 whatever the umask says
    try:
        manifest = _fill_beir(db, staging, rows, splits, manifest_for)
        _swap_folder_in(staging, out)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return manifest


def _fill_beir(db, staging: Path, rows: list[dict], splits: dict[str, str], manifest_for) -> dict:
    corpus = store.rows(db, """SELECT c.id, c.title, c.text, d.path FROM chunks c JOIN documents d ON d.id = c.doc_id
                               WHERE c.active = 1 ORDER BY c.id""")
    write_lines(staging / "corpus.jsonl", (json.dumps({"_id": c["id"], "title": c["title"] or "", "text": c["text"],
                                                        "metadata": {"doc_path": c["path"]}}, ensure_ascii=False)
                                            for c in corpus))
    write_lines(staging / "queries.jsonl", (json.dumps({"_id": q["id"], "text": q["text"], "metadata": {
        "answerable": q["status"] != "unanswerable" and bool(q["answerable"]), "query_type": q["query_type"],
        "source": q["source"], "cluster": q["cluster"], **({"split": splits[q["id"]]} if splits else {})}},
        ensure_ascii=False) for q in rows))
    # BEIR names qrels files after splits; without --split everything is the test split.
    by_split = _group_by_split(rows, splits) if splits else {"test": rows}
    qrels_files = []
    for name, split_rows in by_split.items():
        write_lines(staging / "qrels" / f"{name}.tsv",
                     ["query-id\tcorpus-id\tscore"] + [f"{a}\t{b}\t{c}" for a, b, c in _qrels(split_rows)])
        qrels_files.append(f"qrels/{name}.tsv")
    names = ["corpus.jsonl", "queries.jsonl", *qrels_files]
    manifest = manifest_for({name: staging / name for name in names})
    write_lines(staging / "manifest.json", [_manifest_text(manifest)])
    return manifest


def _swap_folder_in(staging: Path, out: Path) -> None:
    """Put the finished folder at ``out`` so that ``out`` is never missing, even after a kill.

    A folder cannot be renamed over a non-empty one, so on Linux the two are exchanged in one
    atomic renameat2(RENAME_EXCHANGE) and the old export (now at ``staging``) is deleted. Elsewhere
    the old folder is moved aside first; a kill between the two renames then leaves it at
    ``<out>.previous``, which the next export puts back before anything else.
    """
    previous = out.with_name(out.name + ".previous")
    if previous.exists() and not out.exists():
        os.replace(previous, out)  # recover from an interrupted fallback swap
    if out.exists() and not out.is_dir():  # a file replaced under --force: nothing to keep
        out.unlink()
    if out.exists() and _exchange(staging, out):
        shutil.rmtree(staging, ignore_errors=True)
        return
    if out.exists():
        os.replace(out, previous)
    os.replace(staging, out)
    shutil.rmtree(previous, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2); False where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except AttributeError:  # glibc older than 2.28
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _group_by_split(rows: list[dict], splits: dict[str, str]) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {name: [] for name in dict.fromkeys(splits.values())}
    for q in rows:
        groups[splits[q["id"]]].append(q)
    return groups


def _flat_lines(db, format: str, rows: list[dict], splits: dict[str, str]) -> Iterator[str]:
    """The lines of one JSONL or TREC qrels file."""
    if format == "jsonl":
        chunks_by_id = _gold_chunks(db, rows)
        encode = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode  # one encoder, not one per row
        return (encode(jsonl_record(q, chunks_by_id, splits.get(q["id"]))) for q in rows)
    return (f"{a} 0 {b} {c}" for a, b, c in _qrels(rows))


def _manifest(db, rows: list[dict], fmt: str, files: dict[str, Path], filters: dict) -> dict:
    """``files``: each exported file's name in the set -> the (staged) file holding its bytes."""
    def counts(key: str) -> dict:
        result: dict = {}
        for q in rows:
            result[str(q[key])] = result.get(str(q[key]), 0) + 1
        return dict(sorted(result.items()))

    run_ids = sorted({q["run_id"] for q in rows if q["run_id"] is not None})
    runs = store.rows(db, f"SELECT id, backend, model_path, model_sha256, params, seed, prompts, mix FROM generation_runs "
                          f"WHERE id IN ({','.join('?' * len(run_ids))})", run_ids) if run_ids else []
    for run in runs:
        for key in ("params", "prompts", "mix"):
            run[key] = store.loads(run[key])
        # A repacked model (generation.repack) ran from a copy: name the original file and hash too.
        run["source_model_path"] = run["params"].get("source_model_path", run["model_path"])
        run["source_model_sha256"] = run["params"].get("source_model_sha256", run["model_sha256"])
    cluster_run = store.rows(db, "SELECT id, embedder, params, k FROM cluster_runs WHERE active = 1")
    for run in cluster_run:
        run["params"] = store.loads(run["params"])  # objects, not JSON text inside the JSON manifest
    chunkers = sorted({r[0] for r in db.execute("SELECT DISTINCT chunk_params FROM documents") if r[0]})
    return {
        "curator_version": __version__, "created_at": store.now(), "format": fmt, "filters": filters,
        "rows": len(rows), "by_status": counts("status"), "by_type": counts("query_type"),
        "by_source": counts("source"), "by_cluster": counts("cluster"),
        "reviewers": sorted({q["reviewer"] for q in rows if q["reviewer"]}),
        "generation_runs": runs, "cluster_run": cluster_run[0] if cluster_run else None,
        "chunker": [store.loads(text) for text in chunkers],
        "files": {name: _sha256(path) for name, path in files.items()},
    }


def manifest_path(out, format: str) -> Path:
    """Where the manifest of an export to ``out`` lives: inside a BEIR folder, beside a file."""
    out = Path(out)
    return out / "manifest.json" if format == "beir" else out.with_name(out.name + ".manifest.json")


def _known_statuses(statuses: Iterable[str]) -> tuple[str, ...]:
    """The statuses asked for, refused when one is unknown (else a typo exports 0 rows and says nothing)."""
    statuses = tuple(statuses)
    unknown = [s for s in statuses if s not in STATUSES]
    if unknown or not statuses:
        raise BadOption("--status", f"unknown status {', '.join(map(repr, unknown)) or '(none)'}; "
                                    f"use one or more of {', '.join(STATUSES)}")
    return statuses


def export(db: sqlite_utils.Database, out, format: str = "jsonl", statuses: Iterable[str] = DEFAULT_STATUSES,
           query_type: Optional[str] = None, source: Optional[str] = None, cluster: Optional[int] = None,
           split: Optional[dict[str, float]] = None, seed: int = 0, force: bool = False) -> dict:
    """Write the gold set; returns the manifest (also written beside the export).

    ``split`` ({"dev": 0.3, "test": 0.7}) cuts the rows per cluster into named splits: one
    file per split for jsonl and trec (gold.dev.jsonl), one qrels file per split for BEIR.
    An existing OUT that is not a prior export is refused unless ``force``; the project never."""
    if format not in FORMATS:
        raise InputError(f"unknown export format {format!r}; use one of {', '.join(FORMATS)}")
    out = Path(out)
    statuses = _known_statuses(statuses)
    rows = select_rows(db, statuses, query_type, source, cluster)
    splits = assign_splits(rows, split, seed) if split else {}
    filters = {"statuses": list(statuses), "query_type": query_type, "source": source, "cluster": cluster}

    def manifest_for(files: dict[str, Path]) -> dict:
        manifest = _manifest(db, rows, format, files, filters)
        if split:
            manifest["split"] = {"fractions": split, "seed": seed, "stratified_by": "cluster",
                                 "counts": {name: len(group) for name, group in _group_by_split(rows, splits).items()}}
        return manifest

    try:
        if format == "beir":
            publish.check_targets(db, [out], manifest_path(out, format), force)
            out.parent.mkdir(parents=True, exist_ok=True)
            publish.recover(out.with_name(out.name + ".manifest.json"), [out.name])
            manifest = _export_beir(db, out, rows, splits, manifest_for)
        else:
            manifest = _export_flat(db, out, format, rows, splits, manifest_for, force)
    except OSError as exc:
        raise InputError(f"{out}: the export could not be written ({exc.strerror or exc}); "
                         "any earlier export there is unchanged.") from None
    if store.is_read_only(db):  # a read-only project: the export is written, only its listing cannot be
        return manifest
    with db.conn:
        db.execute("INSERT INTO exports (created_at, format, path, manifest) VALUES (?,?,?,?)",
                   [manifest["created_at"], format, str(out), store.dumps(manifest)])
    return manifest


def _manifest_text(manifest: dict) -> str:
    return json.dumps(manifest, indent=2, ensure_ascii=False, default=str)


def _export_flat(db, out: Path, format: str, rows: list[dict], splits: dict[str, str], manifest_for,
                 force: bool) -> dict:
    """Stage every data file and the manifest, then publish the set (see publish.py)."""
    targets = ({_split_path(out, name): group for name, group in _group_by_split(rows, splits).items()}
               if splits else {out: rows})
    manifest_file = manifest_path(out, format)
    publish.check_targets(db, [*targets, manifest_file], manifest_file, force)
    publish.recover(manifest_file, [p.name for p in targets])
    staged: dict[Path, Path] = {}
    try:
        for path, group in targets.items():
            staged[path] = stage_lines(path, _flat_lines(db, format, group, splits))
        manifest = manifest_for({path.name: tmp for path, tmp in staged.items()})
        staged[manifest_file] = stage_lines(manifest_file, [_manifest_text(manifest)])
    except BaseException:
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)
        raise
    publish.publish(staged, manifest_file)
    return manifest


def exports(db: sqlite_utils.Database, limit: int = 20) -> list[dict]:
    return store.rows(db, "SELECT id, created_at, format, path FROM exports ORDER BY id DESC LIMIT ?", [limit])
