"""CLI commands for diagnosing a RAG system: ``import-traces``, ``diagnose``, ``trace``,
``trace-mark`` (calibration) and ``claim-verdict`` (correct a judgement)."""

from __future__ import annotations

import click

from curator.cli.common import emit, json_option, progress_printer, project, table
from curator.cli.review_cmds import reviewer_option


def _score(value) -> str:
    """A 0..1 score for the terminal; "n/a" while it cannot be computed yet (e.g. unjudged claims)."""
    return "n/a" if value is None else f"{value:.2f}"


def _render_import(r: dict) -> str:
    lines = [f"{r['file']}: {r['lines_read']} lines, imported {r['imported']}, unchanged {r['unchanged']}, "
             f"skipped {r['skipped']}",
             f"matched to queries by id {r['matched_by_id']}, by text {r['matched_by_text']}, "
             f"unmatched {r['unmatched']} (added as log queries for review)"]
    return "\n".join(lines + [f"warning {e}" for e in r["errors"]])


@click.command(name="import-traces")
@click.argument("project_path", metavar="PROJECT")
@click.argument("file", type=click.Path(dir_okay=False))
@json_option
def import_traces_cmd(project_path, file, as_json):
    """Import a RAG system's traces (JSONL or CSV, RAGAS field names work unchanged).

    Fields: user_input/question/query, retrieved_context_ids and/or retrieved_contexts,
    response/answer, optional reference, reference_context_ids, trace_id, query_id, timestamp.
    Re-importing the same file changes nothing.

    \b
    Example:
        curator import-traces handbook.curator runs/ragas_samples.jsonl
    """
    from curator.core.diagnosis.traces import import_traces

    with project(project_path) as db:
        result = import_traces(db, file)
    emit(result, as_json, _render_import)


def _render_counts(counts: dict) -> str:
    return ", ".join(f"{q} {n}" for q, n in sorted(counts.items())) or "-"


def _render_report(r: dict) -> str:
    t = r["thresholds"]
    lines = [f"{r['total']} traces; recall < {t['recall']} is low, faithfulness < {t['faithfulness']} is low"]
    for name in ("healthy", "generation_failure", "retrieval_failure", "both_broken", "unscored"):
        lines.append(f"  {r['counts'].get(name, 0):>5}  {r['routing'][name]}")
    lines.append("per cluster:")
    lines += [f"  {name}: {_render_counts(c)}" for name, c in r["by_cluster"].items()]
    lines.append("per query type:")
    lines += [f"  {name}: {_render_counts(c)}" for name, c in r["by_query_type"].items()]
    if r["biggest_failure"]:
        lines.append("biggest failure slice: " + r["biggest_failure"]["text"])
    if r["calibration"]:
        lines.append(r["calibration"]["text"])
    lines.append("judge: " + r["judge"]["text"])
    lines += [f"  unsure claim {c['claim_id']} (p={c['probability']:.2f}): {c['text']}" for c in r["judge"]["unsure_claims"]]
    return "\n".join(lines)


@click.command()
@click.argument("project_path", metavar="PROJECT")
@click.option("--recall-threshold", default=0.5, show_default=True, type=click.FloatRange(0, 1.01))
@click.option("--faith-threshold", default=0.7, show_default=True, type=click.FloatRange(0, 1.01))
@click.option("--judge/--no-judge", default=True, show_default=True,
              help="Judge the claims not judged yet before reporting (the default judge: evidence sentence, "
                   "features and fitted weights, no LLM; MiniLM loads only if a claim needs it).")
@click.option("--judge-model", type=click.Path(dir_okay=False),
              help="Also a GGUF LLM judge (an instruct model of 1.5B or more), run on the claims outside the region "
                   "where the default judge is measured reliable.")
@click.option("--judge-endpoint",
              help="Also an OpenAI-compatible server as LLM judge for those claims (key from $CURATOR_API_KEY).")
@click.option("--judge-every-claim", is_flag=True,
              help="The LLM judge checks every claim the default judge judged, not only the unsure ones.")
@click.option("--parallel", type=click.IntRange(1, 64), help="LLM claims judged at once (default: 1 local, 4 remote).")
@click.option("--traces", "list_traces", is_flag=True, help="Also list every trace with its quadrant.")
@json_option
def diagnose(project_path, recall_threshold, faith_threshold, judge, judge_model, judge_endpoint, judge_every_claim,
             parallel, list_traces, as_json):
    """Route each trace to the component to fix: the 2x2 of context recall and faithfulness.

    Claims are judged by the default judge; an LLM judge (--judge-model, --judge-endpoint) checks
    the claims outside the region where the default judge is measured reliable (every claim with
    --judge-every-claim), scored by its probability of "yes". The bundled 135M model is not offered
    as a judge: on the held-out claims it is no better than chance (docs/diagnose.md).

    \b
    Example:
        curator diagnose handbook.curator --recall-threshold 0.5 --faith-threshold 0.7
        curator diagnose handbook.curator --judge-model models/qwen2.5-1.5b-instruct-q4_k_m.gguf --json
    """
    from curator.core.diagnosis.faithfulness import judge_traces, unjudged_claims
    from curator.core.diagnosis.judge import lazy_default_judge
    from curator.core.diagnosis.quadrants import diagnose as run_diagnose

    with project(project_path) as db:
        if judge and (unjudged_claims(db) or judge_model or judge_endpoint):
            judge_traces(db, _llm_judge(judge_model, judge_endpoint, parallel), on_progress=progress_printer("judge"),
                         judge=lazy_default_judge(), every_claim=judge_every_claim)
        report = run_diagnose(db, recall_threshold, faith_threshold)
    if not list_traces and not as_json:
        report.pop("traces")
    emit(report, as_json, lambda r: _render_report(r) + (
        "\n" + table(r["traces"], ["id", "quadrant", "context_recall", "faithfulness", "question"], {"question": 60})
        if "traces" in r else ""))


def _llm_judge(judge_model, judge_endpoint, parallel):
    """An LLM judge only when the user names one (never the bundled model by default)."""
    if not (judge_model or judge_endpoint):
        return None
    from curator.core.generation.backends import open_backend

    # one claim at a time locally: 4 claims with one shared context took 18.9 CPU s at 1 and
    # 32.8 at 2 (the one-sequence path reuses the shared prefix; prompts dominate a 4-token reply)
    return open_backend(judge_model, judge_endpoint, parallel=parallel or (None if judge_endpoint else 1))


@click.command()
@click.argument("project_path", metavar="PROJECT")
@click.argument("trace_id")
@json_option
def trace(project_path, trace_id, as_json):
    """Show one trace: question, gold and retrieved chunks, and each claim's verdict (with its id).

    \b
    Example:
        curator trace handbook.curator t_0123456789abcdef
    """
    from curator.core.diagnosis.details import trace_detail

    with project(project_path) as db:
        detail = trace_detail(db, trace_id)
    def render(d: dict) -> str:
        lines = [f"question: {d['question']}",
                 f"recall {_score(d['context_recall'])} ({d['recall_basis']})  "
                 f"faithfulness {_score(d['faithfulness'])}"]
        lines += [f"  {'*' if c['gold'] else ' '} [{c['rank']}] {c['chunk_id']} ({c['matched']})" for c in d["retrieved"]]
        lines += _render_claims("claim", d["claims"]) + _render_claims("reference statement", d["statements"])
        lines += ["how the response was split into claims:"] + _render_split(d["claim_split"])
        return "\n".join(lines)
    emit(detail, as_json, render)


def _render_claims(name: str, claims: list[dict]) -> list[str]:
    """Each claim with its verdict, the default judge's probability and reasons, and its evidence."""
    lines = []
    for c in claims:
        p = "" if c["probability"] is None else f" (p={c['probability']:.2f})"
        lines.append(f"  {name} {c['claim_id']}: {c['verdict'] or 'unjudged'}{p}: {c['text']}")
        if c["judged_by"]:
            agreed = "" if c["agreement"] is None else f", agreed with human labels {c['agreement']:.0%} on claims like it"
            lines.append(f"      by the {c['judged_by']}{agreed}{' (unsure)' if c['unsure'] else ''}")
        if c["evidence"]:
            lines.append(f"      evidence [{c['context_index']}]: {c['evidence']}")
        lines += [f"      why: {reason}" for reason in c["reasons"]]
    return lines


def _render_split(split: list[dict]) -> list[str]:
    lines = []
    for entry in split:
        if entry["question"]:
            lines.append(f"  - question, no claim: {entry['sentence']}")
        for c in entry["claims"]:
            lines.append(f"  - {c['rule']}: {c['text']}")
    return lines


@click.command(name="trace-mark")
@click.argument("project_path", metavar="PROJECT")
@click.argument("trace_id")
@click.argument("mark", type=click.Choice(["right", "wrong", "none"]))
@reviewer_option
@json_option
def trace_mark(project_path, trace_id, mark, reviewer, as_json):
    """Mark a trace's answer right or wrong (the subset `diagnose` calibrates its thresholds on).

    \b
    Example:
        curator trace-mark handbook.curator t_0123456789abcdef wrong --reviewer ana
    """
    from curator.core.diagnosis.quadrants import mark_trace

    with project(project_path) as db:
        result = mark_trace(db, trace_id, mark, reviewer)
    emit(result, as_json, lambda r: f"{r['trace_id']}: marked {r['label']} by {r['reviewer']}")


@click.command(name="claim-verdict")
@click.argument("project_path", metavar="PROJECT")
@click.argument("claim_id", type=int)
@click.argument("verdict", type=click.Choice(["supported", "not-supported"]))
@reviewer_option
@json_option
def claim_verdict(project_path, claim_id, verdict, reviewer, as_json):
    """Correct the judge's verdict on one claim (journaled: the replaced verdict is kept).

    \b
    Example:
        curator claim-verdict handbook.curator 42 not-supported --reviewer ana
    """
    from curator.core.diagnosis.faithfulness import correct_verdict

    with project(project_path) as db:
        result = correct_verdict(db, claim_id, verdict.replace("-", " "), reviewer)
    emit(result, as_json, lambda r: f"claim {r['claim_id']}: {r['verdict']} (trace faithfulness "
                                    f"{_score(r['faithfulness'])}, context recall {_score(r['context_recall'])})")


def register(cli: click.Group) -> None:
    for command in (import_traces_cmd, diagnose, trace, trace_mark, claim_verdict):
        cli.add_command(command)
