"""`--redact`: command lines and user names replaced before anything is written."""

from __future__ import annotations

import os

REDACTED_COMMAND = "[command line redacted]"


class Redactor:
    """Maps user names to user1, user2, ... and command lines to a placeholder.

    Process names (``python3``) are kept: they say what ran without saying
    with which arguments. Free text (event data, alert titles) has every known
    user name and command line replaced, and path values cut to their file name.
    """

    def __init__(self, processes, enabled: bool = True):
        self.enabled = enabled
        self.users: dict[str, str] = {}
        self._commands: list[str] = []
        for rec in processes:
            if rec.user and rec.user not in self.users:
                self.users[rec.user] = f"user{len(self.users) + 1}"
            if rec.command:
                self._commands.append(rec.command)
        self._commands.sort(key=len, reverse=True)  # longest first: no partial leftovers

    def user(self, name: str | None) -> str | None:
        if not self.enabled or name is None:
            return name
        return self.users.get(name, "user")

    def command(self, text: str | None) -> str | None:
        if not self.enabled or text is None:
            return text
        return REDACTED_COMMAND

    def text(self, value: str | None) -> str | None:
        if not self.enabled or not value:
            return value
        for cmd in self._commands:
            if cmd in value:
                value = value.replace(cmd, REDACTED_COMMAND)
        for user, alias in self.users.items():
            value = value.replace(user, alias)
        return value

    def data(self, value):
        """Scrub a JSON-like value (event data, alert detail)."""
        if not self.enabled:
            return value
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if isinstance(v, str) and ("path" in k.lower() or k.lower() in ("file", "snapshot")):
                    out[k] = os.path.basename(v)
                elif k.lower() in ("cmdline", "command", "user", "username"):
                    out[k] = self.command(v) if "c" == k.lower()[0] else self.user(v)
                else:
                    out[k] = self.data(v)
            return out
        if isinstance(value, (list, tuple)):
            return [self.data(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value
