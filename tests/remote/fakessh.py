"""A stand-in `ssh` for the --host tests: runs the remote command locally.

``install(bin_dir, hosts)`` writes an executable ``ssh`` into ``bin_dir``;
``hosts`` maps a host name to the environment its "remote" command gets
(PATH, the fake NVML's library and state file, ...). A host not in the map
fails the way ssh does for an unknown name (status 255). The script parses
ssh's option syntax (``-o KEY=VALUE``, ``-T``, ``[user@]host``), then hands
the command line to ``sh -c`` like sshd hands it to the login shell.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

SCRIPT = """#!{python}
import json, os, sys
args = sys.argv[1:]
i = 0
while i < len(args) and args[i].startswith("-"):
    i += 2 if args[i] in ("-o", "-p", "-i", "-J", "-F", "-l") else 1
host = args[i].rpartition("@")[2]
command = " ".join(args[i + 1:])
with open({config!r}) as f:
    hosts = json.load(f)
with open({log!r}, "a") as f:
    f.write(json.dumps([host, command]) + "\\n")
if host not in hosts:
    sys.stderr.write("ssh: Could not resolve hostname %s: Name or service not known\\n" % host)
    sys.exit(255)
env = dict(os.environ)
env.update(hosts[host])
os.execve("/bin/sh", ["/bin/sh", "-c", command], env)
"""


def install(bin_dir: pathlib.Path, hosts: dict[str, dict]) -> pathlib.Path:
    """Write the stand-in and its host map; returns the config file (rewrite it
    with ``set_hosts`` to change what a host answers)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    config = bin_dir / "hosts.json"
    set_hosts(config, hosts)
    ssh = bin_dir / "ssh"
    ssh.write_text(SCRIPT.format(python=sys.executable, config=str(config), log=str(bin_dir / "ssh.log")))
    ssh.chmod(0o755)
    return config


def set_hosts(config: pathlib.Path, hosts: dict[str, dict]) -> None:
    tmp = config.with_suffix(".tmp")
    tmp.write_text(json.dumps(hosts))
    os.replace(tmp, config)


def calls(bin_dir: pathlib.Path) -> list[list[str]]:
    """[host, command] of every ssh run so far."""
    log = bin_dir / "ssh.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def venv_path() -> str:
    """A PATH where `vramscope` and `python3` are this test run's."""
    here = pathlib.Path(sys.executable).parent
    return os.pathsep.join([str(here), "/usr/bin", "/bin"])
