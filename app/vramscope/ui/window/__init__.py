"""The window's shell: start-up (`app.py`, `window_monitor.py`, `session_files.py`),
the main window that pulls frames (`main_window.py`, `frame_wake.py`), its toolbar
and split (`view_controls.py`, `monitor_split.py`), one frame out to the views and
the status texts (`frame_fanout.py`, `status_line.py`: no Qt), the panels wiring
the tabs, the bridge where worker threads meet the Qt main thread, settings,
shortcuts, About, banners, and the window photographing itself (`window_shots.py`).
The one ui package that assembles the others; never imports vramscope.sources' GPU
backends.
"""
