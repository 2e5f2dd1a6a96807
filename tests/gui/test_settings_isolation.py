"""Tests and benches never write the user's real settings: $CURATOR_CONFIG_DIR moves them."""

from __future__ import annotations

import os
import subprocess
import sys

from PySide6.QtCore import QSettings

import settings_guard
from curator.gui.settings import CONFIG_DIR_ENV, SETTINGS_FILE
from curator.gui.window import MainWindow


def _recent(ini) -> list:
    value = QSettings(str(ini), QSettings.IniFormat).value("recent") or []
    return [value] if isinstance(value, str) else list(value)


def test_the_suite_runs_with_settings_in_a_temporary_folder():
    folder = os.environ[CONFIG_DIR_ENV]
    assert "curator-test-settings-" in folder
    assert all("curator-test-settings-" not in str(real) for real in settings_guard.real_settings_dirs()[:1])


def test_a_window_without_injected_settings_writes_recent_projects_under_the_config_dir(qtbot, sample_project_path):
    win = MainWindow(sample_project_path, reviewer="ana")
    qtbot.addWidget(win)
    win.settings.sync()
    assert win.settings.fileName() == os.path.join(os.environ[CONFIG_DIR_ENV], SETTINGS_FILE)
    assert str(sample_project_path) in _recent(win.settings.fileName())


def _launch(project, env) -> None:
    done = subprocess.run([sys.executable, "-m", "curator.gui", "--benchmark-startup", "--reviewer", "ana",
                           str(project)], capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr


def test_the_real_app_honours_CURATOR_CONFIG_DIR_and_writes_nothing_else(tmp_path, sample_project_path):
    """The real process: recent projects land in $CURATOR_CONFIG_DIR; without it, in Qt's user
    folder ($XDG_CONFIG_HOME/Curator), which is the folder the suite's guard watches."""
    config, xdg, home = tmp_path / "config", tmp_path / "xdg", tmp_path / "home"
    home.mkdir()
    # caches are not settings: the model picker keeps what each GGUF header says in the cache folder
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", CONFIG_DIR_ENV: str(config), "XDG_CONFIG_HOME": str(xdg),
           "HOME": str(home), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    _launch(sample_project_path, env)
    assert _recent(config / SETTINGS_FILE) == [str(sample_project_path)]
    assert not xdg.exists() and list(home.iterdir()) == []
    del env[CONFIG_DIR_ENV]
    _launch(sample_project_path, env)
    assert _recent(xdg / "Curator" / "Curator.conf") == [str(sample_project_path)]


def test_the_guard_sees_a_write_to_a_watched_folder(tmp_path):
    watched = tmp_path / "Curator"
    before = settings_guard.snapshot([watched])
    watched.mkdir()
    (watched / "Curator.conf").write_text("[General]\nrecent=/tmp/x.curator\n")
    assert settings_guard.changes(before, settings_guard.snapshot([watched])) == [str(watched), str(watched / "Curator.conf")]
