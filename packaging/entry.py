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


if __name__ == "__main__":
    multiprocessing.freeze_support()
    if runs_the_cli(sys.executable):
        from curator.cli.main import cli

        sys.exit(cli(prog_name="curator"))
    from curator.gui.app import main

    sys.exit(main())
