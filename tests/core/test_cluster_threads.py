"""The k search and UMAP run with BLAS and OpenMP held to one thread (cluster.one_thread).

On a busy machine OpenMP's threads wait for each other: sklearn's KMeans with two threads was ~25x
slower than with one at load 13 (docs/clustering.md). threadpoolctl limits only libraries already
loaded, so one_thread must load sklearn's OpenMP runtime itself; a fresh process checks that.
"""

import subprocess
import sys

import numpy as np

from curator.core.clustering.cluster import choose_k, one_thread


def test_one_thread_limits_every_pool_and_restores_them():
    from threadpoolctl import threadpool_info

    before = {(i["filepath"], i["num_threads"]) for i in threadpool_info()}
    with one_thread():
        inside = threadpool_info()
        assert any(i["internal_api"] == "openmp" for i in inside)  # sklearn's runtime is loaded and limited
        assert all(i["num_threads"] == 1 for i in inside)
    assert {(i["filepath"], i["num_threads"]) for i in threadpool_info() if (i["filepath"], i["num_threads"]) in before} == before


def test_one_thread_reaches_openmp_in_a_fresh_process():
    """Before the fix the limit was set before sklearn was imported, so KMeans kept two threads."""
    code = ("from curator.core.clustering.cluster import one_thread\n"
            "from threadpoolctl import threadpool_info\n"
            "with one_thread():\n"
            "    print(sorted({i['internal_api']: i['num_threads'] for i in threadpool_info()}.items()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "('openmp', 1)" in out


def test_choose_k_finds_separated_groups_with_one_thread():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(4, 5)) * 20
    points = np.vstack([c + rng.normal(size=(60, 5)) for c in centres]).astype(np.float32)
    labels, k, silhouette = choose_k(points, "auto", 0)
    assert k == 4 and silhouette > 0.7 and len(set(labels[:60])) == 1
