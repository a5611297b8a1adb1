#!/usr/bin/env bash
# Build the one-folder Linux bundle and smoke-run it.
#
#   packaging/build_bundle.sh                 -> dist/vramscope/vramscope
#   packaging/build_bundle.sh OUTDIR          -> OUTDIR/vramscope/vramscope (work files in OUTDIR/build)
#   VRAMSCOPE_NO_SMOKE=1 packaging/build_bundle.sh   build only
#
# Needs PyInstaller (pip install -e '.[bundle]'); uses .venv/bin/pyinstaller when
# the checkout has a .venv, else the one on PATH. The smoke run starts the window
# offscreen on the demo for 3 s and runs `status --demo --json`, as a user of its
# own (fresh home, settings and data directories); either failing (or printing a
# traceback) fails the script. Then add it to your desktop menu:
#   dist/vramscope/vramscope desktop install     (or packaging/install_desktop.sh)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [[ -x "$ROOT/.venv/bin/pyinstaller" ]]; then
    PYINSTALLER="$ROOT/.venv/bin/pyinstaller"
elif command -v pyinstaller >/dev/null; then
    PYINSTALLER="$(command -v pyinstaller)"
else
    echo "build_bundle.sh: PyInstaller not found; install it with: pip install -e '.[bundle]'" >&2
    exit 2
fi

if [[ $# -ge 1 ]]; then
    DIST="$(mkdir -p "$1" && cd "$1" && pwd)"
    WORK="$DIST/build"
else
    DIST="$ROOT/dist"
    WORK="$ROOT/build"
fi

"$PYINSTALLER" --noconfirm --clean --log-level WARN --distpath "$DIST" --workpath "$WORK" \
    packaging/vramscope.spec

BIN="$DIST/vramscope/vramscope"
echo "built $BIN ($(du -sh "$DIST/vramscope" | cut -f1))"

if [[ "${VRAMSCOPE_NO_SMOKE:-0}" == "1" ]]; then
    exit 0
fi

LOG="$(mktemp)"
# the smoke run is a user of its own: it neither reads nor writes your settings, sessions
# or agent sockets (the window saves its geometry when it quits)
SMOKE="$(mktemp -d)"
trap 'rm -rf "$LOG" "$LOG.out" "$SMOKE"' EXIT
mkdir -m 700 "$SMOKE/run"
PRIVATE=(HOME="$SMOKE/home" XDG_CONFIG_HOME="$SMOKE/config" XDG_DATA_HOME="$SMOKE/data"
         XDG_STATE_HOME="$SMOKE/state" XDG_CACHE_HOME="$SMOKE/cache" XDG_RUNTIME_DIR="$SMOKE/run"
         VRAMSCOPE_RUNTIME_DIR="$SMOKE/run/vramscope")
check() {  # check WHAT COMMAND...: exit 0 and no traceback on stderr
    local what="$1"; shift
    if ! "$@" >"$LOG.out" 2>"$LOG"; then
        echo "smoke run failed: $what" >&2; cat "$LOG" >&2; exit 1
    fi
    if grep -q "Traceback" "$LOG"; then
        echo "smoke run printed a traceback: $what" >&2; cat "$LOG" >&2; exit 1
    fi
    rm -f "$LOG.out"
}
check "window on the demo, offscreen, 3 s" \
    env "${PRIVATE[@]}" QT_QPA_PLATFORM=offscreen "$BIN" --demo --quit-after 3
check "status --demo --json" env "${PRIVATE[@]}" "$BIN" status --demo --json
echo "smoke run passed: $BIN"
