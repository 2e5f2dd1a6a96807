"""Drive the app offscreen on the sample corpus and save one PNG per tab to docs/screenshots/."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from curator.core import corpus  # noqa: E402
from curator.core.ingest import ingest  # noqa: E402
from curator.core.queries import add_query  # noqa: E402
from curator.core.resources import sample_corpus_dir  # noqa: E402
from curator.core.store import open_project  # noqa: E402


def build_project(path: Path) -> None:
    db = open_project(path, create=True)
    ingest(db, [sample_corpus_dir()])
    chunks = corpus.list_chunks(db)
    with db.conn:
        for i, c in enumerate(chunks[:40:4]):
            add_query(db, f"What does the guide say about {c['title'].split('>')[-1].strip().lower()}?", "synthetic",
                      query_type="factoid", reference=c["text"][:90], gold_chunk_ids=[c["id"]])
    db.close()


def main(out: str = "docs/screenshots") -> None:
    from curator.gui.app import _style
    from curator.gui.window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    _style(app)
    tmp = Path(tempfile.mkdtemp())
    build_project(tmp / "demo.curator")
    win = MainWindow(tmp / "demo.curator", settings=QSettings(str(tmp / "s.ini"), QSettings.IniFormat), reviewer="demo")
    win.resize(1200, 760)
    win.show()
    Path(out).mkdir(parents=True, exist_ok=True)
    for i in range(win.tabs.count()):
        win.tabs.setCurrentIndex(i)
        app.processEvents()
        name = win.tabs.tabText(i).lower().replace(" / ", "_").replace(" ", "_")
        win.grab().save(str(Path(out) / f"{name}.png"))
        print(Path(out) / f"{name}.png")
    win.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
