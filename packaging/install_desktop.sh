#!/usr/bin/env bash
# Add vramscope to your desktop menu (current user only), or remove it.
#
#   packaging/install_desktop.sh              install: the bundle in dist/ if built, else
#                                             the checkout's .venv `vramscope`
#   packaging/install_desktop.sh uninstall    remove the entry and the icons
#   packaging/install_desktop.sh show         print the entry without installing
#   packaging/install_desktop.sh install --exec "/opt/vramscope/vramscope"
#
# Writes under ${XDG_DATA_HOME:-~/.local/share}: applications/io.github.vramscope.Vramscope.desktop,
# icons/hicolor/*/apps/vramscope.{png,svg}, mime/packages/io.github.vramscope.Vramscope.xml.
# The work is done by vramscope.desktop_entry (also `vramscope desktop install`).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ACTION="${1:-install}"
[[ $# -gt 0 ]] && shift

BUNDLE="$ROOT/dist/vramscope/vramscope"
if [[ -x "$ROOT/.venv/bin/python" ]]; then
    PY="$ROOT/.venv/bin/python"
else
    PY="$(command -v python3)"
fi

EXTRA=()
if [[ "$ACTION" != "uninstall" && -x "$BUNDLE" && " $* " != *" --exec "* ]]; then
    EXTRA=(--exec "$BUNDLE")
fi
PYTHONPATH="$ROOT/app${PYTHONPATH:+:$PYTHONPATH}" exec "$PY" -m vramscope.desktop_entry \
    "$ACTION" ${EXTRA[@]+"${EXTRA[@]}"} "$@"
