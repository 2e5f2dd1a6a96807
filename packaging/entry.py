"""Frozen-bundle entry point for the Curator GUI.

freeze_support() must run first: clustering starts a spawn worker process, and in a frozen
app that child re-executes this binary.
"""

import multiprocessing
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()
    from curator.gui.app import main

    sys.exit(main())
