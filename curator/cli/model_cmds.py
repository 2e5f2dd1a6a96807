"""CLI commands for model files: ``model optimize``."""

from __future__ import annotations

import click

from curator.cli.common import emit, json_option


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _render(r: dict) -> str:
    src, copy = r["source"], r["copy"]
    where = "in the cache" if r["where"] == "cache" else "beside the original"
    lines = [f"{'reused existing' if r['reused_existing_copy'] else 'wrote'} {copy['path']} ({where})"
             + (f"; replaced the copy there ({r['replaced']})" if r.get("replaced") else ""),
             f"  type {src['type']} -> {copy['type']}, size {_mb(src['bytes'])} -> {_mb(copy['bytes'])}",
             f"  prompt {src['prompt_tokens_per_s']} -> {copy['prompt_tokens_per_s']} tokens/s "
             f"({r['prompt_speedup']:.2f}x), decode {src['decode_tokens_per_s']} -> {copy['decode_tokens_per_s']} "
             f"tokens/s ({r['decode_speedup']:.2f}x), measured here just now",
             f"  the original is unchanged; use the copy with: curator generate PROJECT --model {copy['path']}"]
    if r["prompt_speedup"] < 1 and r["decode_speedup"] < 1:
        lines.append("  note: the copy ran slower on this machine; keep using the original (delete the copy).")
    return "\n".join(lines)


@click.group("model")
def model() -> None:
    """Model files: write faster copies of a GGUF model.

    \b
    Example:
        curator model optimize ~/models/my-model.Q4_1.gguf --cache
    """


@model.command()
@click.argument("model_file", metavar="FILE", type=click.Path(dir_okay=False))
@click.option("--type", "type_name", default="q8_0", show_default=True, type=click.Choice(["q8_0", "q4_0"]),
              help="Weights' type of the copy: q8_0 keeps a 4- or 8-bit model's weights; q4_0 loses precision.")
@click.option("--cache", "into_cache", is_flag=True, help="Write the copy in the user's cache, not beside FILE.")
@click.option("--threads", type=click.IntRange(1, 256), help="CPU threads for the measurement (default: the physical cores other processes leave free).")
@json_option
def optimize(model_file, type_name, into_cache, threads, as_json):
    """Write a copy of FILE whose weights llama.cpp's CPU kernels repack, and measure both.

    The copy goes beside FILE as NAME.q8_0.gguf (or into the cache with --cache); FILE is never
    changed. Prints both types, sizes and the prompt and decode tokens/s measured on this machine.

    \b
    Example:
        curator model optimize ~/models/SmolLM2-135M-Instruct.Q4_1.gguf
    """
    from curator.core.generation.optimize import optimize_model

    emit(optimize_model(model_file, type_name, into_cache, threads), as_json, _render)


def register(cli: click.Group) -> None:
    cli.add_command(model)
