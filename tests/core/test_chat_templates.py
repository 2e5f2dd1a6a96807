"""A user's GGUF runs with the chat template it holds, whatever the template, on both decode
paths; one that holds none is said, and --chat-format names one.

The second model is the bundled SmolLM2 weights rewritten with other metadata by gguf's own
gguf_new_metadata script: a Gemma-style template (turn markers SmolLM2's ChatML never uses), and
no template at all. So the tests run real llama.cpp on a real, differently templated file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.generation.backends import LlamaCppBackend, Request
from curator.core.generation.backends.llama_cpp import CHAT_TEMPLATE_KEY, gguf_string

GEMMA_STYLE = ("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'assistant' %}"
               "{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}"
               "<start_of_turn>{{ role }}\n{{ message['content'] | trim }}<end_of_turn>\n{% endfor %}"
               "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")
MESSAGES = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is a list?"}]


def _rewrite(source: Path, out: Path, *args: str) -> Path:
    subprocess.run([sys.executable, "-m", "gguf.scripts.gguf_new_metadata", str(source), str(out), "--force", *args],
                   check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def gemma_templated(tmp_path_factory, bundled_model) -> Path:
    return _rewrite(bundled_model, tmp_path_factory.mktemp("models") / "gemma-style.gguf", "--chat-template", GEMMA_STYLE)


@pytest.fixture(scope="module")
def untemplated(tmp_path_factory, bundled_model) -> Path:
    return _rewrite(bundled_model, tmp_path_factory.mktemp("models") / "base.gguf", "--remove-metadata", CHAT_TEMPLATE_KEY)


def test_the_header_reader_finds_the_template_without_loading_the_model(bundled_model, gemma_templated, untemplated,
                                                                         tmp_path):
    assert "<|im_start|>" in gguf_string(bundled_model, CHAT_TEMPLATE_KEY)
    assert gguf_string(gemma_templated, CHAT_TEMPLATE_KEY) == GEMMA_STYLE
    assert gguf_string(untemplated, CHAT_TEMPLATE_KEY) is None
    assert gguf_string(bundled_model, "general.architecture") == "llama"
    not_gguf = tmp_path / "x.gguf"
    not_gguf.write_bytes(b"NOPE" + bytes(2048))
    assert gguf_string(not_gguf, CHAT_TEMPLATE_KEY) is None


def test_a_model_runs_with_the_template_it_holds_on_both_decode_paths(gemma_templated):
    backend = LlamaCppBackend(gemma_templated, n_ctx=1024, parallel=2)
    tokens, _stops = backend.chat_prompt(MESSAGES)
    prompt = backend.llm.detokenize(tokens, special=True).decode("utf-8")
    assert "<start_of_turn>user" in prompt and prompt.endswith("<start_of_turn>model\n")
    # SmolLM2's BOS token is spelled <|im_start|>; past it, no ChatML turn may appear
    assert "<|im_start|>system" not in prompt and "<|im_start|>user" not in prompt
    assert backend.warnings() == [] and backend.describe()["chat_format"] is None
    assert backend.describe()["chat_template_in_file"] is True
    grammar = 'root ::= "A list is " [a-z ]{3,40} "."'
    requests = [Request(MESSAGES, max_tokens=24, temperature=0.0, seed=s, grammar=grammar) for s in (1, 2)]
    batched = backend.complete_many(requests)  # the batch decoder, two sequences
    single = LlamaCppBackend(gemma_templated, n_ctx=1024).complete(MESSAGES, max_tokens=24, temperature=0.0,
                                                                    grammar=grammar)
    assert all(reply.startswith("A list is ") for reply in batched + [single])
    assert batched[0] == single  # the first sequence decodes exactly as llama-cpp-python's own call


def test_a_model_without_a_template_is_said_and_chat_format_names_one(untemplated):
    backend = LlamaCppBackend(untemplated, n_ctx=1024)
    assert len(backend.warnings()) == 1 and "no chat template" in backend.warnings()[0]
    assert "--chat-format" in backend.warnings()[0]
    fallback = backend.llm.detokenize(backend.chat_prompt(MESSAGES)[0], special=True).decode("utf-8")
    assert "[INST]" in fallback  # llama-cpp-python's silent fallback: the reason for the warning
    named = LlamaCppBackend(untemplated, n_ctx=1024, chat_format="chatml")
    assert named.warnings() == [] and named.describe()["chat_format"] == "chatml"
    assert named.describe()["chat_template_in_file"] is False
    assert "<|im_start|>user" in named.llm.detokenize(named.chat_prompt(MESSAGES)[0], special=True).decode("utf-8")


def test_generate_records_the_template_and_says_when_there_is_none(sample_project_path, untemplated):
    runner = CliRunner()
    result = runner.invoke(cli, ["generate", str(sample_project_path), "--model", str(untemplated), "--count", "2",
                                 "--parallel", "4", "--retries", "0", "--mix", "factoid=1"])
    assert "warning: base.gguf holds no chat template" in result.output, result.output
    # said before the engine is chosen (a probe can take minutes), not only in the summary at the end
    said_first = result.output.index("holds no chat template")
    assert said_first < result.output.index("rows in"), result.output
    result = runner.invoke(cli, ["generate", str(sample_project_path), "--model", str(untemplated), "--count", "2",
                                 "--chat-format", "chatml", "--parallel", "4", "--retries", "0", "--mix", "factoid=1",
                                 "--json"])
    assert "no chat template" not in result.output
    import json
    import sqlite3

    params = [json.loads(p) for (p,) in sqlite3.connect(sample_project_path).execute(
        "SELECT params FROM generation_runs ORDER BY id")]
    assert [(p["chat_format"], p["chat_template_in_file"]) for p in params] == [(None, False), ("chatml", False)]


def test_an_unknown_chat_format_is_refused_before_any_work(sample_project_path, untemplated):
    result = CliRunner().invoke(cli, ["generate", str(sample_project_path), "--model", str(untemplated),
                                      "--chat-format", "chatmll"])
    assert result.exit_code != 0
    assert "chatmll" in result.output and "chatml" in result.output.replace("chatmll", "")
