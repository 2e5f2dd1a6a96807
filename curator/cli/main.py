"""The ``curator`` command: a thin layer over curator.core (parse, call one function, print)."""

from __future__ import annotations

from pathlib import Path

import click

from curator import __version__
from curator.cli.common import CuratorGroup, emit, json_option, progress_printer, project, render_stats, table
from curator.core.corpus.chunking import DEFAULT_CHUNK_SIZE, DEFAULT_OVERLAP
from curator.core.errors import InputError


@click.group(cls=CuratorGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="curator")
def cli() -> None:
    """Curator: build reviewed retrieval-evaluation gold sets from your documents, offline.

    \b
    Example:
        curator init handbook.curator
        curator ingest handbook.curator docs/
        curator search handbook.curator "rotate keys"
    """


@cli.command()
@click.argument("project_path", metavar="PROJECT")
@json_option
def init(project_path: str, as_json: bool) -> None:
    """Create a project file (an existing project is left as it is).

    \b
    Example:
        curator init handbook.curator
    """
    existed = Path(project_path).exists()
    with project(project_path, create=True):
        pass
    emit({"project": project_path, "created": not existed}, as_json,
         lambda d: f"{'Project created' if d['created'] else 'Project already exists, left as it is'}: {d['project']}")


def _render_ingest(r: dict) -> str:
    lines = [
        f"files seen {r['files_seen']}, ingested {r['files_ingested']}, unchanged {r['files_unchanged']}, "
        f"skipped {len(r['skipped'])}",
        f"documents written {r['documents']}, chunks added {r['chunks_added']}, retired {r['chunks_retired']}"
        + (f", changed in place {r['chunks_changed']}" if r.get("chunks_changed") else "")
        + (f", records refused for a taken id {r['ids_refused']}" if r.get("ids_refused") else ""),
        f"project now: {r['total_documents']} documents, {r['total_chunks']} chunks"
        + (f", {r['queries_stale']} queries with stale gold labels" if r["queries_stale"] else ""),
        f"{r['bytes'] / 1e6:.2f} MB in {r['seconds']:.2f} s",
    ]
    lines += [f"skipped {s['path']}: {s['reason']}" for s in r["skipped"]]
    lines += [f"warning {e}" for e in r["line_errors"]]
    return "\n".join(lines)


@cli.command()
@click.argument("project_path", metavar="PROJECT")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--chunk-size", default=DEFAULT_CHUNK_SIZE, show_default=True, type=click.IntRange(16, 8192),
              help="Chunk size in approximate tokens (a word or a punctuation mark is one token).")
@click.option("--overlap", default=DEFAULT_OVERLAP, show_default=True, type=click.IntRange(0, 4096),
              help="Tokens shared by consecutive chunks of a section.")
@click.option("--create", is_flag=True, help="Create PROJECT if it does not exist (a mistyped name is an error).")
@json_option
def ingest(project_path: str, paths: tuple[str, ...], chunk_size: int, overlap: int, create: bool,
           as_json: bool) -> None:
    """Ingest files and folders (.txt .md .rst .html .pdf .jsonl) into chunks.

    Folders are read recursively. Unchanged files are skipped, so re-running is cheap and
    keeps chunk ids. A BEIR corpus.jsonl keeps its document ids.

    \b
    Example:
        curator ingest handbook.curator docs/ extra/faq.md --chunk-size 200
        curator ingest new.curator docs/ --create
    """
    if overlap >= chunk_size:
        raise click.BadParameter("must be smaller than --chunk-size", param_hint="--overlap")
    from curator.core.corpus.ingest import ingest as run_ingest

    missing = [p for p in paths if not Path(p).exists()]
    if len(missing) == len(paths):  # nothing to read: fail before creating a project file
        raise InputError(f"no such file or folder: {', '.join(missing)}")
    with project(project_path, create=create) as db:
        result = run_ingest(db, paths, chunk_size, overlap, on_progress=progress_printer("ingest"))
    emit(result.as_dict(), as_json, _render_ingest)
    if missing:  # the other paths were ingested (the batch goes on); the exit code still says it failed
        raise InputError(f"no such file or folder: {', '.join(missing)} (the other paths were ingested)")


@cli.command()
@click.argument("project_path", metavar="PROJECT")
@click.option("--doc", "doc_path", help="Only chunks of this document (its path as stored).")
@json_option
def chunks(project_path: str, doc_path: str | None, as_json: bool) -> None:
    """List chunks: id, document path, title (heading path) and text.

    \b
    Example:
        curator chunks handbook.curator --doc docs/install/linux.md
    """
    from curator.core.corpus.documents import list_chunks

    with project(project_path, reads_only=True) as db:
        found = list_chunks(db, doc_path)
    emit(found, as_json, lambda rows: table(rows, ["id", "doc_path", "title", "text"], {"text": 60, "title": 30}))


@cli.command()
@click.argument("project_path", metavar="PROJECT")
@click.argument("query")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 1000))
@json_option
def search(project_path: str, query: str, limit: int, as_json: bool) -> None:
    """Full-text search over chunks, ranked by FTS5 bm25 (higher score is better).

    \b
    Example:
        curator search handbook.curator "rotate encryption keys" --limit 5
    """
    from curator.core.corpus.search import search_chunks

    with project(project_path, reads_only=True) as db:
        hits = search_chunks(db, query, limit)
    for hit in hits:
        hit["score"] = round(hit["score"], 4)
    emit(hits, as_json, lambda rows: table(rows, ["score", "id", "doc_path", "title", "text"], {"text": 60}))


@cli.command()
@click.argument("project_path", metavar="PROJECT")
@json_option
def stats(project_path: str, as_json: bool) -> None:
    """Summarise what a project holds.

    \b
    Example:
        curator stats handbook.curator --json
    """
    from curator.core.store.stats import project_stats

    with project(project_path, reads_only=True) as db:
        result = project_stats(db)
    emit(result, as_json, render_stats)


@cli.command()
@click.argument("project_path", metavar="[PROJECT]", required=False)
def gui(project_path: str | None) -> None:
    """Open the desktop app, optionally on a project file.

    \b
    Example:
        curator gui handbook.curator
    """
    from curator.cli.launch import has_display, open_gui_if_possible

    if not has_display():  # nothing was opened: a failure, not a success with a hint
        missing = project_path and not Path(project_path).exists()
        raise InputError(f"no such project file: {project_path}; create it with 'curator ingest {project_path} DOCS/'"
                         if missing else "no display found: run 'curator gui PROJECT' on a desktop")
    open_gui_if_possible(project_path)


@cli.command()
@click.option("--project", "project_path", default="curator-demo.curator", show_default=True,
              help="Where to build the demo project.")
@click.option("--count", default=20, show_default=True, type=click.IntRange(0, 10_000),
              help="Synthetic queries to have in the project (generated with the bundled model).")
@click.option("--headless", is_flag=True, help="Print the summary instead of opening the app.")
@json_option
def demo(project_path: str, count: int, headless: bool, as_json: bool) -> None:
    """Build a project from the bundled sample corpus and bundled model, then open it.

    Ingests the sample corpus and generates queries with the bundled SmolLM2-135M model
    (the whole demo, 20 rows, took 1 min 43 s on 2 cores); re-running tops the project up instead
    of repeating work.

    \b
    Example:
        curator demo --headless
    """
    from curator.core.demo import build_demo_project

    summary = build_demo_project(project_path, on_progress=progress_printer("demo"), count=count)
    emit(summary, as_json, lambda s: f"Demo project: {project_path}\n" + render_stats(s["stats"]))
    if not headless and not as_json:
        from curator.cli.launch import open_gui_if_possible

        open_gui_if_possible(project_path)


# Each stage keeps its commands in its own module; they register themselves here.
from curator.cli import (  # noqa: E402
    cluster_cmds, diagnose_cmds, doctor_cmds, export_cmds, generate_cmds, model_cmds, pool_cmds, review_cmds,
    sample_cmds, trust_cmds, validate_cmds, vectors_cmds,
)

for _module in (generate_cmds, sample_cmds, cluster_cmds, review_cmds, pool_cmds, export_cmds, trust_cmds, validate_cmds,
                diagnose_cmds, doctor_cmds, model_cmds, vectors_cmds):
    _module.register(cli)
