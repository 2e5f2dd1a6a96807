"""``curator doctor``: check the llama.cpp build, the bundled models and Qt's platform plugins."""

from __future__ import annotations

import click

from curator.cli.common import emit, json_option

MARKS = {"ok": "ok  ", "fail": "FAIL", "skip": "skip"}


def _render(report: dict) -> str:
    lines = []
    for check in report["checks"]:
        lines.append(f"{MARKS[check['status']]}  {check['name']}: {check['detail']}")
        if check["fix"]:
            lines.append(f"      fix: {check['fix']}")
    failed = sum(c["status"] == "fail" for c in report["checks"])
    lines.append("Everything Curator needs is in place." if report["ok"] else
                 f"{failed} check(s) failed: run the fix shown under each, then 'curator doctor' again.")
    return "\n".join(lines)


@click.command()
@json_option
def doctor(as_json: bool) -> None:
    """Check this machine: llama.cpp build, bundled models, Qt platform plugins (exit 1 if any fails).

    Each failed check prints the command that fixes it. The llama.cpp check runs a real prompt
    on the bundled model in a child process, so a broken build is reported, not a crash.

    \b
    Example:
        curator doctor
        curator doctor --json
    """
    from curator.core.doctor import run_doctor

    report = run_doctor()
    emit(report, as_json, _render)
    if not report["ok"]:
        raise SystemExit(1)


def register(cli: click.Group) -> None:
    cli.add_command(doctor)
