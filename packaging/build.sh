#!/bin/sh
# Build the desktop bundle into dist/curator/ and smoke-test it (packaging/smoke.sh).
#   make bundle                 (installs PyInstaller into .venv, then runs this)
#   packaging/build.sh          (from anywhere; uses .venv, needs PyInstaller installed)
# dist/curator/ holds two executables sharing one set of libraries: curator-gui (the app) and
# curator (the CLI), with the desktop entry and icon beside them for packagers.
set -eu
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
"$PY" -m PyInstaller --version >/dev/null 2>&1 || { echo "PyInstaller is not installed: run 'make bundle'"; exit 1; }
"$PY" -m PyInstaller --noconfirm --clean --distpath dist --workpath build/pyinstaller packaging/curator.spec
cp packaging/curator.desktop packaging/curator.svg dist/curator/
echo "bundle size: $(du -sh dist/curator | cut -f1)"
PY="$PY" packaging/smoke.sh dist/curator
