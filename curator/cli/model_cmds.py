"""CLI commands for model files: ``models`` (the GGUF files on this machine) and ``model optimize``."""

from __future__ import annotations

import click

from curator.cli.common import emit, json_option, project, table


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


def _render_models(r: dict) -> str:
    from curator.core.modelfiles.listing import human_bytes, human_parameters, project_numbers

    rows = [{"name": m["name"], "params": human_parameters(m["parameters"]), "quant": m["quantization"] or "",
             "size": human_bytes(m["size_bytes"]), "ctx": m["context_length"] or "",
             "tmpl": {True: "yes", False: "no"}.get(m["chat_template"], ""), "store": m["store"],
             "fits": {True: "yes", False: "NO", None: "?"}[m["fits"]],
             **({"here": project_numbers(m) or "-"} if "not_found_here" in r else {}), "path": m["path"]} for m in r["models"]]
    columns = ["name", "params", "quant", "size", "ctx", "tmpl", "store", "fits", *(["here"] if "not_found_here" in r else []), "path"]
    lines = [table(rows, columns, {"name": 36, "path": 70, "here": 70}) if rows else "no GGUF model found"]
    lines += [f"unreadable: {m['problem']}" for m in r["models"] if not m["readable"]]
    lines += [f"not fitting: {m['name']}: {m['fit_reason']}" for m in r["models"] if m["readable"] and m["fits"] is False]
    lines += [f"used in the project but not found here: {m['model_path']} (sha256 {m['sha256'][:12]}): {project_numbers({'project': m})}"
              for m in r.get("not_found_here", [])]
    lines.append("searched: " + (", ".join(f"{s['folder']} ({s['store']})" for s in r["searched"]) or "no store folder exists"))
    return "\n".join(lines)


@click.command("models")
@click.option("--project", "project_path", metavar="PROJECT", help="Add what each model did in this project.")
@click.option("--add-folder", type=click.Path(file_okay=False), help="Remember a folder of .gguf files to search too.")
@click.option("--remove-folder", type=click.Path(file_okay=False), help="Forget a folder added with --add-folder.")
@json_option
def models(project_path, add_folder, remove_folder, as_json):
    """List the GGUF models on this machine, read from their headers (nothing is loaded).

    Looks in Ollama's, LM Studio's, GPT4All's and Jan's model folders, the Hugging Face hub cache,
    llama.cpp's cache, the bundled model and the folders you added. With --project, each model's
    rows in that project: candidates, accepted, approved, edited, rejected, rows per minute.

    \b
    Example:
        curator models
        curator models --project handbook.curator --json
        curator models --add-folder ~/models
    """
    from curator.core.modelfiles.listing import list_models
    from curator.core.modelfiles.places import add_folder as add, remove_folder as remove

    if add_folder:
        add(add_folder)
    if remove_folder:
        remove(remove_folder)
    if project_path:
        with project(project_path) as db:
            emit(list_models(db), as_json, _render_models)
    else:
        emit(list_models(), as_json, _render_models)


def register(cli: click.Group) -> None:
    cli.add_command(model)
    cli.add_command(models)
