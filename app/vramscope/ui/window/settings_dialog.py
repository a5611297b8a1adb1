"""Settings → Preferences: sampling, time window, theme, read-only, recording, thresholds.

    dialog = SettingsDialog(settings, parent=window)
    dialog.applied.connect(on_settings_changed)   # set of names that changed
    dialog.open()

On OK the edited values are saved through ``Settings`` (which also drops the
one-run command-line override of what the user changed) and ``applied``
carries the names that changed: "interval", "window", "theme", "read_only",
"recording", "session_cap_bytes", "diagnostics". The caller applies them to
the running app (feed interval, window.set_window, theme.switch, ...).
A value that came from the command line for this run is marked as such.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.detectors.thresholds import THRESHOLDS, Threshold
from vramscope.core.units import GiB
from vramscope.ui.qt import theme
from vramscope.core.settings.user_settings import INTERVAL_RANGE, THEMES, WINDOWS, Settings

FROM_COMMAND_LINE = " (from the command line for this run)"


class SettingsDialog(QDialog):
    applied = Signal(set)

    def __init__(self, settings: Settings, parent=None):
        super().__init__(parent)
        self.settings = settings
        self.setWindowTitle("vramscope settings")
        self.setObjectName("settingsDialog")
        # Fusion outlines a check box with the window colour darkened, which vanishes on
        # the dark scheme (a checked one was a bare tick): both states get a visible box,
        # filled with the highlight colour when checked.
        theme.styled(
            self,
            lambda s: (
                f"QCheckBox::indicator {{ border: 1px solid {s.MUTED}; "
                f"background: {s.BASE}; border-radius: 2px; width: 12px; height: 12px; }}"
                f"QCheckBox::indicator:checked {{ border: 1px solid {s.HIGHLIGHT}; "
                f"background: {s.HIGHLIGHT}; }}"
            ),
        )
        overridden = settings.overridden()
        layout = QVBoxLayout(self)

        general = QGroupBox("Monitoring")
        form = QFormLayout(general)
        self.interval = QDoubleSpinBox()
        self.interval.setRange(*INTERVAL_RANGE)
        self.interval.setDecimals(1)
        self.interval.setSingleStep(0.1)
        self.interval.setSuffix(" s")
        self.interval.setToolTip("How often the GPUs are sampled (0.1 to 60 s).")
        form.addRow(self._label("Sample every", "interval", overridden), self.interval)
        self.window = QComboBox()
        for key in WINDOWS:
            self.window.addItem(key.text, key.value)
        form.addRow(self._label("Time window", "window", overridden), self.window)
        self.theme = QComboBox()
        for key in THEMES:
            self.theme.addItem(key.text, key.value)
        form.addRow(self._label("Theme", "theme", overridden), self.theme)
        self.read_only = QCheckBox("Read-only: never end a process from vramscope")
        form.addRow(self._label("Actions", "read_only", overridden), self.read_only)
        layout.addWidget(general)

        rec = QGroupBox("Recording")
        form = QFormLayout(rec)
        self.recording = QCheckBox("Record every session to disk")
        form.addRow(self.recording)
        self.session_cap = QDoubleSpinBox()
        self.session_cap.setRange(0.1, 10_000)
        self.session_cap.setDecimals(1)
        self.session_cap.setSuffix(" GiB")
        self.session_cap.setToolTip("Past this total the oldest recorded sessions are removed.")
        form.addRow("Keep at most", self.session_cap)
        layout.addWidget(rec)

        diag = QGroupBox("Diagnostic thresholds" + (FROM_COMMAND_LINE if "diagnostics" in overridden else ""))
        form = QFormLayout(diag)
        # the thresholds a user tunes (core/detectors/thresholds.py), by field
        self.thresholds: dict[str, QDoubleSpinBox | QSpinBox] = {}
        for t in THRESHOLDS:
            self.thresholds[t.field] = box = _threshold_box(t)
            form.addRow(t.label, box)
        layout.addWidget(diag)

        note = QLabel(
            "A value given on the command line applies to that run only; what you set here is saved."
        )
        note.setWordWrap(True)
        theme.styled(note, lambda s: f"color: {s.MUTED};")
        layout.addWidget(note)

        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok
            | QDialogButtonBox.StandardButton.Cancel
            | QDialogButtonBox.StandardButton.RestoreDefaults
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        buttons.button(QDialogButtonBox.StandardButton.RestoreDefaults).clicked.connect(self.restore_defaults)
        layout.addWidget(buttons)
        self.buttons = buttons
        self.load(
            settings.diagnostics,
            interval=settings.interval,
            window=settings.window,
            theme_mode=settings.theme,
            read_only=settings.read_only,
            recording=settings.recording,
            cap=settings.session_cap_bytes,
        )

    @staticmethod
    def _label(text: str, name: str, overridden: set) -> QWidget:
        label = QLabel(text)
        if name in overridden:
            label.setText(text + " *")
            label.setToolTip(FROM_COMMAND_LINE.strip(" ()").capitalize())
        return label

    # -- values -------------------------------------------------------------------------
    def load(
        self,
        diagnostics: DiagnosticSettings,
        *,
        interval: float,
        window: str,
        theme_mode: str,
        read_only: bool,
        recording: bool,
        cap: int,
    ) -> None:
        self.interval.setValue(interval)
        self.window.setCurrentIndex(max(0, self.window.findData(window)))
        self.theme.setCurrentIndex(max(0, self.theme.findData(theme_mode)))
        self.read_only.setChecked(read_only)
        self.recording.setChecked(recording)
        self.session_cap.setValue(cap / GiB)
        for t in THRESHOLDS:
            box = self.thresholds[t.field]
            value = getattr(diagnostics, t.field) / t.scale
            box.setValue(int(round(value)) if isinstance(box, QSpinBox) else value)

    def restore_defaults(self) -> None:
        from vramscope.core.settings.user_settings import (
            DEFAULT_INTERVAL,
            DEFAULT_SESSION_CAP,
            DEFAULT_THEME,
            DEFAULT_WINDOW,
        )

        self.load(
            DiagnosticSettings(),
            interval=DEFAULT_INTERVAL,
            window=DEFAULT_WINDOW,
            theme_mode=DEFAULT_THEME,
            read_only=False,
            recording=False,
            cap=DEFAULT_SESSION_CAP,
        )

    def edited_thresholds(self) -> dict:
        """DiagnosticSettings fields the user changed in the dialog -> new value."""
        base = self.settings.diagnostics
        changes = {}
        for t in THRESHOLDS:
            box = self.thresholds[t.field]
            old = getattr(base, t.field)
            value = t.field_value(box.value())
            if not _same_in_box(old, value, t.scale, box):
                changes[t.field] = value
        return changes

    def values(self) -> dict:
        return {
            "interval": round(self.interval.value(), 1),
            "window": self.window.currentData(),
            "theme": self.theme.currentData(),
            "read_only": self.read_only.isChecked(),
            "recording": self.recording.isChecked(),
            "session_cap_bytes": int(round(self.session_cap.value() * GiB)),
            "diagnostics": self.edited_thresholds(),
        }

    def save(self) -> set[str]:
        """Save what the user changed; the names that changed.

        Only a changed value is written: a value that came from the command line
        and was left alone stays a one-run override (and is not saved).
        """
        s = self.settings
        changed = set()
        for name, value in self.values().items():
            if name == "diagnostics":
                if value:
                    s.update_diagnostics(**value)
                    changed.add(name)
            elif name == "session_cap_bytes":
                if not _same_cap(value, s.get(name)):
                    s.set(name, value)
                    changed.add(name)
            elif value != s.get(name):
                s.set(name, value)
                changed.add(name)
        s.sync()
        return changed

    def accept(self) -> None:
        changed = self.save()
        super().accept()
        self.applied.emit(changed)


def _threshold_box(t: Threshold) -> QDoubleSpinBox | QSpinBox:
    box: QDoubleSpinBox | QSpinBox
    if t.decimals == 0:
        box = QSpinBox()
        box.setRange(0, int(t.maximum))
    else:
        box = QDoubleSpinBox()
        box.setDecimals(t.decimals)
        box.setRange(0, t.maximum)
    box.setSuffix(" " + t.unit)
    box.setToolTip(t.tooltip)
    return box


def _same_in_box(old, new, scale, box) -> bool:
    """The box shows ``old`` rounded; unchanged if the user left that rounding alone."""
    decimals = 0 if isinstance(box, QSpinBox) else box.decimals()
    return round(old / scale, decimals) == round(new / scale, decimals)


def _same_cap(new: int, old: int) -> bool:
    return round(new / GiB, 1) == round(old / GiB, 1)
