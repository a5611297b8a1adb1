"""The allocator as the agent reads it (stdlib + torch): statistics per device through an
injectable provider (`stats.py`; CUDA/ROCm `stats_cuda.py`, Intel `stats_xpu.py`; our
names for the figures `stat_fields.py`), the peak between two looks and the user's own
peak counters left alone (`peak_window.py`, `user_peaks.py`), the allocator's settings,
its segments summarised (`segments.py`, `allocator_watch.py`), allocation sites recorded
on demand (`sites.py`, `site_recorder.py`) and events that come with memory outside
PyTorch (`outside_events.py`).
"""
