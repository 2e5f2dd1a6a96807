"""Drive the app offscreen on the sample corpus and save one PNG per tab to docs/screenshots/.

Usage: python scripts/screenshots.py [OUT_DIR] [--backend bundled|scripted]

The demo project is built with the bundled model (ingest, generate, import the sample log,
cluster, queue, a few review decisions, an export and an evaluation); then the Generate tab
makes a few more rows live, so its lists are shown filling. Where llama.cpp cannot run
(``--backend scripted``, or a build that crashes), a scripted model stands in and the script
says so.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Settings (recent projects) go to a throwaway folder, never the user's own (curator.gui.settings);
# the app processes started from here inherit it.
os.environ["CURATOR_CONFIG_DIR"] = tempfile.mkdtemp(prefix="curator-bench-settings-")

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from curator.core.generation.backends import FakeBackend  # noqa: E402
from curator.core.clustering.cluster import cluster_queries, shutdown_worker  # noqa: E402
from curator.core.evaluation.evaluate import evaluate  # noqa: E402
from curator.core.export.writers import export  # noqa: E402
from curator.core.generation.filters import tokens  # noqa: E402
from curator.core.generation.generate import GenerationConfig, generate  # noqa: E402
from curator.core.corpus.ingest import ingest  # noqa: E402
from curator.core.queries.logs import import_log  # noqa: E402
from curator.core.queries.rows import list_queries  # noqa: E402
from curator.core.resources import resources_dir, sample_corpus_dir  # noqa: E402
from curator.core.review.decisions import decide  # noqa: E402
from curator.core.retrieval.suggest import suggest, suggested_ids  # noqa: E402
from curator.core.review.sample import build_queue  # noqa: E402
from curator.core.store import open_project  # noqa: E402

ROWS = 30
WINDOW = (1280, 800)


def llama_cpp_works() -> bool:
    """Probe in a child process, so a crashing llama.cpp build cannot take the script down."""
    code = ("from llama_cpp import Llama\nfrom curator.core.resources import bundled_model_path\n"
            "Llama(model_path=str(bundled_model_path()), n_ctx=256, verbose=False)('Hello there, my friend', max_tokens=1)\n")
    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=180).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def scripted_reply(messages, _calls=[0]) -> str:
    """A stand-in model that asks about each passage's own words (every sixth reply is malformed)."""
    _calls[0] += 1
    prompt = messages[-1]["content"]
    words = [w for w in tokens(prompt.split("Passage", 1)[1]) if len(w) > 3][:8]
    if _calls[0] % 6 == 0:
        return "Sure! Here is a good question about this passage."
    if "does NOT answer" in prompt:
        return f"Question: Can {words[0]} be paid for in seashells?\nAnswer: not stated\n"
    if "Query:" in prompt:
        return f"Query: {' '.join(words[:3])}\nAnswer: {' '.join(words[:4])}\n"
    return f"Question: How does {words[1]} work with {words[2]} and {words[3]}?\nAnswer: {' '.join(words[:6])}\n"


class ScriptedBackend(FakeBackend):
    id = "scripted"  # shown in the Generate tab, so a screenshot never passes for the real model


def backend_factory(kind: str):
    """None means core's default (the bundled GGUF through llama.cpp)."""
    return (lambda config: ScriptedBackend(scripted_reply)) if kind == "scripted" else None


def build_project(path: Path, kind: str) -> None:
    db = open_project(path, create=True)
    try:
        ingest(db, [sample_corpus_dir()])
        factory = backend_factory(kind)
        generate(db, GenerationConfig(count=ROWS, seed=1), backend=factory(None) if factory else None)
        import_log(db, resources_dir() / "sample_logs" / "queries.jsonl")
        cluster_queries(db, seed=0)
        build_queue(db, size=30)
        suggest(db)  # what the GUI's queue worker and `curator sample` do: suggestions for rows without gold
        queued = [q for q in list_queries(db) if q["queued"] and q["source"] == "synthetic"]
        for q in queued[:12]:
            decide(db, q["id"], "unanswerable" if q["query_type"] == "unanswerable" else "approve", "demo")
        export(db, path.parent / "export" / "gold.jsonl")
        evaluate(db)
    finally:
        db.close()


def live_generation(app: QApplication, view, count: int = 4, timeout_s: float = 900) -> None:
    """Run a short generation in the Generate tab, so its lists show rows as they are made."""
    view.count.setValue(count)
    if view.start() is None:
        raise SystemExit(f"could not start generation: {view.last_error}")
    deadline = time.monotonic() + timeout_s
    while view.busy() and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.02)
    if view.last_error:
        raise SystemExit(f"generation failed: {view.last_error[0]}")


def review_log_query(app: QApplication, win, out: Path) -> None:
    """The review view on a queued log query with its suggestions (the first taken as gold with key 1),
    then the G dialog searching from it."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    view = win.review_view
    logs = [q for q in list_queries(win.db, source="log") if q["queued"] and q["status"] == "pending"]
    with_suggestions = suggested_ids(win.db, [q["id"] for q in logs])
    chosen = max(logs, key=lambda q: (q["id"] in with_suggestions, q["negative_count"], q["frequency"]))
    win.tabs.setCurrentWidget(view)
    view.show_query(chosen["id"])
    QTest.keyClick(view, Qt.Key_1)  # the first suggestion taken as gold; the row stays pending
    for _ in range(5):
        app.processEvents()
    win.grab().save(str(out / "review_log_query.png"))
    print(out / "review_log_query.png")
    dialog = view.open_gold_dialog()
    dialog.results.setCurrentRow(1)
    dialog.add_selected()
    dialog.set_grade(2)
    dialog.results.setFocus()
    for _ in range(5):
        app.processEvents()
    dialog.grab().save(str(out / "gold_dialog.png"))
    print(out / "gold_dialog.png")
    dialog.reject()


def tab_file(name: str) -> str:
    return name.lower().replace(" / ", "_").replace(" ", "_") + ".png"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="docs/screenshots")
    parser.add_argument("--backend", choices=("auto", "bundled", "scripted"), default="auto")
    args = parser.parse_args(argv)
    kind = args.backend
    if kind == "auto":
        kind = "bundled" if llama_cpp_works() else "scripted"
        if kind == "scripted":
            print("llama.cpp cannot evaluate a prompt here: using the scripted stand-in model", file=sys.stderr)
    from curator.gui.app import _style
    from curator.gui.window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    _style(app)
    tmp = Path(tempfile.mkdtemp())
    project = tmp / "demo.curator"
    build_project(project, kind)
    win = MainWindow(project, settings=QSettings(str(tmp / "s.ini"), QSettings.IniFormat), reviewer="demo")
    win.resize(*WINDOW)
    win.show()
    win.generate_view.backend_factory = backend_factory(kind)
    live_generation(app, win.generate_view)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for i in range(win.tabs.count()):
        win.tabs.setCurrentIndex(i)
        for _ in range(5):
            app.processEvents()
        path = out / tab_file(win.tabs.tabText(i))
        win.grab().save(str(path))
        print(path)
    review_log_query(app, win, out)
    win.close()
    shutdown_worker()
    return 0


if __name__ == "__main__":
    sys.exit(main())
