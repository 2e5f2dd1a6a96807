"""Test tiers: which tests are ``slow``, decided at collection, and a watch that keeps the fast tier fast.

A test is slow when it loads the bundled generation model, starts a model server or any other
server, starts a child process, or runs UMAP. ``make test`` runs every test; ``make test-fast``
(``pytest -m "not slow"``) is the edit loop.

Nobody has to remember the mark. At collection a test is marked slow when:

- the code it runs reaches one of SLOW_MODULES or SLOW_CALLS, or a server class. "The code it runs"
  is the test function, the fixtures it asks for (all of them, through other fixtures), and the
  helpers they call that live under tests/, followed by the names their code uses; or
- it is listed in SLOW_TESTS: tests whose slow work is started where no name shows it (a button
  clicked in the window, a CLI command given as a string).

While tests run, a watch sees what each one starts (a GGUF generation model loaded by llama.cpp, a
child Python process, a worker process, a server, a UMAP fit). A test not marked slow that starts one
is listed at the end of the run; when the run leaves slow tests out (``-m "not slow"``) such a test
fails, naming what it started, so a test that slows the edit loop is caught on its first fast run.
A system tool run as a child (lscpu, ldd) is not slow, nor is loading the MiniLM embedder (a quarter
of a second); a test not marked slow that uses more than CPU_NOTE_SECONDS of CPU is listed at the
end of the run (never failed: a measurement), as a candidate for SLOW_TESTS.

conftest.py imports the hooks from here (pytest_plugins works only in the rootdir's conftest).
"""

from __future__ import annotations

import builtins
import importlib.abc
import inspect
import multiprocessing.process
import socketserver
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Callable, Optional

import pytest

TESTS_DIR = Path(__file__).resolve().parent

# Modules whose use means a slow test (matched as a prefix of the module's name).
SLOW_MODULES = {
    "subprocess": "starts a child process",
    "multiprocessing": "starts a worker process",
    "concurrent.futures.process": "starts a worker process",
    "umap": "runs UMAP",
    "llama_cpp": "runs llama.cpp",
    "http.server": "starts a server",
}
# Functions and classes whose call means a slow test ("module.qualname").
SLOW_CALLS = {
    "curator.core.resources.bundled_model_path": "uses the bundled model",
    "curator.core.generation.backends.open_backend": "opens a model backend",
    "curator.core.clustering.cluster.cluster_queries": "runs UMAP in a worker process",
    "curator.core.clustering.cluster.cluster_project": "runs UMAP in a worker process",
    "curator.core.clustering.cluster.run_umap": "runs UMAP in a worker process",
    "curator.core.clustering.cluster.warm_up": "runs UMAP in a worker process",
    "curator.core.demo.build_demo_project": "builds the demo with the bundled model",
    "posix.fork": "starts a child process",
    "posix.system": "starts a child process",
}
# Tests whose slow work no name in their code shows (node id, or the prefix of one: a file, a class):
# found by the watch, or measured in the fast tier (CPU seconds from this plugin's listing; wall seconds
# from --durations of the run of 2026-12-05, on 2 cores at a load average of 14-17, so several times an
# idle machine's). The measured ones embed the sample corpus with MiniLM (dense, hybrid, suggestions).
_MEASURED = "measured in the fast tier: "
SLOW_TESTS: dict[str, str] = {
    "tests/test_layering.py::test_core_imports_nothing_heavy_at_import_time": "imports every core module in a child Python",
    "tests/trust/test_log_input.py::test_import_log_refuses_a_device_or_a_pipe": "runs curator as a child process",
    "tests/trust/test_run_input.py::test_a_device_or_a_pipe_is_refused_not_read": "runs curator as a child process",
    "tests/gui/test_generate_view.py::test_cancel_keeps_rows_and_resume_reaches_the_target": "generates with the bundled model",
    "tests/cli/test_doctor_cli.py::test_doctor_json_reports_every_check_and_its_exit_code_follows_them":
        "doctor checks the llama.cpp build in a child process",
    "tests/gui/test_clusters_view.py::test_worker_error_reaches_a_dialog": "starts the clustering worker process",
    "tests/core/test_backends.py::test_cancel_during_a_batched_run_then_resume_reaches_the_target":
        "a batched run on the bundled model (found through a fixture the name scan does not follow)",
    "tests/trust/test_http_limits.py::test_the_refusal_is_one_line_from_the_command_line":
        "curator generate --endpoint loads the bundled model before it opens the endpoint",
    "tests/cli/test_foundation_cli.py::test_demo_headless": "builds the demo: the bundled model, UMAP in a worker",
    "tests/gui/test_whole_project_from_window.py::test_a_whole_project_from_the_window":
        "every stage from the window: the bundled model, UMAP in a worker",
    "tests/core/test_retrievers.py::test_a_chunk_copied_as_query_retrieves_itself_first[hybrid]":
        _MEASURED + "55 s of CPU",
    "tests/core/test_retrievers.py::test_dense_reuses_cached_chunk_and_query_vectors": _MEASURED + "40 s of CPU",
    "tests/core/test_retrievers.py::test_a_chunk_copied_as_query_retrieves_itself_first[dense]":
        _MEASURED + "34 s of CPU",
    "tests/core/test_evaluate.py::test_exported_beir_qrels_and_saved_run_rescore_identically[hybrid]":
        _MEASURED + "265 s wall",
    "tests/core/test_generate.py::test_generate_when_every_chunk_is_used_says_so_and_names_the_types":
        _MEASURED + "256 s wall",
    "tests/core/test_metrics.py::test_agrees_with_trec_eval_on_a_real_hybrid_run": _MEASURED + "249 s wall",
    "tests/core/test_evaluate.py::test_every_built_in_retriever_is_scored_and_stored[hybrid]": _MEASURED + "232 s wall",
    "tests/core/test_evaluate.py::test_every_built_in_retriever_is_scored_and_stored[dense]": _MEASURED + "198 s wall",
    "tests/cli/test_suggest_cli.py::test_sample_then_suggest_and_queries_json": _MEASURED + "164 s wall",
    "tests/cli/test_eval_cli.py::test_eval_each_retriever_then_compare_ids_and_files": _MEASURED + "143 s wall",
    "tests/core/test_suggest.py::test_suggest_stores_top_k_for_queued_queries_without_gold": _MEASURED + "121 s wall",
}
# A fast-tier test that uses more CPU than this (its own threads included) is listed at the end of the
# run as a candidate for SLOW_TESTS. CPU time, not wall time: a busy machine does not inflate it.
CPU_NOTE_SECONDS = 5.0

_STRICT_HELP = ("a test that does this belongs to the slow tier: it is marked automatically when its code "
                "(or a fixture or tests/ helper it uses) names the call; otherwise add it to SLOW_TESTS in "
                "tests/tiers.py, or mark it @pytest.mark.slow")


# ---------------------------------------------------------------- static rules (at collection)

def _code_objects(code: types.CodeType):
    """``code`` and every code object nested in it (inner functions, lambdas, comprehensions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _slow_object(obj) -> Optional[str]:
    """Why using ``obj`` (a module, function or class) is slow, or None."""
    if isinstance(obj, types.ModuleType):
        name = obj.__name__
        return next((why for prefix, why in SLOW_MODULES.items() if name == prefix or name.startswith(prefix + ".")),
                    None)
    if inspect.isclass(obj) and issubclass(obj, socketserver.BaseServer):
        return "starts a server"
    if callable(obj):
        return SLOW_CALLS.get(f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}")
    return None


def _is_test_helper(obj) -> bool:
    """A function or class written under tests/ (its code is followed like the test's own)."""
    if inspect.isfunction(obj):
        source = obj.__code__.co_filename
    elif inspect.isclass(obj):
        source = getattr(sys.modules.get(obj.__module__), "__file__", None)
    else:
        return False
    return source is not None and Path(source).resolve().is_relative_to(TESTS_DIR)


def _helper_functions(obj) -> list:
    if inspect.isclass(obj):
        return [f for f in vars(obj).values() if inspect.isfunction(f)]
    return [obj]


class SlowCode:
    """Finds why a function is slow from the names its code uses; results are kept per code object.

    A reason reads "what it does (via name > name ...)": the chain of names from the test to the call.
    """

    def __init__(self) -> None:
        self._found: dict[types.CodeType, Optional[tuple[str, list[str]]]] = {}

    def why(self, func) -> Optional[str]:
        found = self._search(func)
        return f"{found[0]} (via {' > '.join(found[1])})" if found else None

    def _search(self, func) -> Optional[tuple[str, list[str]]]:
        func = inspect.unwrap(func)
        code = getattr(func, "__code__", None)
        if code is None:
            return None
        if code not in self._found:
            self._found[code] = None  # a helper that calls itself (or a cycle) is not followed twice
            self._found[code] = self._search_code(code, func.__globals__)
        return self._found[code]

    def _search_code(self, code: types.CodeType, env: dict) -> Optional[tuple[str, list[str]]]:
        names = {name for co in _code_objects(code) for name in co.co_names}
        for name in sorted(names):
            obj = env.get(name, getattr(builtins, name, None))
            if what := _slow_object(obj):
                return what, [name]
            if found := self._search_attributes(obj, names) or self._search_helper(obj):
                return found[0], [name] + found[1]
        return None

    @staticmethod
    def _search_attributes(obj, names: set[str]) -> Optional[tuple[str, list[str]]]:
        """``module.function`` in the code: the attribute names the code uses, looked up on a module it names."""
        if not isinstance(obj, types.ModuleType):
            return None
        for attr in sorted(names):
            if what := _slow_object(vars(obj).get(attr)):  # never a module __getattr__ (numpy warns)
                return what, [attr]
        return None

    def _search_helper(self, obj) -> Optional[tuple[str, list[str]]]:
        if not _is_test_helper(obj):
            return None
        return next((found for f in _helper_functions(obj) if (found := self._search(f))), None)


def _fixture_functions(item) -> list:
    """The functions of every fixture the test uses (through other fixtures too) that tests/ defines."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    found = []
    for name in item.fixturenames:
        for fixturedef in info.name2fixturedefs.get(name, ()):
            if _is_test_helper(fixturedef.func):
                found.append(fixturedef.func)
    return found


def why_slow(item, code: SlowCode) -> Optional[str]:
    """Why a collected test is slow, or None."""
    nodeid = item.nodeid
    for prefix, why in SLOW_TESTS.items():
        if nodeid == prefix or nodeid.startswith(prefix + "::") or nodeid.startswith(prefix + "["):
            return why
    function = getattr(item, "function", None)
    if function is not None and (why := code.why(function)):
        return why
    for fixture in _fixture_functions(item):
        if why := code.why(fixture):
            return f"{why} (fixture {fixture.__name__})"
    return None


@pytest.hookimpl(tryfirst=True)  # before -m deselects by mark
def pytest_collection_modifyitems(config, items) -> None:
    code = SlowCode()
    slow = 0
    for item in items:
        if item.get_closest_marker("slow") is None:
            why = why_slow(item, code)
            if why is None:
                continue
            item.add_marker(pytest.mark.slow(reason=why))
        slow += 1
    config.stash[_COUNTS] = (slow, len(items))


def pytest_report_collectionfinish(config, start_path, items) -> list[str]:
    slow, total = config.stash.get(_COUNTS, (0, 0))
    return [f"tiers: {slow} slow and {total - slow} fast tests collected (make test-fast runs the fast ones)"]


# ---------------------------------------------------------------- the watch (while tests run)

_COUNTS = pytest.StashKey[tuple]()
_STARTED: list[str] = []  # what the running test started
_WATCHING = [False]
_UNMARKED: dict[str, list[str]] = {}  # node id -> what it started, for tests not marked slow
_HEAVY: dict[str, float] = {}  # node id -> CPU seconds, for tests not marked slow over CPU_NOTE_SECONDS


def _record(what: str) -> None:
    if _WATCHING[0] and what not in _STARTED:
        _STARTED.append(what)


def _wrap(owner, name: str, describe: Callable[..., Optional[str]]) -> None:
    """Record ``describe(*args, **kwargs)`` each time ``owner.name`` is called, then call it."""
    original = getattr(owner, name)
    if getattr(original, "_tiers_watch", False):
        return

    def watched(*args, **kwargs):
        what = describe(*args, **kwargs)
        if what:
            _record(what)
        return original(*args, **kwargs)

    watched._tiers_watch = True
    watched.__wrapped__ = original
    setattr(owner, name, watched)


def _child_process(popen, args, *rest, **kwargs) -> Optional[str]:
    """A child Python (the interpreter, curator, the bundle's executables) costs seconds of imports; a
    system tool asked a question (lscpu, ldd) costs milliseconds and is not a slow test."""
    argv = [args] if isinstance(args, (str, bytes)) else list(args)
    program = Path(str(argv[0]).split()[0] if argv else "").name
    if not (program.startswith("python") or program.startswith("curator") or str(argv[0]) == sys.executable):
        return None
    return "starts a child process: " + " ".join(str(a) for a in argv[:3])


def _generation_model(llama, *args, **kwargs) -> Optional[str]:
    if kwargs.get("embedding"):
        return None  # the MiniLM embedder: a quarter of a second, not a slow test
    if kwargs.get("vocab_only"):
        return None  # the tokenizer alone (generation.kinds reads the bundled model's words): no weights loaded
    path = kwargs.get("model_path", args[0] if args else "")
    return f"loads the GGUF model {Path(str(path)).name}"


def _patch_llama(module) -> None:
    _wrap(module.Llama, "__init__", _generation_model)


def _patch_umap(module) -> None:
    _wrap(module.UMAP, "fit", lambda *a, **k: "runs UMAP")


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    """Patches a module the moment it is first imported, so the watch costs no import of its own
    (llama_cpp and umap stay unimported in tests that never use them)."""

    def __init__(self, patches: dict[str, Callable]) -> None:
        self.patches = patches

    def find_spec(self, name, path, target=None):
        if name not in self.patches:
            return None
        spec = next((s for f in sys.meta_path if f is not self and hasattr(f, "find_spec")
                     if (s := f.find_spec(name, path, target)) is not None), None)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        patch, exec_module = self.patches.pop(name), spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            patch(module)

        spec.loader.exec_module = exec_and_patch  # a loader object per module file: only this one changes
        return spec


def install_watch() -> None:
    """Idempotent: an inner pytest run (pytester) configures the plugin again."""
    if any(isinstance(f, _PatchAfterImport) for f in sys.meta_path):
        return
    _wrap(subprocess.Popen, "_execute_child", _child_process)
    _wrap(multiprocessing.process.BaseProcess, "start", lambda *a, **k: "starts a worker process")
    _wrap(socketserver.BaseServer, "__init__", lambda server, *a, **k: f"starts a server ({type(server).__name__})")
    patches = {"llama_cpp.llama": _patch_llama, "umap.umap_": _patch_umap}
    for name in list(patches):
        if name in sys.modules:
            patches.pop(name)(sys.modules[name])
    sys.meta_path.insert(0, _PatchAfterImport(patches))  # also the mark that the watch is installed


def _fast_tier_only(config) -> bool:
    """True when this run leaves the slow tests out (``-m "not slow"``)."""
    return "not slow" in " ".join((config.getoption("markexpr", "") or "").split())


SLOW_MARK_HELP = ("slow: loads the bundled model, starts a server or a child process, or runs UMAP; marked "
                  "automatically by tests/tiers.py, run by `make test`, left out by `make test-fast`")


def pytest_configure(config) -> None:
    if not any(line.startswith("slow:") for line in config.getini("markers")):  # pyproject.toml holds it
        config.addinivalue_line("markers", SLOW_MARK_HELP)
    install_watch()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    _STARTED.clear()
    _WATCHING[0] = True
    return (yield)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item):
    cpu = time.process_time()
    result = yield  # a test that failed already is reported as it failed
    cpu = time.process_time() - cpu
    if cpu > CPU_NOTE_SECONDS and item.get_closest_marker("slow") is None:
        _HEAVY[item.nodeid] = cpu
    if _STARTED and item.get_closest_marker("slow") is None:
        _UNMARKED[item.nodeid] = list(_STARTED)
        if _fast_tier_only(item.config):
            pytest.fail(f"this test is not marked slow but it {'; '.join(_STARTED)}: {_STRICT_HELP}", pytrace=False)
    return result


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item, nextitem):
    try:
        return (yield)
    finally:
        _WATCHING[0] = False


def pytest_terminal_summary(terminalreporter) -> None:
    if _UNMARKED:
        terminalreporter.section("tests that are slow but not marked slow")
        for nodeid, started in _UNMARKED.items():
            terminalreporter.line(f"{nodeid}: {'; '.join(started)}")
        terminalreporter.line(_STRICT_HELP)
    if _HEAVY:
        terminalreporter.section(f"fast-tier tests over {CPU_NOTE_SECONDS:g} s of CPU (candidates for SLOW_TESTS)")
        for nodeid, cpu in sorted(_HEAVY.items(), key=lambda kv: -kv[1]):
            terminalreporter.line(f"{cpu:7.1f} s CPU  {nodeid}")
