"""The hosts a window watches over ssh (--host): one chip per host saying
whether it is connected, or why not and when it is tried again, so a host
that drops is marked while the others go on."""

from __future__ import annotations

from functools import partial

from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget
from vramscope.core.status.terminal_text import visible
from vramscope.ui.qt.safe_text import plain, tip

from vramscope.core.samples import HostStatus
from vramscope.core.status.host_text import describe_state
from vramscope.ui.qt import theme


def chip_text(state) -> str:
    """One host's chip: connected with its GPUs, connecting, or why not."""
    if state.state == HostStatus.CONNECTED:
        return f"● {state.host}  {state.gpus} GPU{'s' if state.gpus != 1 else ''}"
    mark = "○" if state.state == HostStatus.CONNECTING else "✕"
    return f"{mark} {describe_state(state.host, state.state, state.error, state.retry_in)}"


class HostsBar(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("hostsBar")
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(8)
        self._layout.addWidget(QLabel("Hosts:"))
        self.chips: dict[str, QLabel] = {}
        self._layout.addStretch(1)

    def update_from(self, frame) -> None:
        for state in frame.hosts:
            chip = self.chips.get(state.host)
            if chip is None:
                chip = self.chips[state.host] = plain(QLabel())
                chip.setObjectName("hostChip")
                self._layout.insertWidget(self._layout.count() - 1, chip)
            chip.setText(visible(chip_text(state)))  # host names and remote errors are input
            chip.setToolTip(
                tip(
                    state.error
                    or (f"vramscope {state.version} on {state.host}" if state.version else state.host)
                )
            )
            if chip.property("state") != state.state:
                chip.setProperty("state", state.state)
                theme.styled(chip, partial(chip_style, state.state))


def chip_style(state: str, s: theme.Scheme) -> str:
    """A chip in its state's colour: connected, connecting, or down."""
    colour = {HostStatus.CONNECTED: s.OK, HostStatus.CONNECTING: s.MUTED}.get(state, s.ERROR)
    return (
        f"QLabel#hostChip {{ border: 1px solid {colour}; border-radius: 9px;"
        f" padding: 2px 8px; color: {colour}; }}"
    )


def attach_hosts_bar(window) -> HostsBar:
    """Above the monitor, following every frame."""
    bar = HostsBar(window)
    window.centralWidget().layout().insertWidget(1, bar)
    window.new_frame.connect(bar.update_from)
    window.hosts_bar = bar
    return bar
