"""CLI commands for teams of reviewers: ``agreement``."""

from __future__ import annotations

import click

from curator.cli.common import emit, json_option, project, table


@click.command()
@click.argument("project_path", metavar="PROJECT")
@json_option
def agreement(project_path, as_json):
    """Raw agreement and Cohen's kappa for each pair of reviewers on the queries both decided.

    \b
    Example:
        curator agreement handbook.curator --json
    """
    from curator.core.agreement import agreement as compute

    with project(project_path) as db:
        result = compute(db)
    emit(result, as_json, lambda r: table(r["pairs"], ["a", "b", "n", "agreement", "kappa"]) if r["pairs"]
         else "No query was decided by two reviewers yet.")


def register(cli: click.Group) -> None:
    cli.add_command(agreement)
