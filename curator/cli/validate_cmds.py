"""CLI command ``validate``: does the gold set rank retrievers the way real (log) queries do?"""

from __future__ import annotations

import click

from curator.cli.common import emit, json_option, project, table


def _interval(ci) -> str:
    low, high = ci
    return "n/a" if low is None else f"[{low:.2f}, {high:.2f}]"


def _signed(value) -> str:
    return "undefined (one slice ties every retriever)" if value is None else f"{value:+.2f}"


def _chain(ranking: list[str], means: dict) -> str:
    """'a > b = c': equal means are shown as ties, not as an order the data does not have."""
    text = ranking[0] if ranking else ""
    for before, name in zip(ranking, ranking[1:]):
        text += (" = " if means[name] == means[before] else " > ") + name
    return text


def _slice_table(r: dict) -> str:
    shown = [name for name in r["slices"] if name == "overall" or not name.startswith("cluster:")]
    shown += [name for name in r["slices"] if name.startswith("cluster:")]
    rows = [{"slice": name, "n": s["queries"], **{n: f"{s['means'][n]:.3f}" for n in r["retrievers"]},
             "ranking": _chain(s["ranking"], s["means"])} for name, s in ((n, r["slices"][n]) for n in shown)]
    return table(rows, ["slice", "n", *r["retrievers"], "ranking"], {"ranking": 60})


def _source_intervals(r: dict) -> list[str]:
    lines = []
    for name in ("source:synthetic", "source:log"):
        s = r["slices"].get(name)
        if s:
            lines.append(f"{name} ({s['queries']}): " + ", ".join(
                f"{n} {s['means'][n]:.3f} {_interval(s['ci95'][n])}" for n in s["ranking"]))
    return lines


def _quartiles(q, percent: bool) -> str:
    if not q:
        return "n/a"
    show = (lambda v: f"{v:.0%}") if percent else (lambda v: f"{v:g}")
    return f"{show(q['median'])} [{show(q['q1'])}-{show(q['q3'])}]"


def _realism_row(name: str, s: dict) -> dict:
    return {"rows": name, "n": s["rows"], "chunk overlap": _quartiles(s["chunk_overlap"], True),
            "answer overlap": _quartiles(s.get("answer_overlap"), True), "words": _quartiles(s["words"], False),
            "stop words": _quartiles(s["stopword_share"], True),
            "forms q/s/k": "/".join(f"{s['forms'][f]:.0%}" for f in ("question", "statement", "keywords"))}


def _realism_lines(realism) -> list[str]:
    """Realism: median [quartiles] per synthetic type against the real rows (or the built-in reference)."""
    if not realism:
        return []
    ref = realism["reference"]
    rows = [_realism_row(ref["name"], ref)] + [_realism_row(f"synthetic {t}", s) for t, s in realism["synthetic"].items()]
    columns = ["rows", "n", "chunk overlap", "answer overlap", "words", "stop words", "forms q/s/k"]
    return ["", "realism (median [quartiles]):", table(rows, columns, {"rows": 48})] + \
        [f"realism: {s['text']}" for s in realism["synthetic"].values()]


def _render_validate(r: dict) -> str:
    lines = [r["verdict"]["text"], "", f"{r['metric']} on {r['queries']} approved queries "
             f"({r['resamples']} bootstrap resamples, seed {r['seed']})", _slice_table(r), ""]
    lines += _source_intervals(r)
    a = r["agreement"]
    if a:
        syn, log = r["slices"]["source:synthetic"]["means"], r["slices"]["source:log"]["means"]
        lines.append(f"synthetic ranking {_chain(a['synthetic_ranking'], syn)}; real ranking "
                     f"{_chain(a['real_ranking'], log)}; tau {_signed(a['tau'])} {_interval(a['ci95'])}")
    lines += [f"pair {p['text']}" for p in r.get("pairs", [])]
    lines += [f"difficulty: {g['text']} (gap {g['gap']:+.2f}, 95% {_interval(g['ci95'])})" for g in r["difficulty_gap"]]
    spread = {n: v for n, v in r["type_spread"].items() if v is not None}
    if spread:
        lines.append("per-type spread (best - worst type): " + ", ".join(f"{n} {v:.2f}" for n, v in spread.items()))
    lines += [f"stability ({name}): {s['text']}" for name, s in r["stability"].items()]
    lines += _realism_lines(r.get("realism"))
    return "\n".join(lines + [f"warning {w}" for w in r["warnings"]])


@click.command()
@click.argument("project_path", metavar="PROJECT")
@click.option("--retrievers", default="bm25,tfidf,dense,hybrid", show_default=True,
              help="Comma-separated built-in retrievers to rank (an empty value: only the --run files).")
@click.option("--run", "run_specs", multiple=True, metavar="NAME=FILE",
              help="A TREC run file ranked with the built-in retrievers; repeat for more. Example: --run mine=mine.trec")
@click.option("--k", type=click.IntRange(1, 1000), default=5, show_default=True,
              help="Cut-off of the default metric, recall@K.")
@click.option("--metric", help="mrr, recall@K, hit@K or ndcg@K [default: recall@K of --k].")
@click.option("--embedder", help="Embedder of dense and hybrid: minilm | static | tfidf | gguf:PATH | endpoint:URL[#MODEL].")
@click.option("--resamples", type=click.IntRange(100, 100_000), default=2000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of every bootstrap.")
@json_option
def validate(project_path, retrievers, run_specs, k, metric, embedder, resamples, seed, as_json):
    """Check the gold set: does it rank retrievers like your real (log) queries do?

    Scores every retriever per slice (source, query type, cluster), gives Kendall tau between the
    synthetic and the real ranking with a bootstrap interval and a verdict, the difficulty gap per
    query type, and how often the winner stays the same at several set sizes. The --json schema is
    in docs/json/validate.md.

    \b
    Example:
        curator validate handbook.curator
        curator validate handbook.curator --retrievers bm25,hybrid --run mine=mine.trec --metric mrr --json
    """
    from curator.core.evaluation.validity import parse_runs, validate as run_validate

    names = [name.strip() for name in retrievers.split(",") if name.strip()]
    runs = parse_runs(run_specs)
    with project(project_path) as db:
        result = run_validate(db, names, runs, metric or f"recall@{k}", embedder=embedder,
                              resamples=resamples, seed=seed)
    emit(result, as_json, _render_validate)


def register(cli: click.Group) -> None:
    cli.add_command(validate)
