"""The repacked bundled model: a Q8_0 copy written once, atomically, that answers like the original.

These run llama.cpp's real quantize API on the bundled Q4_1 file (about a second) into a cache
folder of the test's own (XDG_CACHE_HOME), so the user's cache is never touched.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from curator.core.generation import prompts, repack
from curator.core.generation.backends import LlamaCppBackend, Request, open_backend


@pytest.fixture
def own_cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "curator" / "models"


def test_copy_is_written_once_keyed_by_the_source_hash(own_cache, bundled_model):
    first = repack.bundled_model_files()
    assert first.repacked and first.source == bundled_model
    assert first.path.parent == own_cache
    assert repack.file_sha256(bundled_model)[:16] in first.path.name
    assert repack.gguf_file_type(first.path) == "Q8_0" and repack.gguf_file_type(bundled_model) == "Q4_1"
    stamp = first.path.stat().st_mtime_ns, first.path.stat().st_ino
    second = repack.bundled_model_files()
    assert second == first
    assert (second.path.stat().st_mtime_ns, second.path.stat().st_ino) == stamp  # reused, not rewritten
    # no temporary file left; the sidecar records the copy's hash
    assert sorted(p.name for p in own_cache.iterdir()) == [first.path.name, first.path.name + ".sha256"]


def test_no_repack_runs_the_source_file(own_cache, bundled_model):
    files = repack.bundled_model_files(repack=False)
    assert files.path == files.source == bundled_model and not files.repacked
    backend = open_backend(repack=False)
    assert backend.model_path == bundled_model and "source_model_path" not in backend.describe()
    assert not own_cache.exists()  # nothing written when the copy is not wanted


def test_open_backend_runs_the_copy_and_names_the_source(own_cache, bundled_model):
    backend = open_backend()
    described = backend.describe()
    assert Path(described["model_path"]).parent == own_cache
    assert described["source_model_path"] == str(bundled_model)


_WRITER = """
import sys
from curator.core.generation import repack
repack.quantize_copy(sys.argv[1], sys.argv[2])
"""


def test_kill_mid_write_leaves_no_partial_model(tmp_path, bundled_model):
    out = tmp_path / "models" / "copy.q8_0.gguf"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", _WRITER, str(bundled_model), str(out)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    parts: list = []
    while time.monotonic() < deadline and child.poll() is None:
        parts = [p for p in out.parent.glob("*.part") if p.stat().st_size > 0] if out.parent.exists() else []
        if parts:
            break
        time.sleep(0.005)
    assert parts, "the writer finished before it could be killed mid-write"
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert not out.exists()  # only the temporary file, never a torn model under the real name
    repack.quantize_copy(bundled_model, out)  # the next write clears the dead writer's leftovers
    assert out.is_file() and repack.gguf_file_type(out) == "Q8_0"
    assert list(out.parent.glob("*.part")) == []


def test_failed_quantize_names_the_file_and_writes_nothing(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 2000)
    out = tmp_path / "out.gguf"
    with pytest.raises(Exception, match="broken.gguf"):
        repack.quantize_copy(broken, out)
    assert not out.exists() and list(tmp_path.glob("*.part")) == []


FIXED_PASSAGES = [
    "Audit log entries are kept for ninety days. Administrators can export them as CSV from the Audit page.",
    "The sync client checks for changes every 30 seconds. Set sync.interval in client.toml to change it.",
    "API keys are rotated from Settings > Security. An old key keeps working for 24 hours after rotation.",
]


def test_greedy_replies_of_the_copy_match_the_source(own_cache, bundled_model):
    """Greedy decoding on a fixed prompt set: the Q8_0 copy mostly says what the Q4_1 file says.

    Q8_0 holds each Q4_1 weight to within rounding, so logits differ only in the last bits; a
    reply can still part ways where two tokens were nearly tied. bench/generate.py reports the
    share and the first divergence; here only a loose floor, so the test fails if the copy is
    a different model (or garbage), not on a single near-tie.
    """
    replies = {}
    for name, path in (("source", bundled_model), ("copy", repack.bundled_model_files().path)):
        # Through the batch decoder (one sequence per prompt, the same layout for both files): its
        # grammar check costs a token, not a vocabulary scan, so the test stays quick.
        backend = LlamaCppBackend(path, n_ctx=1024, parallel=len(FIXED_PASSAGES))
        replies[name] = backend.complete_many([
            Request(prompts.build_messages("factoid", [p]), max_tokens=prompts.MAX_REPLY_TOKENS, temperature=0.0,
                    grammar=prompts.QUESTION_GRAMMAR) for p in FIXED_PASSAGES])
    assert all(prompts.parse_output(r) for r in replies["copy"])
    first_words = [a.split()[:4] == b.split()[:4] for a, b in zip(replies["source"], replies["copy"])]
    assert sum(first_words) >= 2, json.dumps(replies, indent=1)


def test_run_record_and_manifest_name_both_files_and_hashes(own_cache, bundled_model, sample_db, tmp_path):
    from curator.core.export.writers import export
    from curator.core.generation.generate import DEFAULT_MIX, GenerationConfig, _start_run
    from curator.core.queries.rows import add_query
    from curator.core.review.decisions import decide

    backend = open_backend()  # the repacked bundled model; nothing is decoded here
    run_id = _start_run(sample_db, GenerationConfig(), backend, DEFAULT_MIX)
    chunk_id = sample_db.execute("SELECT id FROM chunks LIMIT 1").fetchone()[0]
    with sample_db.conn:
        query_id = add_query(sample_db, "How long are audit entries kept?", "synthetic", reference="ninety days",
                             gold_chunk_ids=[chunk_id], source_chunk_ids=[chunk_id], run_id=run_id)
    decide(sample_db, query_id, "approve", "ana")
    run = export(sample_db, tmp_path / "gold.jsonl")["generation_runs"][0]
    assert run["model_path"] == str(backend.model_path) and run["source_model_path"] == str(bundled_model)
    assert run["model_sha256"] == repack.file_sha256(backend.model_path)
    assert run["source_model_sha256"] == repack.file_sha256(bundled_model) != run["model_sha256"]
