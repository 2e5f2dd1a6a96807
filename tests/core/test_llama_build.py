"""The installed llama.cpp build runs a real multi-token prompt on the bundled model.

A build compiled with -march=native on a CPU that reports AMX crashed the interpreter with a
segmentation fault in llama_decode on every prompt longer than one token (seen on this machine).
The check runs in a child process so a crash is reported as a clear failure, not a dead test run;
``curator doctor`` runs the same child script (curator.core.doctor.LLAMA_CHILD).
"""

from __future__ import annotations

from curator.core.doctor import LLAMA_CHILD, LLAMA_REBUILD, run_child


def test_multi_token_prompt_does_not_crash(bundled_model):
    child = run_child(LLAMA_CHILD, str(bundled_model))
    assert child.returncode == 0, (
        f"llama.cpp crashed (exit {child.returncode}) on a multi-token prompt: {LLAMA_REBUILD}.\n"
        f"{child.stderr[-2000:]}")
    assert int(child.stdout.strip().splitlines()[-1]) > 5
