"""What the monitor keeps of an in-process agent's reports (Qt-free): the reports
themselves as frozen values (`agent_report.py`, read through core/samples.py), the
allocator figures a device report carries, declared once (`device_fields.py`), the
store's keys and series for agent samples, steps and events (`agent_keys.py`,
`agent_series.py`), the allocator summary and its figures, per-module figures and
their text, the monitor's part of an OOM post-mortem and memory outside PyTorch
explained. May import vramscope.core's vocabulary and vramscope.agent.protocol's
types; never sources, ui or Qt.
"""
