"""Under WSL the alerts that need per-process memory are off: said, with why.

They cannot fire there (every process's memory is "not available"), and a
silent rule would read as "nothing to report". One INFO alert names them,
the reason, and the alerts that still work (core/wsl.py has the words).
"""

from __future__ import annotations

from vramscope.core.detectors.alert import Alert, AlertKind, machine_notice
from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.samples import Frame
from vramscope.core.wsl import OFF_UNDER_WSL, ON_UNDER_WSL, WHY_OFF, WSL_NOTICE


class WslRule:
    def update(self, frame: Frame, settings: DiagnosticSettings) -> list[Alert]:
        if not frame.wsl:
            return []
        unreported = sum(1 for _g, p in frame.all_processes() if p.used is None)
        return [
            machine_notice(
                AlertKind.WSL,
                message=(
                    f"Running under WSL: per-process memory is not reported "
                    f"({unreported} process(es) read n/a); some alerts are off"
                ),
                evidence=(
                    f"off ({WHY_OFF}): " + ", ".join(OFF_UNDER_WSL),
                    "still on: " + "; ".join(ON_UNDER_WSL),
                ),
                fix=(
                    WSL_NOTICE + " For per-process figures, run the job on native Linux; under "
                    "WSL, `vramscope run -- python train.py` gives the PyTorch breakdown."
                ),
                data={"off": list(OFF_UNDER_WSL), "unreported": unreported},
            )
        ]
