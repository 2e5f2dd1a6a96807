"""Fixtures of the trust tests (the helpers themselves live in trustkit.py)."""

from __future__ import annotations

import threading

import pytest

import trustkit
from trustkit import FakeModelServer


@pytest.fixture(autouse=True)
def _no_child_outlives_its_test():
    """A failed test leaves its children running (a review loop spun for minutes in CI): kill them."""
    yield
    for proc in trustkit.CHILDREN:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    trustkit.CHILDREN.clear()


@pytest.fixture
def fake_model():
    server = FakeModelServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
