"""CLI command for export."""

from __future__ import annotations

import click

from curator.cli.common import echo, emit, json_option, project, table
from curator.core.errors import InputError
from curator.core.store import is_read_only
from curator.core.evaluation.metrics import DEFAULT_KS, parse_ks


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
@click.option("--force", is_flag=True,
              help="Replace an existing OUT that is not a Curator export (never the project nor any SQLite database).")
@json_option
def export(project_path, out, fmt, status, query_type, source, split_spec, seed, force, as_json):
    """Export the gold set (JSONL with RAGAS names, a BEIR folder, or TREC qrels) with a manifest.

    \b
    Example:
        curator export handbook.curator gold.jsonl
        curator export handbook.curator beir-gold --format beir
        curator export handbook.curator gold.jsonl --split dev=0.3,test=0.7 --seed 1
    """
    from curator.core.export.writers import export as run_export
    from curator.core.export.splits import parse_split

    statuses = [s.strip() for s in status.split(",") if s.strip()]
    split = parse_split(split_spec)
    with project(project_path, reads_only=True) as db:
        manifest = run_export(db, out, fmt, statuses, query_type=query_type, source=source, split=split, seed=seed,
                                  force=force)
        if is_read_only(db):
            echo(f"note: {project_path} is read-only, so this export is not added to its export history", err=True)
    emit(manifest, as_json, lambda m: f"wrote {m['rows']} rows to {out} ({fmt}); "
                                     f"by status: {', '.join(f'{k} {v}' for k, v in m['by_status'].items()) or '-'}")


def _render_eval(r: dict) -> str:
    k_cols = [f"recall@{k}" for k in r["ks"]] + ["mrr", f"ndcg@{max(r['ks'])}"]
    from curator.core.evaluation.evaluate import slice_title

    rows = [{"slice": slice_title(name, s), "n": s["queries"], **{c: f"{s.get(c, 0):.3f}" for c in k_cols},
             "routing": s["routing"]} for name, s in r["slices"].items()]
    auroc = r["unanswerable_auroc"]
    embedder = (r.get("params") or {}).get("embedder")
    stored = f"eval run {r['eval_run']}" if r["eval_run"] is not None else "eval (not stored)"
    lines = [f"{stored}: {r['retriever']}" + (f" ({embedder})" if embedder else "")
             + f" on {r['answerable_queries']} answerable queries",
             table(rows, ["slice", "n", *k_cols, "routing"]),
             f"unanswerable separation (AUROC of top score): {auroc:.3f}" if auroc is not None
             else "unanswerable separation: needs both answerable and unanswerable reviewed rows"]
    return "\n".join(lines + [f"warning {w}" for w in r["warnings"]])


def _render_compare(r: dict) -> str:
    low, high = r["ci95"]
    lines = [f"A = {r['a']}", f"B = {r['b']}",
             f"{r['metric']} on {r['queries']} paired queries: A {r['mean_a']:.4f}, B {r['mean_b']:.4f}",
             f"B - A = {r['mean_difference']:+.4f}, 95% bootstrap interval [{low:+.4f}, {high:+.4f}] "
             f"({r['resamples']} resamples, seed {r['seed']})",
             f"per query: B better {r['b_wins']}, A better {r['a_wins']}, ties {r['ties']}"]
    if r["only_in_a"] or r["only_in_b"]:
        lines.append(f"not paired: {r['only_in_a']} queries only in A, {r['only_in_b']} only in B")
    return "\n".join(lines + [_verdict(r)] + [f"warning {w}" for w in r["warnings"]])


def _verdict(r: dict) -> str:
    low, high = r["ci95"]
    if r["ties"] == r["queries"]:
        return f"the two runs score the same {r['metric']} on every query"
    if low > 0 or high < 0:
        return "the interval excludes 0: the difference is unlikely to be resampling noise"
    return "the interval includes 0: no clear difference on this gold set"


def _parse_ks(k_text: str) -> tuple[int, ...]:
    """Core's k-list rule; a bad list is a usage error (exit 2), as click's own checks are."""
    try:
        return parse_ks(k_text)
    except InputError as exc:
        raise click.BadParameter(str(exc), param_hint="--k") from None


@click.command(name="eval")
@click.argument("project_path", metavar="PROJECT")
@click.option("--retriever", type=click.Choice(["bm25", "tfidf", "dense", "hybrid", "fts5"]), default="bm25",
              show_default=True,
              help="Built-in retriever over the project's chunks: bm25 (FTS5's scores, sparse matrix), tfidf "
                   "(cosine), dense (embedder, exact cosine), hybrid (reciprocal rank fusion of bm25 and dense, "
                   "k=60), fts5 (bm25 through one MATCH per query, slow reference). "
                   "Example: --retriever hybrid")
@click.option("--embedder", help="Embedder of dense and hybrid: minilm | static | tfidf | gguf:PATH | endpoint:URL[#MODEL] "
                                 "[default: that of the active cluster run, else minilm (tfidf without its package)]. Example: --embedder minilm")
@click.option("--run", "run_file", type=click.Path(exists=True, dir_okay=False),
              help="Score a TREC run file instead. Example: --run my_retriever.trec")
@click.option("--save-run", type=click.Path(dir_okay=False),
              help="Write the scored run as a TREC run file (never over the project, a SQLite database or the "
                   "--run file; over an existing file that is not a run only with --force). Example: --save-run bm25.trec")
@click.option("--force", is_flag=True, help="Let --save-run replace an existing file that is not a TREC run.")
@click.option("--k", "k_text", default=DEFAULT_KS, show_default=True, help="Cut-offs for Recall@k, hit rate and nDCG.")
@click.option("--compare", "compare_refs", nargs=2, metavar="RUN_A RUN_B",
              help="Compare two eval runs (ids printed by eval) or TREC run files, query by query, instead of "
                   "evaluating. Example: --compare 3 4")
@click.option("--metric", default="mrr", show_default=True,
              help="Metric of --compare: mrr, recall@K, hit@K or ndcg@K. Example: --metric ndcg@10")
@json_option
def eval_command(project_path, retriever, embedder, run_file, save_run, force, k_text, compare_refs, metric, as_json):
    """Score a retriever on the gold set: Recall@k, hit rate, MRR, nDCG@k, per slice with routing.

    With --compare, report per-query wins and losses of run B against run A on --metric, the mean
    difference B - A and its paired bootstrap 95% interval (10,000 resamples, seed 0).

    \b
    Example:
        curator eval handbook.curator --k 1,5,10
        curator eval handbook.curator --retriever hybrid --save-run hybrid.trec
        curator eval handbook.curator --run my_retriever.trec
        curator eval handbook.curator --compare 1 2 --metric ndcg@10
        curator eval handbook.curator --compare 1 my_retriever.trec --json
    """
    if compare_refs:
        from curator.core.evaluation.compare import compare

        if run_file or save_run:
            raise click.UsageError("--compare reads two finished runs; drop --run and --save-run")

        with project(project_path, reads_only=True) as db:
            result = compare(db, compare_refs[0], compare_refs[1], metric=metric)
        emit(result, as_json, _render_compare)
        return
    from curator.core.evaluation.evaluate import evaluate

    ks = _parse_ks(k_text)
    with project(project_path, reads_only=True) as db:
        result = evaluate(db, retriever, run_file, ks, save_run, embedder=embedder, replace=force)
    emit(result, as_json, _render_eval)


def register(cli: click.Group) -> None:
    cli.add_command(export)
    cli.add_command(eval_command)
