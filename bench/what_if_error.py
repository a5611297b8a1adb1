"""The what-if's error against real runs (issue 25, "What would fit"): measure a CPU
training step at one micro-batch, predict the peak at 2x and 4x (and a 2x longer
sequence for the transformer), run those sizes for real, print the error.

The peak compared is what the issue defines: activations saved for backward +
weights + gradients + optimizer state, counted independently of vramscope with
our own saved-tensor hooks (tests/core/planner/what_if_runs.py). The prediction gets
only what an agent sends: the tensor buckets, the training forward's input
shape and output size, and the per-module activations ("modules" item).

usage: .venv/bin/python bench/what_if_error.py
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "app")]

import torch  # noqa: E402

from tests.core.planner.what_if_runs import counted_step, prediction_error  # noqa: E402
from vramscope.core.planner.measured_run import measure  # noqa: E402
from vramscope.core.planner.what_if import Change, predict  # noqa: E402

MiB = 1 << 20


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # (no options: --help)
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, Python {platform.python_version()}, CPU")
    print(f"{'model':<14}{'measured at':>12}{'predicted at':>14}{'predicted':>12}{'real':>12}{'error':>9}")
    worst = 0.0
    for kind, name in (("mlp", "MLP 4x512"), ("lm", "TinyLM 2L d128")):
        for batch in (4, 8):
            for factor in (2, 4):
                r = prediction_error(kind, batch, factor)
                worst = max(worst, abs(r["error"]))
                print(
                    f"{name:<14}{batch:>12}{batch * factor:>14}{r['predicted'] / MiB:>10.2f} M"
                    f"{r['real'] / MiB:>10.2f} M{r['error']:>+9.3%}"
                )
    print(f"worst |error| at 2x and 4x the micro-batch: {worst:.3%} (budget 5 %)")
    base = counted_step("lm", 8, 64)
    m = measure(
        "cpu",
        {k: base[k] for k in ("weights", "gradients", "optimizer_state")},
        input_shape=base["input"],
        models=base["models"],
        modules=base["modules"],
    )
    for seq in (128, 256):
        w = predict(m, Change(seq=seq))
        real = counted_step("lm", 8, seq)["real"]
        print(
            f"TinyLM seq 64 -> {seq}: predicted {w.peak / MiB:.2f} - {w.peak_high / MiB:.2f} MiB "
            f"(linear .. quadratic attention), real {real / MiB:.2f} MiB, "
            f"inside: {w.peak <= real <= w.peak_high}"
        )


if __name__ == "__main__":
    main()
