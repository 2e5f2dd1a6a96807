"""A GGUF file's own chat template, rendered under limits: in a child process, with a deadline,
an output cap and a memory cap.

Why: the template is Jinja code from whoever made the file. llama-cpp-python renders it in a
sandbox (no file or attribute escapes got through), but in-process: a template that loops or
allocates without bound hangs the thread that renders it. Ctrl-C stops the CLI; the GUI's
Cancel cannot stop a thread stuck in Jinja. Here a render that overruns its deadline is killed
with its process, and any failure (a syntax error, a template that raises, one too slow or too
big) is one line naming the file and saying how to get past it: --chat-format.

The child renders with llama-cpp-python's own ``Jinja2ChatFormatter`` (its environment,
extensions and globals), so the prompts are the very ones llama-cpp-python would make. It stays
up for the backend's life: one pipe round trip per prompt, small beside evaluating the prompt.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import weakref
from pathlib import Path
from typing import Optional

from curator.core import processes
from curator.core.errors import ModelFileError

RENDER_SECONDS = 10.0  # a chat prompt renders in milliseconds; this is for a loaded machine
START_SECONDS = 120.0  # the child's start (spawn, import llama_cpp) on a busy machine
MAX_OUTPUT_CHARS = 4_000_000  # ~1M tokens: far past any context a prompt must fit
MEMORY_HEADROOM = 512 * 2**20  # what a render may allocate beyond the child's size once started


class TemplateGuard:
    """Renders one template in a child process; a failure is kept, so later calls fail at once."""

    def __init__(self, model_path, template: str, bos_token: str, eos_token: str,
                 render_seconds: Optional[float] = None, max_chars: Optional[int] = None):
        self.model_path = Path(model_path)
        self.template, self.bos_token, self.eos_token = template, bos_token, eos_token
        self.render_seconds = RENDER_SECONDS if render_seconds is None else render_seconds
        self.max_chars = MAX_OUTPUT_CHARS if max_chars is None else max_chars
        self._lock = threading.Lock()
        self._process = self._conn = None
        self._failure: Optional[str] = None
        with self._lock:
            self._start()

    def render(self, messages: list[dict]) -> str:
        """The prompt text for ``messages``; raises ModelFileError (one line) when it cannot be had."""
        with self._lock:
            if self._failure is not None:
                raise ModelFileError(self._failure)
            if not self._process.is_alive():  # e.g. killed from outside: a new one, once
                self._start()
            self._conn.send(messages)
            kind, value = self._receive(self.render_seconds, "render")
            if kind != "ok":
                self._fail(value)
            return value

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _start(self) -> None:
        self._stop()
        context = multiprocessing.get_context("spawn")  # never fork a process running llama.cpp's threads
        mine, theirs = context.Pipe()
        self._process = context.Process(target=_serve, name="curator-chat-template", daemon=True,
                                        args=(theirs, self.template, self.bos_token, self.eos_token, os.getpid(),
                                              self.max_chars))
        processes.start(self._process)
        theirs.close()
        self._conn = mine
        weakref.finalize(self, _kill, self._process)
        if self._receive(START_SECONDS, "start")[0] != "imported":
            self._fail("its renderer could not start")
        kind, value = self._receive(self.render_seconds, "compile")
        if kind != "ready":
            self._fail(value)

    def _receive(self, seconds: float, step: str) -> tuple:
        if not self._conn.poll(seconds):
            self._fail(f"did not finish within {seconds:g} s ({step}); an endless loop?")
        try:
            return self._conn.recv()
        except (EOFError, OSError):  # the child died: most often the memory cap
            self._fail(f"its renderer ended during {step} (it needed more than "
                       f"{MEMORY_HEADROOM // 2**20} MB of memory, or was killed)")

    def _fail(self, reason: str) -> None:
        self._stop()
        self._failure = (f"{self.model_path}: its chat template cannot be used ({reason}); pass --chat-format NAME "
                         "(chatml, llama-3, gemma, mistral-instruct, ...) to use a named prompt format instead.")
        raise ModelFileError(self._failure)

    def _stop(self) -> None:
        if self._process is not None:
            _kill(self._process)
        if self._conn is not None:
            self._conn.close()
        self._process = self._conn = None


def _kill(process) -> None:
    if process.is_alive():
        process.kill()
    process.join(5)


def _serve(conn, template: str, bos_token: str, eos_token: str, parent_pid: int, max_chars: int) -> None:
    """The child: compile the template, then render each list of messages sent, until the pipe closes."""
    processes.die_with_parent(parent_pid)
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    conn.send(("imported", None))
    _limit_memory(MEMORY_HEADROOM)
    try:
        formatter = Jinja2ChatFormatter(template=template, eos_token=eos_token, bos_token=bos_token)
    except Exception as exc:  # a syntax error, most often
        conn.send(("error", _describe(exc)))
        return
    conn.send(("ready", None))
    while True:
        try:
            messages = conn.recv()
        except EOFError:
            return
        try:
            conn.send(("ok", _render(formatter, messages, max_chars)))
        except MemoryError:
            conn.send(("error", f"it needed more than {MEMORY_HEADROOM // 2**20} MB of memory"))
        except Exception as exc:  # the template raised: raise_exception(), an undefined name, 1/0, ...
            conn.send(("error", _describe(exc)))


class _TooLong(Exception):
    pass


def _render(formatter, messages: list[dict], max_chars: int) -> str:
    """As ``Jinja2ChatFormatter.__call__`` renders, but streamed, so a template that writes
    without end is stopped at ``max_chars`` instead of filling the memory first."""
    def raise_exception(message: str):
        raise ValueError(message)

    pieces, size = [], 0
    stream = formatter._environment.generate(
        messages=messages, eos_token=formatter.eos_token, bos_token=formatter.bos_token,
        raise_exception=raise_exception, add_generation_prompt=formatter.add_generation_prompt,
        functions=None, function_call=None, tools=None, tool_choice=None, strftime_now=formatter.strftime_now)
    for piece in stream:
        size += len(piece)
        if size > max_chars:
            raise _TooLong(f"its output passed {max_chars:,} characters")
        pieces.append(piece)
    return "".join(pieces)


def _describe(exc: Exception) -> str:
    """One line: the exception's kind and message (and the template line of a syntax error)."""
    if isinstance(exc, _TooLong):
        return str(exc)
    where = f" at line {exc.lineno}" if getattr(exc, "lineno", None) else ""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}{where}: {text[:200]}"


def _limit_memory(headroom: int) -> None:
    """Cap the child's address space at its size now plus ``headroom`` (Linux/Unix; else no cap)."""
    try:
        import resource

        with open("/proc/self/statm") as fh:
            size = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = size + headroom if hard == resource.RLIM_INFINITY else min(size + headroom, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, OSError, ValueError):
        pass
