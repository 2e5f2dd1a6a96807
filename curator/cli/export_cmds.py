"""CLI command for export."""

from __future__ import annotations

import click

from curator.cli.common import emit, json_option, project


@click.command()
@click.argument("project_path", metavar="PROJECT")
@click.argument("out", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["jsonl", "beir", "trec"]), default="jsonl", show_default=True)
@click.option("--status", default="approved,unanswerable", show_default=True, help="Comma-separated statuses to export.")
@click.option("--type", "query_type", help="Only this query type.")
@click.option("--source", type=click.Choice(["synthetic", "log", "manual"]))
@json_option
def export(project_path, out, fmt, status, query_type, source, as_json):
    """Export the gold set (JSONL with RAGAS names, a BEIR folder, or TREC qrels) with a manifest.

    \b
    Example:
        curator export handbook.curator gold.jsonl
        curator export handbook.curator beir-gold --format beir
    """
    from curator.core.export import export as run_export

    statuses = [s.strip() for s in status.split(",") if s.strip()]
    with project(project_path) as db:
        manifest = run_export(db, out, fmt, statuses, query_type=query_type, source=source)
    emit(manifest, as_json, lambda m: f"wrote {m['rows']} rows to {out} ({fmt}); "
                                     f"by status: {', '.join(f'{k} {v}' for k, v in m['by_status'].items()) or '-'}")


def register(cli: click.Group) -> None:
    cli.add_command(export)
