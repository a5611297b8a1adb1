"""Which of the table's columns show: the user's choice (right-click the header;
``changed(hidden names)`` tells the window, which remembers them) and the
columns shown only when some row uses them (container, job, server ...).
The PID column always stays."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QMenu, QTableView

from vramscope.core.processes.process_rows import COLUMNS


class TableColumns:
    def __init__(self, view: QTableView, changed: Callable[[tuple[str, ...]], None]):
        self.view = view
        self.changed = changed
        self.menu: QMenu | None = None  # the header's menu, last opened
        self.set_hidden(tuple(c.name for c in COLUMNS if not c.shown))
        for i, column in enumerate(COLUMNS):
            if column.when_used:
                view.setColumnHidden(i, True)

    def hidden(self) -> tuple[str, ...]:
        """The names of the columns the user hid."""
        return tuple(c.name for i, c in enumerate(COLUMNS) if not c.when_used and self.view.isColumnHidden(i))

    def set_hidden(self, names) -> None:
        """Hide the named columns, show the others (unknown names are ignored)."""
        names = set(names)
        for i, column in enumerate(COLUMNS):
            if column.when_used:
                continue  # its rows decide (show_used)
            hide = column.name in names and column.name != "PID"  # the PID column always stays
            self.view.setColumnHidden(i, hide)

    def show_used(self, used_columns) -> None:
        """The columns shown only when used: those a table's rows use."""
        for i, column in enumerate(COLUMNS):
            if column.when_used:
                used = column.name in used_columns
                if self.view.isColumnHidden(i) == used:
                    self.view.setColumnHidden(i, not used)

    def open_menu(self, pos) -> None:
        """The header's menu at ``pos``: a check per column the user may hide."""
        menu = QMenu(self.view)
        for i, column in enumerate(COLUMNS):
            if column.name == "PID" or column.when_used:
                continue
            act = menu.addAction(column.name)
            act.setCheckable(True)
            act.setChecked(not self.view.isColumnHidden(i))
            act.toggled.connect(lambda on, i=i: self.toggle(i, on))
        menu.popup(self.view.horizontalHeader().mapToGlobal(pos))
        self.menu = menu

    def toggle(self, i: int, shown: bool) -> None:
        self.view.setColumnHidden(i, not shown)
        self.changed(self.hidden())
