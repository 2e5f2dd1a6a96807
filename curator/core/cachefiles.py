"""Model files Curator writes into the user's cache (the MiniLM GGUF, Q8_0 copies): checked before
every use, rebuilt when they do not match, and never left half-written.

Why: a damaged cached model was used as it was, so wrong vectors were stored under the normal
embedder id and stayed after the cache was repaired. Each file Curator writes gets a sidecar,
``NAME.sha256``, recording the SHA-256 of the file and of the file it was made from; a file whose
sidecar is missing or disagrees is rebuilt. The conversions are deterministic, so a rebuilt file has
the same hash and the vectors keyed by it stay valid.

Temporary files carry the writer's pid (``NAME.<pid>.<random>.part``): a writer killed with -9
leaves a part as big as the model, and the next writer removes the parts of dead processes only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Optional, Union

from curator.core.errors import ModelFileError
from curator.core.files import cache_dir, current_umask

LOG = logging.getLogger("curator")
SIDECAR_SUFFIX = ".sha256"
_HASHES: dict[tuple, str] = {}  # stat identity -> SHA-256: hashing a 90 MB model takes ~0.3 s
_SAID: set[str] = set()  # cache folders already warned about in this process


def file_sha256(path: Union[str, Path]) -> str:
    """SHA-256 of a file, remembered while the file's inode, size, mtime and ctime stay the same (ctime
    cannot be set back, so a rewrite that restores mtime is still seen): in this process, and on disk
    (``cache_dir()/hashes/files.json``), because a user's 8 GB GGUF took tens of seconds to hash in
    every process that looked up its cached engine choice or recorded a run's model."""
    path = Path(path).resolve()
    st = path.stat()
    stamp = [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    key = (str(path), *stamp)
    if key not in _HASHES:
        known = _known_hashes()
        entry = known.get(str(path))
        if isinstance(entry, dict) and entry.get("stamp") == stamp and entry.get("sha256"):
            _HASHES[key] = entry["sha256"]
        else:
            _HASHES[key] = _digest(path)
            known[str(path)] = {"stamp": stamp, "sha256": _HASHES[key]}
            _write_known_hashes(known)
    return _HASHES[key]


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _hashes_file() -> Path:
    return usable_dir("hashes") / "files.json"


def _known_hashes() -> dict:
    try:
        known = json.loads(_hashes_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # none yet, or damaged: hashed again and written whole
    return known if isinstance(known, dict) else {}


def _write_known_hashes(known: dict) -> None:
    from curator.core.files import atomic_file

    with contextlib.suppress(OSError):  # a cache that cannot be written costs a hash, nothing else
        with atomic_file(_hashes_file()) as tmp:
            tmp.write_text(json.dumps(known, indent=1, sort_keys=True), encoding="utf-8")


def _writable(folder: Path) -> Optional[str]:
    """None when files can be created in ``folder`` (made if missing), else why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".probe.")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def fallback_dir() -> Path:
    """The per-user temporary cache used while the real one cannot be written."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"curator-cache-{uid}"


def usable_dir(sub: str) -> Path:
    """``cache_dir()/sub``, created; when it cannot be written, a temporary folder, said once.

    An unwritable cache (a read-only home, a file where the folder should be) used to end in a
    traceback; the work goes on in the temporary folder, and the warning says what to fix."""
    folder = cache_dir() / sub
    problem = _writable(folder)
    if problem is None:
        return folder
    spare = fallback_dir() / sub
    spare_problem = _writable(spare)
    if spare_problem is not None:
        raise ModelFileError(f"the cache folder {folder} cannot be written ({problem}), nor {spare} "
                             f"({spare_problem}); make it writable or set XDG_CACHE_HOME to a writable folder.")
    if str(cache_dir()) not in _SAID:  # once per process, not once per subfolder
        _SAID.add(str(cache_dir()))
        LOG.warning("curator: the cache folder %s cannot be written (%s); using %s for now. Make it writable "
                    "or set XDG_CACHE_HOME to a writable folder.", folder, problem, spare.parent)
    return spare


def cache_file(sub: str, name: str, source_sha: Optional[str] = None) -> Path:
    """Where ``sub/name`` is to be read or written: the cache's own copy when it checks out, even in
    a folder that cannot be written (a shared, read-only cache); otherwise a writable place."""
    primary = cache_dir() / sub / name
    if problem(primary, source_sha) is None:
        return primary
    return usable_dir(sub) / name


def cache_problem() -> Optional[str]:
    """Why the cache folder cannot be written, or None (for ``curator doctor``)."""
    return _writable(cache_dir())


def check_gguf_header(path: Path) -> None:
    """Refuse a file that is not GGUF, or whose header claims more tensors or keys than a file of its
    size can hold (2**62 tensors made the gguf reader fail deep in numpy: a traceback). A tensor
    entry takes 24 bytes at least, a key 13. Shared by generation's check_gguf and the embedders."""
    import struct

    size = Path(path).stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(24)
    if head[:4] != b"GGUF":
        raise ModelFileError(f"{path}: not a GGUF model file (it does not start with 'GGUF').")
    if len(head) < 24:
        raise ModelFileError(f"{path}: GGUF file is truncated ({size} bytes).")
    (version,) = struct.unpack_from("<I", head, 4)
    tensors, keys = struct.unpack_from("<II" if version == 1 else "<QQ", head, 8)
    if tensors * 24 + keys * 13 > size:
        raise ModelFileError(f"{path}: damaged GGUF header (it claims {tensors} tensors and {keys} metadata keys, "
                             f"more than a file of {size} bytes can hold); download the file again.")


# ---------------------------------------------------------------- temporary parts


def new_part(out: Path) -> str:
    """An empty temporary file beside ``out`` named with this process's pid; old dead parts go first."""
    remove_stale_parts(out)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f"{out.name}.{os.getpid()}.", suffix=".part")
    os.close(fd)
    return tmp


def _part_pid(part: Path) -> Optional[int]:
    """The writer's pid in ``NAME.<pid>.<random>.part`` (mkstemp's random part holds no dot)."""
    fields = part.name.split(".")
    return int(fields[-3]) if len(fields) >= 4 and fields[-3].isdigit() else None


def stale_parts(folder: Path, prefix: str = "") -> list[Path]:
    """Temporary parts in ``folder`` (names starting with ``prefix``) whose writer is gone: a pid that
    is dead, or none at all (older versions named them ``NAME<random>.part``, without a pid)."""
    found = []
    with contextlib.suppress(OSError):
        for part in folder.glob("*.part"):
            pid = _part_pid(part)
            if part.name.startswith(prefix) and (pid is None or not alive(pid)):
                found.append(part)
    return found


def remove_stale_parts(out: Path) -> int:
    """Delete the parts of ``out`` (and of its sidecar) left by killed writers; returns how many went.
    Only names starting with ``out``'s: beside a user's model, other ``.part`` files are not ours."""
    removed = 0
    for part in stale_parts(out.parent, out.name):
        with contextlib.suppress(OSError):
            part.unlink()
            removed += 1
    return removed


def alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def publish_part(tmp: str, out: Path) -> None:
    """Give the part a plain file's mode (mkstemp makes it owner-only) and rename it into place."""
    os.chmod(tmp, 0o666 & ~current_umask())
    os.replace(tmp, out)


# ---------------------------------------------------------------- sidecars


def sidecar(out: Path) -> Path:
    return out.with_name(out.name + SIDECAR_SUFFIX)


def record(out: Path, source_sha: str) -> str:
    """Write ``out``'s sidecar (its hash and its source's), atomically; returns ``out``'s hash."""
    sha = file_sha256(out)
    data = {"sha256": sha, "bytes": out.stat().st_size, "source_sha256": source_sha}
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f"{sidecar(out).name}.{os.getpid()}.", suffix=".part")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    publish_part(tmp, sidecar(out))
    return sha


def problem(out: Path, source_sha: Optional[str] = None) -> Optional[str]:
    """Why ``out`` cannot be used as it is (missing, no or bad sidecar, other source, other bytes),
    or None when it matches its sidecar (and, if given, was made from ``source_sha``)."""
    if not out.is_file():
        return "missing" if not out.exists() and not out.is_symlink() else "not a regular file"
    try:
        data = json.loads(sidecar(out).read_text(encoding="utf-8"))
        sha, size, source = data["sha256"], data["bytes"], data["source_sha256"]
    except FileNotFoundError:
        return f"no {SIDECAR_SUFFIX} record of its hash"
    except (OSError, ValueError, KeyError, TypeError):
        return f"its {SIDECAR_SUFFIX} record is unreadable"
    if source_sha is not None and source != source_sha:
        return "made from another version of its source file"
    if out.stat().st_size != size or file_sha256(out) != sha:
        return "its bytes do not match the hash recorded when it was written (damaged)"
    return None


def _ours(path: Path) -> bool:
    return any(path.resolve().is_relative_to(root.resolve()) for root in (cache_dir(), fallback_dir()))


def discard(out: Path) -> None:
    """Remove a file that failed its check (and its sidecar); a folder in its place only inside our
    cache (beside a user's model, a folder of that name is refused, not deleted). A pipe, socket or
    device in its place is never removed: it is someone's, and a model file written over it would not be."""
    for path in (out, sidecar(out)):
        if path.exists() and not path.is_symlink() and not path.is_file() and not path.is_dir():
            raise ModelFileError(f"{path} is not a regular file (a pipe, socket or device) where Curator writes a "
                                 "model file; move it away or pick another folder; nothing was removed.")
        if path.is_dir() and not path.is_symlink():
            if not _ours(path):
                raise ModelFileError(f"{path} is a folder where Curator writes a model file; move it away.")
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def ensure(out: Path, source_sha: str, build) -> Path:
    """``out`` checked against its sidecar; built again with ``build(out)`` when it does not match.
    Parts of ``out`` left by killed writers go first, even when ``out`` itself is whole."""
    remove_stale_parts(out)
    why = problem(out, source_sha)
    if why is None:
        return out
    if why != "missing":
        LOG.warning("curator: %s: %s; writing it again.", out, why)
        discard(out)
    build(out)
    record(out, source_sha)
    return out


# ---------------------------------------------------------------- numba's compiled kernels

NUMBA_SUFFIXES = (".nbi", ".nbc")  # numba's index and data files, both pickles


def broken_numba_files(folder: Path) -> list[Path]:
    """numba cache files that cannot be whole pickles: empty, or not starting with a pickle's
    protocol mark and ending with its STOP opcode (a file cut short by a kill or a full disk).

    numba unpickles them without a guard: an empty index raised EOFError out of the UMAP worker,
    which click reports as a bare "Aborted!". Checking two bytes per file costs ~1 ms per hundred."""
    broken = []
    if not folder.is_dir():
        return broken
    for path in folder.rglob("*"):
        if path.suffix not in NUMBA_SUFFIXES or not path.is_file():
            continue
        if not _whole_pickle(path):
            broken.append(path)
    return broken


def _whole_pickle(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            if fh.read(1) != b"\x80":
                return False
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"."
    except OSError:
        return False


def clear_broken_numba_files(folder: Path) -> int:
    """Delete the broken files (numba compiles those kernels again and rewrites them)."""
    removed = 0
    for path in broken_numba_files(folder):
        with contextlib.suppress(OSError):
            path.unlink()
            removed += 1
    if removed:
        LOG.warning("curator: removed %d damaged file(s) of numba's compiled-code cache in %s; they are "
                    "compiled again.", removed, folder)
    return removed


def numba_cache_dir() -> Path:
    """numba's cache folder for Curator: writable (the temporary fallback otherwise), broken files gone."""
    folder = usable_dir("numba")
    clear_broken_numba_files(folder)
    return folder
