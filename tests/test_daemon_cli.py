"""receptiond's command line and `libception run|stop|stats`: usage errors,
daemonizing with readiness, pidfile, one daemon per socket, idle timeout,
LD_PRELOAD prepending and starting/stopping the daemon."""
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import BIN, LIBCEPTION_SO
from fixtures_daemon import RECEPTIOND, drop_cache, make_cold_file
from libception import daemon as lcd

LIBCEPTION = os.path.join(BIN, "libception")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)


def wait_gone(pid, path, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            if not lcd.is_listening(path):
                return True
        time.sleep(0.05)
    return False


@pytest.fixture
def sock(daemon_dir):
    """A socket path; whatever daemon listens there at the end is stopped."""
    path = os.path.join(daemon_dir, "cli.sock")
    yield path
    if lcd.is_listening(path):
        pid = lcd.stats(path)["pid"]
        lcd.request_shutdown(path)
        if not wait_gone(pid, path):
            os.kill(pid, 9)


def test_version_and_usage_errors():
    r = run([RECEPTIOND, "--version"])
    assert r.returncode == 0 and r.stdout.startswith("receptiond ")
    for args, word in [(["--prefetch", "lots"], "--prefetch"),
                       (["--queue-depth", "0"], "--queue-depth"),
                       (["--idle-timeout", "-3"], "--idle-timeout"),
                       (["--policy", "nosuch"], "unknown"),
                       (["--bogus"], "--bogus"),
                       (["extra"], "extra")]:
        r = run([RECEPTIOND, "--foreground", "--socket", "/nonexistent/x.sock"] + args)
        assert r.returncode == 2, (args, r)
        first = r.stderr.splitlines()[0]
        assert first.startswith("receptiond: ") and word in first, (args, first)


def test_socket_that_cannot_be_created():
    r = run([RECEPTIOND, "--foreground", "--socket", "/proc/nope/x.sock"])
    assert r.returncode == 1
    assert r.stderr.startswith("receptiond: socket \"/proc/nope/x.sock\"")


def test_daemonizes_once_listening_and_stops(sock, daemon_dir):
    pidfile = os.path.join(daemon_dir, "rd.pid")
    log = os.path.join(daemon_dir, "rd.log")
    r = run([RECEPTIOND, "--socket", sock, "--pidfile", pidfile, "--log", log])
    assert r.returncode == 0, r.stderr
    # Ready means listening: no waiting needed.
    st = lcd.stats(sock)
    with open(pidfile) as f:
        assert int(f.read()) == st["pid"]
    # its own session, and not its leader (double fork: no terminal can come back)
    assert os.getsid(st["pid"]) not in (os.getsid(0), st["pid"])
    assert oct(os.stat(sock).st_mode & 0o777) == "0o666"
    # A second daemon on the same socket refuses to start.
    r2 = run([RECEPTIOND, "--socket", sock])
    assert r2.returncode == 1 and "another receptiond is listening" in r2.stderr
    r3 = run([LIBCEPTION, "stop", "--socket", sock])
    assert r3.returncode == 0, r3.stderr
    assert wait_gone(st["pid"], sock)
    assert not os.path.exists(sock) and not os.path.exists(pidfile)
    with open(log) as f:
        text = f.read()
    assert all(line.startswith("receptiond: ") for line in text.splitlines())
    assert "shutdown asked by" in text


def test_stale_socket_file_is_replaced(sock):
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind(sock)          # a socket file nobody listens on
    s.close()
    assert run([RECEPTIOND, "--socket", sock]).returncode == 0
    assert lcd.is_listening(sock)


def test_idle_timeout(sock):
    assert run([RECEPTIOND, "--socket", sock, "--idle-timeout", "1"]).returncode == 0
    pid = lcd.stats(sock)["pid"]
    assert wait_gone(pid, sock, timeout=60), "receptiond did not exit when idle"


def test_default_socket_directory_is_created(daemon_dir):
    path = os.path.join(daemon_dir, "a", "b", "rd.sock")
    assert run([RECEPTIOND, "--socket", path]).returncode == 0
    try:
        assert oct(os.stat(os.path.dirname(path)).st_mode & 0o777) == "0o755"
    finally:
        lcd.stop(path)


def test_run_prepends_preload_and_starts_the_daemon(need_library, sock, scratch):
    other = "/lib/x86_64-linux-gnu/libc.so.6"
    env = dict(os.environ, LD_PRELOAD=other)
    r = run([LIBCEPTION, "run", "--socket", sock, "--prefetch", "1M", "--",
             "sh", "-c", 'echo "$LD_PRELOAD|$LIBCEPTION_SOCKET|$LIBCEPTION_PREFETCH"'], env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"{LIBCEPTION_SO} {other}|{sock}|1M"
    # The daemon outlives the wrapper and serves the next program.
    assert lcd.is_listening(sock)
    f = make_cold_file(str(scratch / "cold"), 8 << 20)
    with open(f, "rb") as fh:
        want = fh.read()
    drop_cache(f)
    # (cat reads with read(2); sha256sum's stdio reads bypass any preload)
    r = subprocess.run([LIBCEPTION, "run", "--socket", sock, "--", "cat", f],
                       capture_output=True, timeout=60)
    assert r.returncode == 0 and r.stdout == want
    st = lcd.stats(sock)
    assert st["devices"] and st["devices"][0]["bytes_read"] > 0
    # stats, human and JSON
    h = run([LIBCEPTION, "stats", "--socket", sock])
    assert h.returncode == 0 and st["devices"][0]["name"] in h.stdout and "device" in h.stdout
    j = run([LIBCEPTION, "stats", "--socket", sock, "--json"])
    assert json.loads(j.stdout)["pid"] == st["pid"]
    # stop; stop again says nobody listens, and fails
    assert run([LIBCEPTION, "stop", "--socket", sock]).returncode == 0
    assert wait_gone(st["pid"], sock)
    again = run([LIBCEPTION, "stop", "--socket", sock])
    assert again.returncode == 1 and "no receptiond listening" in again.stderr
    s = run([LIBCEPTION, "stats", "--socket", sock])
    assert s.returncode == 1 and s.stderr.startswith("libception: stats: no receptiond")


@pytest.mark.parametrize("opts", [["--mode", "track"], ["--mode", "prefetch"], ["--no-daemon"]])
def test_run_without_a_daemon(need_library, sock, opts):
    r = run([LIBCEPTION, "run", "--socket", sock] + opts + ["--", "true"])
    assert r.returncode == 0, r.stderr
    assert not lcd.is_listening(sock)


def test_run_errors(need_library, sock):
    r = run([LIBCEPTION, "run", "--socket", sock, "--no-daemon", "--", "/nonexistent/prog"])
    assert r.returncode == 127 and r.stderr.startswith("libception: run: /nonexistent/prog")
    r = run([LIBCEPTION, "run", "--socket", sock, "--prefetch", "big", "--", "true"])
    assert r.returncode == 2 and "--prefetch" in r.stderr
    r = run([LIBCEPTION, "run", "--socket", sock, "--no-daemon"])
    assert r.returncode == 2 and "no command" in r.stderr


def test_python_start_stop_foreground(daemon_dir):
    """daemon.start/stop as the benchmark harness uses them, with the
    in_cgroup hook seeing the daemon's pid before it serves."""
    path = os.path.join(daemon_dir, "py.sock")
    seen = os.path.join(daemon_dir, "seen")

    def hook(pid):   # runs in the child before exec
        with open(seen, "w") as f:
            f.write(str(pid))
    proc = lcd.start(path, detached=False, in_cgroup=hook, args=["--prefetch", "1M"])
    try:
        with open(seen) as f:
            assert int(f.read()) == proc.pid
        st = lcd.stats(path)
        assert st["pid"] == proc.pid and st["prefetch"] == 1 << 20
        assert lcd.stop(path) is True
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_detached_daemon_lands_in_the_cgroup(daemon_dir, harness_cgroup):
    """The hook runs before the daemon forks, so the detached daemon (a
    grandchild) is in the group too, and so is the memory it reads."""
    path = os.path.join(daemon_dir, "cg.sock")
    g = harness_cgroup(256 << 20)
    pid = lcd.start(path, detached=True, in_cgroup=g.add)
    try:
        assert pid in g.pids()
    finally:
        lcd.stop(path)
