"""CLI commands for generation: ``generate``, ``queries`` and ``widen-gold``."""

from __future__ import annotations

import click

from curator.cli.common import emit, json_option, progress_printer, project, table, terminate_as_interrupt
from curator.core.errors import CuratorError
from curator.core.generation.config import RETRIES_PER_CHUNK


def _render_summary(s: dict) -> str:
    lines = [f"run {s['run_id']} {s['status']}: accepted {s['accepted']} "
             f"({', '.join(f'{t} {n}' for t, n in sorted(s['by_type'].items()))}), rejected {s['rejected']}",
             f"{s['accepted_this_session']} rows in {s['seconds']} s ({s['rows_per_min']} rows/min)",
             f"mode {s['mode']}"]
    if s.get("surplus"):
        lines.append(f"  {s['surplus']} late answer(s) for types that already had their rows")
    for key, what in (("kept_surplus", "kept from late answers"), ("refilled", "asked again")):
        if s.get(key):
            lines.append(f"  short types' rows {what}: " + ", ".join(f"{t} {n}" for t, n in sorted(s[key].items())))
    if s.get("stopped_short"):
        lines.append(s["stopped_short"])
    lines += [f"  rejected: {reason} x{n}" for reason, n in sorted(s["rejected_by_reason"].items(), key=lambda x: -x[1])]
    if s.get("truncated_chunks"):
        lines.append(f"warning: {len(s['truncated_chunks'])} chunk(s) longer than the prompt budget were truncated: "
                     + ", ".join(s["truncated_chunks"][:5]) + (" ..." if len(s["truncated_chunks"]) > 5 else ""))
    lines += [f"warning: {w}" for w in s.get("warnings", [])]
    if s.get("coverage_target"):
        aimed = s["coverage_target"]
        lines.append(f"aimed at {len(aimed['clusters'])} under-covered cluster(s) through {aimed['chunks']} chunks "
                     f"suggested for their {aimed['queries']} real queries: "
                     + ", ".join(f"{c['cluster']} ({100 * c['share']:.0f}%)" for c in aimed["clusters"]))
    return "\n".join(lines)


@click.command()
@click.argument("project_path", metavar="PROJECT")
@click.option("--model", "model_path", type=click.Path(dir_okay=False), help="A GGUF file (default: the bundled SmolLM2-135M).")
@click.option("--endpoint", help="An OpenAI-compatible server URL instead of a local model (key from $CURATOR_API_KEY).")
@click.option("--count", default=20, show_default=True, type=click.IntRange(1, 100_000), help="Accepted rows wanted.")
@click.option("--mix", "mix_text", help="Type weights, e.g. factoid=0.4,keyword=0.2,vague=0.15,multi_hop=0.1,unanswerable=0.15")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--resume", is_flag=True, help="Continue the last run to its target without duplicates.")
@click.option("--threads", type=click.IntRange(1, 256), help="CPU threads (default: the physical cores other processes leave free).")
@click.option("--parallel", type=click.IntRange(1, 64),
              help="Rows generated at once: sequences decoded together, or requests in flight with --endpoint "
                   "(default local: 1 for answer-first rows with the bundled model, measured fastest for them; else "
                   "chosen by a short timing probe on first use of a model for a mode, cached; 4 remote).")
@click.option("--retries", default=RETRIES_PER_CHUNK, show_default=True, type=click.IntRange(0, 10),
              help="New seeds for a rejected candidate before its chunk is given up (cheap: the prompt stays cached).")
@click.option("--cluster", type=click.IntRange(min=0),
              help="Seed generation with the chunks behind this cluster's real queries.")
@click.option("--target", type=click.Choice(["corpus", "coverage"]), default="corpus", show_default=True,
              help="corpus: chunks drawn across the documents; coverage: the chunks suggested for the real queries "
                   "of under-covered clusters, in proportion to their traffic (see 'curator cluster --coverage').")
@click.option("--min-quality", default=0.0, show_default=True, type=click.FloatRange(0, 1),
              help="Reject rows whose quality score (0..1: the mean of the filters' margins, "
                   "grounding, no restating, no repetition; the BM25 round trip is shown, never scored) is below this.")
@click.option("--no-repack", is_flag=True,
              help="Never use the bundled model's Q8_0 copy (only --answers free or --parallel N may choose it "
                   "through the probe; answer-first rows run the Q4_1 file).")
@click.option("--chat-format", help="For a GGUF that holds no chat template: a llama-cpp-python format name "
                                     "(chatml, gemma, llama-3, mistral-instruct, ...). Default: the file's template.")
@click.option("--answers", "answers_mode", type=click.Choice(["extractive", "free"]), default="extractive",
              show_default=True,
              help="extractive: factoid, keyword and vague rows take a sentence of the chunk as their reference "
                   "answer and the model writes the query it answers; free: the model writes both (for a big model "
                   "whose answers you want in its own words).")
@click.option("--mode", type=click.Choice(["auto", "need-first", "extractive"]), default="auto", show_default=True,
              help="need-first: the model reads a chunk and writes what a user with the need it meets would ask, "
                   "then quotes the answer (for a capable model); extractive: the model asks about one sentence of "
                   "the chunk (for a small model); auto: need-first for a model of 1B+ parameters or an endpoint, "
                   "else extractive. The progress line says which, and why.")
@json_option
def generate(project_path, model_path, endpoint, count, mix_text, seed, resume, threads, parallel, retries, cluster,
             target, min_quality, no_repack, chat_format, answers_mode, mode, as_json):
    """Reverse-generate queries, reference answers and gold chunk ids with a local model.

    Every accepted row is committed at once; Ctrl-C (or SIGTERM) stops cleanly and --resume goes on.
    Exits 1, saying why, when nothing could be asked (no chunks: ingest first; every
    chunk already used for the types wanted) or when a run ends without a row.

    \b
    Example:
        curator generate handbook.curator --count 50 --mix factoid=0.5,unanswerable=0.5
        curator generate handbook.curator --count 12 --target coverage
        CURATOR_API_KEY=... curator generate handbook.curator --endpoint http://127.0.0.1:8080 --parallel 4
    """
    from curator.core.generation.generate import GenerationConfig, generate as run_generate
    from curator.core.generation.plan import parse_mix

    if model_path and endpoint:
        raise click.UsageError("use --model or --endpoint, not both")
    if answers_mode == "free" and mode != "auto":
        raise click.UsageError("--answers free has the model write both question and answer: not with --mode")
    if chat_format and endpoint:
        raise click.UsageError("--chat-format is for a local --model; an endpoint applies its own template")
    config = GenerationConfig(count=count, mix=parse_mix(mix_text) if mix_text else None, seed=seed,
                              model_path=model_path, endpoint=endpoint, threads=threads, resume=resume, cluster=cluster,
                              parallel=parallel, retries=retries, min_quality=min_quality, repack=not no_repack,
                              chat_format=chat_format, answers=answers_mode, mode=mode)
    if target == "coverage" and (cluster is not None or resume):
        raise click.UsageError("--target coverage chooses its own chunks: not with --cluster or --resume")
    with project(project_path) as db, terminate_as_interrupt() as signalled:
        aimed = _aim_at_coverage(db, config) if target == "coverage" else None
        summary = run_generate(db, config, on_progress=progress_printer("generate"))
    if aimed:
        summary["coverage_target"] = aimed
    emit(summary, as_json, _render_summary)
    if signalled["terminated"]:
        raise SystemExit(143)  # 128 + SIGTERM: what a supervisor expects of a terminated process
    if summary["status"] == "exhausted" and summary["accepted_this_session"] == 0:  # a run that made nothing failed
        raise CuratorError(f"run {summary['run_id']} made no rows: {summary['stopped_short']}")


def _aim_at_coverage(db, config) -> dict:
    """Point the run at the under-covered clusters' chunks; what was aimed at, for the summary."""
    from curator.core.clustering.coverage import target_chunks

    aimed = target_chunks(db)
    config.chunk_ids = aimed["chunk_ids"]
    return {"chunks": len(aimed["chunk_ids"]), "queries": aimed["queries"], "clusters": aimed["clusters"]}


@click.command()
@click.argument("project_path", metavar="PROJECT")
@click.option("--status", type=click.Choice(["pending", "approved", "rejected", "unanswerable"]))
@click.option("--type", "query_type", help="factoid, keyword, vague, multi_hop, unanswerable, log, manual")
@click.option("--source", type=click.Choice(["synthetic", "log", "manual"]))
@json_option
def queries(project_path, status, query_type, source, as_json):
    """List queries with type, source, status, gold chunk ids, answer, cluster and queue state.

    \b
    Example:
        curator queries handbook.curator --status pending --type factoid
    """
    from curator.core.queries.rows import list_queries

    with project(project_path, reads_only=True) as db:
        found = list_queries(db, status=status, query_type=query_type, source=source)
    rows = [{"id": q["id"], "text": q["text"], "type": q["query_type"], "source": q["source"], "status": q["status"],
             "gold": ",".join(q["gold_chunk_ids"]), "answer": q["reference"], "cluster": q["cluster_label"],
             "queued": q["queued"], "stale": bool(q["stale"]),
             "quality": "" if q.get("quality") is None else f"{q['quality']:.2f}"} for q in found]
    emit(found if as_json else rows, as_json,
         lambda r: table(r, ["id", "type", "status", "quality", "text", "gold", "answer"],
                         {"text": 50, "answer": 30, "gold": 20}))


@click.command("widen-gold")
@click.argument("project_path", metavar="PROJECT")
@click.option("--source", type=click.Choice(["synthetic", "log", "manual"]), default="synthetic", show_default=True,
              help="Which rows to widen.")
@json_option
def widen_gold(project_path, source, as_json):
    """Make every chunk that holds a row's reference answer gold too (graded like its source chunk).

    Generation does this for new rows; this command does it for rows made before, or after a
    re-ingest. A reference shorter than 8 words is left alone (a phrase, not an answer sentence).
    Each change is a journaled 'gold' decision by curator-widen: status and reviewer stay, undo works.

    \b
    Example:
        curator widen-gold handbook.curator
    """
    from curator.core.store.gold import widen_gold as run_widen

    with project(project_path) as db:
        counts = run_widen(db, source=source)
    emit(counts, as_json, lambda c: f"{c['rows_widened']} of {c['rows_checked']} {source} rows widened: "
                                    f"{c['chunks_added']} gold chunks added (each holds the row's reference answer)")


def register(cli: click.Group) -> None:
    cli.add_command(generate)
    cli.add_command(queries)
    cli.add_command(widen_gold)
