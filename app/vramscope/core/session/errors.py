"""What can go wrong with a session file, each with a message a user can act on."""

from __future__ import annotations


class SessionError(Exception):
    """Base class: the session file cannot be used as asked."""


class NotASessionError(SessionError):
    """The file is not a vramscope session (not SQLite, or not our schema)."""


class SessionCorruptError(SessionError):
    """The file is damaged (truncated, overwritten); parts may still be readable."""


class SessionVersionError(SessionError):
    """The file was written by a newer vramscope whose format this one does not know."""


class SessionExistsError(SessionError):
    """Recording would overwrite an existing file."""
