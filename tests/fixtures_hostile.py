"""Helpers for the tests of receptiond under hostile local users: running
a function as another user in a forked child, and watching the daemon's
fds, threads and memory from /proc."""
import json
import os
import socket
import threading
import traceback

import pytest

NOBODY = 65534


def run_as(uid, fn, *args, gid=None, groups=(), env=None):
    """fn(*args) in a forked child as uid (gid, supplementary groups);
    returns its (JSON-able) result, or raises with the child's traceback."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        try:
            os.setgroups(list(groups))
            os.setgid(uid if gid is None else gid)
            os.setuid(uid)
            if env is not None:
                os.environ.clear()
                os.environ.update(env)
            out = {"ok": fn(*args)}
        except BaseException:  # noqa: BLE001 - sent to the parent
            out = {"error": traceback.format_exc()}
        try:
            os.write(w, json.dumps(out).encode())
            os.close(w)
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    # Reaped in the background: a child holding a descriptor of a stopped
    # FUSE server cannot finish exiting (the close waits for FLUSH) until
    # the test resumes the server.
    threading.Thread(target=os.waitpid, args=(pid, 0), daemon=True).start()
    out = json.loads(b"".join(chunks) or b'{"error": "the child died"}')
    if "error" in out:
        raise AssertionError(f"as uid {uid}: {out['error']}")
    return out["ok"]


def refused(path):
    """True if the daemon on path closes a new connection without serving a
    STATS request (its --access refused us)."""
    from libception import daemon as lcd
    try:
        with lcd.connect(path, timeout=5) as s:
            s.send(lcd.HEADER.pack(lcd.MAGIC, lcd.VERSION, lcd.MSG_STATS, 1))
            return s.recv(4096) == b""
    except (ConnectionResetError, BrokenPipeError, PermissionError):
        return True


def proc_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def proc_threads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def proc_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def proc_cpu_s(pid):
    """User + system CPU seconds of a process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settle(fn, want, timeout=20.0, step=0.05):
    """Poll fn() until want(value) holds or timeout; returns the last value."""
    import time
    deadline = time.monotonic() + timeout
    v = fn()
    while not want(v) and time.monotonic() < deadline:
        time.sleep(step)
        v = fn()
    return v


@pytest.fixture
def private_tmp_dir():
    """Paths under /tmp that tests create as other users; removed after."""
    import shutil
    made = []

    def make(path):
        made.append(path)
        if os.path.islink(path) or os.path.isfile(path):
            os.unlink(path)
        elif os.path.isdir(path):
            shutil.rmtree(path)
        return path
    yield make
    for p in made:
        if os.path.islink(p) or os.path.isfile(p):
            os.unlink(p)
        elif os.path.isdir(p):
            shutil.rmtree(p, ignore_errors=True)


def empty_listener_fds(sock_path, seconds):
    """Listen on sock_path for `seconds`, accept everyone, read everything,
    answer nothing; returns how many fds arrived (run as the squatter)."""
    import array
    import select
    import time
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    srv.bind(sock_path)
    os.chmod(sock_path, 0o777)
    srv.listen(64)
    conns, got = [], 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        r, _, _ = select.select([srv] + conns, [], [], 0.1)
        for s in r:
            if s is srv:
                conns.append(srv.accept()[0])
                continue
            fds = array.array("i")
            try:
                msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(64 * fds.itemsize))
            except OSError:
                msg, anc = b"", []
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
            got += len(fds)
            for fd in fds:
                os.close(fd)
            if not msg and not anc:
                conns.remove(s)
                s.close()
    return got
