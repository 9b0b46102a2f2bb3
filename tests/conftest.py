"""Shared pytest setup: where the built tree is, and the fixtures every
component's tests use.  Component fixtures live in tests/fixtures_*.py and
are loaded through pytest_plugins below."""
import os
import signal
import sys

import pytest

# Started in the background without job control (nohup, `cmd &` in a
# script), the suite inherits SIGINT ignored, and so would every program it
# starts: libfuse and Python then keep it ignored, and the tests of what
# SIGINT does would fail for a reason outside the code.  A handled signal
# is reset to the default in exec'd children.  A runner may also start the
# suite with SIGINT blocked, a mask every child inherits: the signal then
# stays pending and a run meant to stop goes on to its end.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
BIN = os.path.join(BUILD, "bin")
LIB = os.path.join(BUILD, "lib")
LIBCEPTION_SO = os.path.join(LIB, "libception.so")

# The harness package (servers, cgroups, hddsim and daemon control) is
# what the tests drive real programs with.
sys.path.insert(0, os.path.join(ROOT, "harness"))

pytest_plugins = [
    m[:-3] for m in sorted(os.listdir(os.path.dirname(__file__)))
    if m.startswith("fixtures_") and m.endswith(".py")
]


def bin_path(name):
    return os.path.join(BIN, name)


@pytest.fixture
def scratch(tmp_path):
    """A scratch directory that www-data can enter and read (servers drop
    privileges)."""
    os.chmod(tmp_path, 0o755)
    p = tmp_path
    while p != p.parent:
        p = p.parent
        if p == p.parent:
            break
        st = os.stat(p)
        if not st.st_mode & 0o001:
            os.chmod(p, st.st_mode | 0o011)
    return tmp_path
