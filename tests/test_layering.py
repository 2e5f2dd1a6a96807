"""The dependency rules: core is headless; cli and gui never import each other; inside core each
stage imports only the stages below it, and no module imports itself round a cycle.

Every .py file (in every sub-folder) is parsed with ``ast`` and every Import/ImportFrom node is
checked, including imports inside functions (a lazy import breaks the rule just as much as a
top-level one). The stage rules play the part of import-linter's layer contracts.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "curator"
FORBIDDEN = {
    "core": ("PySide6", "shiboken6", "click", "curator.cli", "curator.gui"),
    "cli": ("curator.gui",),
    "gui": ("curator.cli", "click"),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) for every import in a file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                prefix = package[: len(package) - node.level + 1]
                base = ".".join(prefix + ([base] if base else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def _files(area: str) -> list[Path]:
    return sorted((PACKAGE / area).rglob("*.py"))


def _violations(area: str) -> list[str]:
    bad = []
    for path in _files(area):
        for line, name in imported_names(path):
            for banned in FORBIDDEN[area]:
                if name == banned or name.startswith(banned + "."):
                    bad.append(f"{path.relative_to(PACKAGE.parent)}:{line}: imports {name}")
    return bad


@pytest.mark.parametrize("area", sorted(FORBIDDEN))
def test_dependency_rule(area):
    if not (PACKAGE / area).is_dir():
        pytest.skip(f"curator/{area} does not exist yet")
    assert _violations(area) == []


def test_checker_sees_nested_and_relative_imports(tmp_path):
    """The checker itself must catch a lazy import and a relative 'from ..gui import x'."""
    fake = tmp_path / "curator"
    (fake / "core").mkdir(parents=True)
    (fake / "core" / "bad.py").write_text(
        "def f():\n    import PySide6.QtWidgets\n\ndef g():\n    from ..gui import window\n"
        "from curator import cli\n"
    )
    globals()["PACKAGE"] = fake
    try:
        found = _violations("core")
    finally:
        globals()["PACKAGE"] = Path(__file__).resolve().parent.parent / "curator"
    assert any("PySide6.QtWidgets" in v for v in found)
    assert any("curator.gui" in v for v in found)
    assert any("curator.cli" in v for v in found)


def test_core_imports_nothing_heavy_at_import_time():
    """Importing the whole core in a fresh interpreter must not load Qt or the heavy libraries.

    (click is not checked here: sqlite_utils itself imports it; the ast check above covers
    core's own imports of click.)
    """
    import subprocess
    import sys

    modules = sorted(_module_name(p) for p in _files("core"))
    code = ("import sys\n" + "".join(f"import {m}\n" for m in modules)
            + "heavy = [m for m in ('PySide6', 'llama_cpp', 'umap', 'sklearn', 'pypdf') if m in sys.modules]\n"
            + "print(','.join(heavy))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


# -- stages inside core ----------------------------------------------------------------------
# What each room of curator/core may import besides itself. The shared modules (errors,
# progress, files) come first; store imports no stage; a stage sees only the ones it builds on.
SHARED = {"errors", "progress", "files", "logfile", "cachefiles", "processes", "httpio"}
ALLOWED = {
    "errors": set(), "progress": set(), "files": {"errors"}, "logfile": set(), "resources": {"errors"},
    # child processes that die with their parent (the clustering worker, the chat template renderer)
    "processes": set(),
    # HTTP under a deadline and a reply cap, for both clients of OpenAI-compatible servers
    "httpio": {"errors"},
    # model files in the user's cache (checked by hash, rebuilt), numba's cache, the GGUF header check
    "cachefiles": {"errors", "files"},
    "store": {"errors"},
    "corpus": {"store", *SHARED},
    "queries": {"store", "corpus", *SHARED},
    "embedding": {"store", *SHARED},
    "retrieval": {"store", "corpus", "embedding", *SHARED},
    # answer-first generation checks each question against its answer sentence with the sentence embedder
    # and sizes a model from its GGUF header as `curator models` does (the mode follows the model)
    "generation": {"store", "corpus", "queries", "embedding", "resources", "modelfiles", *SHARED},
    # coverage-aimed generation weighs real traffic as the review queue does and takes the real
    # queries' suggested gold chunks
    "clustering": {"store", "embedding", "review", "retrieval", *SHARED},
    # review pools the top results of the retrievers under evaluation (and the saved eval runs' files)
    # for grading, as TREC judges a pool (review.pool)
    "review": {"store", "corpus", "queries", "retrieval", "evaluation", *SHARED},
    "export": {"store", "corpus", "queries", *SHARED},
    # evaluation may read export's file formats (qrels, runs) but nothing of the front ends
    "evaluation": {"store", "corpus", "queries", "embedding", "retrieval", "export", *SHARED},
    # diagnosis reads traces against the gold set; its default judge embeds with MiniLM, and
    # generation's backends are its LLM judges; a reviewer's claim verdict is journaled with the
    # review decisions (one undo history)
    "diagnosis": {"store", "corpus", "queries", "embedding", "generation", "retrieval", "evaluation", "review",
                  *SHARED},
    # doctor looks at the installed pieces: the bundled model, MiniLM's weights, generation's GGUF check
    "doctor": {"resources", "generation", "embedding", *SHARED},
    # the demo ends with suggested gold for its log queries, so review shows them on first use
    "demo": {"store", "corpus", "queries", "generation", "clustering", "review", "retrieval", "resources", *SHARED},
    # the models on this machine: headers only, the bundled model's path, the user's folders kept
    # beside the reviewer name (review.identity's config folder), and a project's runs by model hash
    "modelfiles": {"store", "resources", "review", *SHARED},
}


def _room(module: str) -> str | None:
    """The room of a core module name ('curator.core.corpus.ingest' -> 'corpus')."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["curator", "core"] else None


def _core_imports() -> dict[str, set[str]]:
    """Module -> the core modules it imports (a 'from pkg import name' counts as pkg.name
    when that is a module, else as pkg)."""
    modules = {_module_name(p): p for p in _files("core")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for _, imported in imported_names(path):
            if imported in modules and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def stage_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for module, targets in sorted(graph.items()):
        room = _room(module)
        if room is None:
            continue
        assert room in ALLOWED, f"curator/core/{room} has no rule in ALLOWED: add one"
        for target in sorted(targets):
            other = _room(target)
            if other and other != room and other not in ALLOWED[room]:
                bad.append(f"{module} imports {target} ({room} may not import {other})")
    return bad


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle found by a depth-first search (one path per cycle back-edge)."""
    found, state, stack = [], {}, []

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_each_stage_imports_only_what_it_builds_on():
    assert stage_violations(_core_imports()) == []


def test_no_import_cycle_in_core():
    # package __init__ files re-export their modules, so 'pkg -> pkg.mod' is not a cycle edge
    graph = {m: {t for t in ts if not m or not t.startswith(m + ".")} for m, ts in _core_imports().items()}
    assert cycles(graph) == []


def test_stage_checks_can_fail():
    graph = {"curator.core.store.connection": {"curator.core.corpus.ingest"},
             "curator.core.corpus.ingest": {"curator.core.corpus.chunking"},
             "curator.core.corpus.chunking": {"curator.core.corpus.ingest"}}
    assert stage_violations(graph) == ["curator.core.store.connection imports curator.core.corpus.ingest "
                                       "(store may not import corpus)"]
    assert cycles(graph) == [["curator.core.corpus.chunking", "curator.core.corpus.ingest", "curator.core.corpus.chunking"]]


def test_every_core_folder_is_a_room_with_a_rule():
    rooms = {p.name for p in (PACKAGE / "core").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    rooms |= {p.stem for p in (PACKAGE / "core").glob("*.py") if p.stem != "__init__"}
    assert rooms <= set(ALLOWED), rooms - set(ALLOWED)


# -- inside the GUI: no view imports another view ------------------------------------------
# A view is a tab (``*_view.py``); its parts are the dialogs and panels only it opens, listed
# here or named after it (``review_keys.py`` is a part of ``review_view.py``). A view and its
# parts import, of the GUI, only the shared modules and their own parts; the shared modules
# import no view and no part; only the window (and the app that opens it) puts views together.
GUI_SHARED = {"widgets", "models", "task_view", "workers", "crash", "chart", "empty_state", "highlight", "settings",
              "cluster_map", "qt_probe", "model_picker"}  # model_picker: the Generate and Diagnose tabs' model choice
GUI_ASSEMBLERS = {"window", "app", "__main__", "__init__"}
GUI_PARTS = {"gold_dialog": "review", "suggestions_panel": "review", "import_log_dialog": "queries"}


def gui_owner(module: str, views: set[str]) -> str | None:
    """The view ('review') a GUI module belongs to, as the view itself or as one of its parts."""
    if module in GUI_SHARED or module in GUI_ASSEMBLERS:
        return None
    if module.endswith("_view") and module[: -len("_view")] in views:
        return module[: -len("_view")]
    if module in GUI_PARTS:
        return GUI_PARTS[module]
    return next((view for view in sorted(views, key=len, reverse=True) if module.startswith(view + "_")), None)


def gui_imports() -> dict[str, set[str]]:
    """GUI module stem -> the GUI module stems it imports."""
    graph = {}
    for path in _files("gui"):
        names = {name.split(".")[2] for _, name in imported_names(path)
                 if name.startswith("curator.gui.") and len(name.split(".")) > 2}
        graph[path.stem] = names - {path.stem}
    return graph


def gui_violations(graph: dict[str, set[str]]) -> list[str]:
    views = {m[: -len("_view")] for m in graph if m.endswith("_view") and m not in GUI_SHARED}
    bad = []
    for module, targets in sorted(graph.items()):
        owner = gui_owner(module, views)
        if module not in GUI_SHARED | GUI_ASSEMBLERS and owner is None:
            bad.append(f"curator/gui/{module}.py is not classified: a view, a part of one, or shared?")
            continue
        for target in sorted(targets):
            if module in GUI_ASSEMBLERS or target in GUI_SHARED:
                continue
            if module in GUI_SHARED:
                bad.append(f"{module} (shared) imports {target}")
            elif gui_owner(target, views) != owner or target == f"{owner}_view":
                bad.append(f"{module} imports {target} (a view imports only shared modules and its own parts)")
    return bad


def test_no_gui_view_imports_another_view():
    assert gui_violations(gui_imports()) == []


def test_gui_check_can_fail():
    graph = {"widgets": set(), "window": {"review_view", "queries_view"}, "review_view": {"widgets", "review_keys",
             "gold_dialog"}, "review_keys": {"widgets"}, "gold_dialog": set(), "queries_view": {"review_view"},
             "import_log_dialog": {"queries_view"}, "task_view": {"queries_view"}, "stray": set()}
    assert gui_violations(graph) == [
        "import_log_dialog imports queries_view (a view imports only shared modules and its own parts)",
        "queries_view imports review_view (a view imports only shared modules and its own parts)",
        "curator/gui/stray.py is not classified: a view, a part of one, or shared?",
        "task_view (shared) imports queries_view"]
