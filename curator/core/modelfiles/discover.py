"""The GGUF files on this machine, found in each tool's store and described from their headers.

Nothing is loaded and nothing is hashed here: a listing reads a few kilobytes to megabytes of
header per file (see header.py). A file reached by two paths (a Hugging Face snapshot symlink and
its blob, two revisions of one blob, a user folder inside a store) is listed once, by inode. A
file whose header cannot be read is listed as unreadable, with the reason.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator, Optional

from curator.core.errors import CuratorError, ModelFileError
from curator.core.modelfiles.header import GGUFHeader, file_type_name, parameter_count, read_header
from curator.core.modelfiles.places import Place, all_places

OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
OLLAMA_DEFAULT_REGISTRY, OLLAMA_DEFAULT_NAMESPACE = "registry.ollama.ai", "library"
MAX_DEPTH = 8  # folders below a store's root that are searched (LM Studio uses 2, a snapshot 1-3)
MAX_MANIFEST_BYTES = 1 << 20
SHARD = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)  # llama.cpp's split files
CONTEXT_FOR_ESTIMATE = 2048  # Curator's default context: the KV cache a run allocates
RUNTIME_OVERHEAD = 300 * 2**20  # llama.cpp's compute buffers and Python around them, roughly


@dataclass
class Candidate:
    """A path a store names as a model, before its header is read."""

    path: Path
    store: str
    name: Optional[str] = None      # the store's own name for it (Ollama's model:tag, HF's org/repo)
    sha256: Optional[str] = None    # known without hashing (an Ollama blob is named by its SHA-256)
    problem: Optional[str] = None   # the store's entry is broken (a manifest naming a missing blob)


@dataclass
class FoundModel:
    path: str
    store: str
    name: str
    file_name: str
    size_bytes: Optional[int]
    readable: bool
    problem: Optional[str] = None
    header_name: Optional[str] = None
    architecture: Optional[str] = None
    parameters: Optional[int] = None
    parameters_from: Optional[str] = None
    tensor_parameters: Optional[int] = None
    quantization: Optional[str] = None
    context_length: Optional[int] = None
    chat_template: Optional[bool] = None
    memory_needed_bytes: Optional[int] = None
    sha256: Optional[str] = None
    also_at: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


# -- walking the stores -------------------------------------------------------------------------

def _gguf_files(root: Path) -> Iterator[Path]:
    """``*.gguf`` below ``root`` (folder symlinks not followed: a loop must not hang the walk)."""
    root_depth = len(root.parts)
    for folder, subfolders, files in os.walk(root, followlinks=False):
        if len(Path(folder).parts) - root_depth >= MAX_DEPTH:
            subfolders.clear()
        subfolders.sort()
        for name in sorted(files):
            if name.lower().endswith(".gguf") and not _later_shard(name):
                yield Path(folder) / name


def _later_shard(name: str) -> bool:
    """Parts 2..N of a split model: the model is listed once, at its first part."""
    found = SHARD.search(name)
    return bool(found) and int(found.group(1)) > 1


def _tree(place: Place) -> Iterator[Candidate]:
    for path in _gguf_files(place.folder):
        yield Candidate(path, place.store)


def _hf(place: Place) -> Iterator[Candidate]:
    """``models--ORG--REPO/snapshots/REV/**.gguf``: named ORG/REPO (the file name says the rest)."""
    for repo in sorted(place.folder.glob("models--*")):
        snapshots = repo / "snapshots"
        if not snapshots.is_dir():
            continue
        name = repo.name.removeprefix("models--").replace("--", "/")
        for path in _gguf_files(snapshots):
            yield Candidate(path, place.store, name)


def ollama_name(manifest: Path, manifests: Path) -> str:
    """``llama3.2:3b`` for the default registry and namespace, ``ns/model:tag`` or the full
    ``host/ns/model:tag`` otherwise, as ``ollama list`` shows them."""
    parts = manifest.relative_to(manifests).parts
    *where, model, tag = parts
    if where[:2] == [OLLAMA_DEFAULT_REGISTRY, OLLAMA_DEFAULT_NAMESPACE]:
        where = where[2:]
    elif where[:1] == [OLLAMA_DEFAULT_REGISTRY]:
        where = where[1:]
    return "/".join([*where, model]) + f":{tag}"


def _ollama_layer(manifest: Path) -> str:
    """The digest (``sha256:HEX``) of the manifest's model layer; ValueError saying why not."""
    if manifest.stat().st_size > MAX_MANIFEST_BYTES:
        raise ValueError("manifest too large")
    data = json.loads(manifest.read_text(encoding="utf-8"))
    for layer in data.get("layers", []) if isinstance(data, dict) else []:
        if isinstance(layer, dict) and layer.get("mediaType") == OLLAMA_MODEL_LAYER:
            digest = str(layer.get("digest", ""))
            if re.fullmatch(r"sha256[:-][0-9a-f]{64}", digest):
                return digest
            raise ValueError(f"model layer digest {digest[:80]!r} is not a sha256")
    raise ValueError("no model layer")


def _ollama(place: Place) -> Iterator[Candidate]:
    manifests = place.folder / "manifests"
    for folder, _subs, files in os.walk(manifests, followlinks=False):
        for file in sorted(files):
            manifest = Path(folder) / file
            try:
                name = ollama_name(manifest, manifests)
            except ValueError:  # a file too near the root to be registry/ns/model/tag
                continue
            try:
                digest = _ollama_layer(manifest)
            except (OSError, ValueError) as exc:  # JSON errors are ValueErrors
                yield Candidate(manifest, place.store, name, problem=f"manifest {manifest} unreadable ({exc})")
                continue
            blob = place.folder / "blobs" / digest.replace(":", "-")
            yield Candidate(blob, place.store, name, sha256=digest[7:])


LAYOUTS = {"tree": _tree, "hf": _hf, "ollama": _ollama}


def candidates(places: list[Place]) -> Iterator[Candidate]:
    for place in places:
        if place.folder.is_dir():
            yield from LAYOUTS[place.layout](place)


def bundled_candidate() -> list[Candidate]:
    from curator.core.resources import bundled_model_path

    try:
        return [Candidate(bundled_model_path(), "bundled")]
    except CuratorError:
        return []  # not installed: nothing bundled to list (doctor says so)


# -- describing one file ------------------------------------------------------------------------

_DESCRIBED: dict[tuple, dict] = {}  # stat identity -> what its header says (for this process)
DESCRIBE_FORMAT = 2  # bump when describe_header's fields change: older cached entries are read again


def _identity(path: Path) -> tuple:
    st = os.stat(path)
    return (str(path.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def kv_cache_bytes(header: GGUFHeader, n_ctx: int = CONTEXT_FOR_ESTIMATE) -> int:
    """The f16 keys and values of ``n_ctx`` tokens, from the architecture's keys (0 when missing)."""
    layers, heads = header.arch_value("block_count"), header.arch_value("attention.head_count")
    kv_heads = header.arch_value("attention.head_count_kv") or heads
    width = header.arch_value("embedding_length")
    if not all(isinstance(v, int) and v > 0 for v in (layers, heads, kv_heads, width)):
        return 0
    head_dim = header.arch_value("attention.key_length") or width // heads
    return 2 * layers * n_ctx * kv_heads * head_dim * 2


def describe_header(header: GGUFHeader, size: int) -> dict:
    """The listing's fields from a header (``size``: the file's bytes, all parts of a split model)."""
    parameters, source = parameter_count(header)
    context = header.arch_value("context_length")
    return {"architecture": header.get("general.architecture"), "header_name": header.get("general.name"),
            "parameters": parameters, "parameters_from": source, "tensor_parameters": header.tensor_parameters,
            "quantization": file_type_name(header),
            "context_length": context if isinstance(context, int) else None,
            "chat_template": isinstance(header.get("tokenizer.chat_template"), str),
            "memory_needed_bytes": size + kv_cache_bytes(header) + RUNTIME_OVERHEAD}


def _split_size(path: Path, size: int) -> int:
    """All parts of a split model (``NAME-00001-of-00003.gguf``) that are present, else ``size``."""
    found = SHARD.search(path.name)
    if not found:
        return size
    total = size
    for part in range(2, int(found.group(2)) + 1):
        sibling = path.with_name(path.name[:found.start()] + f"-{part:05d}-of-{found.group(2)}.gguf")
        total += sibling.stat().st_size if sibling.is_file() else 0
    return total


def describe(path: Path, on_disk: Optional[dict] = None) -> dict:
    """The header's fields for ``path`` (raises ModelFileError with the reason), remembered while
    the file's inode, size and times stay the same: in this process, and in ``on_disk`` (the
    listing's cache file, so a new process lists unchanged files without reading them again)."""
    key = _identity(path)
    if key not in _DESCRIBED:
        known = (on_disk or {}).get(key[0])
        if isinstance(known, dict) and known.get("stamp") == [*key[1:], DESCRIBE_FORMAT]:
            _DESCRIBED[key] = known["fields"]
        else:
            _DESCRIBED[key] = describe_header(read_header(path), _split_size(path, key[3]))
        if on_disk is not None:
            on_disk[key[0]] = {"stamp": [*key[1:], DESCRIBE_FORMAT], "fields": _DESCRIBED[key]}
    return _DESCRIBED[key]


def _described_file() -> Path:
    from curator.core.cachefiles import usable_dir

    return usable_dir("modelfiles") / "headers.json"


def _load_described() -> dict:
    try:
        known = json.loads(_described_file().read_text(encoding="utf-8"))
    except (OSError, ValueError, CuratorError):
        return {}  # none yet, damaged, or no writable cache: headers are read again
    return known if isinstance(known, dict) else {}


def _save_described(known: dict) -> None:
    from curator.core.files import atomic_file

    known = {path: entry for path, entry in known.items() if os.path.exists(path)}  # deleted files go
    try:
        with atomic_file(_described_file()) as tmp:
            tmp.write_text(json.dumps(known), encoding="utf-8")
    except (OSError, CuratorError):
        pass  # a cache that cannot be written costs a header read next time, nothing else


def _display_name(c: Candidate) -> str:
    """As the tool shows it: Ollama's model:tag, HF's org/repo/file; elsewhere the file's name
    (a header's general.name is often a converter's label, "Smollm2 135M 8k Lc100K Mix1 Ep2")."""
    if c.store == "huggingface":
        return f"{c.name}/{c.path.name}"
    return c.name or c.path.name.removesuffix(".gguf")


def found_model(c: Candidate, on_disk: Optional[dict] = None) -> FoundModel:
    """One candidate described (or marked unreadable with the reason; never raises)."""
    size = _size(c.path)
    model = FoundModel(str(c.path), c.store, _display_name(c), c.path.name, size, False, sha256=c.sha256)
    if c.problem:
        model.problem = c.problem
        return model
    try:
        fields = describe(c.path, on_disk)
    except (ModelFileError, OSError) as exc:
        model.problem = str(exc) if isinstance(exc, ModelFileError) else f"{c.path}: cannot be read ({exc.strerror or exc})"
        return model
    for key, value in fields.items():
        setattr(model, key, value)
    model.readable = True
    return model


def _size(path: Path) -> Optional[int]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _same_file_key(path: Path) -> tuple:
    try:
        st = os.stat(path)
        return (st.st_dev, st.st_ino)
    except OSError:
        return (str(path),)  # a dangling link or a loop: only the same path is the same entry


def discover(places: Optional[list[Place]] = None, bundled: bool = True) -> list[FoundModel]:
    """Every GGUF file in ``places`` (default: every tool's store and the user's folders) and the
    bundled model, each once, described from its header; unreadable ones with the reason."""
    seen: dict[tuple, FoundModel] = {}
    listed: list[FoundModel] = []
    on_disk = _load_described()
    before = json.dumps(on_disk, sort_keys=True)
    for c in [*(bundled_candidate() if bundled else []), *candidates(all_places() if places is None else places)]:
        key = _same_file_key(c.path)
        if key in seen:
            if str(c.path) not in (seen[key].path, *seen[key].also_at):
                seen[key].also_at.append(str(c.path))
            continue
        seen[key] = found_model(c, on_disk)
        listed.append(seen[key])
    if json.dumps(on_disk, sort_keys=True) != before:
        _save_described(on_disk)
    return listed
