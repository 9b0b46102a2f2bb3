"""Issue 2, "What it must show" item 1, in one place: real programs and
real servers give byte-identical results with and without libception.so,
with the daemon up, absent, and SIGKILLed halfway.

    programs: cat, cp, dd, sha256sum, diff -r, tar c, a Python reader
    servers:  nginx sendfile on, nginx sendfile off, lighttpd,
              Apache (mpm event, EnableSendfile On)
    daemon:   up | absent | killed (SIGKILL while the program is mid-way
              through a large cold file)

Every run starts from cold files (POSIX_FADV_DONTNEED), so the library's
miss path really asks the daemon.  A program's outcome is its exit status,
stdout, stderr and the bytes of any file it writes, compared with a plain
run of the same command on the same files.  Servers are judged by the
bytes of whole-file and Range responses, compared with the files.

"Halfway" must be a fact, not a race the program may win, so:
  * programs read from an hddsim mount of the same files (reads take a
    modelled disk's time, never less on a loaded machine); the daemon is
    killed once its statistics show it served the program, and the test
    checks the program was still running after the kill;
  * servers stream a large file to a client with a small receive buffer
    that stops reading after 1 MiB, so the server is stuck mid-file when
    the daemon is killed; the file's cache is then dropped, so the rest
    is read with the daemon dead.
With the daemon up the test also requires that the daemon saw requests,
and with it absent that the library counted calls, so no case can pass
with an inert library.
"""
import http.client
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import LIBCEPTION_SO
from fixtures_daemon import Daemon
from fixtures_preload import debug_counts, drop_cache, plain_env, write_file
from libception import hddsim, servers

MiB = 1 << 20
BIG = 40 * MiB          # the large cold file every program goes through
STATES = ["up", "absent", "killed"]
MODE = "prefetch+serialize"

# ---- the data ----------------------------------------------------------------


def world_reachable(path):
    """Servers' workers (www-data) must be able to walk down to path."""
    os.chmod(path, 0o755)
    for parent in path.parents:
        st = os.stat(parent)
        if parent != parent.parent and not st.st_mode & 0o001:
            os.chmod(parent, st.st_mode | 0o011)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """big (40 MiB), odd (65537 B) and two trees for diff -r and tar: tree2
    is tree with its big file changed 100 bytes before the end (diff reads
    both nearly whole), one small file missing and a few lines of a text
    file changed (diff prints them); the other files are identical, so a
    byte changed on one side only would show as a difference."""
    d = tmp_path_factory.mktemp("matrix-data")
    world_reachable(d)
    write_file(d / "big", BIG, seed=1)
    write_file(d / "odd", 65537, seed=2)
    (d / "tree" / "sub").mkdir(parents=True)
    for rel, size, seed in (("a", 0, 3), ("b", 4097, 4), ("sub/c", 1, 5),
                            ("sub/video", 24 * MiB + 11, 6), ("sub/d", 300000, 7),
                            ("sub/same", 8 * MiB + 3, 8)):
        write_file(d / "tree" / rel, size, seed=seed)
    lines = [b"line %d of a text file diff prints in part\n" % i for i in range(60000)]
    (d / "tree" / "notes.txt").write_bytes(b"".join(lines))
    shutil.copytree(d / "tree", d / "tree2")
    for i in range(0, len(lines), 7919):
        lines[i] = b"changed " + lines[i]
    (d / "tree2" / "notes.txt").write_bytes(b"".join(lines))
    with open(d / "tree2" / "sub" / "video", "r+b") as f:
        f.seek(24 * MiB + 11 - 100)
        f.write(b"changed")
    os.unlink(d / "tree2" / "sub" / "c")
    for root, _, names in os.walk(d):
        for n in names:
            os.chmod(os.path.join(root, n), 0o644)
            drop_cache(os.path.join(root, n))
    return d


@pytest.fixture(scope="module")
def slow_data(data, tmp_path_factory):
    """The same files through hddsim (a modelled WD Red), so a program
    takes long enough on the large file for the daemon to die halfway."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse")
    m = hddsim.Mount(tmp_path_factory.mktemp("matrix-mnt"), library=str(data))
    try:
        yield m
    finally:
        m.unmount()


def cold(root):
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x != ".hddsim"]
        for n in names:
            drop_cache(os.path.join(dirpath, n))


# ---- programs -----------------------------------------------------------------

# Streams the files to stdout through buffered reads, readinto and pread,
# so a changed byte anywhere shows in the output.
PY_READER = r'''
import os, sys
out = sys.stdout.buffer
for p in sys.argv[1:]:
    with open(p, "rb") as f:
        out.write(f.read(100000))
        buf = bytearray(70001)
        while (n := f.readinto(buf)):
            out.write(buf[:n])
    fd = os.open(p, os.O_RDONLY)
    off = 0
    while (b := os.pread(fd, 123457, off)):
        out.write(b)
        off += len(b)
    os.close(fd)
'''

# name -> (argv run in the data directory, output files it writes); paths
# are relative so the same command reads the disk or the hddsim mount.
PROGRAMS = {
    "cat": lambda out: (["cat", "big", "odd"], []),
    "cp": lambda out: (["cp", "big", out], [out]),
    "dd": lambda out: (["dd", "if=big", "bs=64k", "skip=3", "status=none"], []),
    "sha256sum": lambda out: (["sha256sum", "big", "odd", "tree/sub/video"], []),
    "diff-r": lambda out: (["diff", "-r", "tree", "tree2"], []),
    "tar-c": lambda out: (["tar", "cf", "-", "--sort=name", "--owner=0", "--group=0",
                           "--numeric-owner", "tree"], []),
    "python-reader": lambda out: ([sys.executable, "-c", PY_READER, "big", "odd"], []),
}


def same(have, want, what):
    """Bytes equal; else fail naming the first differing byte (pytest's own
    explanation of two 40 MiB strings would take minutes)."""
    if have == want:
        return
    if have is None or want is None:
        pytest.fail(f"{what}: {'missing' if have is None else 'unexpected'}")
    i = next((k for k, (a, b) in enumerate(zip(have, want)) if a != b), min(len(have), len(want)))
    pytest.fail(f"{what}: {len(have)} bytes, expected {len(want)}; first difference at byte {i}: "
                f"{have[i:i + 16]!r} != {want[i:i + 16]!r}")


def outcome(cmd, outputs, cwd, env, during=None):
    """Run cmd in cwd on cold files; (exit status, stdout, stderr, bytes of
    each output file).  stdout is a pipe, as in `cat f | ...` (to a regular
    file cat would copy with copy_file_range; cp covers that), drained by
    threads so the program never waits for the test.  during(proc) runs
    while the program does."""
    for o in outputs:
        if os.path.exists(o):
            os.unlink(o)
    cold(cwd)
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    got = {}
    drains = [threading.Thread(target=lambda k, f: got.__setitem__(k, f.read()), args=(k, f))
              for k, f in (("out", p.stdout), ("err", p.stderr))]
    for t in drains:
        t.start()
    try:
        if during:
            during(p)
        p.wait(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for t in drains:
            t.join()
        p.stdout.close()
        p.stderr.close()
    read = lambda f: open(f, "rb").read() if os.path.exists(f) else None
    return p.returncode, got["out"], got["err"], [read(o) for o in outputs]


def daemon_requests(d):
    return sum(dev["requests"] for dev in d.stats()["devices"])


class LibraryInert(AssertionError):
    """The library did not take part (no daemon request, no call counted):
    the bytes matched, but the case proves nothing."""


# Programs whose reads the library cannot see today.  Their bytes are still
# compared (a mismatch fails as usual); only the proof that the library
# took part is expected to fail, strictly: once the library covers them
# the test fails with XPASS and the entry must go.
UNCOVERED = {
    "sha256sum": "sha256sum reads through stdio (fopen + fread_unlocked), whose internal "
                 "read() is not an interposable symbol: libception.so sees no call",
}


def kill_when_serving(d, seen):
    """during(): SIGKILL the daemon once it has served the program, and
    record whether the program was still running after the kill, i.e.
    whether the kill really came halfway."""
    def during(p):
        deadline = time.monotonic() + 60
        while daemon_requests(d) < 1:
            if p.poll() is not None:
                seen["inert"] = True  # finished without ever asking
                return
            assert time.monotonic() < deadline, "the program neither asked nor finished"
            time.sleep(0.002)
        d.kill()
        seen["halfway"] = p.poll() is None
    return during


def cases():
    for prog in PROGRAMS:
        for state in STATES:
            marks = [pytest.mark.xfail(raises=LibraryInert, strict=True, reason=UNCOVERED[prog])
                     ] if prog in UNCOVERED else []
            yield pytest.param(prog, state, marks=marks, id=f"{prog}-{state}")


@pytest.mark.parametrize("prog,state", list(cases()))
def test_program(preload_built, data, request, make_daemon, tmp_path, prog, state):
    # killed: hddsim keeps the program busy long enough to die under it
    cwd = str(request.getfixturevalue("slow_data").path if state == "killed" else data)
    cmd, outputs = PROGRAMS[prog](str(tmp_path / "out"))
    plain = outcome(cmd, outputs, cwd, plain_env())
    d = make_daemon(start=state != "absent")
    dbg = tmp_path / "debug.log"
    env = d.env(LIBCEPTION_MODE=MODE, LIBCEPTION_TIMEOUT_MS=5000)
    during, seen = None, {}
    if state == "absent":
        env["LIBCEPTION_DEBUG"] = str(dbg)
    elif state == "killed":
        during = kill_when_serving(d, seen)
    lib = outcome(cmd, outputs, cwd, env, during)

    # the command itself works (diff -r exits 1: the trees differ)
    assert plain[0] in (0, 1) and (plain[1] or any(plain[3])), plain[2]
    assert lib[0] == plain[0], f"exit status {lib[0]} != {plain[0]}: {lib[2]!r}"
    same(lib[2], plain[2], "stderr")
    same(lib[1], plain[1], "stdout")
    for name, have, want in zip(outputs, lib[3], plain[3]):
        same(have, want, name)
    if state == "up" and daemon_requests(d) < 1:
        raise LibraryInert("the library never asked the daemon")
    if state == "absent" and not sum(c for c, _ in debug_counts(dbg).values()):
        raise LibraryInert("the library counted no calls")
    if state == "killed":
        if seen.get("inert"):
            raise LibraryInert("the program finished without asking the daemon")
        assert seen["halfway"], "the program finished before the daemon was killed"


# ---- servers ------------------------------------------------------------------

SERVERS = {
    "nginx-sendfile-on": ("nginx", {"sendfile": True}),
    "nginx-sendfile-off": ("nginx", {"sendfile": False}),
    "lighttpd": ("lighttpd", {}),
    "apache-sendfile-on": ("apache", {"mpm": "event", "sendfile": True}),
}
RANGES = [(0, 0), (4095, 4096 + 70000), (BIG - 3 * MiB - 5, BIG - 1)]


@pytest.fixture(scope="module")
def docroot(data, tmp_path_factory):
    """The large and a small file, root-owned and world-readable: workers
    running as www-data may not cachestat them, so they must ask the
    daemon.  (Its own directory: hddsim serves data as mounted.)"""
    root = tmp_path_factory.mktemp("matrix-docroot")
    world_reachable(root)
    files = {}
    for name in ("big", "odd"):
        os.link(data / name, root / name)
        files[name] = (root / name).read_bytes()
    return root, files


def loaded_in(pids):
    """How many of pids have libception.so mapped."""
    n = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/maps") as f:
                n += LIBCEPTION_SO in f.read()
        except OSError:
            pass
    return n


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect(port):
    """A client socket with a small receive buffer (set before connecting,
    so the window stays small): a reader that pauses stalls the server."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.settimeout(60)
    s.connect(("127.0.0.1", port))
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.sock = s
    return c


def get(port, name, rng=None, midway=None):
    """GET /name (Range bytes=a-b if rng): (status, body).  midway(), if
    given, runs after the first MiB of the body has arrived."""
    c = connect(port)
    try:
        c.request("GET", "/" + name, headers={"Range": "bytes=%d-%d" % rng} if rng else {})
        r = c.getresponse()
        body = b""
        if midway:
            body = r.read(MiB)
            midway()
        return r.status, body + r.read()
    finally:
        c.close()


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("server", list(SERVERS))
def test_server(preload_built, docroot, make_daemon, scratch, server, state):
    root, files = docroot
    name, tunables = SERVERS[server]
    d = make_daemon(start=state != "absent")
    port = free_port()
    s = servers.make_server(name, scratch / "srv", str(root), port, tunables)
    cold(root)
    got = {}
    try:
        s.start(env=servers.libception_env(LIBCEPTION_SO, d.path, MODE))
        # master and workers: a server that dropped LD_PRELOAD proves nothing
        pids = s.pids()
        assert pids and loaded_in(pids) == len(pids), "libception.so is not loaded in the server"
        if state == "killed":
            def kill():
                assert daemon_requests(d) >= 1, "the server never asked the daemon"
                d.kill()
                cold(root)  # the rest misses, meets the dead daemon, reads plainly
            got["big halfway"] = get(port, "big", midway=kill), (200, files["big"])
            assert s.proc.poll() is None, s.log_tail()
        cold(root)
        for fname, data in files.items():
            got[fname] = get(port, fname), (200, data)
        cold(root)
        for a, b in RANGES:
            got[f"big {a}-{b}"] = get(port, "big", (a, b)), (206, files["big"][a:b + 1])
        assert s.proc.poll() is None, s.log_tail()
    finally:
        s.stop()
    for what, (have, want) in got.items():
        assert have[0] == want[0], f"{server} {state} {what}: status {have[0]}"
        same(have[1], want[1], f"{server} {state} {what}")
    if state == "up":
        assert daemon_requests(d) >= 1, "the server's workers never asked the daemon"
