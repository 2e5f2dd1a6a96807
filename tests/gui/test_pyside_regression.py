"""PySide6 6.12.0 on Python 3.11 leaks a reference to None on every void Qt method, and
the interpreter aborts after a few thousand calls. Keep the pin (<6.12) and this canary."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib.metadata import PackageNotFoundError, version

import pytest

CALLS = 20_000
ALLOWED_GROWTH = 1_000

_CHILD = textwrap.dedent(f"""
    import gc, sys
    from PySide6.QtWidgets import QApplication, QLabel
    app = QApplication([])
    label = QLabel()
    gc.collect()
    before = sys.getrefcount(None)
    keep = []
    for i in range({CALLS}):
        CALL
    gc.collect()
    growth = sys.getrefcount(None) - before
    print("growth", growth)
    sys.exit(0 if growth <= {ALLOWED_GROWTH} else 3)
""")


def _run_child(call: str) -> subprocess.CompletedProcess:
    # A subprocess, so an interpreter abort fails the test instead of killing pytest.
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    code = _CHILD.replace("CALL", call)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)


def _pyside_version() -> str:
    for dist in ("PySide6-Essentials", "PySide6"):
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    pytest.fail("PySide6 is not installed")


def test_installed_pyside6_is_below_6_12():
    parts = tuple(int(p) for p in _pyside_version().split(".")[:2])
    assert parts < (6, 12), f"PySide6 {_pyside_version()} has the None-refcount leak; pin <6.12"


def test_void_method_calls_do_not_leak_none():
    out = _run_child("label.setText(str(i))")
    assert out.returncode == 0, f"rc={out.returncode}\nstdout={out.stdout}\nstderr={out.stderr[-2000:]}"
    assert out.stdout.startswith("growth ")


def test_canary_detects_a_none_leak():
    """The harness itself must fail when references to None pile up (as 6.12.0 does)."""
    out = _run_child("keep.append(None)")
    assert out.returncode == 3, out.stdout + out.stderr
