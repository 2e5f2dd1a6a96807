"""Broken or unwritable caches are rebuilt or worked around, and doctor sees them (issue 32: availability)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile

import pytest

from curator.core import cachefiles, doctor
from curator.core.clustering import cluster
from curator.core.embedding import minilm_gguf
from curator.core.errors import ModelFileError

KERNEL = "from numba import njit\n\n@njit(cache=True)\ndef bump(x):\n    return x + 1\n"


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # an earlier clustering test in the same process points NUMBA_CACHE_DIR at the real cache
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    return tmp_path / "cache" / "curator"


def test_an_unusable_cache_folder_falls_back_to_a_temporary_one_said_once(cache_home, tmp_path, monkeypatch, caplog):
    cache_home.parent.mkdir(parents=True)
    cache_home.write_text("a file where the cache folder should be")
    with caplog.at_level(logging.WARNING, logger="curator"):
        first = cachefiles.usable_dir("models")
        second = cachefiles.usable_dir("models")
    assert first == second == tmp_path / "tmp" / f"curator-cache-{os.getuid()}" / "models"
    said = [r.getMessage() for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(said) == 1 and str(cache_home / "models") in said[0] and "XDG_CACHE_HOME" in said[0]
    assert minilm_gguf.minilm_gguf_path().parent == first  # the MiniLM conversion works there
    check = doctor.check_cache_folder()
    assert check.status == "fail" and str(cache_home) in check.detail and check.fix
    (tmp_path / "tmp" / f"curator-cache-{os.getuid()}").rename(tmp_path / "moved")
    (tmp_path / "tmp" / f"curator-cache-{os.getuid()}").write_text("and no fallback either")
    with pytest.raises(ModelFileError, match="cannot be written") as caught:
        cachefiles.usable_dir("models")
    assert "\n" not in str(caught.value) and str(cache_home / "models") in str(caught.value)


def test_a_broken_cache_entry_is_rebuilt(cache_home):
    path = minilm_gguf.minilm_gguf_path()
    good = cachefiles.file_sha256(path)
    path.unlink()
    path.mkdir()  # a folder where the model file should be
    (path / "junk").write_text("x")
    assert minilm_gguf.minilm_gguf_path() == path and cachefiles.file_sha256(path) == good
    cachefiles.sidecar(path).write_text("{not json")
    assert minilm_gguf.minilm_gguf_path() == path and cachefiles.problem(path) is None


def _dead_pid() -> int:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(child.stdout)


@pytest.mark.slow  # child processes
def test_doctor_checks_model_copies_parts_and_numba(cache_home):
    models = cache_home / "models"
    assert doctor.check_cached_models().status == "ok"
    models.mkdir(parents=True)
    copy = models / "model.0123456789abcdef.v1.q8_0.gguf"
    copy.write_bytes(b"GGUF" + b"\0" * 2048)
    cachefiles.record(copy, "f" * 64)
    assert doctor.check_cached_models().status == "ok"
    with open(copy, "r+b") as fh:
        fh.seek(100)
        fh.write(b"damage")
    check = doctor.check_cached_models()
    assert check.status == "fail" and "damaged" in check.detail and str(copy) in check.fix
    copy.unlink()
    part = models / f"{copy.name}.{_dead_pid()}.abcdefgh.part"
    part.write_bytes(b"\0" * 1000)
    check = doctor.check_cached_models()
    assert check.status == "fail" and "killed conversion" in check.detail and str(part) in check.fix
    numba = cache_home / "numba" / "umap_pkg"
    numba.mkdir(parents=True)
    (numba / "layouts.optimize-1.py311.nbi").write_bytes(b"")
    check = doctor.check_numba_cache()
    assert check.status == "fail" and "1 damaged" in check.detail and check.fix


@pytest.mark.slow  # child processes
def test_empty_numba_cache_files_are_cleared_before_clustering(tmp_path, monkeypatch):
    (tmp_path / "kern.py").write_text(KERNEL)
    folder = tmp_path / "numba"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(folder), "PYTHONPATH": str(tmp_path)}

    def run():
        return subprocess.run([sys.executable, "-c", "import kern; print(kern.bump(1))"], env=env,
                              capture_output=True, text=True, timeout=300)

    assert run().stdout.strip() == "2"
    written = [p for p in folder.rglob("*") if p.suffix in (".nbi", ".nbc")]
    assert written
    for path in written:
        path.write_bytes(b"")  # what the probe left: every cache file empty
    broken = run()
    assert broken.returncode != 0 and "EOFError" in broken.stderr  # numba's own failure, as "Aborted!" showed it
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(folder))
    cluster._use_numba_disk_cache()  # what the cluster worker's start does
    assert cachefiles.broken_numba_files(folder) == []
    assert run().stdout.strip() == "2" and cachefiles.broken_numba_files(folder) == []


def test_a_read_only_cache_is_used_while_its_files_check_out(cache_home, tmp_path, monkeypatch, caplog):
    path = minilm_gguf.minilm_gguf_path()
    real_writable = cachefiles._writable
    monkeypatch.setattr(cachefiles, "_writable", lambda folder: "Read-only file system"
                        if folder.is_relative_to(cache_home) else real_writable(folder))
    with caplog.at_level(logging.WARNING, logger="curator"):
        assert minilm_gguf.minilm_gguf_path() == path  # read as it is: nothing to write
    assert not caplog.records
    with open(path, "r+b") as fh:
        fh.seek(1_000_000)
        fh.write(b"damage")
    rebuilt = minilm_gguf.minilm_gguf_path()  # a damaged file in a read-only cache: rebuilt elsewhere
    assert rebuilt.parent == tmp_path / "tmp" / f"curator-cache-{os.getuid()}" / "models"
    assert rebuilt.name == path.name and cachefiles.problem(rebuilt) is None
