"""A GGUF's chat template is code from whoever made the file. One that loops, writes or allocates
without end, raises, or does not parse fails fast with one line naming the file and --chat-format,
and --chat-format gets past it (issue 32: tracebacks, a hang the GUI's Cancel could not stop, and
--chat-format could not work around a broken template because the load compiled it anyway).

The guard is tested on its own (fast), then through real llama.cpp on the bundled weights
rewritten with hostile templates by gguf's own gguf_new_metadata script, and the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.errors import ModelFileError
from curator.core.generation.backends import LlamaCppBackend
from curator.core.generation.backends import template_guard
from curator.core.generation.backends.template_guard import TemplateGuard

pytestmark = pytest.mark.slow  # every test here starts a renderer process or loads a model

MESSAGES = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is a list?"}]
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
LOOPS = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}" + CHATML
WRITES = "{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}" + CHATML
ALLOCATES = "{% set big = 'x' * 4000000000 %}" + CHATML
RAISES = "{{ raise_exception('this template refuses every conversation') }}"
BROKEN = "{% for m in messages %}{{ m['content'] }"


def _guard(template: str, **limits) -> TemplateGuard:
    return TemplateGuard("hostile.gguf", template, "<s>", "</s>", **limits)


def test_a_good_template_renders_as_llama_cpp_python_would():
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    guard = _guard(CHATML)
    try:
        expected = Jinja2ChatFormatter(CHATML, "</s>", "<s>")(messages=MESSAGES).prompt
        assert guard.render(MESSAGES) == expected
        assert guard.render(MESSAGES[1:]) == Jinja2ChatFormatter(CHATML, "</s>", "<s>")(messages=MESSAGES[1:]).prompt
    finally:
        guard.close()


@pytest.mark.parametrize("template, reason", [
    (LOOPS, "did not finish within 3 s"),
    (WRITES, "its output passed 1,000,000 characters"),
    (ALLOCATES, "MB of memory"),
    (RAISES, "ValueError: this template refuses every conversation"),
])
def test_a_hostile_template_fails_fast_with_one_line(template, reason):
    guard = _guard(template, render_seconds=3, max_chars=1_000_000)
    with pytest.raises(ModelFileError) as caught:
        guard.render(MESSAGES)
    message = str(caught.value)
    assert message.startswith("hostile.gguf: its chat template cannot be used") and reason in message, message
    assert "--chat-format" in message and "\n" not in message
    with pytest.raises(ModelFileError):  # the failure is kept: no second wait
        guard.render(MESSAGES)
    assert guard._process is None  # the child that looped or wrote is gone


def test_a_template_that_does_not_parse_is_refused_when_the_guard_starts():
    with pytest.raises(ModelFileError, match=r"TemplateSyntaxError at line 1: .*pass --chat-format"):
        _guard(BROKEN)


# -- through llama.cpp and the CLI ------------------------------------------------------------

def _rewrite(source: Path, out: Path, template: str) -> Path:
    subprocess.run([sys.executable, "-m", "gguf.scripts.gguf_new_metadata", str(source), str(out), "--force",
                    "--chat-template", template], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def hostile_models(tmp_path_factory, bundled_model) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hostile")
    return {name: _rewrite(bundled_model, folder / f"{name}.gguf", template)
            for name, template in (("broken", BROKEN), ("loops", LOOPS), ("raises", RAISES))}


def test_chat_format_gets_past_a_template_that_does_not_parse(hostile_models):
    with pytest.raises(ModelFileError, match="broken.gguf: its chat template cannot be used"):
        LlamaCppBackend(hostile_models["broken"], n_ctx=512).llm
    named = LlamaCppBackend(hostile_models["broken"], n_ctx=512, chat_format="chatml")
    prompt = named.llm.detokenize(named.chat_prompt(MESSAGES)[0], special=True).decode("utf-8")
    assert "<|im_start|>user\nWhat is a list?" in prompt


def test_a_looping_template_stops_both_decode_paths(hostile_models, monkeypatch):
    monkeypatch.setattr(template_guard, "RENDER_SECONDS", 3.0)
    for parallel in (1, 2):
        backend = LlamaCppBackend(hostile_models["loops"], n_ctx=512, parallel=parallel)
        with pytest.raises(ModelFileError, match="loops.gguf: .*did not finish within 3 s"):
            list(backend.iter_complete([_request()]))


def _request():
    from curator.core.generation.backends import Request

    return Request(MESSAGES, max_tokens=8, temperature=0.0)


def test_generate_says_one_line_and_chat_format_works_around(sample_project_path, hostile_models):
    runner = CliRunner()
    args = ["generate", str(sample_project_path), "--count", "1", "--parallel", "1", "--retries", "0",
            "--mix", "factoid=1"]
    for name in ("raises", "broken"):
        out = runner.invoke(cli, [*args, "--model", str(hostile_models[name])])
        assert out.exit_code == 1, out.output
        assert out.output.startswith(f"Error: {hostile_models[name]}: its chat template cannot be used"), out.output
        assert "--chat-format" in out.output and len(out.output.strip().splitlines()) == 1, out.output
    out = runner.invoke(cli, [*args, "--model", str(hostile_models["broken"]), "--chat-format", "chatml"])
    assert out.exit_code in (0, 1) and "chat template" not in out.output, out.output
