"""Where an export may write, and publishing a whole set of export files at once.

Two defects this module exists for: ``curator export P P`` replaced the project with JSONL (any
existing file at OUT was swapped away), and a kill between renaming the data files and the
manifest left a manifest that described other files (with splits, dev and test could overlap).

The guard refuses a target that is the project (or its -wal/-shm/-journal, or a folder holding
it) or any SQLite database always (files.check_output, shared with ``eval --save-run``), and any
existing file that is not a prior Curator export unless ``force``. A flat
export set is staged as fsynced temporary files, listed in a publish journal, and only then
renamed into place with the old manifest removed first: at every moment the manifest beside
the data either matches it or is absent, and the next export finishes an interrupted publish.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Iterable

import sqlite_utils

from curator.core.errors import InputError
from curator.core.files import check_output, project_files, write_lines


def _is_curator_manifest(path: Path) -> dict | None:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and "curator_version" in manifest else None


def _is_prior_export(target: Path, manifest_path: Path, journal: Path) -> bool:
    """A file an earlier export wrote: named in the manifest beside it, or in a pending publish."""
    if target == manifest_path:
        return _is_curator_manifest(target) is not None
    if target.is_dir():
        return _is_curator_manifest(target / "manifest.json") is not None
    manifest = _is_curator_manifest(manifest_path)
    if manifest is not None and target.name in manifest.get("files", {}):
        return True
    return journal.exists() and str(target) in {final for _, final in _read_journal(journal)}


def check_targets(db: sqlite_utils.Database, targets: Iterable[Path], manifest_path: Path, force: bool) -> None:
    """Raise InputError before anything is written when a target must not be replaced."""
    protected = project_files(db)
    journal = journal_path(manifest_path)
    for target in targets:
        check_output(target, protected)  # the guard every user-named output shares; --force never passes it
        if os.path.lexists(target) and not force and not _is_prior_export(target, manifest_path, journal):
            raise InputError(f"{target}: exists and is not a Curator export; it was not modified. "
                             "Choose another output name, or pass --force to replace it.")


# ---------------------------------------------------------------- publishing a flat set

def journal_path(manifest_path: Path) -> Path:
    return manifest_path.with_name(f".{manifest_path.name}.publish")


def _read_journal(journal: Path) -> list[tuple[str, str]]:
    try:
        return [tuple(pair) for pair in json.loads(journal.read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError):
        return []  # a journal torn by a kill: its publish never started


def publish(staged: dict[Path, Path], manifest_path: Path) -> None:
    """Rename every staged temporary file onto its final name, the manifest last.

    ``staged`` maps final path -> fsynced temporary file, the manifest among them."""
    order = [(str(tmp), str(final)) for final, tmp in staged.items() if final != manifest_path]
    order.append((str(staged[manifest_path]), str(manifest_path)))
    journal = journal_path(manifest_path)
    write_lines(journal, [json.dumps(order)])
    if manifest_path.exists():
        os.unlink(manifest_path)  # from here on no manifest describes files it does not match
    _roll_forward(journal)


def _roll_forward(journal: Path) -> None:
    for tmp, final in _read_journal(journal):
        if os.path.exists(tmp):
            os.replace(tmp, final)
    journal.unlink(missing_ok=True)


def recover(manifest_path: Path, names: Iterable[str]) -> None:
    """Finish a publish a kill interrupted, then delete temporary files it left behind.

    ``names``: the final file names whose ``.NAME.*`` temporaries this export would create."""
    journal = journal_path(manifest_path)
    if journal.exists():
        _roll_forward(journal)
    folder = manifest_path.parent
    for name in set(names) | {manifest_path.name}:
        for stale in folder.glob(f".{glob_escape(name)}.*"):
            if stale != journal:
                shutil.rmtree(stale) if stale.is_dir() and not stale.is_symlink() else stale.unlink()


def glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)
