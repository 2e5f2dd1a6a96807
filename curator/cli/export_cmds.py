"""CLI command for export."""

from __future__ import annotations

import click

from curator.cli.common import emit, json_option, project, table


@click.command()
@click.argument("project_path", metavar="PROJECT")
@click.argument("out", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["jsonl", "beir", "trec"]), default="jsonl", show_default=True)
@click.option("--status", default="approved,unanswerable", show_default=True, help="Comma-separated statuses to export.")
@click.option("--type", "query_type", help="Only this query type.")
@click.option("--source", type=click.Choice(["synthetic", "log", "manual"]))
@click.option("--split", "split_spec", metavar="NAME=F,...",
              help="Cut the rows into splits stratified by cluster, e.g. dev=0.3,test=0.7.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the split assignment.")
@json_option
def export(project_path, out, fmt, status, query_type, source, split_spec, seed, as_json):
    """Export the gold set (JSONL with RAGAS names, a BEIR folder, or TREC qrels) with a manifest.

    \b
    Example:
        curator export handbook.curator gold.jsonl
        curator export handbook.curator beir-gold --format beir
        curator export handbook.curator gold.jsonl --split dev=0.3,test=0.7 --seed 1
    """
    from curator.core.export import export as run_export
    from curator.core.splits import parse_split

    statuses = [s.strip() for s in status.split(",") if s.strip()]
    split = parse_split(split_spec)
    with project(project_path) as db:
        manifest = run_export(db, out, fmt, statuses, query_type=query_type, source=source, split=split, seed=seed)
    emit(manifest, as_json, lambda m: f"wrote {m['rows']} rows to {out} ({fmt}); "
                                     f"by status: {', '.join(f'{k} {v}' for k, v in m['by_status'].items()) or '-'}")


def _render_eval(r: dict) -> str:
    k_cols = [f"recall@{k}" for k in r["ks"]] + ["mrr", f"ndcg@{max(r['ks'])}"]
    rows = [{"slice": name, "n": s["queries"], **{c: f"{s.get(c, 0):.3f}" for c in k_cols}, "routing": s["routing"]}
            for name, s in r["slices"].items()]
    auroc = r["unanswerable_auroc"]
    lines = [f"eval run {r['eval_run']}: {r['retriever']} on {r['answerable_queries']} answerable queries",
             table(rows, ["slice", "n", *k_cols, "routing"]),
             f"unanswerable separation (AUROC of top score): {auroc:.3f}" if auroc is not None
             else "unanswerable separation: needs both answerable and unanswerable reviewed rows"]
    return "\n".join(lines + [f"warning {w}" for w in r["warnings"]])


@click.command(name="eval")
@click.argument("project_path", metavar="PROJECT")
@click.option("--retriever", type=click.Choice(["bm25"]), default="bm25", show_default=True,
              help="Built-in retriever over the project's chunks (FTS5 bm25).")
@click.option("--run", "run_file", type=click.Path(exists=True, dir_okay=False), help="Score a TREC run file instead.")
@click.option("--save-run", type=click.Path(dir_okay=False), help="Write the scored run as a TREC run file.")
@click.option("--k", "k_text", default="1,3,5,10,20", show_default=True, help="Cut-offs for Recall@k, hit rate and nDCG.")
@json_option
def eval_command(project_path, retriever, run_file, save_run, k_text, as_json):
    """Score a retriever on the gold set: Recall@k, hit rate, MRR, nDCG@k, per slice with routing.

    \b
    Example:
        curator eval handbook.curator --k 1,5,10
        curator eval handbook.curator --run my_retriever.trec
    """
    from curator.core.evaluate import evaluate

    try:
        ks = tuple(int(k) for k in k_text.split(",") if k.strip())
    except ValueError:
        raise click.BadParameter("use whole numbers such as 1,5,10", param_hint="--k") from None
    if not ks or min(ks) < 1:
        raise click.BadParameter("use whole numbers of at least 1", param_hint="--k")
    with project(project_path) as db:
        result = evaluate(db, retriever, run_file, ks, save_run)
    emit(result, as_json, _render_eval)


def register(cli: click.Group) -> None:
    cli.add_command(export)
    cli.add_command(eval_command)
