"""The documents a user reads first stay true as the code changes.

- docs/architecture.md names every folder (package) and every top-level module of curator/core,
  so a new stage cannot land without a line in the layout map (the map once missed diagnosis/
  and doctor.py);
- README.md links only to files that exist, names the two commands of the quick start, and
  stays short enough to read in five minutes (the rest lives in docs/).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "curator" / "core"
README = ROOT / "README.md"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
README_MAX_LINES = 250
# [text](target) and ![alt](target); a target ends at whitespace or ')' (no titles are used)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def core_folders() -> list[str]:
    return sorted(p.name for p in CORE.iterdir() if p.is_dir() and (p / "__init__.py").exists())


def core_modules() -> list[str]:
    return sorted(p.name for p in CORE.glob("*.py") if p.name != "__init__.py")


def missing_from_map(text: str, folders: list[str], modules: list[str]) -> list[str]:
    """The folders (as 'name/') and modules (as 'name.py') the map does not name."""
    wanted = [f"{name}/" for name in folders] + modules
    return [name for name in wanted if not re.search(rf"(?<![\w/.]){re.escape(name)}", text)]


def local_link_targets(text: str) -> list[str]:
    """Link targets that point into the repository: no URL scheme, no in-page anchor only."""
    targets = [t.split("#", 1)[0] for t in LINK.findall(text)]
    return [t for t in targets if t and not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


def test_architecture_names_every_core_folder_and_module():
    folders, modules = core_folders(), core_modules()
    assert "diagnosis" in folders and "doctor.py" in modules  # the walk sees what the old map missed
    missing = missing_from_map(ARCHITECTURE.read_text(encoding="utf-8"), folders, modules)
    assert not missing, f"docs/architecture.md does not name {', '.join(missing)}: add a line to its layout map"


def test_the_map_check_can_fail():
    text = "  store/   the project file\n  corpus/  loaders\n  demo.py  the demo\n  old_errors.py\n"
    assert missing_from_map(text, ["corpus", "diagnosis", "store"], ["demo.py", "errors.py"]) == \
        ["diagnosis/", "errors.py"]


def test_readme_links_only_to_files_that_exist():
    targets = local_link_targets(README.read_text(encoding="utf-8"))
    assert any(t.startswith("docs/") for t in targets), "the README links no docs page"
    missing = sorted({t for t in targets if not (ROOT / t).exists()})
    assert not missing, f"README.md links missing files: {', '.join(missing)}"


def test_link_check_sees_images_anchors_and_skips_urls():
    text = ("![shot](docs/a.png) see [b](docs/b.md#part), [web](https://example.org/x), "
            "[here](#quick-start), [mail](mailto:x@example.org)")
    assert local_link_targets(text) == ["docs/a.png", "docs/b.md"]


def test_readme_names_the_two_commands_and_stays_short():
    text = README.read_text(encoding="utf-8")
    assert "make demo" in text and "make test" in text
    lines = len(text.splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES}): move detail to docs/"
