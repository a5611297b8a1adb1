"""The window's shell: start-up (`app.py`), the main window that pulls frames and
fans them out (`main_window.py`), the panels wiring the tabs, the bridge where worker
threads meet the Qt main thread, settings, shortcuts, About, banners, and the window
photographing itself (`window_shots.py`). The one ui package that assembles the
others; never imports vramscope.sources' GPU backends.
"""
