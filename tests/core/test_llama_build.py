"""The installed llama.cpp build runs a real multi-token prompt on the bundled model.

A build compiled with -march=native on a CPU that reports AMX crashed the interpreter with a
segmentation fault in llama_decode on every prompt longer than one token (seen on this machine).
The check runs in a child process so a crash is reported as a clear failure, not a dead test run.
"""

from __future__ import annotations

import subprocess
import sys

CHILD = """
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=512, n_threads=2, verbose=False)
out = llm.create_completion("The capital of France is the city of", max_tokens=4, temperature=0)
print(out["usage"]["prompt_tokens"])
"""


def test_multi_token_prompt_does_not_crash(bundled_model):
    child = subprocess.run([sys.executable, "-c", CHILD, str(bundled_model)], capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, (
        f"llama.cpp crashed (exit {child.returncode}) on a multi-token prompt: rebuild llama-cpp-python with the "
        f"Makefile's CMAKE_ARGS (pip install --no-cache-dir --force-reinstall --no-deps llama-cpp-python).\n"
        f"{child.stderr[-2000:]}")
    assert int(child.stdout.strip().splitlines()[-1]) > 5
