"""The window against nvitop's TUI, side by side, on the same fake machine.

    .venv/bin/pip install nvitop           # the peer (only for this bench)
    .venv/bin/python bench/gui_vs_nvitop.py [--seconds 60] [--warmup 10]

One fake libnvidia-ml.so.1 (tests/fake_nvml/fake_nvml.c) and one state file:
2 GPUs x 5 processes, all real PIDs (sleepers) -- one of them a small CPU
training loop running the vramscope PyTorch agent, so the window has an agent
attached. Both programs run at the same time, as child processes, at 1 s
refresh:

- ``vramscope --interval 1 --no-record`` (offscreen Qt: it still lays out and
  paints every frame into its backing store), the Monitor tab in front, with
  its sampler process (`vramscope stream`, sources/remote/local_sampler.py) counted
  in (it is the window's child), and also shown apart;
- ``nvitop --interval 1`` in a pseudo-terminal of 160 x 48 (its output read
  and dropped, as a terminal would draw it).

After ``--warmup`` seconds, the CPU time of each (user + system, children
included) over ``--seconds`` of wall time is printed as % of one core, with
the ratio. Same machine state, same moment, same load on the box.

``--threads`` also prints each thread of the window and of its sampler: CPU
(``/proc/PID/task/TID/schedstat``, nanoseconds) and wake-ups a second (its
voluntary context switches) -- on this VM a thread waking from a sleep costs
~0.1 ms of CPU, so a timer at 4 Hz is ~0.05 % of a core by itself.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pathlib
import pty
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time

import psutil

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fakenvml import GiB, MiB, FakeGpu, FakeProcess, FakeState, build_library, subprocess_env, write_state  # noqa: E402

AGENT_RUN = """
import time, torch
from vramscope import agent
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
opt = torch.optim.AdamW(model.parameters())
agent.start(model=model, optimizer=opt)
while True:
    opt.zero_grad()
    model(torch.randn(32, 256)).sum().backward()
    opt.step()
    time.sleep(0.5)
"""


def cpu_seconds(proc: psutil.Process) -> float:
    total = 0.0
    for p in [proc] + proc.children(recursive=True):
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def own_cpu(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


def threads(pid: int) -> dict[int, tuple[str, float, int]]:
    """tid -> (name, CPU seconds, voluntary context switches) of each thread of ``pid``."""
    out = {}
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
            switches = next(
                int(line.split()[1])
                for line in (task / "status").read_text().splitlines()
                if line.startswith("voluntary_ctxt_switches")
            )
            cpu = int((task / "schedstat").read_text().split()[0]) / 1e9
        except (OSError, ValueError, StopIteration):
            continue
        out[int(task.name)] = (stat[stat.index("(") + 1 : stat.rindex(")")], cpu, switches)
    return out


def print_threads(label: str, before: dict, after: dict, wall: float) -> None:
    for tid, (name, cpu, switches) in sorted(after.items()):
        _n, cpu0, switches0 = before.get(tid, (name, 0.0, 0))
        print(
            f"  {label} thread {tid} ({name}): {100 * (cpu - cpu0) / wall:5.3f} % of one core, "
            f"{(switches - switches0) / wall:5.1f} wake-ups/s"
        )


def state(pids: list[int]) -> FakeState:
    gpus = []
    for g in range(2):
        procs = [
            FakeProcess(pid, (2 + i) * GiB + g * 512 * MiB, "compute", sm=(15 * i) % 100)
            for i, pid in enumerate(pids[g * 5 : (g + 1) * 5])
        ]
        used = sum(p.used for p in procs) + 300 * MiB
        gpus.append(
            FakeGpu(
                name=("NVIDIA GeForce RTX 4090", "NVIDIA RTX A6000")[g],
                total=(24, 48)[g] * GiB,
                used=used,
                utilization=(60, 30),
                temperature=60,
                power_mw=250_000,
                power_limit_mw=450_000,
                processes=procs,
            )
        )
    return FakeState(gpus=gpus)


def drain(fd: int) -> None:
    while True:
        try:
            if not os.read(fd, 65536):
                return
        except OSError:
            return


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--threads", action="store_true", help="also each thread's CPU and wake-ups")
    a = ap.parse_args()
    nvitop = shutil.which("nvitop") or str(pathlib.Path(sys.executable).with_name("nvitop"))
    if not pathlib.Path(nvitop).exists():
        print("nvitop is not installed: pip install nvitop (the peer of this bench)")
        return 2
    work = pathlib.Path(tempfile.mkdtemp(prefix="vramscope-gui-vs-nvitop-"))
    lib = build_library(work / "lib")
    home = work / "home"
    runtime = work / "run"
    for d in (home, runtime):
        d.mkdir(mode=0o700)
    base = dict(
        os.environ,
        HOME=str(home),
        XDG_RUNTIME_DIR=str(runtime),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_STATE_HOME=str(home / ".local/state"),
        QT_QPA_PLATFORM="offscreen",
        TERM="xterm-256color",
    )
    env = subprocess_env(lib.parent, work / "state.txt", base)
    children = [subprocess.Popen([sys.executable, "-c", AGENT_RUN], env=base)]
    children += [subprocess.Popen(["sleep", "3600"]) for _ in range(9)]
    try:
        write_state(work / "state.txt", state([c.pid for c in children]))
        vramscope = pathlib.Path(sys.executable).with_name("vramscope")
        window = subprocess.Popen(
            [str(vramscope), "--interval", "1", "--no-record", "--window", "10m"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 48, 160, 0, 0))
        tui = subprocess.Popen(
            [nvitop, "--interval", "1"],
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        threading.Thread(target=drain, args=(master,), daemon=True).start()
        children += [window, tui]
        time.sleep(a.warmup)
        for p in (window, tui):
            if p.poll() is not None:
                print(f"{p.args[0]} exited early ({p.returncode})")
                return 1
        ours, theirs = psutil.Process(window.pid), psutil.Process(tui.pid)
        watched = [("window", ours.pid)] + [("sampler", c.pid) for c in ours.children(recursive=True)]
        t0_threads = {pid: threads(pid) for _l, pid in watched}
        c0 = (cpu_seconds(ours), cpu_seconds(theirs), own_cpu(ours))
        t0 = time.monotonic()
        time.sleep(a.seconds)
        wall = time.monotonic() - t0
        w_pct = 100 * (cpu_seconds(ours) - c0[0]) / wall
        n_pct = 100 * (cpu_seconds(theirs) - c0[1]) / wall
        alone_pct = 100 * (own_cpu(ours) - c0[2]) / wall
        import nvitop as nv

        print(
            f"same fake machine: 2 GPUs x 5 processes (one with the PyTorch agent), 1 s refresh, "
            f"{wall:.0f} s side by side, {psutil.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}"
        )
        print(
            f"vramscope window (offscreen Qt) + its sampler process:  {w_pct:5.2f} % of one core "
            f"(the window {alone_pct:.2f} %, the sampler {w_pct - alone_pct:.2f} %)"
        )
        print(f"nvitop {nv.__version__} TUI (160x48 pty):   {n_pct:5.2f} % of one core")
        print(f"ratio window / nvitop: {w_pct / n_pct:.2f}" if n_pct > 0 else "nvitop used no CPU")
        if a.threads:
            for label, pid in watched:
                print_threads(label, t0_threads[pid], threads(pid), wall)
        return 0
    finally:
        for c in children:
            if c.poll() is None:
                c.terminate()
        for c in children:
            try:
                c.wait(5)
            except subprocess.TimeoutExpired:
                c.kill()


if __name__ == "__main__":
    raise SystemExit(main())
