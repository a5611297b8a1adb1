"""The agent client reads its own runtime directories again only when they
changed, and never misses a socket or a final dump that appeared."""

from __future__ import annotations

import os
import socket
import stat

import pytest

from vramscope.agent.serving import paths
from vramscope.sources.agents import agent_dir_listing
from vramscope.sources.agents.agent_dir_listing import SETTLED, Listings


def _dir(tmp_path):
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    return str(d)


def _listen(directory: str, pid: int, ticks: int) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(directory, paths.socket_name(pid, ticks)))
    s.listen()
    return s


def _names(listing) -> set:
    return {(pid, ticks, suffix) for pid, ticks, suffix, _path, _mode in listing}


def _reads(monkeypatch) -> list:
    reads = []
    original = agent_dir_listing.read
    monkeypatch.setattr(agent_dir_listing, "read", lambda d: reads.append(d) or original(d))
    return reads


def test_a_socket_or_final_dump_that_appears_is_in_the_next_listing(tmp_path):
    d = _dir(tmp_path)
    later = os.stat(d).st_mtime + 10 * SETTLED
    listings = Listings(clock=lambda: later)  # long after the last change: kept
    assert listings.read(d) == []
    with _listen(d, 4242, 1001):
        assert _names(listings.read(d)) == {(4242, 1001, paths.SOCKET_SUFFIX)}
        (tmp_path / "run" / paths.final_name(4243, 77)).write_text("{}")
        assert _names(listings.read(d)) == {(4242, 1001, ".sock"), (4243, 77, ".final.json")}
    os.unlink(os.path.join(d, paths.socket_name(4242, 1001)))
    assert _names(listings.read(d)) == {(4243, 77, ".final.json")}


def test_an_unchanged_directory_is_listed_once(tmp_path, monkeypatch):
    d = _dir(tmp_path)
    with _listen(d, 4242, 1001):
        later = os.stat(d).st_mtime + 10 * SETTLED
        listings, reads = Listings(clock=lambda: later), _reads(monkeypatch)
        for _ in range(5):
            assert _names(listings.read(d)) == {(4242, 1001, ".sock")}
        assert len(reads) == 1


def test_a_directory_changed_moments_ago_is_listed_again_until_it_settles(tmp_path, monkeypatch):
    """A name created in the same clock tick as a listing leaves the mtime as it
    was: a listing taken that soon after a change is not kept."""
    d = _dir(tmp_path)
    now = [os.stat(d).st_mtime + SETTLED / 10]
    listings, reads = Listings(clock=lambda: now[0]), _reads(monkeypatch)
    listings.read(d)
    listings.read(d)
    assert len(reads) == 2
    now[0] += SETTLED
    listings.read(d)
    listings.read(d)
    assert len(reads) == 3


def test_other_names_links_and_a_missing_directory(tmp_path):
    d = _dir(tmp_path)
    (tmp_path / "run" / "notes.txt").write_text("not an agent's")
    os.symlink("/etc/passwd", os.path.join(d, paths.final_name(9, 9)))
    (listed,) = Listings().read(d)
    assert listed[:3] == (9, 9, ".final.json")
    assert stat.S_ISLNK(listed[4])  # the link's own mode: the client takes it for neither
    with pytest.raises(OSError):  # (the client skips that directory)
        Listings().read(str(tmp_path / "gone"))
