"""CLI commands for the sample stage."""

from __future__ import annotations

import click


def register(cli: click.Group) -> None:
    """Add this module's commands to the curator group."""
