"""After README's install command, `vramscope` runs from a fresh login shell:
`vramscope desktop install` links ~/.local/bin/vramscope to the installation,
and a login shell's ~/.profile (Debian's and Ubuntu's /etc/skel/.profile) puts
that directory on the PATH."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from vramscope import __version__
from vramscope import launcher

APP = pathlib.Path(__file__).resolve().parents[2] / "app"
# Debian/Ubuntu /etc/skel/.profile, the part that matters here (bash's login shell reads it)
DEBIAN_PROFILE = """if [ -d "$HOME/.local/bin" ] ; then
    PATH="$HOME/.local/bin:$PATH"
fi
"""


def _installed_script(root: pathlib.Path) -> pathlib.Path:
    """What pip's console script in a venv is: `vramscope` with this Python in its shebang."""
    script = root / "venv" / "bin" / "vramscope"
    script.parent.mkdir(parents=True)
    script.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(APP)!r})\n"
        "from vramscope.cli import main\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    return script


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_fresh_login_shell_runs_vramscope_after_the_install_step(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    skel = pathlib.Path("/etc/skel/.profile")
    (home / ".profile").write_text(skel.read_text() if skel.is_file() else DEBIAN_PROFILE)
    script = _installed_script(tmp_path)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "XDG_DATA_HOME": str(home / "share")}
    done = subprocess.run(
        [str(script), "desktop", "install"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    # asked of the login shell itself: ~/.profile adds the directory now that it exists
    assert "puts " in done.stdout and "runs after you log in again" in done.stdout, done.stdout
    assert os.readlink(home / ".local" / "bin" / "vramscope") == str(script)
    fresh = ["env", "-i", f"HOME={home}", "bash", "-lc"]
    out = subprocess.run(fresh + ["vramscope --version"], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == f"vramscope {__version__}", out.stderr
    status = subprocess.run(fresh + ["vramscope status --demo"], capture_output=True, text=True, timeout=120)
    assert status.returncode == 0 and "GPU 0" in status.stdout, status.stderr
    gone = subprocess.run(
        [str(script), "desktop", "uninstall"], env=env, capture_output=True, text=True, timeout=120
    )
    assert gone.returncode == 0 and not (home / ".local" / "bin" / "vramscope").exists()


def test_someone_elses_file_is_left_alone(tmp_path):
    own = tmp_path / ".local" / "bin" / "vramscope"
    own.parent.mkdir(parents=True)
    own.write_text("#!/bin/sh\necho mine\n")
    said = launcher.install_launcher(_installed_script(tmp_path / "x"), env={"HOME": str(tmp_path)})
    assert "left as it is" in said and own.read_text().endswith("echo mine\n")
    assert launcher.uninstall_launcher(env={"HOME": str(tmp_path)}) is None and own.exists()


# Debian's /root/.profile: bash's login shell reads it, and it never adds ~/.local/bin
ROOT_PROFILE = """if [ "$BASH" ]; then
  if [ -f ~/.bashrc ]; then
    . ~/.bashrc
  fi
fi
mesg n 2> /dev/null || true
"""


def _fresh_login(home: pathlib.Path, command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["env", "-i", f"HOME={home}", launcher.login_path.login_shell(), "-lc", command],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
@pytest.mark.skipif(
    os.path.basename(launcher.login_path.login_shell()) not in launcher.login_path.SHELLS,
    reason="the login shell is not a Bourne shell",
)
def test_a_login_file_that_never_adds_the_directory_is_said_and_mended_on_request(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    profile = launcher.login_path.login_file(home)
    profile.write_text(ROOT_PROFILE)
    script = _installed_script(tmp_path)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "XDG_DATA_HOME": str(home / "share")}

    def install(*more):
        return subprocess.run(
            [str(script), "desktop", "install", *more], env=env, capture_output=True, text=True, timeout=120
        )

    said = install()
    assert said.returncode == 0, said.stderr
    assert "does not put" in said.stdout and "--add-to-path" in said.stdout, said.stdout
    assert "log in again" not in said.stdout  # no promise that would not come true
    assert _fresh_login(home, "command -v vramscope").stdout.strip() == ""
    added = install("--add-to-path")
    assert added.returncode == 0 and f"added a line to {profile}" in added.stdout, added.stdout
    assert _fresh_login(home, "vramscope --version").stdout.strip() == f"vramscope {__version__}"
    again = install("--add-to-path")
    assert "already in" in again.stdout or "puts " in again.stdout, again.stdout
    assert profile.read_text().count(launcher.login_path.MARK) == 1
    assert profile.read_text().startswith(ROOT_PROFILE)  # the user's lines kept as they were


def test_bash_adds_the_line_to_the_login_file_it_reads(tmp_path):
    assert launcher.login_path.login_file(tmp_path, "/bin/bash") == tmp_path / ".profile"
    (tmp_path / ".bash_profile").write_text("")
    assert launcher.login_path.login_file(tmp_path, "/bin/bash") == tmp_path / ".bash_profile"
    assert launcher.login_path.login_file(tmp_path, "/usr/bin/zsh") == tmp_path / ".zprofile"
    assert launcher.login_path.login_file(tmp_path, "/usr/bin/fish") is None
    assert launcher.login_path.login_path(tmp_path, "/usr/bin/fish") is None


def test_the_message_says_what_to_do_when_the_directory_is_not_on_path(tmp_path):
    (tmp_path / ".local" / "bin").mkdir(parents=True)
    said = launcher.install_launcher(
        _installed_script(tmp_path / "x"), env={"HOME": str(tmp_path), "PATH": "/usr/bin"}
    )
    assert 'export PATH="$HOME/.local/bin:$PATH"' in said
    on = launcher.install_launcher(
        _installed_script(tmp_path / "y"), env={"HOME": str(tmp_path), "PATH": f"{tmp_path}/.local/bin"}
    )
    assert "runs from any shell" in on
    assert os.readlink(tmp_path / ".local" / "bin" / "vramscope").endswith("y/venv/bin/vramscope")
