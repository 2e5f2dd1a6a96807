"""``curator doctor``: real checks on this machine, and a real broken Qt plugin that must fail."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core import doctor


def test_doctor_json_reports_every_check_and_its_exit_code_follows_them():
    result = CliRunner().invoke(cli, ["doctor", "--json"])
    report = json.loads(result.stdout)
    names = [c["name"] for c in report["checks"]]
    assert names == ["bundled model", "MiniLM weights", "llama.cpp build", "Qt (offscreen)", "Qt (xcb, Linux desktops)",
                     "error log", "cache folder", "cached model files", "numba cache"]
    by_name = {c["name"]: c for c in report["checks"]}
    for name in ("bundled model", "MiniLM weights", "llama.cpp build", "Qt (offscreen)"):
        assert by_name[name]["status"] == "ok", by_name[name]  # the test suite itself needs all four
    assert "tokens ran on the bundled model" in by_name["llama.cpp build"]["detail"]
    assert result.exit_code == (0 if report["ok"] else 1)
    assert report["ok"] == all(c["status"] != "fail" for c in report["checks"])
    assert all(c["fix"] for c in report["checks"] if c["status"] == "fail")


@pytest.mark.skipif(not sys.platform.startswith("linux") or not shutil.which("ldd"), reason="xcb and ldd: Linux only")
def test_xcb_check_agrees_with_ldd_on_the_installed_plugin():
    plugin = doctor.qt_platforms_dir() / "libqxcb.so"
    listed = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True).stdout
    missing = sorted({line.split()[0] for line in listed.splitlines() if "not found" in line})
    check = doctor.check_qt_xcb()
    assert check.status == ("fail" if missing else "ok")
    for name in missing:  # on this machine: libxcb-icccm.so.4, libxcb-keysyms.so.1
        assert name in check.detail and doctor.debian_package(name) in check.fix


@pytest.fixture
def broken_plugin_dir(tmp_path):
    """The real libqxcb.so copied away from PySide6: its rpath no longer reaches Qt's libraries."""
    if not sys.platform.startswith("linux") or not shutil.which("ldd"):
        pytest.skip("xcb and ldd: Linux only")
    shutil.copy(doctor.qt_platforms_dir() / "libqxcb.so", tmp_path / "libqxcb.so")
    return tmp_path


def test_a_plugin_that_cannot_load_fails_with_the_fix_and_exit_1(broken_plugin_dir, monkeypatch):
    monkeypatch.setattr(doctor, "CHECKS", (lambda: doctor.check_qt_xcb(platforms=broken_plugin_dir),))
    result = CliRunner().invoke(cli, ["doctor"])
    assert result.exit_code == 1
    assert "FAIL  Qt (xcb, Linux desktops): the xcb plugin needs libQt6" in result.stdout
    assert "fix: pip install --force-reinstall PySide6" in result.stdout  # Qt's own libraries: not apt's
    assert "1 check(s) failed" in result.stdout


def test_xcb_check_is_skipped_off_linux_and_a_missing_plugin_fails(tmp_path):
    assert doctor.check_qt_xcb(platform="darwin").status == "skip"
    missing = doctor.check_qt_xcb(platform="linux", platforms=tmp_path)
    assert missing.status == "fail" and "libqxcb.so is missing" in missing.detail


@pytest.mark.parametrize("soname, package", [
    ("libxcb-icccm.so.4", "libxcb-icccm4"), ("libxcb-keysyms.so.1", "libxcb-keysyms1"),
    ("libxcb-cursor.so.0", "libxcb-cursor0"), ("libxkbcommon-x11.so.0", "libxkbcommon-x11-0"),
    ("libX11-xcb.so.1", "libx11-xcb1"), ("libdbus-1.so.3", "libdbus-1-3"),
])
def test_debian_package_names(soname, package):
    assert doctor.debian_package(soname) == package
