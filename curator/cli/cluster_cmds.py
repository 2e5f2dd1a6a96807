"""CLI commands for the cluster stage."""

from __future__ import annotations

import click

from curator.cli.common import emit, json_option, progress_printer, project, table


def register(cli: click.Group) -> None:
    """Add this module's commands to the curator group."""

    @cli.command("cluster")
    @click.argument("project_path", metavar="PROJECT")
    @click.option("--embedder", default="default", show_default=True,
                  help="default (minilm, or tfidf without its package) | minilm | static (distilled from MiniLM: "
                       "~1000x faster, coarser clusters) | tfidf | gguf:PATH | endpoint:URL[#MODEL] (an "
                       "OpenAI-compatible /v1/embeddings server; key from $CURATOR_API_KEY)")
    @click.option("--k", "k", default="auto", show_default=True, help="Number of clusters, or auto (by silhouette).")
    @click.option("--seed", default=0, show_default=True, type=int, help="Seed for UMAP and KMeans.")
    @click.option("--fast", is_flag=True, help="Unseeded multi-threaded UMAP (faster, not reproducible).")
    @click.option("--layout", type=click.Choice(["free", "clusters"]), default="free", show_default=True,
                  help="The 2-D map: free = the embeddings' own layout (gaps inside a cluster show); "
                       "clusters = laid out from the cluster fit (each cluster one tight region).")
    @click.option("--coverage", "show_coverage", is_flag=True,
                  help="Do not cluster: show where the active run's real queries lack synthetic rows.")
    @click.option("--neighbours", default=5, show_default=True, type=click.IntRange(1, 100),
                  help="With --coverage: a real query is a gap when none of its this many nearest queries is synthetic.")
    @json_option
    def cluster_cmd(project_path: str, embedder: str, k: str, seed: int, fast: bool, layout: str,
                    show_coverage: bool, neighbours: int, as_json: bool) -> None:
        """Embed and cluster all queries of PROJECT; the new run becomes active.

        With --coverage nothing is clustered: per cluster of the active run it shows real (log)
        queries, those with negative feedback, synthetic and approved rows, and real queries with
        no synthetic row among their nearest neighbours. Queries added since the run are placed in
        their nearest clustered query's cluster. Clusters marked '*' are under-covered:
        'curator generate PROJECT --target coverage' aims rows at them.

        \b
        Example:
            curator cluster demo.curator --k auto --seed 0
            curator cluster demo.curator --coverage --json
        """
        if show_coverage:
            return _coverage(project_path, neighbours, as_json)
        from curator.core.clustering.cluster import cluster_queries
        from curator.core.errors import InputError

        if k != "auto" and not k.isdigit():
            raise InputError("--k must be 'auto' or a positive number")
        with project(project_path) as db:
            summary = cluster_queries(db, embedder=embedder, k=k if k == "auto" else int(k), seed=seed, fast=fast,
                                      layout=layout, on_progress=progress_printer("cluster"))

        def render(s: dict) -> str:
            rows = [{"cluster": i, "size": n, "label": lab} for i, (n, lab) in enumerate(zip(s["sizes"], s["labels"]))]
            sil = "n/a" if s["silhouette"] is None else f"{s['silhouette']:.3f}"
            head = f"run {s['run_id']}: k={s['k']} silhouette={sil} ({s['method']}, {s['seconds']}s)"
            return head + "\n" + table(rows, ["cluster", "size", "label"], {"label": 60})

        emit(summary, as_json, render)


def _coverage(project_path: str, neighbours: int, as_json: bool) -> None:
    from curator.core.clustering.coverage import coverage

    with project(project_path) as db:
        report = coverage(db, neighbours)
    emit(report, as_json, _render_coverage)


def _percent(share) -> str:
    return "n/a" if share is None else f"{100 * share:.0f}%"


def _render_coverage(r: dict) -> str:
    head = (f"run {r['run_id']}: {r['real']} real queries, {r['synthetic']} synthetic, {r['approved']} approved\n"
            f"real queries in a cluster without synthetic rows: {r['real_in_clusters_without_synthetic']} "
            f"({_percent(r['share_real_in_clusters_without_synthetic'])})\n"
            f"real queries without a synthetic row among their {r['neighbours']} nearest: "
            f"{r['real_without_synthetic_neighbour']} ({_percent(r['share_real_without_synthetic_neighbour'])})")
    if r["placed_since_run"]:
        head += f"\n{r['placed_since_run']} queries added since the run placed by their nearest clustered query"
    rows = [{**c, "gap": c["real_without_synthetic_neighbour"], "": "*" if c["under_covered"] else ""}
            for c in r["clusters"]]
    return head + "\n" + table(rows, ["", "cluster", "real", "negative", "synthetic", "approved", "gap", "label"],
                               {"label": 50})
