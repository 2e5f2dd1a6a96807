"""Where each local-model tool keeps its GGUF files, on Linux, macOS and Windows, and the folders
the user added (kept in ``model_folders.json`` beside the reviewer name, so the CLI and the window
read the same list without Qt).

Each place is (store, folder, layout): ``ollama`` (manifests naming blobs), ``hf`` (the Hugging Face
hub cache: ``models--ORG--REPO/snapshots/REV/...``, symlinks into ``blobs/``) or ``tree`` (any
``*.gguf`` below the folder: LM Studio, GPT4All, Jan, llama.cpp's cache, the user's folders).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

from curator.core.errors import InputError
from curator.core.files import atomic_file

FOLDERS_FILE = "model_folders.json"


@dataclass(frozen=True)
class Place:
    store: str   # the tool: ollama, lmstudio, huggingface, gpt4all, jan, llama.cpp, folder
    folder: Path
    layout: str  # ollama, hf or tree


def _env_path(env: Mapping[str, str], name: str) -> Optional[Path]:
    value = env.get(name, "").strip()
    return Path(value).expanduser() if value else None


def _os_dirs(env: Mapping[str, str], home: Path, platform: str) -> dict[str, Path]:
    """The per-user data, cache and app-support folders of ``platform`` (sys.platform's names)."""
    if platform == "win32":
        local = _env_path(env, "LOCALAPPDATA") or home / "AppData" / "Local"
        roaming = _env_path(env, "APPDATA") or home / "AppData" / "Roaming"
        return {"data": local, "cache": local, "roaming": roaming}
    if platform == "darwin":
        support = home / "Library" / "Application Support"
        return {"data": support, "cache": home / "Library" / "Caches", "roaming": support}
    data = _env_path(env, "XDG_DATA_HOME") or home / ".local" / "share"
    return {"data": data, "cache": _env_path(env, "XDG_CACHE_HOME") or home / ".cache", "roaming": data}


def _ollama(env, home, platform) -> list[Place]:
    chosen = _env_path(env, "OLLAMA_MODELS")
    folders = [chosen] if chosen else [home / ".ollama" / "models"]
    if not chosen and platform.startswith("linux"):  # the system service's store (install.sh)
        folders += [Path("/usr/share/ollama/.ollama/models"), Path("/var/lib/ollama/.ollama/models")]
    return [Place("ollama", f, "ollama") for f in folders]


def _huggingface(env, home, platform) -> list[Place]:
    hub = _env_path(env, "HF_HUB_CACHE") or _env_path(env, "HUGGINGFACE_HUB_CACHE")
    if hub is None:
        hf_home = _env_path(env, "HF_HOME")
        base = _env_path(env, "XDG_CACHE_HOME") or home / ".cache"
        hub = (hf_home or base / "huggingface") / "hub"
    return [Place("huggingface", hub, "hf")]


def _trees(env, home, platform) -> list[Place]:
    dirs = _os_dirs(env, home, platform)
    llama_cache = _env_path(env, "LLAMA_CACHE") or dirs["cache"] / "llama.cpp"
    trees = [("lmstudio", home / ".lmstudio" / "models"), ("lmstudio", home / ".cache" / "lm-studio" / "models"),
             ("gpt4all", dirs["data"] / "nomic.ai" / "GPT4All"), ("jan", home / "jan" / "models"),
             ("jan", dirs["roaming"] / "Jan" / "data"), ("llama.cpp", llama_cache)]
    if platform == "linux":
        trees.append(("jan", dirs["data"] / "Jan" / "data"))
    return [Place(store, folder, "tree") for store, folder in trees]


def tool_places(env: Optional[Mapping[str, str]] = None, home: Optional[Path] = None,
                platform: Optional[str] = None) -> list[Place]:
    """Every tool's folders on this machine (or on ``platform``, for tests), existing or not."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or env.get("USERPROFILE") or Path.home()) if home is None else home
    platform = platform or sys.platform
    return [*_ollama(env, home, platform), *_huggingface(env, home, platform), *_trees(env, home, platform)]


# -- the user's own folders -------------------------------------------------------------------

def _folders_file() -> Path:
    from curator.core.review.identity import config_dir

    return config_dir() / FOLDERS_FILE


def user_folders() -> list[Path]:
    """The folders the user added (``curator models --add-folder``, the picker's "Add folder...")."""
    try:
        data = json.loads(_folders_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []  # none yet, or a damaged file: nothing is lost but the list, written whole next time
    folders = data.get("folders") if isinstance(data, dict) else None
    return [Path(f) for f in folders or [] if isinstance(f, str)]


def _save_folders(folders: list[Path]) -> Path:
    path = _folders_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as tmp:
        tmp.write_text(json.dumps({"folders": [str(f) for f in folders]}, indent=1), encoding="utf-8")
    return path


def add_folder(folder: str | Path) -> list[Path]:
    """Remember ``folder`` (absolute) as a place to look for models; returns the list."""
    folder = Path(folder).expanduser().resolve()
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder; name the folder that holds your .gguf files.")
    folders = user_folders()
    if folder not in folders:
        folders.append(folder)
        _save_folders(folders)
    return folders


def remove_folder(folder: str | Path) -> list[Path]:
    """Forget ``folder`` (as added, or as typed if it no longer exists); returns the list."""
    wanted = {Path(folder).expanduser().resolve(), Path(folder).expanduser()}
    folders = [f for f in user_folders() if f not in wanted]
    _save_folders(folders)
    return folders


def all_places() -> list[Place]:
    return [*tool_places(), *(Place("folder", f, "tree") for f in user_folders())]
