"""CLI commands for fair gold by pooled review: ``pool`` (compute and list) and ``grade``."""

from __future__ import annotations

import click

from curator.cli.common import emit, json_option, progress_printer, project
from curator.cli.review_cmds import reviewer_option
from curator.core.store.gold import GRADES


def _render_pool(result: dict) -> str:
    lines = [f"pooled the top {result['k']} of {', '.join(result['retrievers']) or 'no retriever'} "
             f"for {result['queries']} {'query' if result['queries'] == 1 else 'queries'}"]
    if result["refreshed"]:
        lines.append(f"{result['refreshed']} of them had a pool from before the last re-ingest: computed again "
                     "(grades given are kept)")
    for qid, entries in result["pooled"].items():
        found = "; ".join(f"{e['chunk_id']} ({e['found_by_text']})" for e in entries)
        lines.append(f"{qid}: {len(entries)} to grade" + (f": {found}" if found else ""))
    lines += [f"warning: {w}" for w in result["warnings"]]
    return "\n".join(lines)


@click.command(name="pool")
@click.argument("project_path", metavar="PROJECT")
@click.argument("query_ids", nargs=-1, metavar="[QUERY_ID]...")
@click.option("--k", default=5, show_default=True, type=click.IntRange(1, 100),
              help="Depth pooled per retriever (5: the recall@5 cut-off eval routes on).")
@click.option("--retrievers", default="bm25,tfidf,dense,hybrid", show_default=True,
              help="Comma-separated built-in retrievers to pool.")
@click.option("--run", "run_files", multiple=True, type=click.Path(dir_okay=False),
              help="A TREC run file to pool too (repeatable); default: the files of the saved eval runs.")
@click.option("--all", "everywhere", is_flag=True,
              help="Every pending or approved answerable row, not only the review queue's.")
@click.option("--embedder", help="Embedder of dense and hybrid (tfidf | minilm | gguf:PATH).")
@json_option
def pool_command(project_path, query_ids, k, retrievers, run_files, everywhere, embedder, as_json):
    """Pool the top results of every retriever under evaluation for the given queries (or the review
    queue, and every pool a re-ingest left out of date), and list the chunks each row still has to
    have graded: not gold, not judged, with which retriever found them at which rank. Grade them
    with ``curator grade`` or in the Review tab. ``curator stats`` counts pools out of date.

    \b
    Example:
        curator pool handbook.curator
        curator pool handbook.curator q_1a2b3c --k 10 --run system.run --json
    """
    from curator.core.review import pool

    names = [n.strip() for n in retrievers.split(",") if n.strip()]
    with project(project_path) as db:
        # the rows asked for, or the queue's (--all: every row's) and every other pool a re-ingest left
        # out of date of a row still to grade (pending or approved, answerable)
        stale = pool.outdated(db)
        gradable = {qid for qid, _ in pool.pool_targets(db, everywhere=True)}
        ids = list(query_ids) or list(dict.fromkeys([qid for qid, _ in pool.pool_targets(db, everywhere)]
                                                    + [qid for qid in stale if qid in gradable]))
        refreshed = len(set(stale) & set(ids))
        result = pool.compute(db, ids, k, names, list(run_files) or None, everywhere, embedder,
                              on_progress=progress_printer("pool"))
        listed = {qid: [{**e, "found_by_text": pool.found_by_text(e)} for e in pool.pooled(db, qid)] for qid in ids}
        result = {**result, "refreshed": refreshed, "summary": pool.summary(db, ids),
                  "pooled": {qid: [{key: e[key] for key in ("position", "chunk_id", "path", "title", "found_by",
                                                            "found_by_text")} for e in entries]
                             for qid, entries in listed.items()}}
    emit(result, as_json, _render_pool)


@click.command(name="grade")
@click.argument("project_path", metavar="PROJECT")
@click.argument("query_id")
@click.argument("chunk_id")
@click.argument("grade_value", metavar="GRADE", type=click.Choice([str(g) for g in GRADES]))
@reviewer_option
@json_option
def grade_command(project_path, query_id, chunk_id, grade_value, reviewer, as_json):
    """Grade a chunk for a query on the one scale of every grade: 2 highly relevant, 1 relevant (both
    make it gold), 0 not relevant (not offered again). Journaled, undoable (curator undo), committed
    at once.

    \b
    Example:
        curator grade handbook.curator q_1a2b3c c_9f8e7d 1 --reviewer ana
    """
    from curator.core.review.pool import grade

    with project(project_path) as db:
        result = grade(db, query_id, chunk_id, int(grade_value), reviewer)
    result = {**result, "chunk_id": chunk_id, "grade": int(grade_value)}
    emit(result, as_json, lambda r: f"{r['query_id']}: {r['chunk_id']} graded {r['grade']} ({GRADES[r['grade']]}) "
                                    f"by {r['reviewer']} (decision {r['decision_id']})")


def register(cli: click.Group) -> None:
    cli.add_command(pool_command)
    cli.add_command(grade_command)
