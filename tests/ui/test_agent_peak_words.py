"""The agents tab's words for a step's phases: the real peak named as such (a lower
bound said so), an end-of-phase reading never called a peak, the share of steps read."""

from __future__ import annotations

from vramscope.agent.protocol import Phase
from vramscope.core.units import GiB, fmt_bytes
from vramscope.ui.agents.agent_texts import end_title, peak_title, phase_text

ENDS = {Phase.FORWARD: 9 * GiB, Phase.BACKWARD: 5 * GiB, Phase.OPTIMIZER: 6 * GiB}


def test_the_step_peak_is_the_highest_phase_peak_not_the_end_of_forward():
    peaks = {
        Phase.FORWARD: (9 * GiB, None),
        Phase.BACKWARD: (11 * GiB, None),
        Phase.OPTIMIZER: (8 * GiB, None),
    }
    text = phase_text(ENDS, 2 * GiB, peaks, 0.97)
    assert f"Step peak in backward: {fmt_bytes(11 * GiB)}" in text
    assert "peak" not in text.split("Step peak")[0]
    assert "Phases read on 97% of steps" in text
    assert peak_title(Phase.BACKWARD, True) == "peak (bwd)"


def test_a_peak_known_only_as_a_lower_bound_says_so():
    peaks = {Phase.FORWARD: (9 * GiB, 12 * GiB), Phase.OPTIMIZER: (10 * GiB, 12 * GiB)}
    text = phase_text(ENDS, None, peaks, None)
    assert f"in the optimizer step: at least {fmt_bytes(10 * GiB)} (at most {fmt_bytes(12 * GiB)}" in text
    assert peak_title(Phase.OPTIMIZER, False) == "≥ peak (opt)"
    assert "Phases read on" not in text  # no share reported: nothing said


def test_without_phase_peaks_the_highest_end_reading_is_not_called_the_peak():
    text = phase_text(ENDS, None, None, 0.4)
    assert "Step peak" not in text and "Highest phase end: end of forward" in text
    assert "is not read here" in text and "Phases read on 40% of steps" in text
    assert end_title(Phase.FORWARD) == "fwd end"
