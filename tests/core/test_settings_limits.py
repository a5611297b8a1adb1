"""Settings the program writes itself, at the limits: what it writes it reads back
(never set aside for its own size), what it accepts to write is bounded, and a
file rewritten over and over leaves only a few set-aside copies."""

from __future__ import annotations

import logging
import os

import pytest

from vramscope.core.settings import settings_file
from vramscope.core.settings.setting_values import MAX_NAME_CHARS, MAX_NAMES, MAX_STATE_BYTES
from vramscope.core.settings.user_settings import Settings


@pytest.fixture
def path(tmp_path):
    return tmp_path / "settings.toml"


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def aside(path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name + ".unusable-"))


def test_every_setting_at_its_limit_is_written_and_read_back_whole(path, caplog):
    s = Settings(path)
    names = tuple(f"{n:02d}" + "c" * (MAX_NAME_CHARS - 2) for n in range(MAX_NAMES))
    layouts = {k: os.urandom(MAX_STATE_BYTES) for k in ("geometry", "window_state", "splitter_state")}
    s.hidden_columns = names
    for name, value in layouts.items():
        setattr(s, name, value)
    s.interval = 2.5
    s.update_diagnostics(idle_minutes=7.0)
    assert os.path.getsize(path) <= settings_file.SIZE_LIMIT
    again = Settings(path)  # the next start
    assert again.hidden_columns == names and again.interval == 2.5
    assert all(getattr(again, k) == v for k, v in layouts.items())
    assert again.diagnostics.idle_minutes == 7.0
    assert warnings(caplog) == [] and aside(path) == []


@pytest.mark.parametrize(
    "name, value",
    [
        ("hidden_columns", tuple(f"c{n}" for n in range(MAX_NAMES + 1))),
        ("hidden_columns", ("x" * (MAX_NAME_CHARS + 1),)),
        ("geometry", b"\0" * (MAX_STATE_BYTES + 1)),
        ("window_state", b"\0" * (MAX_STATE_BYTES + 1)),
    ],
)
def test_a_value_past_its_limit_is_refused_when_set_and_the_saved_one_kept(path, name, value):
    s = Settings(path)
    s.interval = 3.0
    with pytest.raises(ValueError):
        setattr(s, name, value)
    again = Settings(path)
    assert again.interval == 3.0 and getattr(again, name) in ((), None)


def test_20000_hidden_columns_cost_that_one_setting_not_every_other(path, caplog):
    """The file of the issue: valid TOML, 169 KB; rewritten with one name a line it was
    over the reader's limit, so the next start lost every setting."""
    names = ", ".join(f'"col{n:05d}"' for n in range(20_000))
    path.write_text(f'[sampling]\ninterval = 2.0\n\n[view]\ntheme = "dark"\nhidden_columns = [{names}]\n')
    assert 160_000 < os.path.getsize(path) <= settings_file.SIZE_LIMIT
    s = Settings(path)
    [line] = warnings(caplog)
    assert "view.hidden_columns" in line and "20,000 names" in line
    assert s.interval == 2.0 and s.theme == "dark" and s.hidden_columns == ()
    assert len(aside(path)) == 1  # the file as it was: kept
    caplog.clear()
    again = Settings(path)  # the next start reads what was written back
    assert again.interval == 2.0 and again.theme == "dark" and warnings(caplog) == []


def test_a_save_that_would_outgrow_the_reader_leaves_the_file_as_it_was(path, caplog):
    """A newer version's keys (kept on save) that grow when rewritten: the file is not
    replaced by one the next start would refuse."""
    future = ", ".join('"a"' for _ in range(40_000))  # 4 bytes each here, 9 one per line
    path.write_text(f"[sampling]\ninterval = 2.0\n\n[future]\nitems = [{future}]\n")
    before = path.read_bytes()
    s = Settings(path)
    assert warnings(caplog) == [] and s.interval == 2.0
    s.theme = "light"  # kept for this run
    assert s.theme == "light"
    [line] = warnings(caplog)
    assert "not saved" in line and "left as it was" in line
    assert path.read_bytes() == before  # nothing lost: the next start reads it as before
    assert Settings(path).interval == 2.0 and aside(path) == []


def test_a_file_rewritten_in_a_loop_leaves_only_a_few_set_aside(path, caplog):
    for n in range(12):
        path.write_text(f"broken = [ {n}")  # (another program writing it, badly)
        assert Settings(path).interval == 1.0
    kept = aside(path)
    assert len(kept) == settings_file.ASIDE_KEEP
    assert {(path.parent / name).read_text() for name in kept} == {f"broken = [ {n}" for n in (9, 10, 11)}
    assert len(warnings(caplog)) == 12  # each said


def test_only_the_files_it_set_aside_are_cleaned(path):
    other = path.parent / (path.name + ".unusable-mine.bak")
    other.write_text("keep me")
    for n in range(6):
        path.write_text("not toml [")
        Settings(path)
    assert other.read_text() == "keep me"
    assert len(aside(path)) == settings_file.ASIDE_KEEP + 1  # (the user's own file included)
