"""CLI commands for review: ``label`` (the scriptable twin of the review screen), ``undo``, ``redo``."""

from __future__ import annotations

import click

from curator.cli.common import emit, json_option, project
from curator.core.review.identity import DEFAULT_HELP as REVIEWER_DEFAULT_HELP, default_reviewer

reviewer_option = click.option("--reviewer", default=default_reviewer, show_default=REVIEWER_DEFAULT_HELP,
                               help="Who made the decision (recorded in the journal).")


@click.command()
@click.argument("project_path", metavar="PROJECT")
@click.argument("query_id")
@click.argument("decision", type=click.Choice(["approve", "reject", "unanswerable", "pending"]))
@click.option("--question", help="Replace the question text.")
@click.option("--answer", help="Replace the reference answer.")
@click.option("--gold", help="Comma-separated chunk ids that answer the query.")
@click.option("--note", help="A note for other reviewers.")
@reviewer_option
@json_option
def label(project_path, query_id, decision, question, answer, gold, note, reviewer, as_json):
    """Record a review decision (journaled, undoable, committed at once).

    \b
    Example:
        curator label handbook.curator q_1a2b3c approve --gold c_9f8e7d,c_0a1b2c --reviewer ana
    """
    from curator.core.review.decisions import decide

    gold_ids = [g.strip() for g in gold.split(",") if g.strip()] if gold is not None else None
    with project(project_path) as db:
        result = decide(db, query_id, decision, reviewer, text=question, reference=answer, gold=gold_ids, note=note)
    emit(result, as_json, lambda r: f"{r['query_id']}: {r['status']} by {r['reviewer']} (decision {r['decision_id']})")


def _undo_redo(name: str):
    help_text = (f"{name.capitalize()} your latest {'undone ' if name == 'redo' else ''}decision, or the one "
                 f"--decision names (works across restarts).\n\n\b\nExample:\n    curator {name} handbook.curator "
                 f"--reviewer ana\n    curator {name} handbook.curator --reviewer ana --decision 12")

    @click.command(name=name, help=help_text)
    @click.argument("project_path", metavar="PROJECT")
    @reviewer_option
    @click.option("--decision", "decision_id", type=click.IntRange(min=1), default=None,
                  help=f"{name.capitalize()} this decision of yours (its number, as a refusal lists them) instead of the latest")
    @json_option
    def command(project_path, reviewer, decision_id, as_json):
        from curator.core.diagnosis import faithfulness  # noqa: F401 (registers how a verdict's undo rescores its trace)
        from curator.core.review import decisions

        with project(project_path) as db:
            query_id = getattr(decisions, name)(db, reviewer, decision_id)
        emit({"query_id": query_id}, as_json,
             lambda r: f"{name}: {r['query_id']}" if r["query_id"] else f"nothing to {name} for {reviewer}")

    return command


def register(cli: click.Group) -> None:
    cli.add_command(label)
    cli.add_command(_undo_redo("undo"))
    cli.add_command(_undo_redo("redo"))
