"""`--from-prometheus` against a server that answers badly (issue 24): wrong-shaped
JSON, broken or cut HTTP, too many headers, deep nesting, huge values, a body
trickled a byte at a time. Each gives one line and exit 2 (or the series that
fit), never a traceback or a hang."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rawhttp import RawHttp, http_answer
from vramscope.core.safe_io.bounded_http import HttpError, get, get_json
from vramscope.core.status.status_report import frame_to_dict
from vramscope.core.status.status_table import render_hosts
from vramscope.sources.remote.hosts import split_by_host
from vramscope.sources.remote.prometheus import PrometheusClient, PrometheusSource

GOOD_SERIES = {
    "metric": {
        "__name__": "vramscope_gpu_memory_used_bytes",
        "instance": "a:9400",
        "gpu": "0",
        "name": "NVIDIA H100",
    },
    "value": [1.7e9, "1073741824"],
}


def answer_json(value) -> bytes:
    return http_answer(json.dumps(value).encode())


def success(result) -> dict:
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


BAD_ANSWERS = {
    "a list, not an object": answer_json([1, 2, 3]),
    "no status": answer_json({"data": {"result": []}}),
    "status a number": answer_json({"status": 7}),
    "error with an object for its text": answer_json({"status": "error", "error": {"x": 1}}),
    "data a string": answer_json({"status": "success", "data": "none"}),
    "result an object": answer_json({"status": "success", "data": {"result": {"a": 1}}}),
    "not JSON": http_answer(b"<html>hello</html>"),
    "NaN in the body": http_answer(b'{"status": "success", "data": {"result": NaN}}'),
    "a number past float": http_answer(b'{"status": "success", "data": {"result": 1e999}}'),
    "nested 100,000 deep": http_answer(b'{"status": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    "bad UTF-8": http_answer(b'{"status": "\xff\xfe"}'),
    "no HTTP at all": b"SSH-2.0-OpenSSH_9.6\r\n",
    "a status line that is no number": b"HTTP/1.1 abc OK\r\n\r\n",
    "cut in the headers": b"HTTP/1.1 200 OK\r\nContent-Le",
    "cut in the body": http_answer(b'{"status": "success"', length=5000),
    "10,000 headers": (b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 10_000 + b"\r\n"),
    "a header line of 1 MB": b"HTTP/1.1 200 OK\r\nX-A: " + b"a" * (1 << 20) + b"\r\n\r\n",
    "a length of 10**30": http_answer(b"{}", length=10**30),
    "HTTP 500 with HTML": http_answer(b"<h1>oops</h1>", status="500 Internal Server Error"),
}


def from_prometheus(url: str, *args):
    return subprocess.run(
        [sys.executable, "-m", "vramscope", "status", "--from-prometheus", url, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BAD_ANSWERS))
def test_a_bad_answer_is_one_line_and_exit_2(case):
    server = RawHttp(BAD_ANSWERS[case])
    try:
        for args in ((), ("--json",)):
            done = from_prometheus(server.url, *args)
            assert "Traceback" not in done.stderr, (case, done.stderr)
            assert done.returncode == 2, (case, done.stdout, done.stderr)
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1 and server.url in lines[0], (case, done.stderr)
    finally:
        server.close()


@pytest.mark.slow
def test_a_trickling_body_ends_at_the_deadline_not_when_the_server_stops():
    body = json.dumps(success([GOOD_SERIES])).encode()
    server = RawHttp(http_answer(body), trickle=0.2, trickle_after=40)  # ~40 s of trickle
    try:
        started = time.monotonic()
        done = from_prometheus(server.url)
        took = time.monotonic() - started
        assert done.returncode == 2 and "within 5 s" in done.stderr, done.stderr
        assert took < 20  # the 5 s deadline of the request, plus start-up
    finally:
        server.close()


def test_the_reader_keeps_its_total_deadline_and_byte_cap():
    server = RawHttp(http_answer(b"x" * 100), trickle=0.05)
    big = RawHttp(http_answer(b"y" * 5000))
    try:
        started = time.monotonic()
        with pytest.raises(HttpError, match="within 0.5 s"):
            get(server.url + "/metrics", deadline=0.5)
        assert time.monotonic() - started < 2
        with pytest.raises(HttpError, match="more than the 1,000"):
            get(big.url, deadline=2, max_bytes=1000)
        assert get(big.url, deadline=2, max_bytes=5000).body == b"y" * 5000
    finally:
        server.close()
        big.close()


@pytest.mark.slow
def test_huge_and_wrong_values_leave_their_series_out_and_keep_the_rest():
    odd = [
        GOOD_SERIES,
        {"metric": {**GOOD_SERIES["metric"], "gpu": "1"}, "value": [1.7e9, "1e308"]},
        {"metric": {**GOOD_SERIES["metric"], "gpu": "2"}, "value": [1.7e9, "NaN"]},
        {"metric": {**GOOD_SERIES["metric"], "gpu": "99999999999999999999"}, "value": [1, "1"]},
        {"metric": {**GOOD_SERIES["metric"], "gpu": ["0"]}, "value": [1, "1"]},
        {"metric": "nothing", "value": [1, "1"]},
        {"metric": {**GOOD_SERIES["metric"], "gpu": "3", "name": 42}, "value": {"a": 1}},
        "a string",
        None,
        [1, 2],
    ]
    server = RawHttp(answer_json(success(odd)))
    try:
        done = from_prometheus(server.url, "--json")
        assert done.returncode == 0, done.stderr
        (host,) = json.loads(done.stdout)["hosts"]
        used = {g["index"]: g["memory"]["used"] for g in host["gpus"]}
        assert used == {0: 1 << 30, 1: None, 2: None, 3: None}
    finally:
        server.close()


label = st.text(max_size=12) | st.integers() | st.none() | st.lists(st.integers(), max_size=2)
series = (
    st.fixed_dictionaries(
        {
            "metric": st.dictionaries(
                st.sampled_from(["__name__", "instance", "gpu", "pid", "name", "process", "uuid"]), label
            )
            | st.sampled_from([None, "x", []]),
            "value": st.lists(st.floats() | st.text(max_size=8) | st.integers(), max_size=3) | st.none(),
        }
    )
    | st.none()
    | st.integers()
    | st.text(max_size=5)
)
names = st.sampled_from(
    [
        "up",
        "vramscope_gpu_memory_used_bytes",
        "vramscope_gpu_power_watts",
        "vramscope_process_memory_used_bytes",
        "DCGM_FI_DEV_FB_USED",
    ]
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(series, names, st.sampled_from(["0", "1", "12", "x", ""]), st.sampled_from(["a", "b"])),
        max_size=12,
    )
)
def test_any_vector_makes_a_frame_that_prints(items):
    vector = []
    for item, name, gpu, instance in items:
        if isinstance(item, dict) and isinstance(item.get("metric"), dict):
            item = {**item, "metric": {**item["metric"], "__name__": name, "instance": instance, "gpu": gpu}}
        vector.append(item)
    source = PrometheusSource("http://127.0.0.1:9")
    frame = source.fleet_frame(vector, 1.7e9)
    views = split_by_host(frame)
    render_hosts(views)
    json.dumps(frame_to_dict(frame), allow_nan=False)


def test_a_range_query_with_bad_points_keeps_the_good_ones():
    result = [
        {
            "metric": {"gpu": "0"},
            "values": [[1.0, "5"], [2.0, "NaN"], ["x", "7"], [3.0], "junk", [4.0, "1e400"], [5.0, "9"]],
        },
        {"metric": {"gpu": "y"}, "values": [[1.0, "1"]]},
        {"values": 7},
        "z",
    ]
    server = RawHttp(answer_json({"status": "success", "data": {"resultType": "matrix", "result": result}}))
    try:
        client = PrometheusClient(server.url)
        (series,) = [
            s
            for s in client.query_range("x", 0, 10, 1)
            if isinstance(s, dict) and s.get("metric") == {"gpu": "0"}
        ]
        history = PrometheusSource(server.url).history("a", 0, 10)
        assert history[0]["t"] == [1.0, 2.0, 4.0, 5.0]
        assert history[0]["used"] == [5.0, None, None, 9.0]
        assert series["values"][0] == [1.0, "5"]
        assert get_json(server.url, deadline=2)[0] == 200
    finally:
        server.close()
