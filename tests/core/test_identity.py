"""One reviewer identity for the window and the CLI: env var, then the stored name, then the login."""

from __future__ import annotations

import getpass

import pytest

from curator.core.errors import InputError
from curator.core.review import identity


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.setenv(identity.CONFIG_DIR_VAR, str(tmp_path / "cfg"))
    monkeypatch.delenv(identity.ENV_VAR, raising=False)
    return tmp_path / "cfg"


def test_login_name_then_stored_name_then_env_var(config, monkeypatch):
    assert identity.default_reviewer() == getpass.getuser()
    path = identity.remember_reviewer("  ana  ")
    assert path == config / "reviewer" and path.read_text() == "ana\n"
    assert identity.default_reviewer() == "ana"
    monkeypatch.setenv(identity.ENV_VAR, "bob")
    assert identity.default_reviewer() == "bob"


def test_a_bad_name_is_refused_and_nothing_is_stored(config):
    for bad in ("", "   ", "two\nlines"):
        with pytest.raises(InputError, match="one non-empty line"):
            identity.remember_reviewer(bad)
    assert not (config / "reviewer").exists()


def test_xdg_config_home_is_used_without_the_override(tmp_path, monkeypatch):
    monkeypatch.delenv(identity.CONFIG_DIR_VAR, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert identity.config_dir() == tmp_path / "curator"
