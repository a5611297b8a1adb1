"""Recorded sessions: one SQLite (WAL) file per recording; no Qt.

- ``SessionWriter``  a Store listener that appends every frame (crash-safe).
- ``SessionReader`` / ``open_session``  read a file (read-only), damaged or not.
- ``load_into_store``  reopen a session in the same panels as live data.
- ``library``  the default directory (platformdirs) and the retention cap.
"""

from vramscope.core.session.errors import (
    NotASessionError,
    SessionCorruptError,
    SessionError,
    SessionExistsError,
    SessionVersionError,
)
from vramscope.core.session.library import (
    RetentionPolicy,
    default_directory,
    enforce_retention,
    list_sessions,
    new_session_path,
)
from vramscope.core.session.loader import agent_key, load_into_store
from vramscope.core.session.reader import SessionReader, open_session
from vramscope.core.session.writer import SessionWriter

__all__ = [
    "NotASessionError",
    "RetentionPolicy",
    "SessionCorruptError",
    "SessionError",
    "SessionExistsError",
    "SessionReader",
    "SessionVersionError",
    "SessionWriter",
    "agent_key",
    "default_directory",
    "enforce_retention",
    "list_sessions",
    "load_into_store",
    "new_session_path",
    "open_session",
]
