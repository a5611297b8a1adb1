"""The Grafana dashboard in packaging/ asks only for metrics the exporter serves."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re
import time

from vramscope.core.export.metrics import StoreCollector
from vramscope.core.store.store import Store
from vramscope.sources.demo.simulated import SimulatedSource

ROOT = pathlib.Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "packaging" / "grafana" / "vramscope-dashboard.json"


def load_maker():
    spec = importlib.util.spec_from_file_location("make_dashboard", DASHBOARD.parent / "make_dashboard.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dashboard_exprs() -> list[str]:
    doc = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in doc["panels"] for t in p["targets"]]


def test_the_shipped_json_is_what_the_script_writes():
    assert json.loads(DASHBOARD.read_text()) == load_maker().dashboard()


def test_every_metric_the_dashboard_asks_for_is_served_by_the_exporter():
    store = Store()
    store.append(SimulatedSource(seed=1, start_time=time.time() - 600).sample(time.time()))
    served = {family.name for family in StoreCollector(store).collect()}
    asked = {name for expr in dashboard_exprs() for name in re.findall(r"vramscope_\w+", expr)}
    assert asked and asked <= served, asked - served
    doc = json.loads(DASHBOARD.read_text())
    assert {v["name"] for v in doc["templating"]["list"]} == {"instance"}
    assert all("$instance" in expr for expr in dashboard_exprs())
