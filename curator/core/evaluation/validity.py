"""Does the gold set tell the truth? Synthetic against real (log) queries, and ranking stability.

Every listed retriever (built-in ones and TREC run files) is scored on the approved gold set
with evaluate's trec_eval-exact metrics, one value of ``metric`` per query and retriever. From
that matrix:

- per slice (source, query type, cluster): each retriever's mean with a 95% percentile
  bootstrap interval (compare.paired_bootstrap), and the ranking (mean descending, then name);
- agreement: Kendall tau-b (scipy.stats.kendalltau's default, ties counted) between the ranking
  of the synthetic slice and that of the log slice. Its interval resamples queries with
  replacement *within* each slice (the same draws for every retriever, so they stay paired) and
  takes the 2.5th and 97.5th percentiles of the resampled taus; a resample where one side ties
  every retriever has no tau and is left out (and counted);
- pairs: for each pair of retrievers, its gap on the real rows and on the synthetic rows, each with a
  paired bootstrap interval, and whether they agree in sign. The verdict rests on the winner and on
  the pairs whose real interval excludes zero: with four retrievers tau moves in steps of 0.33, so a
  tau of 0.67 can hide a clearly separated pair in the wrong order;
- realism (queries.realism): overlap with the gold chunk, length, function words and form of the
  synthetic rows per type against the real rows (else a built-in reference of real questions);
- the difficulty gap of each synthetic query type: the mean over retrievers of the metric on
  that type, minus the same on the log queries, with an interval from resampling both sides;
- stability against size: ``resamples`` sets of n queries drawn with replacement from the gold
  set, at several n (also above its size, as if more rows like these were labelled); the share
  in which the full set's winner is still strictly first, and the smallest n giving 95% / 99%.

Everything random comes from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np
import sqlite_utils

from curator.core.errors import InputError
from curator.core.evaluation import metrics
from curator.core.evaluation.compare import _check_metric, paired_bootstrap
from curator.core.queries import realism
from curator.core.evaluation.evaluate import gold_qrels, gold_rows, is_answerable, load_run, retriever_run
from curator.core.retrieval.retrievers import RETRIEVERS

DEFAULT_RETRIEVERS = ("bm25", "tfidf", "dense", "hybrid")
RESAMPLES = 2_000
SIZES = (10, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000)
TARGETS = (0.95, 0.99)
AGREE_TAU = 0.6  # with four retrievers: at most one swapped pair (tau-b 0.67)
REAL, SYNTHETIC = "log", "synthetic"
_CELLS = 1_000_000  # resample indices drawn at once (times the retrievers: ~32 MB of floats)


# -- statistics on plain arrays ------------------------------------------------------------------

def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall tau-b of two score vectors (as scipy.stats.kendalltau); nan when one side is all ties."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    i, j = np.triu_indices(len(a), 1)
    da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    pairs_a, pairs_b = np.count_nonzero(da), np.count_nonzero(db)
    if pairs_a == 0 or pairs_b == 0:
        return float("nan")
    return float((da * db).sum() / np.sqrt(pairs_a * pairs_b))


def resampled_means(values: np.ndarray, size: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(resamples, retrievers) column means of ``size`` rows of ``values`` drawn with replacement."""
    out = np.empty((resamples, values.shape[1]))
    block = max(1, _CELLS // max(1, size))
    for start in range(0, resamples, block):
        count = min(block, resamples - start)
        picks = rng.integers(0, len(values), size=(count, size))
        out[start:start + count] = values[picks].mean(axis=1)
    return out


def resampled_taus(synthetic: np.ndarray, real: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Tau between the two slices' retriever means in each resample (queries drawn within each slice)."""
    rng = np.random.default_rng(seed)
    syn = resampled_means(synthetic, len(synthetic), resamples, rng)
    log = resampled_means(real, len(real), resamples, rng)
    return np.array([kendall_tau(s, r) for s, r in zip(syn, log)])


def percentile_interval(samples: np.ndarray, confidence: float = 0.95) -> list[Optional[float]]:
    """The percentile interval of the defined (non-nan) samples, as [low, high] (None if none is)."""
    samples = samples[~np.isnan(samples)]
    if samples.size == 0:
        return [None, None]
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(samples, [tail, 100 - tail])
    return [float(low), float(high)]


def gap_interval(synthetic: np.ndarray, real: np.ndarray, resamples: int, seed: int) -> list[Optional[float]]:
    """Interval of mean(synthetic) - mean(real), each side resampled on its own (they are other queries)."""
    rng = np.random.default_rng(seed)
    syn = resampled_means(synthetic[:, None], len(synthetic), resamples, rng)[:, 0]
    log = resampled_means(real[:, None], len(real), resamples, rng)[:, 0]
    return percentile_interval(syn - log)


def strict_winner(means: np.ndarray) -> Optional[int]:
    """Index of the single best column, or None when the best value is shared."""
    best = int(np.argmax(means))
    return best if int((means == means[best]).sum()) == 1 else None


def stability(values: np.ndarray, names: list[str], resamples: int, seed: int,
              sizes: Sequence[int] = SIZES) -> dict:
    """How often the full set's winner stays strictly first in bootstrap sets of several sizes."""
    full = values.mean(axis=0)
    winner = strict_winner(full)
    result = {"queries": len(values), "winner": names[winner] if winner is not None else None,
              "sizes": [], "size_for": {f"{t:g}": None for t in TARGETS}}
    if winner is None or len(names) < 2:
        return result
    rng = np.random.default_rng(seed)
    for size in sorted(set(sizes) | {len(values)}):
        means = resampled_means(values, size, resamples, rng)
        others = np.delete(means, winner, axis=1).max(axis=1)
        share = float((means[:, winner] > others).mean())
        result["sizes"].append({"size": size, "same_winner": share})
        for target in TARGETS:
            key = f"{target:g}"
            if result["size_for"][key] is None and share >= target:
                result["size_for"][key] = size
        if None not in result["size_for"].values() and size >= len(values):
            break  # every target is met at or below the set's own size: larger sets add nothing to say
    return result


# -- the gold set as a matrix --------------------------------------------------------------------

def parse_runs(specs: Sequence[str]) -> dict[str, str]:
    """``NAME=FILE`` options -> {name: file}; a bare FILE is named after its file name.

    A name of a built-in retriever is refused: ``--run bm25=F`` silently replaced bm25's column."""
    runs: dict[str, str] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep:
            name, path = Path(spec).stem, spec
        name, path = name.strip(), path.strip()
        if not name or not path:
            raise InputError(f"--run {spec!r}: use NAME=FILE, for example --run mine=my_retriever.trec")
        if name in RETRIEVERS:
            raise InputError(f"--run {spec!r}: {name!r} is the name of a built-in retriever; give the run "
                             f"another name, for example --run my-{name}={path}")
        if name in runs:
            raise InputError(f"--run name {name!r} is given twice; give each run its own name")
        runs[name] = path
    return runs


def _runs(db: sqlite_utils.Database, retrievers: Sequence[str], runs: Mapping[str, str], rows: list[dict],
          depth: int, embedder: Optional[str], warnings: list[str]) -> dict[str, metrics.Run]:
    """Each run file is read and checked as eval reads it (evaluate.load_run), before the built-in
    retrievers run: an empty or garbage run is refused, not ranked."""
    found: dict[str, metrics.Run] = {}
    for name, path in runs.items():
        if not Path(path).exists():
            raise InputError(f"{path}: no such run file (given as --run {name}={path})")
        found[name] = load_run(path, warnings)
    for name in retrievers:
        found[name], _ = retriever_run(db, name, rows, depth, embedder)
    return found


def score_matrix(db: sqlite_utils.Database, retrievers: Sequence[str], runs: Mapping[str, str], metric: str,
                 embedder: Optional[str] = None) -> tuple[list[dict], list[str], np.ndarray, list[str]]:
    """(scored gold rows, retriever names, queries x retrievers values of ``metric``, warnings)."""
    k = _check_metric(metric)
    rows = [q for q in gold_rows(db, ("approved",)) if is_answerable(q)]
    if not rows:
        raise InputError("no approved answerable queries with gold chunks yet: approve some rows first")
    names = list(dict.fromkeys([*retrievers, *runs]))
    if not names:
        raise InputError("no retriever to validate: list some with --retrievers or give --run NAME=FILE")
    warnings: list[str] = []
    found = _runs(db, retrievers, runs, rows, max(k or 0, 100), embedder, warnings)
    qrels = gold_qrels(rows)
    scored = {name: metrics.per_query(run, qrels, (k,) if k else ()) for name, run in found.items()}
    values = np.array([[scored[name][q["id"]][metric] for name in names] for q in rows], dtype=float)
    return rows, names, values, warnings


def _slice_members(rows: list[dict]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {"overall": list(range(len(rows)))}
    for i, q in enumerate(rows):
        for name in (f"source:{q['source']}", f"type:{q['query_type']}",
                     f"cluster:{q['cluster_label'] or 'unclustered'}"):
            groups.setdefault(name, []).append(i)
    return groups


def ranking(names: list[str], means: np.ndarray) -> list[str]:
    return [names[i] for i in sorted(range(len(names)), key=lambda i: (-means[i], names[i]))]


def _slice(values: np.ndarray, names: list[str], resamples: int, seed: int) -> dict:
    means = values.mean(axis=0)
    return {"queries": len(values), "means": {n: float(m) for n, m in zip(names, means)},
            "ci95": {n: list(paired_bootstrap(values[:, j], resamples, seed)) for j, n in enumerate(names)},
            "ranking": ranking(names, means)}


# -- the report ----------------------------------------------------------------------------------

def _agreement(values: np.ndarray, groups: dict, names: list[str], resamples: int, seed: int) -> Optional[dict]:
    syn, log = groups.get(f"source:{SYNTHETIC}"), groups.get(f"source:{REAL}")
    if not syn or not log or len(names) < 2:
        return None
    syn_means, log_means = values[syn].mean(axis=0), values[log].mean(axis=0)
    taus = resampled_taus(values[syn], values[log], resamples, seed)
    return {"synthetic_queries": len(syn), "real_queries": len(log),
            "synthetic_ranking": ranking(names, syn_means), "real_ranking": ranking(names, log_means),
            "tau": _none_if_nan(kendall_tau(syn_means, log_means)), "ci95": percentile_interval(taus),
            "undefined_resamples": int(np.isnan(taus).sum()),
            "same_winner": strict_winner(syn_means) is not None and strict_winner(syn_means) == strict_winner(log_means),
            "synthetic_winner": _winner_name(names, syn_means), "real_winner": _winner_name(names, log_means)}


def _winner_name(names: list[str], means: np.ndarray) -> Optional[str]:
    """The single best retriever's name, None when the best value is shared (a tie has no winner)."""
    best = strict_winner(means)
    return None if best is None else names[best]


def _none_if_nan(value: float) -> Optional[float]:
    """JSON has no NaN: an undefined tau is null."""
    return None if np.isnan(value) else value


def pair_gap(values: np.ndarray, i: int, j: int, resamples: int, seed: int) -> dict:
    """Mean of (retriever i - retriever j) per query, with its paired bootstrap interval."""
    diffs = values[:, i] - values[:, j]
    low, high = paired_bootstrap(diffs, resamples, seed) if len(diffs) else (None, None)
    return {"gap": float(diffs.mean()) if len(diffs) else None, "ci95": [low, high],
            "clear": low is not None and (low > 0 or high < 0)}


def _pairs(values: np.ndarray, groups: dict, names: list[str], resamples: int, seed: int) -> list[dict]:
    """Each pair of retrievers: its gap on the real rows (with interval), on the synthetic rows, and
    whether the two agree in sign. With four retrievers tau moves in steps of 0.33, so a reader
    needs the pairs: which ones the real queries tell apart, and whether the synthetic rows do too."""
    syn, log = groups.get(f"source:{SYNTHETIC}"), groups.get(f"source:{REAL}")
    if not syn or not log:
        return []
    pairs = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            real, synthetic = pair_gap(values[log], i, j, resamples, seed), pair_gap(values[syn], i, j, resamples, seed)
            agrees = None if real["gap"] == 0 else bool(np.sign(real["gap"]) == np.sign(synthetic["gap"]))
            pairs.append({"a": names[i], "b": names[j], "real": real, "synthetic": synthetic, "agrees": agrees,
                          "text": _pair_text(names[i], names[j], real, synthetic, agrees)})
    return pairs


def _pair_text(a: str, b: str, real: dict, synthetic: dict, agrees: Optional[bool]) -> str:
    ahead, behind = (a, b) if real["gap"] >= 0 else (b, a)
    text = (f"{ahead} - {behind}: {abs(real['gap']):.2f} on real rows {_interval_text(real, real['gap'] < 0)}"
            f"{' (clear)' if real['clear'] else ''}, {_signed_gap(synthetic['gap'], real['gap'] < 0)} on synthetic rows")
    if agrees is None:
        return text + ": the real rows tie them"
    return text + (": agree" if agrees else ": disagree")


def _interval_text(gap: dict, flip: bool) -> str:
    low, high = gap["ci95"]
    if low is None:
        return "[n/a]"
    return f"[{-high:+.2f}, {-low:+.2f}]" if flip else f"[{low:+.2f}, {high:+.2f}]"


def _signed_gap(gap: float, flip: bool) -> str:
    return f"{-gap:+.2f}" if flip else f"{gap:+.2f}"


def _verdict(agreement: Optional[dict], groups: dict, names: list[str], pairs: Sequence[dict] = ()) -> dict:
    """A verdict code and the sentence a user reads first. It rests on the winner and on the pairs
    of retrievers whose real gap is clear (its interval excludes zero), not on tau alone."""
    if len(names) < 2:
        return {"code": "too_few_retrievers", "text": "Only one retriever: list at least two to compare rankings."}
    if not groups.get(f"source:{REAL}"):
        return {"code": "no_real_queries", "text": "No real (log) queries in the approved gold set, so nothing says "
                "whether the synthetic set ranks retrievers as your users would: import a production log "
                "(curator import-log), review its rows, and run validate again. Shown: stability, per-type spread "
                "and realism against a built-in reference."}
    if not groups.get(f"source:{SYNTHETIC}"):
        return {"code": "no_synthetic_queries", "text": "No synthetic queries in the approved gold set: only the "
                "real slice is shown."}
    tau, (low, high) = agreement["tau"], agreement["ci95"]
    told = f"(Kendall tau {_fmt(tau)}, 95% interval [{_fmt(low)}, {_fmt(high)}])"
    clear = [p for p in pairs if p["real"]["clear"]]
    wrong = [p for p in clear if not p["agrees"]]
    # a shared top is said as such: "winners differ (real bm25, synthetic bm25)" was printed for a tie
    real_winner = agreement["real_winner"] or "shared by several"
    syn_winner = agreement["synthetic_winner"] or "shared by several"
    counted = f"{len(clear) - len(wrong)} of the {len(clear)} pairs your real queries clearly separate agree in sign"
    if agreement["same_winner"] and not wrong:
        return {"code": "agrees", "text": f"The synthetic set ranks your retrievers like your real queries do: the "
                f"same winner ({real_winner}), and {counted} {told}."}
    if wrong:
        worst = max(wrong, key=lambda p: abs(p["real"]["gap"]))
        return {"code": "disagrees", "text": f"It does not: the synthetic set ranks your retrievers unlike your real "
                f"queries. Real winner {real_winner}, synthetic winner {syn_winner}; only {counted} (worst: "
                f"{worst['text']}) {told}. Trust the real slice; add log queries or vague and keyword types."}
    differ = "the winners differ" if agreement["real_winner"] and agreement["synthetic_winner"] else "no single winner"
    return {"code": "uncertain", "text": f"The synthetic and real rankings may not agree: {differ} "
            f"(real {real_winner}, synthetic {syn_winner}) and the real queries do not clearly separate them; "
            f"{counted} {told}. Trust the real slice, and label more log queries before choosing a retriever."}


def _fmt(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:+.2f}"


def _difficulty_gaps(rows: list[dict], values: np.ndarray, groups: dict, metric: str, resamples: int,
                     seed: int) -> list[dict]:
    """Per synthetic query type: its mean (over retrievers) minus the log queries' mean, with interval."""
    log = groups.get(f"source:{REAL}")
    if not log:
        return []
    difficulty = values.mean(axis=1)  # one number per query: how well the retrievers do on it on average
    types = sorted({rows[i]["query_type"] for i in groups.get(f"source:{SYNTHETIC}", [])})
    gaps = []
    for query_type in types:
        members = [i for i in groups[f"type:{query_type}"] if rows[i]["source"] == SYNTHETIC]
        gap = float(difficulty[members].mean() - difficulty[log].mean())
        word = "easier" if gap > 0 else "harder"
        gaps.append({"query_type": query_type, "synthetic_queries": len(members), "real_queries": len(log),
                     "synthetic": float(difficulty[members].mean()), "real": float(difficulty[log].mean()),
                     "gap": gap, "ci95": gap_interval(difficulty[members], difficulty[log], resamples, seed),
                     "text": f"{query_type} rows are {abs(gap):.2f} {metric} {word} than your real queries"})
    return gaps


def _type_spread(slices: dict, names: list[str]) -> dict[str, Optional[float]]:
    """Per retriever: best minus worst mean over the query-type slices (how much the type mix matters)."""
    by_type = [s["means"] for name, s in slices.items() if name.startswith("type:")]
    if len(by_type) < 2:  # one type has no spread to speak of
        return {n: None for n in names}
    return {n: max(m[n] for m in by_type) - min(m[n] for m in by_type) for n in names}


def _stability_text(s: dict) -> str:
    if s["winner"] is None:
        return f"with {s['queries']} rows no single retriever is first: the top is shared"
    if not s["sizes"]:  # one retriever: it is always first, and there is nothing to resample
        return f"one retriever ({s['winner']}): nothing to rank"
    now = next(x["same_winner"] for x in s["sizes"] if x["size"] == s["queries"])
    # rounded down, so that "95%" is never printed for a share that misses the 95% target
    text = f"with {s['queries']} rows the winner ({s['winner']}) is the same in {int(now * 100)}% of resamples"
    for target, size in s["size_for"].items():
        if size is None:
            text += f"; even {SIZES[-1]} rows would not give {float(target):.0%}"
        elif size > s["queries"]:
            text += f"; {size} rows would give {float(target):.0%}"
    return text


def validate(db: sqlite_utils.Database, retrievers: Sequence[str] = DEFAULT_RETRIEVERS,
             runs: Optional[Mapping[str, str]] = None, metric: str = "recall@5", *, embedder: Optional[str] = None,
             resamples: int = RESAMPLES, seed: int = 0, sizes: Sequence[int] = SIZES) -> dict:
    """The validity report of the project's approved gold set (see the module docstring)."""
    rows, names, values, warnings = score_matrix(db, retrievers, runs or {}, metric, embedder)
    groups = _slice_members(rows)
    slices = {name: _slice(values[members], names, resamples, seed) for name, members in groups.items()}
    agreement = _agreement(values, groups, names, resamples, seed)
    pairs = _pairs(values, groups, names, resamples, seed)
    # a source holding every row would repeat the overall figures
    sets = [n for n in ("overall", f"source:{SYNTHETIC}", f"source:{REAL}")
            if n in groups and (n == "overall" or len(groups[n]) < len(rows))]
    stable = {name: stability(values[groups[name]], names, resamples, seed, sizes) for name in sets}
    for entry in stable.values():
        entry["text"] = _stability_text(entry)
    return {"metric": metric, "seed": seed, "resamples": resamples, "queries": len(rows), "retrievers": names,
            "verdict": _verdict(agreement, groups, names, pairs), "agreement": agreement, "pairs": pairs,
            "slices": slices,
            "difficulty_gap": _difficulty_gaps(rows, values, groups, metric, resamples, seed),
            "type_spread": _type_spread(slices, names), "stability": stable, "warnings": warnings,
            "realism": realism.section(db, rows)}
