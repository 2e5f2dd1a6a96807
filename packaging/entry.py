"""Frozen-bundle entry point of both executables: ``curator-gui`` (the app) and ``curator`` (the CLI).

One PyInstaller Analysis serves both, so the libraries and models are collected once; the
executable's own name picks what runs. The CLI is the bundle's headless entry: the build's smoke
test runs the whole job through it (new project, ingest, generate, cluster, export).

freeze_support() must run first: clustering starts a spawn worker process, and in a frozen
app that child re-executes this binary with --multiprocessing-fork.
"""

import multiprocessing
import sys
from pathlib import Path


def runs_the_cli(executable: str) -> bool:
    """True for the ``curator`` executable (``curator.exe`` on Windows), False for ``curator-gui``."""
    return Path(executable).stem == "curator"


def run_as_python(argv: list) -> bool:
    """Run ``-c CODE ARGS...`` or ``-m MODULE ARGS...`` as python would, and say whether it did.

    `curator doctor` runs its crash-prone checks (a llama.cpp prompt, Qt's start) in a child
    ``sys.executable -c ...`` / ``-m curator.gui.qt_probe``; in the bundle sys.executable is this binary.
    """
    if len(argv) < 3 or argv[1] not in ("-c", "-m"):
        return False
    flag, target, rest = argv[1], argv[2], argv[3:]
    if flag == "-c":
        sys.argv = ["-c", *rest]
        exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})
    else:
        import runpy

        sys.argv = [target, *rest]
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    return True


if __name__ == "__main__":
    multiprocessing.freeze_support()
    if run_as_python(sys.argv):
        sys.exit(0)
    if runs_the_cli(sys.executable):
        from curator.cli.main import cli

        sys.exit(cli(prog_name="curator"))
    from curator.gui.app import main

    sys.exit(main())
