"""Shared plumbing for CLI commands: open a project, print text or JSON, fail with one line.

Everything a command prints goes through ``echo`` (``emit`` and the error lines use it), which
neutralises control characters: documents, logs and traces are other people's text, and an
escape sequence in them would otherwise act on the reader's terminal (clear the screen, set the
window title, write the clipboard with OSC 52, overprint a line with a carriage return).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import sys
import traceback
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import click

from curator.core.errors import BadOption, CuratorError
from curator.core.store import open_project


# C0 controls except tab and newline (which lay text out), DEL, and the C1 controls (U+0080-U+009F:
# CSI and OSC have one-character forms there). ESC is among them, so a whole escape sequence is inert.
# Bidirectional overrides and isolates (U+202A-E, U+2066-9, the marks U+200E/F and U+061C) are
# neutralised too: printed raw they reorder what the reader sees ("Trojan Source", CVE-2021-42574).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# json.dumps escapes C0 itself; DEL, C1 and the bidi controls it leaves raw (\\uXXXX parses back the same).
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """``text`` with each control character shown as a visible escape (ESC as ``\\x1b``, RLO as ``\\u202e``)."""
    return _CONTROL.sub(_visible_escape, text)


def _visible_escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def echo(text: Any = "", err: bool = False, nl: bool = True) -> None:
    """click.echo for text meant for a terminal: the one place control characters are neutralised."""
    click.echo(terminal_safe(str(text)), err=err, nl=nl)


class CuratorGroup(click.Group):
    """Turns a CuratorError anywhere in a command into 'Error: ...' on stderr and exit 1 (a
    BadOption into the same line and exit 2, a usage error)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BadOption as exc:  # a value no run could accept: a usage error, as click reports its own
            echo(f"Error: Invalid value for '{exc.option}': {exc}", err=True)
            ctx.exit(2)
        except CuratorError as exc:
            echo(f"Error: {exc}", err=True)
            ctx.exit(1)
        except sqlite3.DatabaseError as exc:  # e.g. a disk that filled up mid-command: say so, no traceback
            if os.environ.get("CURATOR_DEBUG"):
                traceback.print_exc()
            echo(f"Error: the project file could not be read or written ({exc}); work committed before "
                 "this point is kept.", err=True)
            ctx.exit(1)


@contextmanager
def project(path: str, create: bool = False, reads_only: bool = False) -> Iterator[Any]:
    """The open project; ``reads_only`` for a command that never writes to it, which then also works
    on a read-only project (opened read-only)."""
    db = open_project(path, create=create, reads_only=reads_only)
    try:
        yield db
    finally:
        db.close()


def emit(data: Any, as_json: bool, render: Callable[[Any], str] | None = None) -> None:
    """Print one JSON document (for scripts) or the human rendering (through ``echo``).

    JSON keeps every character of the data: json.dumps escapes C0 controls, and DEL and C1 are
    escaped here the same way (\\u0080...), which parses back to the same text."""
    if as_json:
        text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
        click.echo(_JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text))
    elif render is not None:
        echo(render(data))


def table(rows: list[dict], columns: list[str], widths: dict[str, int] | None = None) -> str:
    """A plain fixed-width table; long cells are cut with an ellipsis."""
    widths = widths or {}
    def cell(value: Any, column: str) -> str:
        text = " ".join(str("" if value is None else value).split())
        limit = widths.get(column, 40)
        return text if len(text) <= limit else text[: limit - 1] + "…"
    cells = [[cell(r.get(c), c) for c in columns] for r in rows]
    sizes = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(s) for c, s in zip(columns, sizes))]
    lines += ["  ".join(v.ljust(s) for v, s in zip(row, sizes)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


def progress_printer(label: str) -> Callable[[int, int, str], None]:
    """A progress callback that redraws one line on a terminal and stays quiet otherwise."""
    interactive = sys.stderr.isatty()
    def on_progress(done: int, total: int, message: str) -> None:
        if message.startswith("warning: "):  # a line of its own, kept: a redrawn line would hide it at once
            click.echo(("\r" if interactive else "") + terminal_safe(message), err=True)
        elif interactive and total:
            # the leading carriage return is ours (the line redraws); the message's own are shown
            click.echo(f"\r{label} {done}/{total} {terminal_safe(message[:50]):<50}", err=True, nl=done >= total)
    return on_progress


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document to stdout.")


def render_stats(stats: dict) -> str:
    """The project counts of ``curator stats``, one aligned line each."""
    lines = []
    for key, value in stats.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items()) or "-"
        lines.append(f"{key.replace('_', ' '):<22} {value}")
    return "\n".join(lines)


@contextmanager
def terminate_as_interrupt() -> Iterator[dict]:
    """SIGTERM (``kill``, a supervisor, a logout) stops the work inside as Ctrl-C does, so a long
    command ends its own way (a generation run is marked cancelled, not left 'running'). Yields a
    dict whose ``terminated`` says whether it came, so the command can exit as a terminated process
    does (143) after printing what it kept. Only in the main thread, where Python takes signals."""
    import signal
    import threading

    state = {"terminated": False}
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def interrupt(signum, frame):
        if state["terminated"]:
            return  # a second SIGTERM must not interrupt the clean-up the first one started
        state["terminated"] = True
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield state
    finally:
        signal.signal(signal.SIGTERM, previous)
