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


# What reading a damaged file can raise past the reader's own checks (a value
# of a type nothing expected, an SQLite page that fails late): said as damage.
UNREADABLE = (ArithmeticError, LookupError, TypeError, ValueError, UnicodeError)


def one_line(exc: BaseException, limit: int = 200) -> str:
    """An exception's text on one line (SQLite quotes whole schema statements)."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def unreadable(path, exc: BaseException) -> SessionCorruptError:
    """One line for a file that broke a reader in a way it did not foresee."""
    return SessionCorruptError(
        f"{path}: the session file is damaged where vramscope cannot read "
        f"around it ({type(exc).__name__}: {one_line(exc)})"
    )
