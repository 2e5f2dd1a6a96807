"""CLI commands for the cluster stage."""

from __future__ import annotations

import click

from curator.cli.common import emit, json_option, progress_printer, project, table


def register(cli: click.Group) -> None:
    """Add this module's commands to the curator group."""

    @cli.command("cluster")
    @click.argument("project_path", metavar="PROJECT")
    @click.option("--embedder", default="default", show_default=True,
                  help="default (minilm, or tfidf without its package) | tfidf | minilm | gguf:PATH")
    @click.option("--k", "k", default="auto", show_default=True, help="Number of clusters, or auto (by silhouette).")
    @click.option("--seed", default=0, show_default=True, type=int, help="Seed for UMAP and KMeans.")
    @click.option("--fast", is_flag=True, help="Unseeded multi-threaded UMAP (faster, not reproducible).")
    @json_option
    def cluster_cmd(project_path: str, embedder: str, k: str, seed: int, fast: bool, as_json: bool) -> None:
        """Embed and cluster all queries of PROJECT; the new run becomes active.

        Example: curator cluster demo.curator --k auto --seed 0
        """
        from curator.core.clustering.cluster import cluster_queries
        from curator.core.errors import InputError

        if k != "auto" and not k.isdigit():
            raise InputError("--k must be 'auto' or a positive number")
        with project(project_path) as db:
            summary = cluster_queries(db, embedder=embedder, k=k if k == "auto" else int(k), seed=seed, fast=fast,
                                      on_progress=progress_printer("cluster"))

        def render(s: dict) -> str:
            rows = [{"cluster": i, "size": n, "label": lab} for i, (n, lab) in enumerate(zip(s["sizes"], s["labels"]))]
            sil = "n/a" if s["silhouette"] is None else f"{s['silhouette']:.3f}"
            head = f"run {s['run_id']}: k={s['k']} silhouette={sil} ({s['method']}, {s['seconds']}s)"
            return head + "\n" + table(rows, ["cluster", "size", "label"], {"label": 60})

        emit(summary, as_json, render)
