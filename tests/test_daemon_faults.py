"""Faults: the daemon absent, killed, stopped (slow) or restarted while a
program runs under libception.so.  The program must always finish with
identical output; after a restart prefetching resumes."""
import hashlib
import signal
import subprocess
import sys
import time

import pytest

from fixtures_common import drop_cache, reader_cmd, sha256_of
from fixtures_daemon import Daemon, make_cold_file

MiB = 1 << 20

# Reads the files over and over (cold each time) until STOP exists;
# prints the number of rounds and whether every round matched.
LOOPER = r"""
import hashlib, os, sys, time
stop, files = sys.argv[1], sys.argv[2:]
want = {}
rounds, bad = 0, 0
while not os.path.exists(stop):
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        h = hashlib.sha256()
        while True:
            b = os.read(fd, 65536)
            if not b:
                break
            h.update(b)
        os.close(fd)
        if want.setdefault(f, h.hexdigest()) != h.hexdigest():
            bad += 1
    rounds += 1
    time.sleep(0.05)
print(rounds, "ok" if bad == 0 else "BAD", flush=True)
"""


def run_reader(env, path, between):
    """Run READER on path; call between() after its first read."""
    p = subprocess.Popen(reader_cmd(path, "random", "pause"), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert p.stdout.readline().strip() == "first"
        between()
        out, _ = p.communicate("go\n", timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, out.strip()


@pytest.fixture
def cold(scratch):
    f = make_cold_file(str(scratch / "cold"), 24 * MiB)
    want = sha256_of(f)
    drop_cache(f)
    return f, want


def test_daemon_absent(need_library, daemon_dir, cold):
    f, want = cold
    d = Daemon(daemon_dir)            # never started: nothing listens
    rc, out = run_reader(d.env(), f, lambda: None)
    assert (rc, out) == (0, want)
    drop_cache(f)
    r = subprocess.run(["cat", f], capture_output=True, env=d.env(), timeout=120)
    assert r.returncode == 0 and hashlib.sha256(r.stdout).hexdigest() == want


def test_daemon_killed_mid_run(need_library, receptiond, cold):
    f, want = cold

    def kill():
        assert receptiond.device()["reads"] >= 1     # it was serving us
        receptiond.proc.kill()
        receptiond.proc.wait(timeout=20)
    rc, out = run_reader(receptiond.env(), f, kill)
    assert (rc, out) == (0, want)


def test_daemon_stopped_is_a_slow_daemon(need_library, receptiond, cold):
    """A daemon that does not answer within LIBCEPTION_TIMEOUT_MS: the
    program goes on without it."""
    f, want = cold
    try:
        rc, out = run_reader(receptiond.env(LIBCEPTION_TIMEOUT_MS=200), f,
                             lambda: receptiond.signal(signal.SIGSTOP))
    finally:
        receptiond.signal(signal.SIGCONT)
    assert (rc, out) == (0, want)
    assert receptiond.alive()


def test_cat_with_daemon_killed_halfway(need_library, receptiond, scratch):
    f = make_cold_file(str(scratch / "big"), 128 * MiB, seed=5)
    want = sha256_of(f)
    drop_cache(f)
    out = str(scratch / "copy")
    with open(out, "wb") as fo:
        p = subprocess.Popen(["cat", f], stdout=fo, env=receptiond.env())
        deadline = time.monotonic() + 60
        while p.poll() is None and time.monotonic() < deadline:
            if receptiond.stats()["devices"]:
                break
            time.sleep(0.005)
        receptiond.proc.kill()
        assert p.wait(timeout=120) == 0
    assert sha256_of(out) == want


def test_restarted_daemon_is_used_again(need_library, daemon_dir, scratch):
    files = [make_cold_file(str(scratch / f"r{i}"), 4 * MiB, seed=i) for i in range(2)]
    stop = str(scratch / "stop")
    first = Daemon(daemon_dir).start()
    p = subprocess.Popen([sys.executable, "-X", "faulthandler", "-c", LOOPER, stop] + files,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=first.env())
    second = None
    try:
        deadline = time.monotonic() + 60
        while not first.stats()["devices"] or first.device()["reads"] < 2:
            assert time.monotonic() < deadline, "the program never used the first daemon"
            time.sleep(0.05)
        first.kill()
        second = Daemon(daemon_dir).start()
        # The library backs off after losing the daemon, then reconnects.
        deadline = time.monotonic() + 60
        while not second.stats()["devices"] or second.device()["reads"] < 2:
            assert p.poll() is None, f"the program died: {p.returncode} {p.stderr.read()}"
            assert time.monotonic() < deadline, "the program never came back to the daemon"
            time.sleep(0.05)
        second_read = second.device()["bytes_read"]
        open(stop, "w").close()
        out, err = p.communicate(timeout=120)
    finally:
        open(stop, "w").close()
        if p.poll() is None:
            p.kill()
            p.wait()
        first.kill()
        if second:
            second.kill()
    rounds, verdict = out.split()
    assert p.returncode == 0 and verdict == "ok" and int(rounds) >= 2, err
    assert second_read > 0
