"""The dependency rule: core is headless; cli and gui never import each other.

Every .py file is parsed with ``ast`` and every Import/ImportFrom node is checked, including
imports inside functions (a lazy import breaks the rule just as much as a top-level one).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "curator"
FORBIDDEN = {
    "core": ("PySide6", "shiboken6", "click", "curator.cli", "curator.gui"),
    "cli": ("curator.gui",),
    "gui": ("curator.cli", "click"),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) for every import in a file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                prefix = package[: len(package) - node.level + 1]
                base = ".".join(prefix + ([base] if base else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def _violations(area: str) -> list[str]:
    bad = []
    for path in sorted((PACKAGE / area).rglob("*.py")):
        for line, name in imported_names(path):
            for banned in FORBIDDEN[area]:
                if name == banned or name.startswith(banned + "."):
                    bad.append(f"{path.relative_to(PACKAGE.parent)}:{line}: imports {name}")
    return bad


@pytest.mark.parametrize("area", sorted(FORBIDDEN))
def test_dependency_rule(area):
    if not (PACKAGE / area).is_dir():
        pytest.skip(f"curator/{area} does not exist yet")
    assert _violations(area) == []


def test_checker_sees_nested_and_relative_imports(tmp_path):
    """The checker itself must catch a lazy import and a relative 'from ..gui import x'."""
    fake = tmp_path / "curator"
    (fake / "core").mkdir(parents=True)
    (fake / "core" / "bad.py").write_text(
        "def f():\n    import PySide6.QtWidgets\n\ndef g():\n    from ..gui import window\n"
        "from curator import cli\n"
    )
    globals()["PACKAGE"] = fake
    try:
        found = _violations("core")
    finally:
        globals()["PACKAGE"] = Path(__file__).resolve().parent.parent / "curator"
    assert any("PySide6.QtWidgets" in v for v in found)
    assert any("curator.gui" in v for v in found)
    assert any("curator.cli" in v for v in found)


def test_core_imports_nothing_heavy_at_import_time():
    """Importing the whole core in a fresh interpreter must not load Qt or the heavy libraries.

    (click is not checked here: sqlite_utils itself imports it; the ast check above covers
    core's own imports of click.)
    """
    import subprocess
    import sys

    modules = sorted(_module_name(p) for p in (PACKAGE / "core").glob("*.py"))
    code = ("import sys\n" + "".join(f"import {m}\n" for m in modules)
            + "heavy = [m for m in ('PySide6', 'llama_cpp', 'umap', 'sklearn', 'pypdf') if m in sys.modules]\n"
            + "print(','.join(heavy))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
