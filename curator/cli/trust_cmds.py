"""CLI commands for teams of reviewers: ``merge``, ``agreement``, ``conflicts``, ``adjudicate``, ``overlap``."""

from __future__ import annotations

import click

from curator.cli.common import emit, json_option, project, table
from curator.core.review.identity import DEFAULT_HELP as REVIEWER_DEFAULT_HELP, default_reviewer


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def _render_conflicts(found: list[dict]) -> str:
    if not found:
        return "No conflicts."
    rows = [{"query": c["query_id"], "differs": ",".join(c["fields"]), "text": c["text"],
             **{f"decision {i + 1}": f"{d['reviewer']}: {d['status']}" for i, d in enumerate(c["decisions"][:2])}}
            for c in found]
    return table(rows, ["query", "decision 1", "decision 2", "differs", "text"], {"text": 50})


def _render_merge(r: dict) -> str:
    lines = [f"merged {r['other']}: {r['matched']} decided queries matched, {r['unmatched']} not in this project",
             f"{r['decisions_imported']} decisions imported, {r['adopted']} queries took the other decision, "
             f"{len(r['conflicts'])} conflicts"]
    if r.get("held_blind"):
        lines.append(f"{r['held_blind']} blind-overlap queries wait for this copy's own decision")
    lines += [f"warning {e}" for e in r["errors"] + r["warnings"]]
    if r["conflicts"]:
        lines += ["", _render_conflicts(r["conflicts"]),
                  "", "Resolve them in the Adjudication tab or with 'curator adjudicate'."]
    return "\n".join(lines)


@click.command()
@click.argument("project_path", metavar="PROJECT")
@click.argument("other_path", metavar="OTHER_PROJECT", type=click.Path(dir_okay=False))
@json_option
def merge(project_path, other_path, as_json):
    """Import another copy's review decisions for the same queries and list the conflicts.

    OTHER_PROJECT is only read. Both reviewers' decisions are kept in the journal; a query
    only the other reviewer decided takes their decision; re-running changes nothing.

    \b
    Example:
        curator merge handbook.curator handbook-bob.curator
    """
    from curator.core.review.merge import merge as run_merge

    with project(project_path) as db:
        result = run_merge(db, other_path)
    emit(result, as_json, _render_merge)


def _render_agreement(r: dict) -> str:
    if not r["pairs"]:
        return "No query was decided by two reviewers yet."
    lines = []
    for pair in r["pairs"]:
        lines.append(f"{pair['a']} vs {pair['b']}: {pair['n']} queries both decided, "
                     f"agreement {_fmt(pair['agreement'])}, kappa {_fmt(pair['kappa'])}")
        if pair["n"]:
            rows = [{"cluster": c["cluster"], "label": c["label"], "n": c["n"], "agreement": _fmt(c["agreement"]),
                     "kappa": _fmt(c["kappa"])} for c in pair["by_cluster"]]
            lines += [table(rows, ["cluster", "label", "n", "agreement", "kappa"], {"label": 30}), ""]
    return "\n".join(lines).rstrip()


@click.command()
@click.argument("project_path", metavar="PROJECT")
@json_option
def agreement(project_path, as_json):
    """Raw agreement and Cohen's kappa per reviewer pair, overall and per cluster.

    \b
    Example:
        curator agreement handbook.curator --json
    """
    from curator.core.review.agreement import agreement as compute

    with project(project_path, reads_only=True) as db:
        result = compute(db)
    emit(result, as_json, _render_agreement)


@click.command()
@click.argument("project_path", metavar="PROJECT")
@click.option("--all", "include_resolved", is_flag=True, help="Also list conflicts already adjudicated.")
@json_option
def conflicts(project_path, include_resolved, as_json):
    """Queries whose reviewers disagree (status, or gold chunks when approved).

    \b
    Example:
        curator conflicts handbook.curator
    """
    from curator.core.review.adjudicate import conflicts as find

    with project(project_path, reads_only=True) as db:
        found = find(db, include_resolved=include_resolved)
    emit(found, as_json, _render_conflicts)


@click.command()
@click.argument("project_path", metavar="PROJECT")
@click.argument("query_id")
@click.option("--pick", "pick", metavar="REVIEWER", help="Take this reviewer's decision as the final one.")
@click.option("--status", type=click.Choice(["approved", "rejected", "unanswerable"]), help="The final status.")
@click.option("--question", help="The final question text.")
@click.option("--answer", help="The final reference answer.")
@click.option("--gold", help="Comma-separated final gold chunk ids.")
@click.option("--judge", default=default_reviewer, show_default=REVIEWER_DEFAULT_HELP,
              help="Who adjudicates (recorded in the journal).")
@json_option
def adjudicate(project_path, query_id, pick, status, question, answer, gold, judge, as_json):
    """Record the final decision on a conflict (journaled; 'curator undo --reviewer JUDGE' undoes it).

    \b
    Example:
        curator adjudicate handbook.curator q_1a2b3c --pick bob
        curator adjudicate handbook.curator q_1a2b3c --status approved --gold c_9f8e7d
    """
    from curator.core.review.adjudicate import resolve

    if not pick and not status:
        raise click.UsageError("give --pick REVIEWER or --status")
    gold_ids = [g.strip() for g in gold.split(",") if g.strip()] if gold is not None else None
    with project(project_path) as db:
        result = resolve(db, query_id, judge, pick=pick, status=status, text=question, reference=answer, gold=gold_ids)
    emit(result, as_json, lambda r: f"{r['query_id']}: {r['status']} (adjudicated by {r['reviewer']}, "
                                    f"decision {r['decision_id']})")


@click.command()
@click.argument("project_path", metavar="PROJECT")
@click.option("--reviewers", required=True, help="Comma-separated reviewer names, e.g. ann,bob.")
@click.option("--share", type=click.FloatRange(0, 1), default=0.2, show_default=True,
              help="Share of the queue every reviewer labels (blind); the rest is split between them.")
@click.option("--seed", type=int, default=0, show_default=True)
@json_option
def overlap(project_path, reviewers, share, seed, as_json):
    """Plan a blind overlap: a share of the queue for every reviewer, the rest split.

    Copy the project to each reviewer after this; 'curator assigned' lists their queries, and
    merge never shows one reviewer's decision on an overlap query to the other.

    \b
    Example:
        curator overlap handbook.curator --reviewers ann,bob --share 0.25
    """
    from curator.core.review.merge import assign_overlap

    with project(project_path) as db:
        result = assign_overlap(db, reviewers.split(","), share, seed)
    emit(result, as_json, lambda r: f"{r['overlap']} of {r['queries']} queries go to every reviewer; "
                                    + ", ".join(f"{n} {c}" for n, c in r["per_reviewer"].items()))


@click.command()
@click.argument("project_path", metavar="PROJECT")
@click.option("--reviewer", default=default_reviewer, show_default=REVIEWER_DEFAULT_HELP)
@json_option
def assigned(project_path, reviewer, as_json):
    """The query ids the overlap plan gives to a reviewer, in queue order.

    \b
    Example:
        curator assigned handbook-ann.curator --reviewer ann
    """
    from curator.core.review.merge import assigned as find

    with project(project_path, reads_only=True) as db:
        ids = find(db, reviewer)
    emit(ids, as_json, lambda r: "\n".join(r) if r else "No overlap plan in this project ('curator overlap').")


def register(cli: click.Group) -> None:
    for command in (merge, agreement, conflicts, adjudicate, overlap, assigned):
        cli.add_command(command)
