"""Choosing the engine a run uses: an endpoint, a user's GGUF, or the bundled model's measured
default or probed fastest setting; and the check that a resumed run keeps its model."""

from __future__ import annotations

from typing import Optional

from curator.core import store
from curator.core.errors import InputError
from curator.core.generation.backends import Backend, check_gguf, open_backend
from curator.core.generation.config import GenerationConfig
from curator.core.generation.repack import file_sha256
from curator.core.progress import CancelToken, ProgressCallback, report


def open_engine(config: GenerationConfig, resumed: Optional[dict],
                on_progress: Optional[ProgressCallback] = None, cancel: Optional[CancelToken] = None) -> Backend:
    """The backend a run uses: an endpoint as given; a local model with the file and sequences decoded
    together that the user named, else the fastest for this mode on this machine (optimize.choose_engine),
    and a resumed run with the file and sequences it started with. Which ran, and why, is in describe()."""
    if config.endpoint:
        return open_backend(None, config.endpoint, parallel=config.parallel)
    from curator.core.generation.backends import LlamaCppBackend, free_cores
    from curator.core.generation.backends.llama_cpp import template_warnings
    from curator.core.generation.optimize import choose_engine

    threads = config.threads or free_cores()
    if config.model_path:  # before a probe of minutes, not in the summary at the end (the summary repeats it)
        for warning in template_warnings(config.model_path, chat_format=config.chat_format):
            report(on_progress, 0, config.count, "warning: " + warning)
    measured = _measured_default(config, resumed)
    if measured is not None:
        chosen, why = measured
    else:
        chosen, why = choose_engine(_engine_candidates(config, resumed), config.answers, threads, config.n_ctx,
                                    config.chat_format, on_probe=lambda text: report(on_progress, 0, config.count, text),
                                    cancel=cancel)
    backend = LlamaCppBackend(chosen.path, n_ctx=config.n_ctx, n_threads=threads, seed=config.seed,
                              parallel=chosen.parallel, source_model_path=chosen.source, chat_format=config.chat_format)
    backend.engine_choice, backend.decoder_for_one = why, True
    return backend


# Why answer-first rows with the bundled model run its Q4_1 file, one sequence, without a probe (issue 33):
# a request evaluates ~77 new prompt tokens to write ~17, and the likelihood check and the rest of the
# pipeline are ~25% of a row's time, so neither Q8_0's faster prompt nor batching paid. Measured in one
# run, alternating, same seeds (docs/benchmarks.md): the probe's choice (Q8_0 x1, or x4 under heavy load)
# made 0.87x (Python FAQ) and 1.06x (Debian FAQ) this setting's accepted rows/min at lower acceptance, and
# 0.88x and 0.55x in a second run at load 4-9; the probe cost 2.5-4.5 minutes on first use, and its cached
# choice flipped with the machine's load. The same file with 2 or 4 sequences decoded together made 0.67x and
# 0.92x its accepted rows/min (Python FAQ, 1 thread, load 3.4-5.7, 2026-12-06): on this CPU a decode step of
# 2-4 sequences costs about as much as 2-4 steps of one (free-running decode: 63-74 tokens/s aggregate for x2
# and x4 against 70-78 for one sequence), and a request's prompt and likelihood pass, which batching does not
# shorten, are two thirds of its time.
MEASURED_DEFAULT = ("answer-first rows with the bundled model: its Q4_1 file, one sequence, no probe; measured "
                    "at least as fast as the probe's choices (Q8_0 copy x1/x4) and as the Q4_1 file with 2 or 4 "
                    "sequences at no lower acceptance, without the first-use probe (docs/generate.md, Speed and "
                    "quality)")


def _measured_default(config: GenerationConfig, resumed: Optional[dict]) -> Optional[tuple]:
    """(candidate, why) when the run takes the measured default without a probe: answer-first rows with
    the bundled model, no --parallel and not a resumed run (which keeps its own file and parallel);
    None when the probe decides (--answers free, a user's GGUF, or --parallel N over both files)."""
    from curator.core.generation.optimize import EngineCandidate
    from curator.core.generation.repack import bundled_model_files

    if config.model_path or config.answers != "extractive" or config.parallel or resumed:
        return None
    chosen = EngineCandidate(bundled_model_files(repack=False).path, 1)
    return chosen, {"chosen": chosen.label, "chosen_by": MEASURED_DEFAULT, "mode": config.answers}


def _engine_candidates(config: GenerationConfig, resumed: Optional[dict]) -> list:
    """Engine settings a run may use: a user's GGUF as it is, or the bundled model's Q4_1 file and (unless
    --no-repack) its Q8_0 copy; each with --parallel, else each of optimize.PARALLEL_CHOICES. A resumed run
    keeps the file and the parallel it started with."""
    from curator.core.generation.optimize import PARALLEL_CHOICES, EngineCandidate
    from curator.core.generation.repack import bundled_model_files

    if config.model_path:
        files = [(check_gguf(config.model_path), None)]  # a missing or damaged file: one line, before any probe
    else:
        files = [(bundled_model_files(repack=False).path, None)]
        if config.repack:
            copy = bundled_model_files(repack=True)
            files.append((copy.path, copy.source))
    # Need-first rows run one sequence without a probe: a probe of a capable model costs minutes, and on this
    # 2-core CPU two to four sequences decoded together made fewer rows a minute than one (MEASURED_DEFAULT).
    one = [1] if config.answers == "need-first" else list(PARALLEL_CHOICES)
    parallels = [config.parallel] if config.parallel else one
    if resumed:
        params = store.loads(resumed["params"], {})
        files = [f for f in files if str(f[0]) == resumed["model_path"]] or files  # another file is refused later
        parallels = [config.parallel or params.get("parallel") or parallels[0]]
    return [EngineCandidate(path, parallel, source) for path, source in files for parallel in parallels]


def check_same_model(db, run: dict, backend: Backend) -> None:
    """Refuse to resume a run on another backend or model file: its rows would mix two models
    under one run record (and one manifest line)."""
    described = backend.describe()
    if backend.id != run["backend"]:
        raise InputError(f"run {run['id']} was made with the {run['backend']} backend, not {backend.id}: "
                         "resume it with the same --model or --endpoint, or start a new run without --resume")
    model_path = described.get("model_path")
    if model_path and run["model_sha256"] and file_sha256(model_path) != run["model_sha256"]:
        raise InputError(f"run {run['id']} was made with {run['model_path']} (sha256 {run['model_sha256'][:12]}), "
                         f"not {model_path}: resume it with that model file, or start a new run without --resume")
    recorded = store.loads(run["params"], {}).get("endpoint")
    if recorded and described.get("endpoint") and described["endpoint"] != recorded:
        raise InputError(f"run {run['id']} was made against {recorded}, not {described['endpoint']}: resume it "
                         "with the same --endpoint, or start a new run without --resume")
