"""CLI commands for the review queue: ``sample`` and ``coverage``."""

from __future__ import annotations

import click

from curator.cli.common import emit, json_option, progress_printer, project, table


@click.command()
@click.argument("project_path", metavar="PROJECT")
@click.option("--size", required=True, type=click.IntRange(1, 1_000_000), help="Rows to add to the review queue.")
@click.option("--allocation", type=click.Choice(["proportional", "equal"]), default="proportional", show_default=True)
@click.option("--negative-boost", default=2.0, show_default=True, type=click.FloatRange(min=0.01, max=1000),
              help="Weight of queries with negative feedback.")
@click.option("--unanswerable-share", default=0.15, show_default=True, type=click.FloatRange(0, 1))
@click.option("--min-per-cluster", default=1, show_default=True, type=click.IntRange(0, 10_000))
@click.option("--seed", default=0, show_default=True, type=int)
@json_option
def sample(project_path, size, allocation, negative_boost, unanswerable_share, min_per_cluster, seed, as_json):
    """Draw a stratified sample per cluster into the review queue (tops up when re-run).

    \b
    Example:
        curator sample handbook.curator --size 200 --allocation equal --negative-boost 3
    """
    from curator.core.retrieval.suggest import suggest
    from curator.core.review.sample import build_queue

    with project(project_path) as db:
        result = build_queue(db, size, allocation, negative_boost, unanswerable_share, min_per_cluster, seed)
        # the new rows without gold get their suggestions now, so review shows them at once
        result["suggested"] = suggest(db, on_progress=progress_printer("suggest"))["queries"]
    emit(result, as_json, lambda r: f"queued {r['queued']} ({', '.join(f'{k}: {v}' for k, v in r['by_stratum'].items())})"
         + ("" if r["clustered"] else "; no cluster run yet, so one stratum 'all' (run 'curator cluster' first)")
         + f"; suggested gold for {r['suggested']} without gold")


@click.command(name="suggest")
@click.argument("project_path", metavar="PROJECT")
@click.argument("query_ids", nargs=-1, metavar="[QUERY_ID]...")
@click.option("--k", default=5, show_default=True, type=click.IntRange(1, 100), help="Suggestions per query.")
@json_option
def suggest_command(project_path, query_ids, k, as_json):
    """Compute suggested gold chunks (hybrid BM25 + MiniLM) for the given queries, or for every
    queued query without gold, and print them.

    \b
    Example:
        curator suggest handbook.curator --k 5
        curator suggest handbook.curator q_1a2b3c --json
    """
    from curator.core.retrieval.suggest import suggest_and_list

    with project(project_path) as db:
        result = suggest_and_list(db, list(query_ids) or None, k, on_progress=progress_printer("suggest"))
    emit(result, as_json, lambda r: "\n".join(f"{q}: {', '.join(ids)}" for q, ids in r["suggested"].items())
         or "no queued query without gold: nothing to suggest")


@click.command()
@click.argument("project_path", metavar="PROJECT")
@json_option
def coverage(project_path, as_json):
    """Per cluster: label, population, synthetic, log, queued, reviewed, approved.

    \b
    Example:
        curator coverage handbook.curator
    """
    from curator.core.review.sample import coverage as compute

    with project(project_path) as db:
        rows = compute(db)
    emit(rows, as_json, lambda r: table(r, ["cluster", "label", "population", "synthetic", "log", "queued",
                                            "reviewed", "approved"]))


@click.command(name="import-log")
@click.argument("project_path", metavar="PROJECT")
@click.argument("log_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--query-field", help="Column or key holding the query (default: detected).")
@click.option("--feedback-field", help="Column or key holding feedback (default: detected).")
@click.option("--redact", is_flag=True, help="Replace e-mail addresses, phone numbers and long digit runs.")
@json_option
def import_log(project_path, log_file, query_field, feedback_field, redact, as_json):
    """Import a production query log (CSV, TSV or JSONL) and mark negative-feedback queries.

    \b
    Example:
        curator import-log handbook.curator logs/queries.csv --redact
    """
    from curator.core.queries.logs import import_log as run_import

    with project(project_path) as db:
        result = run_import(db, log_file, query_field=query_field, feedback_field=feedback_field, redact_pii=redact)
    def render(r: dict) -> str:
        if r.get("already_imported"):
            return (f"{r['file']} was already imported ({r.get('first_imported_at') or 'earlier'}, same content); "
                    "nothing changed.")
        return "\n".join([f"lines {r['lines_read']}: imported {r['imported']}, merged {r['merged']}, "
                          f"skipped {r['skipped']}, negative {r['negative']}"]
                         + [f"skipped {e}" for e in r["errors"]] + [f"warning {w}" for w in r["warnings"]])

    emit(result, as_json, render)


def register(cli: click.Group) -> None:
    cli.add_command(import_log)
    cli.add_command(sample)
    cli.add_command(coverage)
    cli.add_command(suggest_command)
