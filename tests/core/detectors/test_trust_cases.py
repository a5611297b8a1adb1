"""The alert-trust suite (cases.py) against the real engine: every "flag" case
is flagged in time and named as the table names it; every "quiet" case --
idle inference servers, notebooks in use, stalls, sawtooths, healthy hours --
raises no warning."""

from __future__ import annotations

import pytest

from .cases import cases, run_case

CASES = cases()


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if c.flag], ids=lambda c: c.name)
def test_flagged_in_time(case):
    out = run_case(case)
    assert out.detected_at is not None, f"{case.name}: never flagged"
    assert out.detected_at <= case.within, f"{case.name}: flagged after {out.detected_at:.0f} s"
    if case.check is not None:
        case.check(out.first)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if not c.flag], ids=lambda c: c.name)
def test_no_false_alerts(case):
    out = run_case(case)
    assert out.false_alerts == [], "\n".join(
        f"t={t:.0f}s {a.severity} {a.kind}: {a.message}" for t, a in out.false_alerts[:5]
    )
