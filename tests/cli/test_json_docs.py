"""Every CLI command with a ``--json`` option has its output documented in docs/json/.

Fast: no model and no project. It walks the click group (subgroups such as ``model`` included) and
requires ``curator <command path> --json`` in docs/json/README.md, so a new ``--json`` command
without documentation fails here. It also checks that the README's links point at files that exist
and that every ```json example in docs/json/ is valid JSON.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import click

from curator.cli.main import cli

DOCS = Path(__file__).resolve().parents[2] / "docs" / "json"
README = DOCS / "README.md"


def _has_json_option(command: click.Command) -> bool:
    return any(param.name == "as_json" or "--json" in getattr(param, "opts", ()) for param in command.params)


def json_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[str]:
    """The command paths (``"eval"``, ``"model optimize"``) of every command with ``--json``."""
    found = []
    for name, command in sorted(group.commands.items()):
        path = prefix + (name,)
        if isinstance(command, click.Group):
            found += json_commands(command, path)
        elif _has_json_option(command):
            found.append(" ".join(path))
    return found


def test_the_walk_finds_commands_of_the_group_and_of_subgroups():
    found = json_commands(cli)
    # a walk that found nothing would make the next test pass without checking anything
    assert {"init", "eval", "validate", "diagnose", "model optimize"} <= set(found)
    assert "gui" not in found  # no --json option
    assert "model" not in found  # a group, not a command


def test_every_json_command_is_documented_in_the_readme():
    text = README.read_text(encoding="utf-8")
    missing = [path for path in json_commands(cli) if f"curator {path} --json" not in text]
    assert not missing, (f"document the --json output of {', '.join(missing)} in docs/json/ and list each as "
                         f"'curator <command> --json' in {README}")


def test_the_readme_links_point_at_existing_pages():
    text = README.read_text(encoding="utf-8")
    targets = {target.split("#")[0] for target in re.findall(r"\]\(([^)]+)\)", text)}
    assert targets, "the README links no page"
    missing = sorted(t for t in targets if not t.startswith("http") and not (DOCS / t).is_file())
    assert not missing, f"docs/json/README.md links missing pages: {', '.join(missing)}"


def test_every_json_example_parses():
    bad = []
    for page in sorted(DOCS.glob("*.md")):
        for number, block in enumerate(re.findall(r"```json\n(.*?)```", page.read_text(encoding="utf-8"), re.S), 1):
            try:
                json.loads(block)
            except json.JSONDecodeError as exc:
                bad.append(f"{page.name} example {number}: {exc}")
    assert not bad, "invalid JSON examples: " + "; ".join(bad)
