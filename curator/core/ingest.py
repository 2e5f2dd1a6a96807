"""Ingest files and folders into a project: load, chunk, store, flag stale gold labels."""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Optional

import sqlite_utils

from curator.core import store
from curator.core.chunking import DEFAULT_CHUNK_SIZE, DEFAULT_OVERLAP, Chunk, chunk_document
from curator.core.errors import InputError
from curator.core.loaders import SUPPORTED_SUFFIXES, LoadedDoc, load_file
from curator.core.tasks import CancelToken, ProgressCallback, report


@dataclass
class IngestReport:
    files_seen: int = 0
    files_ingested: int = 0
    files_unchanged: int = 0
    skipped: list[dict] = field(default_factory=list)  # {"path", "reason"}
    line_errors: list[str] = field(default_factory=list)
    documents: int = 0
    chunks_added: int = 0
    chunks_retired: int = 0
    queries_stale: int = 0  # queries whose gold chunks no longer exist, after this ingest
    total_documents: int = 0
    total_chunks: int = 0
    bytes: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)


def iter_input_files(paths: Iterable[str | Path], report_: IngestReport) -> Iterator[tuple[Path, str]]:
    """(file, key) for every supported file; the key is relative to the argument's parent,
    so the same corpus gets the same document keys (and chunk ids) on every machine."""
    for raw in paths:
        root = Path(raw)
        if not root.exists():
            report_.skipped.append({"path": str(root), "reason": "no such file or folder"})
            continue
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        base = root.parent
        for file in files:
            if file.suffix.lower() not in SUPPORTED_SUFFIXES:
                if root.is_file():
                    report_.skipped.append({"path": str(file), "reason": f"unsupported file type {file.suffix or '(none)'}"})
                continue
            if any(part.startswith(".") for part in file.relative_to(base).parts):
                continue  # hidden files and folders (.git, .DS_Store, ...)
            yield file, file.relative_to(base).as_posix()


def _doc_id(key: str, doc: LoadedDoc) -> str:
    if doc.format == "jsonl":
        return str(doc.metadata["corpus_id"])
    return "d_" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:12]


def _jsonl_chunk_ids(doc_id: str, chunks: list[Chunk]) -> None:
    """A BEIR corpus keeps its own ids: one chunk takes the document id, more get #n."""
    for chunk in chunks:
        chunk.id = doc_id if len(chunks) == 1 else f"{doc_id}#{chunk.ord}"


def refresh_stale(db: sqlite_utils.Database, chunk_ids: Iterable[str]) -> int:
    """Recompute the stale flag of queries whose gold labels point at any of these chunks."""
    ids = list(set(chunk_ids))
    changed = 0
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        marks = ",".join("?" * len(batch))
        cursor = db.execute(
            f"""UPDATE queries SET stale = (
                    SELECT COUNT(*) > 0 FROM json_each(queries.gold_chunk_ids) g
                    LEFT JOIN chunks c ON c.id = g.value
                    WHERE c.id IS NULL OR c.active = 0)
                WHERE EXISTS (SELECT 1 FROM json_each(queries.gold_chunk_ids) g
                              WHERE g.value IN ({marks}))""",
            batch,
        )
        changed += cursor.rowcount
    return changed


def _store_document(db, key: str, doc: LoadedDoc, content_hash: str, params: str, chunks: list[Chunk], report_: IngestReport) -> None:
    doc_id = _doc_id(key, doc)
    if doc.format == "jsonl":
        _jsonl_chunk_ids(doc_id, chunks)
    old_ids = {r[0] for r in db.execute("SELECT id FROM chunks WHERE doc_id = ? AND active = 1", [doc_id])}
    new_ids = {c.id for c in chunks}
    db["documents"].upsert(
        {"id": doc_id, "path": key, "title": doc.title, "format": doc.format, "content_hash": content_hash,
         "bytes": len(doc.text.encode("utf-8")), "chunk_params": params,
         "metadata": store.dumps(doc.metadata), "ingested_at": store.now()},
        pk="id",
    )
    retired = old_ids - new_ids
    if retired:
        marks = ",".join("?" * len(retired))
        db.execute(f"UPDATE chunks SET active = 0 WHERE id IN ({marks})", list(retired))
    for chunk in chunks:
        db.execute(
            """INSERT INTO chunks (id, doc_id, ord, title, text, tokens, active) VALUES (?,?,?,?,?,?,1)
               ON CONFLICT(id) DO UPDATE SET ord = excluded.ord, title = excluded.title, active = 1""",
            [chunk.id, doc_id, chunk.ord, chunk.title, chunk.text, chunk.tokens],
        )
    report_.chunks_added += len(new_ids - old_ids)
    report_.chunks_retired += len(retired)
    refresh_stale(db, retired | (new_ids - old_ids))


def _known_hashes(db) -> dict[str, tuple[str, str]]:
    return {r[0]: (r[1], r[2]) for r in db.execute("SELECT path, content_hash, chunk_params FROM documents")}


def ingest(
    db: sqlite_utils.Database,
    paths: Iterable[str | Path],
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    overlap: int = DEFAULT_OVERLAP,
    on_progress: Optional[ProgressCallback] = None,
    cancel: Optional[CancelToken] = None,
) -> IngestReport:
    """Ingest files and folders; each file is committed on its own, so a crash keeps the rest."""
    started = time.perf_counter()
    result = IngestReport()
    params = store.dumps({"chunk_size": chunk_size, "overlap": overlap, "chunker": "sentence-v1"})
    known = _known_hashes(db)
    files = list(iter_input_files(paths, result))
    for index, (file, key) in enumerate(files):
        if cancel is not None:
            cancel.check()
        result.files_seen += 1
        report(on_progress, index, len(files), key)
        try:
            raw = file.read_bytes()
        except OSError as exc:
            result.skipped.append({"path": str(file), "reason": f"cannot be read ({exc.strerror or exc})"})
            continue
        result.bytes += len(raw)
        key = _resolve_key(key, known)
        content_hash = hashlib.sha256(raw).hexdigest()
        if file.suffix.lower() != ".jsonl" and known.get(key) == (content_hash, params):
            result.files_unchanged += 1
            continue
        _ingest_file(db, file, key, content_hash, params, chunk_size, overlap, known, result)
    report(on_progress, len(files), len(files), "done")
    result.total_documents, result.total_chunks, result.queries_stale = db.execute(
        "SELECT (SELECT COUNT(*) FROM documents), (SELECT COUNT(*) FROM chunks WHERE active = 1),"
        " (SELECT COUNT(*) FROM queries WHERE stale = 1)").fetchone()
    result.seconds = round(time.perf_counter() - started, 3)
    return result


def _retire_missing_rows(db, key: str, present: set[str], result: IngestReport) -> bool:
    """Rows gone from a JSONL corpus retire their chunks (and flag gold labels on them stale)."""
    gone = [r[0] for r in db.execute("SELECT id, path FROM documents WHERE path LIKE ? ESCAPE '\\'",
                                     [key.replace("%", "\\%").replace("_", "\\_") + "#%"]) if r[1] not in present]
    retired: list[str] = []
    for doc_id in gone:
        retired += [r[0] for r in db.execute("SELECT id FROM chunks WHERE doc_id = ? AND active = 1", [doc_id])]
        db.execute("UPDATE chunks SET active = 0 WHERE doc_id = ?", [doc_id])
        # The document row stays (its retired chunks still explain old gold labels); a changed
        # hash makes the row count as new if it comes back.
        db.execute("UPDATE documents SET content_hash = 'removed' WHERE id = ?", [doc_id])
    refresh_stale(db, retired)
    result.chunks_retired += len(retired)
    return bool(gone)


def _resolve_key(key: str, known: dict) -> str:
    """A file named differently on the command line (a.md vs docs/a.md) keeps its stored key."""
    if key in known:
        return key
    matches = [path for path in known if path.endswith("/" + key)]
    return matches[0] if len(matches) == 1 else key


def _ingest_file(db, file: Path, key: str, content_hash: str, params: str, chunk_size: int, overlap: int,
                 known: dict, result: IngestReport) -> None:
    try:
        docs = load_file(file, result.line_errors)
    except InputError as exc:
        result.skipped.append({"path": str(file), "reason": str(exc).split(": ", 1)[-1]})
        return
    changed = False
    with db.conn:  # one transaction per file
        if file.suffix.lower() == ".jsonl":
            changed = _retire_missing_rows(db, key, {f"{key}#{d.metadata['corpus_id']}" for d in docs}, result)
        for doc in docs:
            doc_key = key if doc.format != "jsonl" else f"{key}#{doc.metadata['corpus_id']}"
            doc_hash = content_hash if doc.format != "jsonl" else hashlib.sha256(
                (doc.title + "\x00" + doc.text).encode("utf-8")).hexdigest()
            if known.get(doc_key) == (doc_hash, params):
                continue
            doc.key = doc_key
            _store_document(db, doc_key, doc, doc_hash, params, chunk_document(doc, chunk_size, overlap), result)
            result.documents += 1
            changed = True
    if changed:
        result.files_ingested += 1
    else:
        result.files_unchanged += 1
