"""Ingest files and folders into a project: load, chunk, store, flag stale gold labels."""

from __future__ import annotations

import hashlib
import os
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Optional

import sqlite_utils

from curator.core import store
from curator.core.corpus.chunking import DEFAULT_CHUNK_SIZE, DEFAULT_OVERLAP, Chunk, chunk_document
from curator.core.errors import InputError
from curator.core.store.gold import STALE_SQL
from curator.core.store.stats import store_corpus_key
from curator.core.corpus.loaders import SUPPORTED_SUFFIXES, LoadedDoc, load_file
from curator.core.progress import CancelToken, ProgressCallback, report

# Files are committed in groups, once per COMMIT_EVERY_S seconds: FTS5 flushes and merges an index
# segment on every commit, and one commit per file made SQLite most of the ingest time. A crash
# loses at most the last half second of files, and re-running ingest picks them up again (unchanged
# files are skipped), so nothing a user made by hand is ever at stake; a reviewer's decision in
# another window waits at most that long for the write lock.
COMMIT_EVERY_S = 0.5


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
    chunks_changed: int = 0  # chunks whose text changed under the same id (a JSONL passage edited in place)
    ids_refused: int = 0  # records whose id is another file's passage or chunk (each also in line_errors)
    queries_stale: int = 0  # queries whose gold chunks no longer exist, after this ingest
    total_documents: int = 0
    total_chunks: int = 0
    bytes: int = 0
    seconds: float = 0.0
    # chunks added or retired since the last commit: their queries' stale flags are refreshed
    # once per commit group instead of once per document
    touched_chunks: set = field(default_factory=set, repr=False)
    indexed_up_to: int = field(default=0, repr=False)  # chunk rowids above this still need the FTS index

    def as_dict(self) -> dict:
        data = asdict(self)
        del data["touched_chunks"], data["indexed_up_to"]
        return data


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
        inside = root.resolve()
        for file in files:
            if file != root and file.is_symlink() and not file.resolve().is_relative_to(inside):
                # a link inside a shared folder must not pull /etc/passwd or ~/.ssh into the project
                report_.skipped.append({"path": str(file), "reason": "a link to a file outside the folder; "
                                        "name that file itself to ingest it"})
                continue
            if file.suffix.lower() not in SUPPORTED_SUFFIXES:
                if root.is_file():
                    report_.skipped.append({"path": str(file), "reason": f"unsupported file type {file.suffix or '(none)'}"})
                continue
            key = file.relative_to(base).as_posix()
            if any(part.startswith(".") for part in file.relative_to(base).parts):
                continue  # hidden files and folders (.git, .DS_Store, ...)
            if not _is_text(key):
                # Python keeps undecodable name bytes as lone surrogates, which neither the
                # project file nor a chunk id can hold
                report_.skipped.append({"path": os.fsencode(file).decode("utf-8", "replace"),
                                        "reason": "the file name is not valid UTF-8; rename the file"})
                continue
            yield file, key


def _is_text(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _doc_id(key: str, doc: LoadedDoc) -> str:
    if doc.format == "jsonl":
        return str(doc.metadata["corpus_id"])
    return "d_" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:12]


def _jsonl_chunk_ids(doc_id: str, chunks: list[Chunk]) -> None:
    """A BEIR corpus keeps its own ids: one chunk takes the document id, more get #n."""
    for chunk in chunks:
        chunk.id = doc_id if len(chunks) == 1 else f"{doc_id}#{chunk.ord}"


def refresh_stale(db: sqlite_utils.Database, chunk_ids: Iterable[str]) -> int:
    """Recompute the stale flag of queries whose gold labels point at any of these chunks.

    A query is stale while one of its gold chunks is gone, retired, or holds other text than the
    one it was labelled against (``gold_changes``, written by ``_record_text_changes``)."""
    ids = list(set(chunk_ids))
    changed = 0
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        marks = ",".join("?" * len(batch))
        cursor = db.execute(
            f"""UPDATE queries SET stale = {STALE_SQL}
                WHERE EXISTS (SELECT 1 FROM json_each(queries.gold_chunk_ids) g
                              WHERE g.value IN ({marks}))""",
            batch,
        )
        changed += cursor.rowcount
    return changed


def _active_chunk_ids(db, doc_ids: list[str]) -> dict[str, set]:
    """The active chunk ids of each document, in a few queries however many documents."""
    found: dict[str, set] = {doc_id: set() for doc_id in doc_ids}
    for start in range(0, len(doc_ids), 500):
        batch = doc_ids[start : start + 500]
        rows = db.execute(f"SELECT doc_id, id FROM chunks WHERE active = 1 AND doc_id IN ({','.join('?' * len(batch))})",
                          batch)
        for doc_id, chunk_id in rows:
            found[doc_id].add(chunk_id)
    return found


def _store_documents(db, docs: list[tuple], params: str, report_: IngestReport, file: Path) -> int:
    """Store a file's new or changed documents: (key, doc, content hash, chunks) each; returns how
    many were stored (a document whose id belongs to another file is refused and reported).

    One statement of each kind for the whole file, not per document: a BEIR corpus.jsonl holds
    tens of thousands of one-chunk documents (per-document statements measured 5-8% slower).
    """
    rows, chunk_rows, retired_all = [], [], set()
    for key, doc, content_hash, chunks in docs:
        doc_id = _doc_id(key, doc)
        if doc.format == "jsonl":
            _jsonl_chunk_ids(doc_id, chunks)
        rows.append((doc_id, key, doc, content_hash, chunks))
    existing = _existing_chunks(db, [c.id for r in rows for c in r[4]])
    rows = _without_taken_ids(db, rows, file, report_, existing)
    old = _active_chunk_ids(db, list(dict.fromkeys(r[0] for r in rows)))
    for doc_id, key, doc, content_hash, chunks in rows:
        new_ids = {c.id for c in chunks}
        retired = old[doc_id] - new_ids
        report_.chunks_added += len(new_ids - old[doc_id])
        report_.chunks_retired += len(retired)
        report_.touched_chunks |= retired | (new_ids - old[doc_id])
        retired_all |= retired
        chunk_rows += [(c.id, doc_id, c.ord, c.title, c.text, c.tokens) for c in chunks]
    _record_text_changes(db, chunk_rows, report_, existing)
    db.conn.executemany(
        """INSERT INTO documents (id, path, title, format, content_hash, bytes, chunk_params, metadata, ingested_at)
           VALUES (?,?,?,?,?,?,?,?,?)
           ON CONFLICT(id) DO UPDATE SET path = excluded.path, title = excluded.title, format = excluded.format,
               content_hash = excluded.content_hash, bytes = excluded.bytes, chunk_params = excluded.chunk_params,
               metadata = excluded.metadata, ingested_at = excluded.ingested_at""",
        [(doc_id, key, doc.title, doc.format, content_hash, doc.bytes, params,
          store.dumps(doc.metadata), store.now()) for doc_id, key, doc, content_hash, _ in rows],
    )
    db.conn.executemany("UPDATE chunks SET active = 0 WHERE id = ?", [(i,) for i in retired_all])
    db.conn.executemany(
        """INSERT INTO chunks (id, doc_id, ord, title, text, tokens, active) VALUES (?,?,?,?,?,?,1)
           ON CONFLICT(id) DO UPDATE SET ord = excluded.ord, title = excluded.title, text = excluded.text,
               tokens = excluded.tokens, active = 1""",  # a JSONL passage keeps its id when its text changes
        chunk_rows,
    )
    return len(rows)


def _document_owners(db, ids: list[str]) -> dict[str, tuple]:
    """Document id -> (its key, the file it was read from) of the stored documents with these ids."""
    found: dict[str, tuple] = {}
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        for row in db.execute("SELECT id, path, json_extract(metadata, '$.source_file') FROM documents "
                              f"WHERE id IN ({','.join('?' * len(batch))})", batch):
            found[row[0]] = (row[1], row[2])
    return found


def _existing_chunks(db, ids: list[str]) -> dict[str, tuple]:
    """Chunk id -> (its document id, the hash of its title and text) of the stored chunks with these ids."""
    found: dict[str, tuple] = {}
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        for chunk_id, doc_id, title, text in db.execute(
                f"SELECT id, doc_id, title, text FROM chunks WHERE id IN ({','.join('?' * len(batch))})", batch):
            found[chunk_id] = (doc_id, text_sha(title, text))
    return found


def _without_taken_ids(db, rows: list[tuple], file: Path, report_: IngestReport, chunks: dict) -> list[tuple]:
    """The rows whose document id and chunk ids are theirs to write.

    A BEIR id is the document's and its chunk's id, and ``ON CONFLICT DO UPDATE`` used to let a
    second corpus's "1" (or a record named like any chunk id) rewrite the first one's text in place,
    under gold labels approved against the old text. An id taken by a document of another file that
    still exists, or by a chunk of another document, now refuses the record (file:line, counted);
    a document whose old file is gone is a corpus that moved and keeps its ids, as files keep keys."""
    docs = _document_owners(db, [r[0] for r in rows])
    here, claimed, kept = str(file.resolve()), {}, []
    for row in rows:
        doc_id, key, doc, _, doc_chunks = row
        owner = _taken_by(db, doc_id, key, doc_chunks, here, docs, chunks, claimed)
        if owner is not None:
            report_.ids_refused += 1
            where = f"{file}:{doc.line}" if doc.line else str(file)
            report_.line_errors.append(
                f"{where}: id {doc_id!r} is already taken by {owner}; the record was skipped (a qrels line "
                "names a passage by id, so two passages cannot share one). Give each corpus's ids a prefix, "
                "or ingest the corpora into separate projects.")
            continue
        claimed.update((c.id, key) for c in doc_chunks)
        kept.append(row)
    return kept


def _taken_by(db, doc_id, key, doc_chunks, here, docs, chunks, claimed) -> Optional[str]:
    """What already holds this document's id or one of its chunk ids, or None."""
    path, source = docs.get(doc_id, (key, None))
    if path != key and source != here and (not source or Path(source).exists()):
        return f"{path} (from {source})"
    for chunk in doc_chunks:
        if chunk.id in claimed:
            return f"{claimed[chunk.id]} (earlier in this file)"
        owner_doc = chunks.get(chunk.id, (doc_id,))[0]
        if owner_doc != doc_id:
            owner_path = _document_owners(db, [owner_doc]).get(owner_doc, (owner_doc,))[0]
            return f"a chunk of {owner_path}"
    return None


def text_sha(title: str, text: str) -> str:
    """The hash of a chunk's title and text that ``gold_changes`` records (review.decisions too)."""
    return hashlib.sha256(f"{title or ''}\x00{text}".encode("utf-8")).hexdigest()


def _record_text_changes(db, chunk_rows: list[tuple], report_: IngestReport, existing: dict) -> None:
    """Chunks about to get other text under the same id (a JSONL passage edited in place) make the
    gold labels on them stale, as a changed file's retired chunks do; a pooled chunk graded not
    relevant (0 in gold_grades) gets its row too, so the pool offers it again (review.pool).

    ``gold_changes`` keeps, per query and chunk, the text the label was made against: a query
    labelled before the edit is stale until the passage reads as it did (then its row goes)."""
    changed = []
    for row in chunk_rows:
        if row[0] in existing and existing[row[0]][1] != (new_sha := text_sha(row[3], row[4])):
            changed.append((row[0], existing[row[0]][1], new_sha))
    at = store.now()
    for chunk_id, old_sha, new_sha in changed:
        db.execute("""INSERT INTO gold_changes (query_id, chunk_id, labelled_sha, changed_at)
                      SELECT q.id, ?, ?, ? FROM queries q
                      WHERE EXISTS (SELECT 1 FROM json_each(q.gold_chunk_ids) g WHERE g.value = ?)
                         OR EXISTS (SELECT 1 FROM json_each(q.gold_grades) g WHERE g.key = ?)
                      ON CONFLICT(query_id, chunk_id) DO NOTHING""", [chunk_id, old_sha, at, chunk_id, chunk_id])
        db.execute("DELETE FROM gold_changes WHERE chunk_id = ? AND labelled_sha = ?", [chunk_id, new_sha])
    report_.chunks_changed += len(changed)
    report_.touched_chunks.update(chunk_id for chunk_id, _, _ in changed)


def _known_hashes(db) -> dict[str, tuple[str, str]]:
    return {r[0]: (r[1], r[2]) for r in db.execute("SELECT path, content_hash, chunk_params FROM documents")}


def _known_sources(db) -> dict[str, str]:
    """Document key of each stored file -> the file it was read from (a JSONL corpus's rows share one)."""
    sources = {}
    for path, fmt, source in db.execute(
            "SELECT path, format, json_extract(metadata, '$.source_file') FROM documents WHERE metadata IS NOT NULL"):
        if source:
            sources[path.rsplit("#", 1)[0] if fmt == "jsonl" else path] = source
    return sources


def _key_taken(key: str, file: Path, sources: dict[str, str]) -> Optional[str]:
    """The other file that holds this document key, if it still exists.

    Keys are relative to the folder's parent, so ``x/docs`` and ``y/docs`` both give ``docs/a.txt``;
    without this check the second folder silently replaced (and retired) the first one's files.
    A key whose old file is gone is a corpus that moved: it keeps its key and chunk ids."""
    owner = sources.get(key)
    if owner and owner != str(file.resolve()) and Path(owner).exists():
        return owner
    return None


def ingest(
    db: sqlite_utils.Database,
    paths: Iterable[str | Path],
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    overlap: int = DEFAULT_OVERLAP,
    on_progress: Optional[ProgressCallback] = None,
    cancel: Optional[CancelToken] = None,
) -> IngestReport:
    """Ingest files and folders; each file is all-or-nothing (a savepoint), commits come in groups."""
    started = time.perf_counter()
    result = IngestReport()
    params = store.dumps({"chunk_size": chunk_size, "overlap": overlap, "chunker": "sentence-v1"})
    known, sources = _known_hashes(db), _known_sources(db)
    paths = list(paths)
    files = list(iter_input_files(paths, result))
    _remember_sources(db, paths)
    tasks = _changed_files(files, params, chunk_size, overlap, known, sources, result, cancel)
    try:
        _store_all(db, tasks, len(files), params, result, on_progress, cancel)
    finally:
        _commit(db, result)  # files finished before a cancel or an error are kept
    report(on_progress, len(files), len(files), "done")
    result.total_documents, result.total_chunks, result.queries_stale = db.execute(
        "SELECT (SELECT COUNT(*) FROM documents), (SELECT COUNT(*) FROM chunks WHERE active = 1),"
        " (SELECT COUNT(*) FROM queries WHERE stale = 1)").fetchone()
    result.seconds = round(time.perf_counter() - started, 3)
    return result


SOURCES_KEY = "corpus_sources"


def corpus_sources(db: sqlite_utils.Database) -> list[str]:
    """The files and folders ingested so far (absolute paths, first ingest first)."""
    return store.loads(store.meta_get(db, SOURCES_KEY), [])


def _remember_sources(db, paths: list) -> None:
    """Record where the corpus came from, so a re-ingest can read the same roots again
    (document keys are relative to each root's parent, so the roots themselves must be kept)."""
    known = corpus_sources(db)
    # absolute() keeps the argument's own last part, so its keys stay the same; "." and ".."
    # have none (their keys are relative to the folder itself), so they are not recorded
    added = [str(Path(p).absolute()) for p in paths if Path(p).exists() and Path(p).name not in ("", "..")]
    merged = list(dict.fromkeys(known + added))
    if merged != known:
        store.meta_set(db, SOURCES_KEY, store.dumps(merged))


def reingest(db: sqlite_utils.Database, on_progress: Optional[ProgressCallback] = None,
             cancel: Optional[CancelToken] = None, **options) -> IngestReport:
    """Ingest every recorded source again: changed files update their chunks, unchanged ones are skipped."""
    sources = corpus_sources(db)
    if not sources:
        raise InputError("nothing to re-ingest: this project has no recorded corpus folder; add files or a folder first.")
    return ingest(db, sources, on_progress=on_progress, cancel=cancel, **{**_last_chunk_params(db), **options})


def _last_chunk_params(db) -> dict:
    """The chunk size and overlap of the latest ingest, so a re-ingest does not re-chunk every file."""
    row = db.execute("SELECT chunk_params FROM documents ORDER BY ingested_at DESC LIMIT 1").fetchone()
    params = store.loads(row[0], {}) if row else {}
    return {key: params[key] for key in ("chunk_size", "overlap") if key in params}


def _changed_files(files, params, chunk_size, overlap, known, sources, result, cancel) -> list[tuple]:
    """Arguments of ``_prepare`` for every file that is new or changed; unchanged ones are counted."""
    tasks = []
    for file, key in files:
        if cancel is not None:
            cancel.check()
        result.files_seen += 1
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
        owner = _key_taken(key, file, sources)
        if owner:
            result.skipped.append({"path": str(file), "reason": (
                f"its document key {key!r} belongs to {owner}, another folder of the same name; ingest the "
                "folders from their common parent folder, or rename one")})
            continue
        file_known = {k: v for k, v in known.items() if k.startswith(key + "#")} if file.suffix.lower() == ".jsonl" else {}
        tasks.append((file, key, content_hash, params, chunk_size, overlap, file_known))
    return tasks


def _store_all(db, tasks, files: int, params, result, on_progress, cancel) -> None:
    """Store prepared files in order; progress counts every file (unchanged ones are already done)."""
    last_commit = time.perf_counter()
    for index, prepared in enumerate(_prepared_in_order(tasks, cancel), start=files - len(tasks)):
        report(on_progress, index, files, prepared.key)
        if not db.conn.in_transaction:
            store.begin_immediate(db.conn)  # the group's transaction; each file is a savepoint inside it
            result.indexed_up_to = store.last_chunk_rowid(db)
        _store_prepared(db, prepared, params, result)
        if time.perf_counter() - last_commit >= COMMIT_EVERY_S:
            _commit(db, result)
            last_commit = time.perf_counter()


def _commit(db, result: IngestReport) -> None:
    if not db.conn.in_transaction:
        store.begin_immediate(db.conn)
        result.indexed_up_to = store.last_chunk_rowid(db)
    store.index_new_chunks(db, result.indexed_up_to)  # the group's new rows, in one statement
    refresh_stale(db, result.touched_chunks)
    result.touched_chunks.clear()
    store_corpus_key(db)  # what pools compare against (review.pool), kept so a render need not scan chunks
    db.conn.commit()


def _prepared_in_order(tasks, cancel) -> Iterator[_Prepared]:
    # Chunking in worker processes was tried (bench/ingest.py): once FTS indexing went bulk, one
    # process ran at 6.9 MB/s, one worker 6.4 and two 7.4, so the extra processes did not pay.
    for task in tasks:
        if cancel is not None:
            cancel.check()
        yield _prepare(*task)


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
    result.touched_chunks.update(retired)
    result.chunks_retired += len(retired)
    return bool(gone)


def _resolve_key(key: str, known: dict) -> str:
    """A file named differently on the command line (a.md vs docs/a.md) keeps its stored key."""
    if key in known:
        return key
    matches = [path for path in known if path.endswith("/" + key)]
    return matches[0] if len(matches) == 1 else key


@contextmanager
def _savepoint(db):
    db.execute("SAVEPOINT ingest_file")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK TO ingest_file")
        db.execute("RELEASE ingest_file")
        raise
    db.execute("RELEASE ingest_file")


@dataclass
class _Prepared:
    """A file loaded and chunked, ready to store."""
    file: Path
    key: str
    docs: list = field(default_factory=list)  # (doc_key, doc, doc_hash, chunks) for new or changed docs
    present: Optional[set] = None  # JSONL: every row's key, to retire the rows that are gone
    line_errors: list = field(default_factory=list)
    error: Optional[str] = None


def _prepare(file: Path, key: str, content_hash: str, params: str, chunk_size: int, overlap: int,
             known: dict) -> _Prepared:
    """Load and chunk one file (pure: no database), skipping JSONL rows that did not change."""
    prepared = _Prepared(file, key)
    try:
        docs = load_file(file, prepared.line_errors)
    except InputError as exc:
        prepared.error = str(exc).split(": ", 1)[-1]
        return prepared
    if file.suffix.lower() == ".jsonl":
        prepared.present = {f"{key}#{d.metadata['corpus_id']}" for d in docs}
    for doc in docs:
        doc_key = key if doc.format != "jsonl" else f"{key}#{doc.metadata['corpus_id']}"
        doc_hash = content_hash if doc.format != "jsonl" else hashlib.sha256(
            (doc.title + "\x00" + doc.text).encode("utf-8")).hexdigest()
        if known.get(doc_key) == (doc_hash, params):
            continue
        doc.key = doc_key
        doc.metadata["source_file"] = str(file.resolve())  # tells a same-named folder elsewhere apart
        chunks = chunk_document(doc, chunk_size, overlap)
        doc.bytes = len(doc.text.encode("utf-8"))
        doc.sections = []  # not needed any more (doc.text is empty from here on)
        prepared.docs.append((doc_key, doc, doc_hash, chunks))
    return prepared


def _store_prepared(db, prepared: _Prepared, params: str, result: IngestReport) -> None:
    result.line_errors.extend(prepared.line_errors)
    if prepared.error is not None:
        result.skipped.append({"path": str(prepared.file), "reason": prepared.error})
        return
    changed, refused_before = False, result.ids_refused
    with _savepoint(db):  # a file that fails half-way leaves nothing behind
        if prepared.present is not None:
            changed = _retire_missing_rows(db, prepared.key, prepared.present, result)
        if prepared.docs:
            stored = _store_documents(db, prepared.docs, params, result, prepared.file)
            result.documents += stored
            changed = changed or stored > 0
    refused = result.ids_refused - refused_before
    if changed:
        result.files_ingested += 1
    elif prepared.docs and refused == len(prepared.docs):  # nothing of it is in the project: not "unchanged"
        result.skipped.append({"path": str(prepared.file),
                               "reason": f"every record's id ({refused:,}) is already taken by another file; see the line errors"})
    else:
        result.files_unchanged += 1
