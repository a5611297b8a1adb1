"""The user's settings (Qt-free): what each setting accepts (`setting_values.py`), the
TOML file on disk (`settings_file.py`, `user_settings.py`), a running command
following the file (`settings_follow.py`) and the view's choices
(`view_options.py`). May import vramscope.core's vocabulary and safe_io; never
sources, ui or Qt.
"""
