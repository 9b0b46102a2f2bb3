"""The build and the `libception` command themselves: installing under a
prefix and DESTDIR gives a self-contained tree, and the dispatcher answers
wrong input with a one-line error."""
import os
import subprocess
import sys

from conftest import BIN, ROOT


def test_install_under_destdir_is_self_contained(tmp_path):
    dest = tmp_path / "dest"
    subprocess.run(["make", "-s", "-C", ROOT, "install", "PREFIX=/opt/lc", f"DESTDIR={dest}"],
                   check=True, stdout=subprocess.DEVNULL)
    prefix = dest / "opt" / "lc"
    launcher = prefix / "bin" / "libception"
    assert os.access(launcher, os.X_OK)
    harness = prefix / "share" / "libception" / "harness"
    # A real copy, not a link back into the source tree.
    assert harness.is_dir() and not harness.is_symlink()
    assert not list(harness.rglob("__pycache__"))
    out = subprocess.run([sys.executable, str(launcher), "--help"],
                         capture_output=True, text=True)
    assert out.returncode in (0, 2)
    assert "COMMAND" in out.stdout


def test_unknown_command_is_one_line_error():
    out = subprocess.run([os.path.join(BIN, "libception"), "frobnicate"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith('libception: unknown command "frobnicate"')


def test_no_command_prints_usage_and_fails():
    out = subprocess.run([os.path.join(BIN, "libception")], capture_output=True, text=True)
    assert out.returncode == 2
    assert "usage: libception" in out.stdout + out.stderr
