"""The window photographs itself and says what it shows: `vramscope ... --shots DIR`
(a hidden option; packaging/screenshots.py and the user-path tests use it).

The real window -- its own sampler process sampling, the frames read from that
process's stream -- is left to show what it samples for ``after`` seconds; then
each tab is grabbed at each size into ``DIR/<tab>-<width>x<height>.png``, what
the window shows is written to ``DIR/shown.json`` (read from its widget tree:
the tabs, each agent's detail tabs, the table's rows, the alerts), and the
window quits. Nothing is drawn in another process or by hand: a picture is what
a user starting the same command sees.
"""

from __future__ import annotations

import json
import pathlib
import re
import time

SIZES = ((1400, 900), (1024, 700))
SHOWN = "shown.json"
SETTLE_LIMIT_S = 600.0  # a window of one view waits this long at most for its file to be drawn


def tab_name(title: str) -> str:
    """A tab's name without its count: "Alerts (4)" -> "Alerts" (the count changes)."""
    return re.sub(r"\s*\(\d+\)\s*$", "", title)


def slug(title: str) -> str:
    """A tab's file name: "Alerts (4)" -> "alerts"."""
    return re.sub(r"[^a-z0-9]+", "-", tab_name(title).lower()).strip("-") or "tab"


def schedule(window, app, directory: str, after: float, sizes=SIZES) -> None:
    """Grab ``window``'s tabs ``after`` seconds from now, then quit ``app``."""
    from PySide6.QtCore import QTimer

    deadline = time.monotonic() + after + SETTLE_LIMIT_S
    QTimer.singleShot(int(after * 1000), lambda: _take(window, app, pathlib.Path(directory), sizes, deadline))


def _settled(window) -> bool:
    """A window of one view that says when its content is drawn (the snapshot viewer:
    the file read, the cursor's views shown); any other window is ready at once."""
    settled = getattr(window, "settled", None)
    return settled is None or bool(settled())


def _take(window, app, out: pathlib.Path, sizes, deadline: float = 0.0) -> None:
    from PySide6.QtCore import QTimer

    if not _settled(window) and time.monotonic() < deadline:  # (still reading its file)
        QTimer.singleShot(200, lambda: _take(window, app, out, sizes, deadline))
        return
    out.mkdir(parents=True, exist_ok=True)
    tabs = getattr(window, "tabs", None)
    pictures = []
    if tabs is None:  # a window of one view (the snapshot viewer): grabbed whole at each size
        for width, height in sizes:
            window.resize(width, height)
            _drawn(window, app)
            name = getattr(window, "SHOT_NAME", None) or slug(window.windowTitle())
            path = out / f"{name}-{width}x{height}.png"
            window.grab().save(str(path))
            pictures.append(path.name)
        shown: dict = getattr(window, "what_it_shows", dict)()
        (out / SHOWN).write_text(
            json.dumps({"pictures": pictures, "title": window.windowTitle(), **shown}, indent=1)
        )
        app.quit()
        return
    for width, height in sizes:
        window.resize(width, height)
        for index in range(tabs.count()):
            tabs.setCurrentIndex(index)
            window.refresh(force=True)
            app.processEvents()
            path = out / f"{slug(tabs.tabText(index))}-{width}x{height}.png"
            window.grab().save(str(path))
            pictures.append(path.name)
    tabs.setCurrentIndex(0)
    shown = {"pictures": pictures, **what_it_shows(window)}
    (out / SHOWN).write_text(json.dumps(shown, indent=1))
    app.quit()


def _drawn(window, app, seconds: float = 0.3) -> None:
    """Events processed for a moment after a resize (layouts, the plots' repaint), and
    until a window of one view has settled again."""
    end = time.monotonic() + seconds
    while time.monotonic() < end or not _settled(window):
        app.processEvents()
        time.sleep(0.01)
        if time.monotonic() > end + 30:
            break


def what_it_shows(window) -> dict:
    """The tabs, the agents (pid, header, the detail tabs shown), the table's rows, the
    alerts: what a user reading the window would report."""
    from vramscope.ui.agents.agent_panel import AgentProcessView

    panels = window.services.panels if getattr(window, "services", None) else None
    agents = []
    if panels is not None:
        for view in panels.agents.views.values():
            if isinstance(view, AgentProcessView):
                tabs = view.details
                agents.append(
                    {
                        "pid": view.sites.pid,
                        "header": view.toggle.text(),
                        "details": [
                            tabs.tabText(tabs.indexOf(page))
                            for _key, (_w, page) in tabs.pages.items()
                            if tabs.isTabVisible(tabs.indexOf(page))
                        ],
                        "modules": view.modules.tree.topLevelItemCount(),
                    }
                )
    return {
        "tabs": [tab_name(window.tabs.tabText(i)) for i in range(window.tabs.count())],
        "agents": agents,
        "table_rows": window.table.model.rowCount(),
        "alerts": [a.title for a in panels.alerts.alerts()] if panels is not None else [],
    }
