"""Files written all or nothing, outputs that may never replace a project, inputs read in bounded lines.

Shared by every stage that writes a user-visible file (exports, TREC runs), so a crash or a
full disk never leaves half a file under the real name, and a user-named output that is the
project (``curator eval P --save-run P`` turned the project into a text file) or any other
SQLite database is refused before anything is written (``check_output``).

Run files and logs are read line by line with a cap on a line's length (``bounded_lines``), and
only from regular files: ``--run /dev/zero`` read the whole device into memory.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator, Optional

from curator.core.errors import InputError


def cache_dir() -> Path:
    """The user's cache folder for curator (XDG_CACHE_HOME or ~/.cache, then curator/): converted and
    repacked model files, numba's compiled kernels."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "curator"


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def temp_beside(path: Path) -> Path:
    """An empty temporary file beside ``path``, with the mode a plain ``open`` would give it.

    mkstemp makes files 0600: exports came out unreadable to the group whatever the umask said."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.fchmod(fd, 0o666 & ~current_umask())
    os.close(fd)
    return Path(tmp)


def stage_lines(path: Path, lines: Iterable[str]) -> Path:
    """Write ``lines`` to a fsynced temporary file beside ``path``; the caller renames it."""
    tmp = temp_beside(path)
    try:
        _write(tmp, lines)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _write(tmp: Path, lines: Iterable[str]) -> None:
    with open(tmp, "w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


@contextmanager
def atomic_file(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it over ``path`` only on success."""
    tmp = str(temp_beside(path))
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_lines(path: Path, lines: Iterable[str]) -> None:
    """Write ``lines`` (each without its newline) to ``path`` atomically."""
    with atomic_file(path) as tmp:
        _write(tmp, lines)


# ---------------------------------------------------------------- where an output may go

SQLITE_HEADER = b"SQLite format 3\x00"
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")  # SQLite's companions of a database file


def project_files(db) -> list[Path]:
    """The open project's file and its SQLite side files, resolved (none for an in-memory database)."""
    main = next((row[2] for row in db.execute("PRAGMA database_list") if row[1] == "main"), "")
    return [Path(main + suffix).resolve() for suffix in ("", *SIDE_SUFFIXES)] if main else []


def is_sqlite_database(path: Path) -> bool:
    """A regular file that starts with SQLite's header (checked by mode first: reading a pipe blocks)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as fh:
            return fh.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def _files_in(folder: Path) -> Iterator[Path]:
    """Every entry below ``folder`` that is not a folder (what replacing the folder would delete)."""
    for parent, _, names in os.walk(folder):
        yield from (Path(parent) / name for name in names)


def _database_in(target: Path) -> Optional[Path]:
    """The SQLite database ``target`` is, belongs to (as -wal/-shm/-journal) or holds (a folder)."""
    if is_sqlite_database(target):
        return target
    for suffix in SIDE_SUFFIXES:
        if target.name.endswith(suffix) and is_sqlite_database(target.with_name(target.name[: -len(suffix)])):
            return target.with_name(target.name[: -len(suffix)])
    if target.is_dir():  # a folder output (BEIR) replaces everything inside it
        return next((path for path in _files_in(target) if is_sqlite_database(path)), None)
    return None


def _is_special(path: Path, follow: bool = True) -> bool:
    """A device, pipe or socket (through a symlink when ``follow``): never a file an output may replace."""
    try:
        mode = os.stat(path, follow_symlinks=follow).st_mode
    except OSError:
        return False  # nothing there (or a dangling link): writing makes a new regular file
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def _special_in(target: Path) -> Optional[Path]:
    """``target`` when it is a device, pipe or socket; or such an entry inside the folder it names (which
    the export's folder swap would delete: ``export P /dev --format beir --force``)."""
    if _is_special(target):
        return target
    if target.is_dir():
        return next((path for path in _files_in(target) if _is_special(path, follow=False)), None)
    return None


def check_output(target, protected: Iterable[Path] = ()) -> None:
    """Refuse, before anything is written, an output that would replace something that must survive.

    Never the project (``protected``: ``project_files(db)``), its side files or a folder holding
    it, never a file that is (or belongs to, or a folder that holds) a SQLite database: another
    project, or this one reached through a hard link; and never a device, pipe or socket (or a folder
    holding one), which no ``--force`` may replace with a regular file. Every command and window that writes a file
    the user named calls this one guard (export, ``eval --save-run``)."""
    target = Path(target)
    resolved = target.resolve()
    for held in protected:
        if held == resolved or resolved in held.parents:
            raise InputError(f"{target}: this is the project file (or holds it); Curator never writes over it. "
                             "Choose another output name.")
    special = _special_in(resolved)
    if special is not None:  # --force replaced /dev/full with a regular file
        what = "is" if special == resolved else f"holds {special}, which is"
        raise InputError(f"{target}: {what} a device, pipe or socket, not a regular file; it was not modified. "
                         "Choose another output name.")
    database = _database_in(resolved)
    if database is not None:
        what = "is a SQLite database" if database == resolved else f"would replace the SQLite database {database}"
        raise InputError(f"{target}: {what} (a Curator project?); it was not modified. Choose another output name.")


_NOT_IN_A_FIELD = re.compile(r"[\s\x00-\x1f\x7f-\x9f]+")  # whitespace (every line break is) and controls


def one_field(value, empty: str = "_") -> str:
    """``value`` as one field of a whitespace-separated line (TREC run and qrels, BEIR's TSV), each
    run of whitespace or control characters made one ``_``: a run file's name with a tab or newline
    in it, written as the saved run's tag, injected lines into the TREC file."""
    return _NOT_IN_A_FIELD.sub("_", str(value)) or empty


def write_output(path, lines: Iterable[str], protected: Iterable[Path] = ()) -> None:
    """A user-named text file: checked by ``check_output``, then written atomically; a file that
    cannot be written (no such folder, no permission, disk full) is one line, not a traceback."""
    check_output(path, protected)
    try:
        write_lines(Path(path), lines)
    except OSError as exc:
        raise InputError(f"{path}: could not be written ({exc.strerror or exc}); "
                         "anything already there is unchanged.") from None


# ---------------------------------------------------------------- reading user-named inputs

MAX_LINE_BYTES = 1_000_000  # a longer "line" is not a run line nor a query: skipped, never held whole
MAX_UNBROKEN_BYTES = 64 * MAX_LINE_BYTES  # this much with no line break: the file is not line-based
MAX_LINE_WARNINGS = 20  # problems kept word for word per file; the rest are counted


def open_regular(path, what: str) -> BinaryIO:
    """``path`` opened for binary reading, refused unless it is a regular file.

    A device (/dev/zero), pipe or socket never ends or blocks, so it is refused by name, not read."""
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISREG(mode):
            fh = open(path, "rb")
            if stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return fh
            fh.close()  # replaced between the two checks
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what} ({exc.strerror or exc}).") from None
    raise InputError(f"{path}: not a regular file (a folder, device or pipe); give the {what} as a file.")


class LineProblems:
    """Problems with an input's lines: the first ``keep`` word for word, the rest only counted.

    A million malformed run lines printed 90 MB and were all stored with the eval run."""

    def __init__(self, path=None, keep: int = MAX_LINE_WARNINGS) -> None:
        self.path, self.keep, self.count, self.kept = path, keep, 0, []

    def add(self, message: str) -> None:
        self.count += 1
        if len(self.kept) < self.keep:
            self.kept.append(message)

    append = add  # takes the place of the plain list the line readers filled before

    def lines(self, noun: str = "malformed lines") -> list[str]:
        """The kept messages, then one line counting the others (naming the file, as every line does)."""
        more = self.count - len(self.kept)
        where = f"{self.path}: " if self.path is not None else ""
        return self.kept + ([f"{where}and {more:,} more {noun}"] if more else [])


def bounded_lines(fh: BinaryIO, path, problems, max_line: int = MAX_LINE_BYTES,
                  max_unbroken: int = MAX_UNBROKEN_BYTES) -> Iterator[tuple[int, Optional[bytes]]]:
    """(number, bytes with their line break) of each line of ``fh``; None for a line over ``max_line``.

    A long line is reported to ``problems`` (a list or LineProblems) as file:line and read past in
    pieces, never held whole. After ``max_unbroken`` bytes with no line break the rest of the file is
    not read (reported), so no input makes a reader spin or fill memory."""
    report = problems.append
    number = 0
    while raw := fh.readline(max_line + 1):
        number += 1
        if len(raw) <= max_line or raw.endswith(b"\n"):
            yield number, raw
            continue
        report(f"{path}:{number}: longer than {max_line:,} bytes; line skipped.")
        read = len(raw)
        while raw and not raw.endswith(b"\n"):
            if read >= max_unbroken:
                report(f"{path}:{number}: no line break in {read:,} bytes; the rest of the file was not read.")
                return
            raw = fh.readline(max_line + 1)
            read += len(raw)
        yield number, None
