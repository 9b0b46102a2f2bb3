"""Fixtures for receptiond's tests: a daemon of the test's own on a short
private socket path, cold files, and a raw protocol client."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import BIN, LIBCEPTION_SO
from fixtures_common import cached_pages, drop_cache  # noqa: F401 (tests import drop_cache from here too)
from libception import daemon as lcd

RECEPTIOND = os.path.join(BIN, "receptiond")


def make_cold_file(path, size, seed=1):
    """Write size bytes (deterministic per seed), flush them to disk and
    drop them from the page cache, so the next read goes to the device."""
    chunk = (seed.to_bytes(4, "little") * 16384)
    with open(path, "wb") as f:
        left = size
        i = 0
        while left > 0:
            block = (i.to_bytes(8, "little") + chunk)[: min(left, len(chunk) + 8)]
            f.write(block)
            left -= len(block)
            i += 1
        f.flush()
        os.fsync(f.fileno())
    # DONTNEED skips a page something else holds for a moment (a per-CPU
    # LRU batch, a busy writeback), and the test then measures a file that
    # is partly cached.  So the file is cold when it comes back, or this
    # says why not.
    for _ in range(20):
        drop_cache(path)
        if cached_pages(path) == 0:
            return path
        time.sleep(0.05)
    raise RuntimeError(f"{path}: {cached_pages(path)} pages stay cached after DONTNEED")


class Daemon:
    """A foreground receptiond owned by one test."""

    def __init__(self, workdir, args=()):
        self.dir = workdir
        self.path = os.path.join(workdir, "rd.sock")
        self.log = os.path.join(workdir, "receptiond.log")
        self.args = list(args)
        self.proc = None

    def start(self, extra=(), preexec=None):
        """preexec: run in the child before exec (e.g. joining a memory group)."""
        # --no-config: a test's daemon is its flags, whatever /etc/libception holds
        cmd = [RECEPTIOND, "--no-config", "--foreground", "--socket", self.path, "--log", self.log]
        args = self.args + list(extra)
        if not any(a == "--access" or a.startswith("--access=") for a in args):
            # Tests' clients include www-data workers; the default
            # access is tested in test_daemon_access.py.
            args.append("--access=all")
        self.proc = subprocess.Popen(cmd + args, stdin=subprocess.DEVNULL,
                                     preexec_fn=preexec)
        deadline = time.monotonic() + 20
        while not lcd.is_listening(self.path):
            if self.proc.poll() is not None:
                raise RuntimeError(f"receptiond exited with {self.proc.returncode}: {self.log_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError("receptiond did not listen within 20 s")
            time.sleep(0.01)
        return self

    def stats(self):
        return lcd.stats(self.path)

    def device(self, name=None, path=None):
        """The one device in the stats, or the one named, or the one path is on
        (a Python reader may also miss on its own modules, on the root disk)."""
        devs = self.stats()["devices"]
        if path is not None:
            st_dev = os.stat(path).st_dev
            disk = f"{os.major(st_dev)}:{os.minor(st_dev)}"
            return next(d for d in devs if d["disk"] == disk)
        if name is None:
            assert len(devs) == 1, devs
            return devs[0]
        return next(d for d in devs if d["name"] == name)

    def connect(self):
        return lcd.connect(self.path)

    def log_text(self):
        try:
            with open(self.log) as f:
                return f.read()
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        self.proc.send_signal(sig)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
        if self.proc:
            self.proc.wait(timeout=20)

    def env(self, **extra):
        """Environment for a program under libception talking to this daemon."""
        env = dict(os.environ)
        env["LD_PRELOAD"] = LIBCEPTION_SO
        env["LIBCEPTION_SOCKET"] = self.path
        env.update({k: str(v) for k, v in extra.items()})
        return env


@pytest.fixture
def daemon_dir():
    """A short, world-enterable directory (Unix socket paths are short, and
    www-data workers must reach the socket)."""
    d = tempfile.mkdtemp(prefix="lc-daemon-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def receptiond(daemon_dir):
    """A running foreground receptiond with the default settings; killed
    after the test even if it fails."""
    d = Daemon(daemon_dir).start()
    yield d
    d.kill()


@pytest.fixture
def make_daemon(daemon_dir):
    """Factory for daemons with arguments; all are killed afterwards."""
    made = []

    def make(args=(), start=True, name=None):
        sub = os.path.join(daemon_dir, name or f"d{len(made)}")
        os.makedirs(sub, exist_ok=True)
        os.chmod(sub, 0o755)
        d = Daemon(sub, args)
        made.append(d)
        return d.start() if start else d
    yield make
    for d in made:
        d.kill()


@pytest.fixture
def need_library():
    if not os.path.exists(LIBCEPTION_SO):
        pytest.skip(f"{LIBCEPTION_SO} is not built")
    return LIBCEPTION_SO
