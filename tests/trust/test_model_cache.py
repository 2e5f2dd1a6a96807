"""Cached model files are checked before use, vectors are keyed by the model file (issue 32: 3, availability)."""

from __future__ import annotations

import json
import os
import shutil
import struct

import numpy as np
import pytest
from click.testing import CliRunner

import trustkit
from curator.cli.main import cli
from curator.core import cachefiles
from curator.core.embedding import minilm_gguf
from curator.core.embedding.embed import embed_texts, get_embedder
from curator.core.embedding.base import text_hash
from curator.core.errors import ModelFileError
from curator.core.generation import optimize, repack

LEGACY_MINILM_ID = "minilm:all-MiniLM-L6-v2:t256"  # what every MiniLM vector was stored under before


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "curator" / "models"


def _damage(path, offset: int = 5_000_000) -> None:
    """Flip bytes in the middle of the weights, keeping the size (what a bad disk or a copy does)."""
    with open(path, "r+b") as fh:
        fh.seek(offset)
        chunk = fh.read(4096)
        fh.seek(offset)
        fh.write(bytes(b ^ 0xFF for b in chunk))


def test_a_damaged_minilm_gguf_is_written_again_before_any_vector(own_cache, empty_db):
    first = get_embedder("minilm", empty_db)
    path, good_id = first.model_path(), first.id
    good = cachefiles.file_sha256(path)
    expected = embed_texts(empty_db, first, ["rotate the signing keys"])
    _damage(path)
    assert cachefiles.file_sha256(path) != good
    again = get_embedder("minilm", empty_db)
    assert again.id == good_id and again.model_path() == path
    assert cachefiles.file_sha256(path) == good  # rewritten, byte for byte the same as before
    assert np.allclose(again.embed_batch(["rotate the signing keys"]), expected, atol=1e-5)


def test_vectors_are_keyed_by_the_model_files_hash(own_cache, empty_db):
    embedder = get_embedder("minilm", empty_db)
    assert embedder.id.startswith(LEGACY_MINILM_ID + ":gguf-")
    assert cachefiles.file_sha256(embedder.model_path())[:16] in embedder.id
    poisoned = np.zeros(384, np.float32)
    with empty_db.conn:  # a vector a damaged file stored under the old, file-blind id
        empty_db.execute("INSERT INTO embeddings VALUES (?, ?, 384, ?)",
                         [text_hash("refund my invoice"), LEGACY_MINILM_ID, poisoned.tobytes()])
    vector = embed_texts(empty_db, embedder, ["refund my invoice"])[0]
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-4)


def test_a_damaged_q8_0_copy_is_written_again(own_cache, bundled_model):
    files = repack.bundled_model_files()
    good = cachefiles.file_sha256(files.path)
    assert json.loads(cachefiles.sidecar(files.path).read_text())["sha256"] == good
    _damage(files.path)
    again = repack.bundled_model_files()
    assert again == files and cachefiles.file_sha256(files.path) == good


def test_optimize_writes_a_new_copy_when_the_source_changed(tmp_path, own_cache, bundled_model, monkeypatch):
    monkeypatch.setattr(optimize, "measure_speed", lambda path, threads=None: {"prompt_tokens_per_s": 1.0,
                                                                              "decode_tokens_per_s": 1.0})
    source = tmp_path / "model.gguf"
    shutil.copy(bundled_model, source)
    first = optimize.optimize_model(source, "q4_0")
    copy = tmp_path / "model.q4_0.gguf"
    assert first["copy"]["path"] == str(copy) and not first["reused_existing_copy"]
    assert optimize.optimize_model(source, "q4_0")["reused_existing_copy"]
    made_from_old = cachefiles.file_sha256(copy)
    shutil.copy(repack.bundled_model_files().path, source)  # other weights (Q8_0) under the same name
    changed = optimize.optimize_model(source, "q4_0")
    assert not changed["reused_existing_copy"] and changed["replaced"] == "made from another version of its source file"
    assert cachefiles.file_sha256(copy) != made_from_old
    assert json.loads(cachefiles.sidecar(copy).read_text())["source_sha256"] == cachefiles.file_sha256(source)


@pytest.mark.slow  # a child process
def test_kill_9_during_the_minilm_conversion_leaves_a_part_the_next_run_removes(own_cache):
    child = trustkit.python_child("from curator.core.embedding.minilm_gguf import minilm_gguf_path; minilm_gguf_path()")
    trustkit.wait_until(lambda: own_cache.is_dir() and any(p.stat().st_size > 1_000_000 for p in own_cache.glob("*.part")),
                        timeout=120, proc=child)
    trustkit.kill9(child)
    parts = list(own_cache.glob("*.part"))
    assert parts and str(child.pid) in parts[0].name  # the killed writer's pid is in the name
    assert not list(own_cache.glob("*.gguf"))
    live = own_cache / f"{minilm_gguf.minilm_gguf_name('0' * 16)}.{os.getpid()}.abcdefgh.part"
    live.write_bytes(b"a writer that is still running")
    path = minilm_gguf.minilm_gguf_path()
    assert path.is_file() and cachefiles.problem(path) is None
    assert not any(p.exists() for p in parts) and live.exists()  # only the dead writer's part went


def _huge_header(path, tensors: int, keys: int) -> None:
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, tensors, keys) + b"\0" * 4096)


@pytest.mark.parametrize("tensors, keys", [(2**62, 0), (0, 2**62)])
def test_a_gguf_header_with_absurd_counts_is_one_line(tmp_path, sample_project_path, tensors, keys):
    model = tmp_path / "huge.gguf"
    _huge_header(model, tensors, keys)
    for args in (["model", "optimize", str(model)], ["generate", str(sample_project_path), "--model", str(model)]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
        lines = result.output.strip().splitlines()
        assert lines[-1].startswith(f"Error: {model}: damaged GGUF header") and "Traceback" not in result.output
    with pytest.raises(Exception, match="damaged GGUF header"):
        get_embedder(f"gguf:{model}")


def test_vectors_drop_removes_a_projects_vectors(sample_db, sample_project_path):
    with sample_db.conn:
        sample_db.execute("INSERT INTO embeddings VALUES ('h1', ?, 1, x'00000000')", [LEGACY_MINILM_ID])
        sample_db.execute("INSERT INTO embeddings VALUES ('h2', 'tfidf:x', 1, x'00000000')")
    result = CliRunner().invoke(cli, ["vectors", "drop", str(sample_project_path), "--embedder", LEGACY_MINILM_ID,
                                      "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["embedders"] == {LEGACY_MINILM_ID: 1}
    result = CliRunner().invoke(cli, ["vectors", "drop", str(sample_project_path)])
    assert result.exit_code == 0 and "dropped 1 stored vectors" in result.output
    assert sample_db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] == 0


def _nested_arrays(path, depth: int = 100_000) -> None:
    """A GGUF header whose one metadata value is an array of an array of ... (12 bytes a level)."""
    key = b"tokenizer.ggml.nested"
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key + struct.pack("<I", 9)
    path.write_bytes(head + struct.pack("<IQ", 9, 1) * depth + struct.pack("<IQ", 0, 0) + b"\0" * 4096)


def test_a_gguf_whose_metadata_nests_arrays_is_one_line(tmp_path, sample_project_path):
    """The chat-template check raised RecursionError (issue 43: 6); both commands now read the header with Curator's
    own reader, which refuses an array nested past two levels in bounded time."""
    model = tmp_path / "nested.gguf"
    _nested_arrays(model)
    for args in (["model", "optimize", str(model)], ["generate", str(sample_project_path), "--model", str(model)]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
        assert result.output.strip().splitlines()[-1].startswith(f"Error: {model}: truncated or damaged header "
                                                                 "(unknown value type 9)")


def test_an_unloadable_gguf_embedder_is_one_line(tmp_path):
    """A GGUF whose header reads but that llama.cpp cannot load raised ValueError from --embedder gguf:."""
    model = tmp_path / "empty.gguf"
    model.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 0) + b"\0" * 4096)  # no tensors, no metadata
    with pytest.raises(ModelFileError, match=rf"^{model}: llama.cpp could not load this embedding model"):
        get_embedder(f"gguf:{model}").embed_batch(["how do I read a file"])


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_optimize_never_removes_a_pipe_or_socket_where_the_copy_goes(tmp_path, bundled_model, kind):
    """`model optimize` unlinked a pipe or socket named like its copy and wrote a file there (issue 43 review)."""
    import socket

    source = tmp_path / "model.gguf"
    shutil.copy(bundled_model, source)
    target = tmp_path / "model.q4_0.gguf"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(target))
    result = CliRunner().invoke(cli, ["model", "optimize", str(source), "--type", "q4_0"])
    assert result.exit_code == 1, result.output
    assert result.output.startswith(f"Error: {target} is not a regular file") and len(result.output.splitlines()) == 1
    assert target.exists() and not target.is_file()  # still the pipe or socket
