"""Fixtures for libception.so's tests: the helper programs, test files
(cold or cached), running a command with and without the library, and a
scripted stand-in for receptiond that records what the library asks and
can misbehave on purpose (slow, closing, wrong version, garbage)."""
import array
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import threading

import pytest

from conftest import LIBCEPTION_SO, ROOT
from fixtures_common import drop_cache

PRELOAD_DIR = os.path.join(ROOT, "preload")
T_CALLS = os.path.join(PRELOAD_DIR, "tests", "t_calls")
T_FORKTHREADS = os.path.join(PRELOAD_DIR, "tests", "t_forkthreads")

# common/protocol.h
MAGIC, VERSION = 0x3150434C, 2
MSG_ENSURE, MSG_REPORT = 1, 2
ENSURE = struct.Struct("=IHHQ QQ II Q")
ENSURE_REPLY = struct.Struct("=IHHQ iI QQQ")
REPORT_CALLS = 7
REPORT_BUCKETS = 28
REPORT_DEVS = 8  # + "other"; each entry: dev, calls, hits, hit_bytes
REPORT = struct.Struct("=IHHQ II" + "Q" * (REPORT_CALLS * (3 + REPORT_BUCKETS) + 4 * (REPORT_DEVS + 1)))
CALLS = ["read", "pread", "readv", "preadv", "sendfile", "copy_file_range", "splice"]
MODES = ["prefetch+serialize", "serialize", "prefetch", "track", "off"]

# Sizes around page and chunk boundaries, and one past the 2 MiB prefetch.
SIZES = {"empty": 0, "one": 1, "page_minus": 4095, "page": 4096, "odd": 65537,
         "big": 3 * 1024 * 1024 + 123}


@pytest.fixture(scope="session")
def preload_built():
    """libception.so and the helper programs, built (cheap when up to date)."""
    # install too: the tests load build/lib/libception.so
    subprocess.run(["make", "-s", "-C", PRELOAD_DIR, "all", "install",
                    "PREFIX=" + os.path.join(ROOT, "build"), "DESTDIR="],
                   check=True, stdout=subprocess.DEVNULL)
    return LIBCEPTION_SO


def write_file(path, size, seed=0):
    """Deterministic pseudo-random bytes, written through to disk, then
    dropped from the page cache: a cold file."""
    rnd = __import__("random").Random(seed)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 1 << 20)
            f.write(rnd.randbytes(n))
            left -= n
        f.flush()
        os.fsync(f.fileno())
    drop_cache(path)
    return str(path)


@pytest.fixture(scope="module")
def preload_files(tmp_path_factory):
    """One file per entry of SIZES (plus a subdirectory tree for diff and
    tar), world-readable."""
    d = tmp_path_factory.mktemp("preload-files")
    os.chmod(d, 0o755)
    for parent in d.parents:  # www-data must reach them (as in conftest's scratch)
        st = os.stat(parent)
        if parent != parent.parent and not st.st_mode & 0o001:
            os.chmod(parent, st.st_mode | 0o011)
    files = {name: write_file(d / name, size, seed=i) for i, (name, size) in enumerate(SIZES.items())}
    tree = d / "tree"
    (tree / "sub").mkdir(parents=True)
    for i, size in enumerate([0, 10, 5000, 300000, 2 * 1024 * 1024 + 7]):
        write_file(tree / ("sub" if i % 2 else ".") / f"f{i}", size, seed=100 + i)
    files["tree"] = str(tree)
    files["dir"] = str(d)
    return files


def lib_env(mode, socket_path="/nonexistent/lc-preload.sock", debug=None, **extra):
    env = dict(os.environ)
    env["LD_PRELOAD"] = LIBCEPTION_SO
    env["LIBCEPTION_MODE"] = mode
    env["LIBCEPTION_SOCKET"] = socket_path
    env.pop("LIBCEPTION_DEBUG", None)
    if debug:
        env["LIBCEPTION_DEBUG"] = str(debug)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def plain_env():
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("LIBCEPTION_") or k == "LD_PRELOAD":
            del env[k]
    return env


def run(cmd, env, timeout=120, **kw):
    """Run cmd; the whole outcome (stdout bytes, stderr, exit status)."""
    p = subprocess.run(cmd, env=env, capture_output=True, timeout=timeout, **kw)
    return p.returncode, p.stdout, p.stderr


def debug_counts(path):
    """From a LIBCEPTION_DEBUG file: {call: (calls, hits)} summed over the
    processes' exit lines."""
    out = {}
    try:
        text = open(path).read()
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        if "exit: calls/hits" not in line:
            continue
        for item in line.split("exit: calls/hits", 1)[1].split():
            if "=" in item:
                name, v = item.split("=")
                c, h = (int(x) for x in v.split("/"))
                pc, ph = out.get(name, (0, 0))
                out[name] = (pc + c, ph + h)
    return out


class FakeDaemon:
    """A receptiond stand-in on its own socket, in a thread of the test.

    behaviour: "ok" (read the range, enlarged to the prefetch size unless
    LC_F_NO_PREFETCH, and answer OK with what it read as the resident
    window), "slow" (never answer), "close" (hang up
    on every request), "badversion", "garbage" (a short reply), "stale"
    (first an answer with a wrong id, then the right one).
    Records each ENSURE as a dict, with the inode of the passed fd."""

    def __init__(self, path, behaviour="ok"):
        self.path = path
        self.behaviour = behaviour
        self.requests = []
        self.reports = []
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.bind(path)
        os.chmod(path, 0o777)  # workers running as www-data connect too
        self.sock.listen(64)
        self.pids = set()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self):
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                c, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            cred = c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            with self.lock:
                self.pids.add(struct.unpack("3i", cred)[0])
            t = threading.Thread(target=self._serve, args=(c,), daemon=True)
            t.start()

    def _serve(self, c):
        c.settimeout(0.1)
        held = []
        try:
            while not self.stop.is_set():
                try:
                    msg, anc, _, _ = c.recvmsg(8192, socket.CMSG_SPACE(16))
                except socket.timeout:
                    continue
                except OSError:
                    return
                if not msg:
                    return
                fds = array.array("i")
                for level, typ, data in anc:
                    if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                        fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
                try:
                    if not self._handle(c, msg, list(fds), held):
                        return
                finally:
                    for fd in fds:
                        os.close(fd)
        finally:
            c.close()

    def _handle(self, c, msg, fds, held):
        magic, ver, typ, rid = struct.unpack_from("=IHHQ", msg)
        if typ == MSG_REPORT:
            with self.lock:
                self.reports.append(REPORT.unpack(msg) if len(msg) == REPORT.size else None)
            return True
        _, _, _, _, off, length, flags, call, prefetch = ENSURE.unpack(msg)
        st = os.fstat(fds[0]) if fds else None
        with self.lock:
            self.requests.append(dict(offset=off, length=length, flags=flags, call=call,
                                      prefetch=prefetch, ino=st.st_ino if st else None,
                                      nfds=len(fds), size=len(msg)))
        b = self.behaviour
        if b == "slow":
            held.append(rid)
            return True
        if b == "close":
            return False  # hang up
        if b == "garbage":
            c.send(b"\x01\x02\x03")
            return True
        if b == "badversion":
            c.send(ENSURE_REPLY.pack(MAGIC, VERSION + 1, MSG_ENSURE, rid, 1, 0, 0, 0, 0))
            return True
        # "ok"/"stale": enlarge to the prefetch size and read with
        # positional reads only, like the real daemon
        want = length if flags & 1 else max(length, prefetch or (2 << 20))
        done = 0
        while fds and done < want:
            got = os.pread(fds[0], min(1 << 20, want - done), off + done)
            if not got:
                break
            done += len(got)
        if b == "stale":
            c.send(ENSURE_REPLY.pack(MAGIC, VERSION, MSG_ENSURE, rid + 1000, 0, 0, 0, 0, 0))
        c.send(ENSURE_REPLY.pack(MAGIC, VERSION, MSG_ENSURE, rid, 0, 0, off, done, done))
        return True

    def close(self):
        self.stop.set()
        self.sock.close()
        self.threads[0].join(timeout=5)


@pytest.fixture
def fake_daemon():
    """Factory: fake_daemon(behaviour) -> a FakeDaemon on a fresh socket;
    all are stopped after the test."""
    d = tempfile.mkdtemp(prefix="lc-preload-")
    os.chmod(d, 0o755)
    made = []

    def make(behaviour="ok"):
        fd = FakeDaemon(os.path.join(d, f"fake{len(made)}.sock"), behaviour)
        made.append(fd)
        return fd
    yield make
    for f in made:
        f.close()
    shutil.rmtree(d, ignore_errors=True)
