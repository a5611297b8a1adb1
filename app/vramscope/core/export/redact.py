"""`--redact`: command lines, user names and host names replaced before
anything is written."""

from __future__ import annotations

import os
import re

REDACTED_COMMAND = "[command line redacted]"


class Redactor:
    """Maps user names to user1, user2, ..., the hosts of a recording of other
    machines (``alice@gpu-box``) to host1, host2, ... and command lines to a
    placeholder.

    Process names (``python3``) are kept: they say what ran without saying
    with which arguments. Free text (event data, alert titles) has every known
    user name, host name and command line replaced, and path values cut to
    their file name.
    """

    def __init__(self, processes, enabled: bool = True, hosts=()):
        self.enabled = enabled
        self.hosts: dict[str, str] = {}
        for host in hosts:
            if host and host not in self.hosts:
                self.hosts[host] = f"host{len(self.hosts) + 1}"
        # a host name as a whole word only ("a" must not eat the a's of a message)
        self._host_words = [
            (re.compile(r"(?<![\w.@-])" + re.escape(h) + r"(?![\w.-])"), alias)
            for h, alias in sorted(self.hosts.items(), key=lambda x: -len(x[0]))
        ]
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

    def host(self, name: str | None) -> str | None:
        if not self.enabled or name is None:
            return name
        return self.hosts.get(name, "host")

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
        for word, alias in self._host_words:
            value = word.sub(alias, value)
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
