"""Fixtures of the trust tests (the helpers themselves live in trustkit.py)."""

from __future__ import annotations

import threading

import pytest

from trustkit import FakeModelServer


@pytest.fixture
def fake_model():
    server = FakeModelServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
