"""Terminal output is text from strangers (issue 24). A real process whose argv
is 2,000 characters of ESC sequences, ``\\r``, ``\\n`` and bidi overrides, on
a GPU with a hostile name, prints as visible escapes in every text output --
`status`, `status --watch`, `status --host`, `--from-prometheus`, `record`,
`export`, `plan` -- and cannot forge a line. `--json` keeps the real text."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState, subprocess_env, write_state
from rawhttp import RawHttp, http_answer
from vramscope.core.status.terminal_text import visible, visible_lines

FORGED = "GPU 9  NVIDIA FORGED  memory 0 B / 80.0 GiB (0 %)"
HOSTILE_ARGS = [
    "\x1b]0;pwned\x07\x1b[2J\x1b[H",
    f"\r\n{FORGED}\n",
    "\u202eexe.niart\u202c",
    "\u2066x\u2069\u200e\u061c",
    "\x9b31m\x9d",
    "\x7f\x00"[:1],
    "\x1b[31mRED\x1b[0m",
]
HOSTILE_ARGS.append("A" * (2000 - sum(map(len, HOSTILE_ARGS))))
HOSTILE_GPU = "NVIDIA \x1b[2J\u202eRTX\x07 4090"
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def assert_safe(text: str, must_show: str | None = "\\x1b") -> None:
    """Nothing that drives a terminal or reorders text; no forged line."""
    bad = UNSAFE.findall(text)
    assert not bad, f"raw control characters reached the terminal: {bad[:5]}"
    assert not any(line.lstrip().startswith("GPU 9") for line in text.splitlines()), text
    if must_show:
        assert must_show in text


@pytest.fixture
def hostile_process():
    argv = [sys.executable, "-c", "import time; time.sleep(300)", *HOSTILE_ARGS]
    assert 2000 <= sum(map(len, argv)) <= 2200
    proc = subprocess.Popen(argv)
    yield proc
    proc.kill()
    proc.wait()


def hostile_state(pid: int) -> FakeState:
    return FakeState(
        gpus=[
            FakeGpu(
                name=HOSTILE_GPU, total=24 * GiB, used=3 * GiB, processes=[FakeProcess(pid, 2 * GiB, sm=50)]
            )
        ]
    )


def vramscope(*args, env=None, timeout=90):
    return subprocess.run(
        [sys.executable, "-m", "vramscope", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


@pytest.mark.slow
def test_status_and_watch_print_the_argv_as_visible_escapes(hosts, hostile_process):
    state_path = hosts.dir / "local-nvml.txt"
    write_state(state_path, hostile_state(hostile_process.pid))
    env = subprocess_env(hosts.lib_dir, state_path)
    for args in (("status",), ("status", "--watch", "1", "--interval", "0.5")):
        done = vramscope(*args, env=env)
        assert done.returncode == 0, done.stderr
        assert_safe(done.stdout + done.stderr)
        # inside the row (psutil reads /proc/PID/cmdline with universal newlines: \r\n -> \n)
        assert "\\nGPU 9  NVIDIA FORGED" in done.stdout
        assert "\\u202eexe.niart\\u202c" in done.stdout and "\\x9b31m" in done.stdout
        assert "NVIDIA \\x1b[2J\\u202eRTX\\x07 4090" in done.stdout
    # --json stays as it was: the real argv, escaped by JSON itself
    done = vramscope("status", "--json", env=env)
    (proc,) = json.loads(done.stdout)["gpus"][0]["processes"]
    assert proc["command"].endswith(" ".join(HOSTILE_ARGS).replace("\r\n", "\n"))


@pytest.mark.slow
def test_status_host_prints_a_remote_argv_and_name_as_visible_escapes(hosts, hostile_process):
    hosts.add("lab2", hostile_state(hostile_process.pid))
    done = vramscope("status", "--host", "lab2", env=hosts.env())
    assert done.returncode == 0, done.stderr
    assert_safe(done.stdout + done.stderr)
    assert "\\nGPU 9  NVIDIA FORGED" in done.stdout


def test_ssh_stderr_and_a_bad_host_name_are_escaped(hosts):
    # an unknown host: the stand-in ssh's stderr names it; the name itself is refused by argparse
    done = vramscope("status", "--host", "evil\x1b[2J\u202ebox", env=hosts.env())
    assert done.returncode == 2
    assert_safe(done.stdout + done.stderr)


@pytest.mark.slow
def test_from_prometheus_prints_labels_as_visible_escapes():
    instance = "node\x1b[2J\r\nGPU 9 FORGED:9400"
    labels = {"instance": instance, "gpu": "0", "name": HOSTILE_GPU}
    result = [
        {"metric": {"__name__": "up", "instance": instance}, "value": [1, "1"]},
        {"metric": {"__name__": "vramscope_gpu_memory_used_bytes", **labels}, "value": [1, str(3 * GiB)]},
        {"metric": {"__name__": "vramscope_gpu_memory_total_bytes", **labels}, "value": [1, str(24 * GiB)]},
        {
            "metric": {
                "__name__": "vramscope_process_memory_used_bytes",
                **labels,
                "pid": "4242",
                "process": " ".join(HOSTILE_ARGS),
            },
            "value": [1, str(2 * GiB)],
        },
    ]
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})
    server = RawHttp(http_answer(body.encode()))
    try:
        done = vramscope("status", "--from-prometheus", server.url)
        assert done.returncode == 0, done.stderr
        assert_safe(done.stdout + done.stderr)
        assert "== node\\x1b[2J\\r\\nGPU 9 FORGED:9400 ==" in done.stdout
        refused = RawHttp(b"HTTP/1.1 200 \x1b[2J\r\nX-\x9b: 1\r\n\r\n\x1b]0;t\x07")
        done = vramscope("status", "--from-prometheus", refused.url)
        refused.close()
        assert done.returncode == 2
        assert_safe(done.stdout + done.stderr, must_show=None)
    finally:
        server.close()


@pytest.mark.slow
def test_record_export_and_plan_print_paths_and_errors_as_visible_escapes(tmp_path):
    session = tmp_path / "ses\x1b[2J\u202esion.vramscope"
    done = vramscope("record", "--demo", "--duration", "1", "--interval", "0.5", "--out", str(session))
    assert done.returncode == 0, done.stderr
    assert_safe(done.stdout + done.stderr)
    out = tmp_path / "out\r\nGPU 9 FORGED.csv"
    done = vramscope("export", str(session), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert_safe(done.stdout + done.stderr, must_show="\\r\\nGPU 9 FORGED.csv")
    done = vramscope("export", str(session), "--out", str(out))  # exists: refused, one line
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert_safe(done.stderr, must_show="\\r\\nGPU 9 FORGED.csv already exists")
    config = tmp_path / "cfg\x1b[2J.json"
    config.write_text(json.dumps({"model_type": "evil\x1b[2J\r\nGPU 9 FORGED\u202e", "hidden_size": 64}))
    done = vramscope("plan", "--config", str(config), "--gpu-memory", "24GiB")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert_safe(done.stdout + done.stderr)


@given(st.text())
def test_a_field_is_one_line_without_controls_and_escaping_twice_changes_nothing(text):
    shown = visible(text)
    assert "\n" not in shown and not UNSAFE.search(shown)
    assert visible(shown) == shown
    report = visible_lines(text)
    assert report.count("\n") == text.count("\n") and not UNSAFE.search(report)
    assert visible_lines(report) == report


def test_letters_of_every_script_are_kept():
    for text in ("naïve café", "日本語のテキスト", "עברית", "العربية", "emoji 🚀"):
        assert visible(text) == text
