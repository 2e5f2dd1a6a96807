"""The pooled results of the review row (review.pool): the top results of each retriever under
evaluation that are not gold and not graded yet, each marked with who found it at which rank
("bm25 #2, dense #1"), shown under the suggestions; and the worker that pools the queue's rows.

The reviewer moves a marker through them with the keyboard and grades the marked one with one key
(review_keys). Rendering is the suggestions panel's (plain text with character formats, the
question's words highlighted), so corpus text cannot inject markup."""

from __future__ import annotations

from typing import Optional

import sqlite_utils
from PySide6.QtGui import QTextCursor

from curator.core.review import pool
from curator.gui.suggestions_panel import ChunkListBox, ChunkListPanel, render_chunks

EMPTY_TEXT = {
    "not_pooled": ("No pooled results: rows of the review queue get them (curator pool PROJECT QUERY_ID pools "
                   "any row)."),
    "computing": "Pooling the retrievers' top results for this row (progress below)…",
    "all_graded": "Every pooled result of this row is gold or graded.",
    "stopped": "Pooling was stopped before this row's results. curator pool PROJECT pools them.",
    "failed": "Pooled results could not be computed: {error}.",
}
# Shown above the list while a re-ingest has left the row's pool out of date (the list is still the
# active chunks: a retired one is never offered; grades given are kept whatever the pool holds).
OUTDATED_TEXT = {
    "computing": "The corpus changed since this row was pooled: pooling again (progress below)…",
    "waiting": "The corpus changed since this row was pooled; its pool is computed again after the work in progress.",
    "stopped": ("The corpus changed since this row was pooled and pooling again was stopped: "
                "curator pool PROJECT computes it, or reopen the tab."),
    "failed": "The corpus changed since this row was pooled; pooling again failed: {error}.",
    "not_queued": ("The corpus changed since this row was pooled; it is not in the review queue, so "
                   "curator pool PROJECT --all computes it again."),
}


class PoolPanel(ChunkListPanel):
    """The pooled results; the review view's keys move the marker and grade."""

    def show_pool(self, entries: list[dict], current: int, question: str,
                  suggested: Optional[dict[str, int]] = None) -> int:
        """Render core's pooled entries with the marker on ``current`` (0-based); scrolls to it. An
        entry that is also suggestion N (``suggested``: chunk id -> N) says so: key N takes it too."""
        rows = []
        for i, entry in enumerate(entries):
            marker = "▶ " if i == current else "   "
            number = (suggested or {}).get(entry["chunk_id"])
            head = [(f"{marker}{entry['position']}  ", "head")]
            if number is not None:
                head.append((f"suggestion {number} · ", "gold"))
            rows.append((head + [(f"{pool.found_by_text(entry)}   ", "found")], entry))
        self.highlighted = render_chunks(self, rows, question, marked=current)
        self._scroll_to(current)
        return self.highlighted

    def _scroll_to(self, index: int) -> None:
        """Keep the marked entry in view: each entry is three blocks (head, snippet, blank)."""
        block = self.document().findBlockByNumber(index * 3)
        if block.isValid():
            cursor = QTextCursor(block)
            self.setTextCursor(cursor)
            self.ensureCursorVisible()


class PoolBox(ChunkListBox):
    """Title naming the keys, the marked list or one line saying why there is none, and the worker
    that pools the queued rows without a pool."""

    failure_title = "Pooling failed"
    kept_noun = "pools"

    def __init__(self, db: sqlite_utils.Database, title: str, parent=None) -> None:
        super().__init__(db, title, PoolPanel(), "poolReason", parent)
        self.entries: list[dict] = []
        self.current = 0
        self.suggested: dict[str, int] = {}

    def show_for(self, query: Optional[dict], keep_place: bool = False,
                 suggested: Optional[dict[str, int]] = None) -> list[dict]:
        """Show QUERY's pooled results, or why there is none. ``keep_place``: the same row again
        (after a grade), so the marker stays at its index, which is now the next result.
        ``suggested``: chunk id -> its suggestion number, marked on the entries that are one."""
        self.suggested = dict(suggested or {})
        self.entries = pool.pooled(self.db, query["id"]) if query else []
        self.current = min(self.current, len(self.entries) - 1) if keep_place else 0
        self.current = max(self.current, 0)
        error = (self.last_error or ("",))[0]
        if query and pool.is_outdated(self.db, query["id"]):
            text = OUTDATED_TEXT[self._outdated_reason(query)].format(error=error)
        else:
            reason = self._reason(query) if query and not self.entries else ""
            text = EMPTY_TEXT[reason].format(error=error) if reason else ""
        self.reason.setText(text)
        self.reason.setVisible(bool(text))
        self.panel.setVisible(bool(self.entries))
        if self.entries:
            self.panel.show_pool(self.entries, self.current, query["text"], self.suggested)
        return self.entries

    def _outdated_reason(self, query: dict) -> str:
        if query["id"] in self.computing:
            return "computing"
        if self.last_error is not None:
            return "failed"
        if self.stopped:
            return "stopped"
        # the worker pools the queue's rows only (fill_missing); a row opened from elsewhere waits for nothing
        return "waiting" if query["id"] in pool.needing_pool(self.db) else "not_queued"

    def _reason(self, query: dict) -> str:
        if query["id"] in self.computing:
            return "computing"
        if pool.is_computed(self.db, query["id"]):
            return "all_graded"
        if self.last_error is not None:
            return "failed"
        return "stopped" if self.stopped else "not_pooled"

    def move(self, step: int, query: Optional[dict]) -> Optional[dict]:
        """Move the marker by ``step`` (clamped); returns the marked entry."""
        if not self.entries:
            return None
        self.current = max(0, min(len(self.entries) - 1, self.current + step))
        self.panel.show_pool(self.entries, self.current, query["text"] if query else "", self.suggested)
        return self.entries[self.current]

    def marked(self) -> Optional[dict]:
        return self.entries[self.current] if self.entries else None

    def fill_missing(self) -> None:
        """Pool, in a worker, the queued rows that have no pool yet or one a re-ingest left out of date
        (bench/pool_refresh.py measures what that costs: the chunk vectors are cached, so mostly bm25's
        and tfidf's fits). After a stop, only a new start (the tab reopened) tries again."""
        if self.busy() or self.closed:
            return
        todo = pool.needing_pool(self.db)
        if todo:
            stale = len(set(todo) & set(pool.outdated(self.db)))
            what = f"{len(todo)} queued {'row' if len(todo) == 1 else 'rows'}" + (
                f" ({stale} out of date after a re-ingest)" if stale else "")
            self._start(pool.fill_missing, todo, f"Pooling the retrievers' top results for {what}…")

    def finished_text(self, result: dict) -> str:
        n = result["queries"]
        return f"Pooled {', '.join(result['retrievers'])} for {n} {'row' if n == 1 else 'rows'}."
