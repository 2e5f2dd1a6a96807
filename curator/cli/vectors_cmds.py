"""CLI commands for a project's stored vectors: ``vectors drop``."""

from __future__ import annotations

import click

from curator.cli.common import emit, json_option, project


def _render(r: dict) -> str:
    if not r["dropped"]:
        return f"no stored vectors{' of ' + r['embedder'] if r['embedder'] else ''} in {r['project']}"
    lines = [f"dropped {r['dropped']} stored vectors from {r['project']}; they are made again when needed"]
    lines += [f"  {count:>8}  {embedder}" for embedder, count in r["embedders"].items()]
    return "\n".join(lines)


@click.group("vectors")
def vectors() -> None:
    """A project's stored vectors (embeddings of queries and chunks, cached per embedder).

    \b
    Example:
        curator vectors drop handbook.curator
    """


@vectors.command()
@click.argument("project_path", metavar="PROJECT")
@click.option("--embedder", "embedder_id", metavar="ID",
              help="Drop only the vectors of this embedder id (as stored, e.g. minilm:all-MiniLM-L6-v2:t256).")
@json_option
def drop(project_path: str, embedder_id, as_json: bool) -> None:
    """Delete PROJECT's stored vectors; cluster, search and eval embed again when they need them.

    Use it when vectors may have come from a broken model file (an older Curator stored them under
    the bare embedder id, without the model file's hash). Queries, chunks, labels and cluster runs
    are not touched.

    \b
    Example:
        curator vectors drop handbook.curator
        curator vectors drop handbook.curator --embedder minilm:all-MiniLM-L6-v2:t256 --json
    """
    from curator.core.embedding.embed import drop_vectors

    with project(project_path) as db:
        result = drop_vectors(db, embedder_id)
    emit({"project": project_path, "embedder": embedder_id, **result}, as_json, _render)


def register(cli: click.Group) -> None:
    cli.add_command(vectors)
