"""The settings file every command reads (core/settings/user_settings.py): it survives a
restart, the command line changes one run only, and a file that cannot be used
-- corrupt, hostile, the wrong types -- gives one line, the defaults, and is put
aside rather than overwritten."""

from __future__ import annotations

import argparse
import logging
import os
import stat
import threading

import pytest

from vramscope.core.settings import settings_file
from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.units import GiB, MiB
from vramscope.core.settings.user_settings import Settings, diagnostics_for


@pytest.fixture
def toml(tmp_path):
    path = tmp_path / "settings.toml"

    def open_settings() -> Settings:  # a fresh object each time: a new start of a command
        return Settings(path)

    open_settings.path = path
    return open_settings


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def _aside(path) -> list:
    return sorted(p for p in path.parent.iterdir() if p.name.startswith(path.name + ".unusable-"))


def test_the_default_file_is_in_the_users_config_dir(private_user_dirs):
    assert Settings().path == private_user_dirs["XDG_CONFIG_HOME"] / "vramscope" / "settings.toml"


def test_defaults_on_first_start_write_nothing(toml):
    s = toml()
    assert s.interval == 1.0 and s.window == "10m" and s.theme == "system"
    assert s.read_only is False and s.recording is True
    assert s.session_cap_bytes == 2 * GiB
    assert s.geometry is None and s.hidden_columns == () and s.plot_style == "stacked"
    assert s.diagnostics == DiagnosticSettings()
    assert not toml.path.exists()


def test_round_trip_through_the_toml_file(toml):
    s = toml()
    s.interval = 0.5
    s.window = "1h"
    s.theme = "light"
    s.read_only = True
    s.session_cap_bytes = 5 * GiB
    geometry = bytes(range(256)) + b"\x00\xff"
    s.geometry = geometry
    s.hidden_columns = ("Host mem", "CPU %")
    s.card_details = True
    s.diagnostics = DiagnosticSettings().with_overrides(
        squatter_min_bytes=512 * MiB, idle_minutes=2.5, leak_steps=40, lookup_notebooks=False
    )

    text = toml.path.read_text()
    assert "interval = 0.5" in text and 'theme = "light"' in text and "idle_minutes = 2.5" in text
    assert stat.S_IMODE(os.stat(toml.path).st_mode) == 0o600

    again = toml()
    assert (again.interval, again.window, again.theme) == (0.5, "1h", "light")
    assert again.read_only is True and again.session_cap_bytes == 5 * GiB
    assert again.geometry == geometry and again.hidden_columns == ("Host mem", "CPU %")
    assert again.card_details is True
    d = again.diagnostics
    assert (d.squatter_min_bytes, d.idle_minutes, d.leak_steps, d.lookup_notebooks) == (
        512 * MiB,
        2.5,
        40,
        False,
    )
    assert d.near_oom_free_bytes == DiagnosticSettings().near_oom_free_bytes


def test_command_line_overrides_one_run_and_is_not_saved(toml):
    s = toml()
    s.interval = 2.0
    s.window = "1h"
    args = argparse.Namespace(
        interval=0.2,
        window=None,
        theme="dark",
        read_only=True,
        record=False,
        squatter_min_mib=100.0,
        leak_steps=None,
    )
    taken = s.merge_args(args)
    assert taken["interval"] == 0.2 and "window" not in taken
    assert s.interval == 0.2 and s.window == "1h"
    assert s.theme == "dark" and s.read_only is True and s.recording is False
    assert s.diagnostics.squatter_min_bytes == 100 * MiB
    assert s.overridden() == {"interval", "theme", "read_only", "recording", "diagnostics"}

    again = toml()
    assert again.interval == 2.0 and again.theme == "system" and again.read_only is False
    assert again.diagnostics.squatter_min_bytes == DiagnosticSettings().squatter_min_bytes


def test_setting_a_value_during_the_run_saves_it_and_drops_the_override(toml):
    s = toml()
    s.override(interval=0.2)
    s.interval = 5.0
    assert s.interval == 5.0 and "interval" not in s.overridden()
    assert toml().interval == 5.0


def test_bad_values_are_refused_with_a_clear_message(toml):
    s = toml()
    with pytest.raises(ValueError, match="outside 0.1 .. 60"):
        s.interval = 0.01
    with pytest.raises(ValueError, match="not one of system, light, dark"):
        s.theme = "blue"
    with pytest.raises(ValueError, match="unknown diagnostic setting"):
        s.override(diagnostics={"nonsense": 1})
    assert s.interval == 1.0 and not toml.path.exists()


def test_the_command_thresholds_are_the_files_with_the_command_line_on_top(toml):
    toml().update_diagnostics(idle_minutes=0.5, leak_steps=12)
    args = argparse.Namespace(leak_steps=7)
    d = diagnostics_for(args, path=toml.path)
    assert (d.idle_minutes, d.leak_steps) == (0.5, 7)
    assert toml().diagnostics.leak_steps == 12  # the command line did not save


def test_saving_keeps_what_others_changed_since_and_keys_of_newer_versions(toml):
    toml.path.write_text("[view]\nsparkles = true\n[future]\nanswer = 42\n")
    window, other = toml(), toml()  # two starts, each with the file as it was
    other.update_diagnostics(idle_minutes=0.5)  # e.g. the user edits it while the window runs
    window.geometry = b"\x01\x02"  # the window closing: its layout, nothing else
    again = toml()
    assert again.geometry == b"\x01\x02" and again.diagnostics.idle_minutes == 0.5
    text = toml.path.read_text()
    assert "sparkles = true" in text and "answer = 42" in text
    window.reset()  # the defaults back: what this version knows; the rest stays
    assert toml().diagnostics == DiagnosticSettings() and "answer = 42" in toml.path.read_text()


# -- a file that cannot be used ---------------------------------------------------------------


def test_values_of_the_wrong_type_give_one_line_their_defaults_and_the_file_is_kept(toml, caplog):
    original = (
        '[sampling]\ninterval = "fast"\n[view]\ntheme = "purple"\nwindow = "1h"\n'
        'card_details = "yes"\n[diagnostics]\nidle_minutes = true\nleak_steps = 12\n'
    )
    toml.path.write_text(original)
    s = toml()
    assert s.interval == 1.0 and s.theme == "system" and s.card_details is False
    assert s.window == "1h" and s.diagnostics.leak_steps == 12  # the usable ones still count
    assert s.diagnostics.idle_minutes == DiagnosticSettings().idle_minutes
    [line] = _warnings(caplog)
    assert "\n" not in line and "sampling.interval" in line and "view.theme" in line
    [aside] = _aside(toml.path)
    assert aside.read_text() == original and aside.name in line  # nothing lost
    again = toml()  # the next command reads the same settings, with no warning
    assert again.window == "1h" and again.diagnostics.leak_steps == 12 and again.interval == 1.0
    assert len(_warnings(caplog)) == 1


def test_a_table_that_is_not_a_table_is_said(toml, caplog):
    toml.path.write_text('view = 3\ndiagnostics = "strict"\n[sampling]\ninterval = 2.0\n')
    s = toml()
    assert s.window == "10m" and s.interval == 2.0
    [line] = _warnings(caplog)
    assert "view: not a table" in line and "diagnostics: not a table" in line
    assert len(_aside(toml.path)) == 1 and toml().interval == 2.0


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e300", "-3"])
def test_numbers_that_are_not_usable_give_the_default(toml, value, caplog):
    toml.path.write_text(
        f"[sampling]\ninterval = {value}\n[recording]\nsession_cap_bytes = {value}\n"
        f"[diagnostics]\nidle_minutes = {value}\n"
    )
    s = toml()
    assert s.interval == 1.0 and s.session_cap_bytes == 2 * GiB
    assert s.diagnostics == DiagnosticSettings()
    [line] = _warnings(caplog)
    assert "\n" not in line and len(_aside(toml.path)) == 1


@pytest.mark.parametrize(
    "content",
    [b"interval = = 1\n", b"[view\n", b"\xff\xfe garbage", b"[sampling]\ninterval = 1\ninterval = 2\n"],
)
def test_a_corrupt_file_gives_one_line_and_the_defaults_and_is_kept_aside(toml, content, caplog):
    toml.path.write_bytes(content)
    s = toml()
    assert s.interval == 1.0 and s.diagnostics == DiagnosticSettings()
    [line] = _warnings(caplog)
    assert "\n" not in line and "unusable" in line and "using the defaults" in line
    [aside] = _aside(toml.path)
    assert aside.read_bytes() == content and not toml.path.exists()
    s.theme = "dark"  # a later save writes a new file; the old one stays aside
    assert toml().theme == "dark" and aside.read_bytes() == content


def _open_in_time(path) -> Settings:
    """Settings(path) on a thread: a hang fails the test instead of the suite."""
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("s", Settings(path)), daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "opening the settings hung"
    return out["s"]


def test_a_fifo_never_blocks_and_is_put_aside(toml, caplog):
    os.mkfifo(toml.path)
    s = _open_in_time(toml.path)
    assert s.interval == 1.0
    [line] = _warnings(caplog)
    assert "FIFO" in line and "\n" not in line
    [aside] = _aside(toml.path)
    assert stat.S_ISFIFO(os.lstat(aside).st_mode)  # the FIFO itself, moved, not replaced
    s.interval = 2.0
    assert toml().interval == 2.0


def test_a_huge_file_is_not_read(toml, caplog):
    with open(toml.path, "wb") as f:
        f.truncate(settings_file.SIZE_LIMIT * 64)  # sparse: costs no disk
    s = _open_in_time(toml.path)
    assert s.interval == 1.0
    [line] = _warnings(caplog)
    assert "at most" in line and len(_aside(toml.path)) == 1


@pytest.mark.parametrize(
    "content",
    [
        "a = " + "[" * 100_000 + "]" * 100_000,
        "a = " + "{b = " * 40_000 + "1" + "}" * 40_000,
        "[future]\na = " + "[" * 20 + "]" * 20,
    ],
)
def test_a_deeply_nested_file_is_refused_not_a_crash(toml, content, caplog):
    toml.path.write_text(content)
    s = toml()
    assert s.interval == 1.0
    [line] = _warnings(caplog)
    assert "nested deeper than" in line and len(_aside(toml.path)) == 1
    s.theme = "dark"  # and a save afterwards writes a file the next start reads
    assert toml().theme == "dark"


def test_a_directory_in_its_place_is_put_aside(toml, caplog):
    toml.path.mkdir()
    assert toml().theme == "system"
    assert "directory" in _warnings(caplog)[0] and _aside(toml.path)[0].is_dir()


def _another_users_file(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    theirs = tmp_path / "theirs.toml"
    theirs.write_text('[view]\ntheme = "dark"\n[diagnostics]\nidle_minutes = 0.1\n')
    os.chown(theirs, 54321, 54321)
    return theirs


def test_a_link_to_another_users_file_is_not_read_nor_written(toml, tmp_path, caplog):
    theirs = _another_users_file(tmp_path)
    before = theirs.read_text()
    toml.path.symlink_to(theirs)
    s = toml()
    assert s.theme == "system" and s.diagnostics == DiagnosticSettings()
    [line] = _warnings(caplog)
    assert "uid 54321" in line and "\n" not in line
    s.theme = "light"
    assert theirs.read_text() == before and os.stat(theirs).st_uid == 54321
    assert _aside(toml.path)[0].is_symlink()  # the link was moved, its target untouched


def test_a_link_of_another_user_is_not_followed(toml, tmp_path, caplog):
    theirs = _another_users_file(tmp_path)
    toml.path.symlink_to(theirs)
    os.lchown(toml.path, 54321, 54321)
    s = toml()
    assert s.theme == "system"
    assert "symlink of uid 54321" in _warnings(caplog)[0]


def test_a_link_to_a_regular_file_of_ours_is_read_and_written_through(toml, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "settings.toml"
    real.write_text('[view]\nwindow = "1m"\n')
    toml.path.symlink_to(real)
    s = toml()
    assert s.window == "1m"
    s.theme = "dark"
    assert toml.path.is_symlink() and 'theme = "dark"' in real.read_text()


def test_an_unwritable_place_keeps_the_settings_in_memory(tmp_path, caplog):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    s = Settings(blocker / "settings.toml")
    s.theme = "dark"
    assert s.theme == "dark" and s.in_memory
    [line] = _warnings(caplog)
    assert "in memory" in line and "\n" not in line


# -- any file at all: never an exception, every value of its kind ------------------------------

from hypothesis import HealthCheck, given, settings as hypothesis_settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from vramscope.core.settings.user_settings import KEYS  # noqa: E402

_TABLES = sorted({table for (table, _key), _d, _k in KEYS.values()} | {"diagnostics", "other"})
_NAMES = sorted(
    {key for (_table, key), _d, _k in KEYS.values()}
    | {f for f in DiagnosticSettings.__dataclass_fields__}
    | {"x"}
)
_VALUES = st.one_of(
    st.booleans(),
    st.integers(-(1 << 63), (1 << 63) - 1),
    st.floats(),
    st.text(max_size=20),
    st.lists(st.text(max_size=8), max_size=3),
    st.sampled_from(["1h", "dark", "lines", "AAAA", "system"]),
)
_DOCUMENTS = st.dictionaries(
    st.sampled_from(_TABLES),
    st.one_of(st.dictionaries(st.sampled_from(_NAMES), _VALUES, max_size=8), _VALUES),
    max_size=6,
)


def _check_every_value(s: Settings) -> None:
    for name, (_where, default, kind) in KEYS.items():
        value = getattr(s, name)
        assert value == default or kind(value) == value
    DiagnosticSettings().with_overrides(
        **{f: getattr(s.diagnostics, f) for f in DiagnosticSettings.__dataclass_fields__}
    )


@pytest.mark.slow
@hypothesis_settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(document=_DOCUMENTS)
def test_any_toml_document_gives_usable_settings_and_at_most_one_line(document, tmp_path_factory):
    import tomli_w

    path = tmp_path_factory.mktemp("h") / "settings.toml"
    path.write_text(tomli_w.dumps(document))
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    log = logging.getLogger("vramscope.core.settings.user_settings")
    log.addHandler(handler)
    try:
        s = Settings(path)
    finally:
        log.removeHandler(handler)
    _check_every_value(s)
    assert len(records) <= 1 and all("\n" not in r.getMessage() for r in records)
    _check_every_value(Settings(path))  # what the next command reads is usable too


@pytest.mark.slow
@hypothesis_settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=200))
def test_any_bytes_give_usable_settings(data, tmp_path_factory):
    path = tmp_path_factory.mktemp("b") / "settings.toml"
    path.write_bytes(data)
    _check_every_value(Settings(path))
