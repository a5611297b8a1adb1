"""Inference servers found on this machine and their local metrics read: a fake
`python -m vllm.entrypoints.openai.api_server` (a real process, with a worker
child that stands for the GPU process) and a fake SGLang server, both serving
Prometheus text on 127.0.0.1."""

from __future__ import annotations

import sys
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.processes.servers import BY_KEY, server_key
from vramscope.core.store.store import Store
from vramscope.sources.machine.servers import ServerEnricher, kind_from_metrics, parse_metrics

from fakeservers import SGLANG_METRICS, VLLM_METRICS


def gpu_frame(t, pid, cmdline):
    import psutil

    info = ProcessInfo(
        pid=pid,
        start_time=psutil.Process(pid).create_time(),
        user="me",
        name="python",
        cmdline=tuple(cmdline),
        ppid=None,
        status="sleeping",
    )
    return Frame(
        time=t,
        gpus=(
            GpuSample(
                index=0,
                total=24 << 30,
                used=22 << 30,
                processes=(GpuProcess(pid=pid, used=21 << 30, info=info),),
            ),
        ),
    )


def enrich_until_answered(enricher, make_frame, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        out = enricher(make_frame())
        if out.servers and out.servers[0].metrics_time is not None or time.monotonic() > deadline:
            return out
        time.sleep(0.05)


def test_vllm_worker_is_found_through_its_launcher_and_metrics_are_read(fake_server):
    launcher, port, worker = fake_server("vllm.entrypoints.openai.api_server", VLLM_METRICS)
    store = Store()
    enricher = ServerEnricher(store, period=0.0)
    try:
        # the GPU process is the worker child; its own command line names nothing
        t = [1000.0]

        def frame():
            t[0] += 1
            return gpu_frame(t[0], worker, [sys.executable, "-c", "import time; time.sleep(120)"])

        out = enrich_until_answered(enricher, frame)
    finally:
        enricher.close()
    [srv] = out.servers
    assert srv.kind == "vllm" and srv.pid == launcher.pid and srv.pids == (worker,)
    assert srv.port == port and srv.metrics_url == f"http://127.0.0.1:{port}/metrics"
    assert (srv.kv_cache_usage, srv.running, srv.waiting) == (0.42, 3.0, 1.0)
    assert srv.pool == "--gpu-memory-utilization 0.9 (the default)"
    ts, vs = store.series(server_key(launcher.pid, srv.start_time, "kv_cache_usage"))
    assert len(ts) >= 1 and vs[-1] == pytest.approx(0.42)


def test_sglang_metrics_and_an_idle_server(fake_server):
    proc, port, _ = fake_server("sglang.launch_server", SGLANG_METRICS)
    enricher = ServerEnricher(None, period=0.0)
    try:
        out = enrich_until_answered(
            enricher,
            lambda: gpu_frame(
                time.time(),
                proc.pid,
                [
                    "python3",
                    "-m",
                    "sglang.launch_server",
                    "--port",
                    str(port),
                    "--mem-fraction-static",
                    "0.85",
                ],
            ),
        )
    finally:
        enricher.close()
    [srv] = out.servers
    assert srv.kind == "sglang" and srv.kv_cache_usage == pytest.approx(0.17)
    assert srv.busy is False and srv.pool == "--mem-fraction-static 0.85"


def test_a_gpu_process_listening_with_engine_metrics_is_recognised_by_its_port(fake_server):
    proc, port, _ = fake_server("some_wrapper", VLLM_METRICS)
    enricher = ServerEnricher(None, period=0.0)
    try:
        out = enrich_until_answered(
            enricher, lambda: gpu_frame(time.time(), proc.pid, ["python", "-m", "some_wrapper"])
        )
    finally:
        enricher.close()
    [srv] = out.servers
    assert srv.kind == "vllm" and srv.port == port and srv.running == 3.0


@pytest.mark.slow
def test_a_server_without_an_answer_says_why_and_nothing_is_guessed():
    enricher = ServerEnricher(
        None,
        period=0.0,
        ports=lambda pid: [("127.0.0.1", 1)],
        fetch=lambda url: (_ for _ in ()).throw(ConnectionRefusedError("refused")),
    )
    import os

    try:
        out = enrich_until_answered(
            enricher, lambda: gpu_frame(time.time(), os.getpid(), ["vllm", "serve", "m"]), timeout=1.0
        )
    finally:
        enricher.close()
    [srv] = out.servers
    assert srv.kv_cache_usage is None and srv.running is None
    assert "no answer" in (srv.metrics_error or "")


def test_only_localhost_is_read():
    from vramscope.sources.machine.servers import fetch_text

    with pytest.raises(ValueError, match="only localhost"):
        fetch_text("http://192.0.2.1:8000/metrics")


def test_page_parsers():
    assert kind_from_metrics(VLLM_METRICS).key == "vllm"
    assert kind_from_metrics(SGLANG_METRICS).key == "sglang"
    assert kind_from_metrics("# HELP x y\nx 1\n") is None
    old = VLLM_METRICS.replace("kv_cache_usage_perc", "gpu_cache_usage_perc")
    assert parse_metrics(BY_KEY["vllm"], old)["kv_cache_usage"] == pytest.approx(0.42)


@given(st.text(max_size=400))
def test_any_metrics_page_gives_figures_or_an_error_never_a_crash(page):
    try:
        values = parse_metrics(BY_KEY["vllm"], page)
    except ValueError:
        return  # the worker reports it as "could not read metrics"
    assert set(values) == {"kv_cache_usage", "running", "waiting"}


def test_many_workers_of_one_launcher_read_the_launcher_once():
    import subprocess

    import psutil

    children = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(6)]
    try:

        def frame(pids):
            procs = tuple(
                GpuProcess(
                    pid=p,
                    used=1 << 30,
                    info=ProcessInfo(
                        pid=p,
                        start_time=psutil.Process(p).create_time(),
                        user="me",
                        name="python",
                        cmdline=(sys.executable, "-c", "import time; time.sleep(60)"),
                    ),
                )
                for p in pids
            )
            return Frame(
                time=1000.0, gpus=(GpuSample(index=0, total=24 << 30, used=6 << 30, processes=procs),)
            )

        one = ServerEnricher(None, period=1e9)
        out = one(frame([children[0].pid]))
        many = ServerEnricher(None, period=1e9)
        out_many = many(frame([c.pid for c in children]))
    finally:
        for c in children:
            c.kill()
            c.wait()
    assert out.servers == () and out_many.servers == ()  # this test's process serves nothing
    assert one.ancestor_reads >= 1
    assert many.ancestor_reads == one.ancestor_reads  # six siblings: their parents read once
