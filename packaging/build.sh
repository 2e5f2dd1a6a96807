#!/bin/sh
# Build the desktop bundle into dist/curator-gui/ and smoke-test it offscreen.
#   packaging/build.sh            (from the repository root; uses .venv)
set -eu
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
"$PY" -m PyInstaller --version >/dev/null 2>&1 || "$PY" -m pip install pyinstaller
"$PY" -m PyInstaller --noconfirm --clean --distpath dist --workpath build/pyinstaller packaging/curator.spec
# install the desktop entry and icon next to the bundle for packagers
cp packaging/curator.desktop packaging/curator.svg dist/curator-gui/
echo "bundle size: $(du -sh dist/curator-gui | cut -f1)"
# smoke test: open the window offscreen (optionally on a project: build.sh PROJECT) and quit
QT_QPA_PLATFORM=offscreen timeout 120 dist/curator-gui/curator-gui --benchmark-startup --reviewer smoke ${1:+"$1"} || {
  echo "bundle did not start"; exit 1; }
