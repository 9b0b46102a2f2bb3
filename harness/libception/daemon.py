"""Control of receptiond from Python: where its socket is, starting and
stopping it, and its statistics, speaking common/protocol.h directly.

Used by `libception run|stop|stats`, the benchmark harness and the tests.
Standard library only.
"""
import array
import json
import os
import socket
import stat
import struct
import subprocess
import time

# --- common/protocol.h ----------------------------------------------------
MAGIC = 0x3150434C
VERSION = 2
MSG_ENSURE, MSG_REPORT, MSG_STATS, MSG_STATS_REPLY, MSG_SHUTDOWN, MSG_METRICS = 1, 2, 3, 4, 5, 6
ST_OK, ST_BADVERSION, ST_BADREQUEST, ST_BUSY, ST_IOERROR, ST_DIRECT = 0, 1, 2, 3, 4, 5
STATUS_NAMES = {0: "ok", 1: "badversion", 2: "badrequest", 3: "busy", 4: "ioerror", 5: "direct"}
F_NO_PREFETCH = 0x1
F_LOOKAHEAD = 0x2     # sent without waiting, never answered
CALLS = ["read", "pread", "readv", "preadv", "sendfile", "copy_file_range", "splice"]
HIST_BUCKETS = 28
REPORT_DEVS = 8                                    # + one "other" entry
STATS_CHUNK = 32768

HEADER = struct.Struct("=IHHQ")                    # magic, version, type, id
ENSURE = struct.Struct("=IHHQ QQ II Q")            # + offset, length, flags, call, prefetch
ENSURE_REPLY = struct.Struct("=IHHQ iI QQQ")       # + status, was_resident, res_off, res_len, bytes_read
STATS_REPLY = struct.Struct("=IHHQ II")            # + json_length, chunks
REPORT_SIZE = HEADER.size + 8 + 8 * len(CALLS) * (3 + HIST_BUCKETS) + 32 * (REPORT_DEVS + 1)

ENV_SOCKET = "LIBCEPTION_SOCKET"
DEFAULT_SOCKET_ROOT = "/run/libception/receptiond.sock"
DEFAULT_SOCKET_USER = "/tmp/libception-%u/receptiond.sock"


class DaemonError(Exception):
    """receptiond could not be reached, started or stopped."""


XDG_SOCKET_NAME = "libception.sock"


def socket_path(explicit=None):
    """The socket the library would use: explicit, else $LIBCEPTION_SOCKET,
    else the per-root or per-user default (common/socket_path.h's rule)."""
    if explicit:
        return explicit
    env = os.environ.get(ENV_SOCKET)
    if env:
        return env
    uid = os.getuid()
    if uid == 0:
        return DEFAULT_SOCKET_ROOT
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if xdg.startswith("/") and len(xdg) + len(XDG_SOCKET_NAME) + 2 <= 108:
        try:
            st = os.stat(xdg)
            if st.st_uid == uid and stat.S_ISDIR(st.st_mode) and not st.st_mode & 0o077:
                return os.path.join(xdg, XDG_SOCKET_NAME)
        except OSError:
            pass
    return DEFAULT_SOCKET_USER.replace("%u", str(uid))


def connect(path=None, timeout=5.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(timeout)
    try:
        s.connect(socket_path(path))
    except OSError:
        s.close()
        raise
    return s


def is_listening(path=None):
    try:
        connect(path, timeout=1.0).close()
        return True
    except OSError:
        return False


# --- messages ---------------------------------------------------------------

def pack_ensure(offset, length, req_id=1, flags=0, call=1, prefetch=0,
                magic=MAGIC, version=VERSION):
    return ENSURE.pack(magic, version, MSG_ENSURE, req_id, offset, length, flags, call, prefetch)


def send_msg(sock, data, fds=()):
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    return sock.sendmsg([data], anc)


def ensure(sock, fd, offset, length, req_id=1, **kw):
    """Send one ENSURE for fd and wait for its answer; returns a dict."""
    send_msg(sock, pack_ensure(offset, length, req_id, **kw), [fd])
    return recv_ensure_reply(sock, req_id)


def recv_ensure_reply(sock, req_id=None):
    while True:
        data = sock.recv(4096)
        if not data:
            raise DaemonError("receptiond closed the connection")
        if len(data) != ENSURE_REPLY.size:
            raise DaemonError(f"unexpected reply of {len(data)} bytes")
        (magic, version, mtype, rid, status, was_resident,
         roff, rlen, bytes_read) = ENSURE_REPLY.unpack(data)
        if req_id is not None and rid != req_id:
            continue
        return {"id": rid, "type": mtype, "status": status,
                "status_name": STATUS_NAMES.get(status, str(status)),
                "was_resident": bool(was_resident), "resident_offset": roff,
                "resident_length": rlen, "bytes_read": bytes_read}


def pack_report(pid, calls=None, hits=None, nbytes=None, hist=None, req_id=0,
                devs=(), other=(0, 0, 0)):
    """A REPORT message; calls, hits, nbytes map call name -> value, hist
    call name -> list; devs: up to REPORT_DEVS (st_dev, calls, hits,
    hit_bytes); other: (calls, hits, hit_bytes) on further devices."""
    vals = [pid, 0]
    for table in (calls, hits, nbytes):
        vals += [(table or {}).get(c, 0) for c in CALLS]
    for c in CALLS:
        h = list((hist or {}).get(c, []))
        vals += (h + [0] * HIST_BUCKETS)[:HIST_BUCKETS]
    entries = [tuple(e) for e in devs][:REPORT_DEVS]
    entries += [(0, 0, 0, 0)] * (REPORT_DEVS - len(entries))
    entries.append((0,) + tuple(other))
    for e in entries:
        vals += list(e)
    body = struct.pack(f"=II{len(CALLS) * (3 + HIST_BUCKETS) + 4 * (REPORT_DEVS + 1)}Q", *vals)
    return HEADER.pack(MAGIC, VERSION, MSG_REPORT, req_id) + body


def stats(path=None, timeout=5.0):
    """The daemon's statistics as a dict (its JSON)."""
    return json.loads(_text_reply(MSG_STATS, path, timeout))


def metrics(path=None, timeout=5.0):
    """The daemon's metrics, Prometheus text (docs/receptiond.md, METRICS)."""
    return _text_reply(MSG_METRICS, path, timeout)


def _text_reply(mtype, path, timeout):
    """Ask with a header-only message; the reply is a STATS_REPLY header
    and then the text in chunks."""
    with connect(path, timeout) as s:
        s.send(HEADER.pack(MAGIC, VERSION, mtype, 7))
        data = s.recv(4096)
        if len(data) != STATS_REPLY.size:
            raise DaemonError(f"unexpected stats reply of {len(data)} bytes")
        magic, version, mtype, rid, length, chunks = STATS_REPLY.unpack(data)
        if mtype != MSG_STATS_REPLY:
            raise DaemonError(f"unexpected reply type {mtype}")
        parts = []
        for _ in range(chunks):
            parts.append(s.recv(STATS_CHUNK + 1))
        text = b"".join(parts)
        if len(text) != length:
            raise DaemonError(f"stats: got {len(text)} of {length} bytes")
        return text.decode()


def request_shutdown(path=None, timeout=5.0):
    with connect(path, timeout) as s:
        s.send(HEADER.pack(MAGIC, VERSION, MSG_SHUTDOWN, 9))
        data = s.recv(4096)
        if len(data) == ENSURE_REPLY.size:
            status = ENSURE_REPLY.unpack(data)[4]
            if status != ST_OK:
                raise DaemonError("receptiond refused to shut down (not root or its owner)")


# --- starting and stopping --------------------------------------------------

def prefix():
    """The install prefix this harness belongs to (PREFIX/share/libception/harness)."""
    here = os.path.dirname(os.path.abspath(__file__))            # .../harness/libception
    p = os.path.abspath(os.path.join(here, "..", "..", "..", ".."))
    if os.path.isdir(os.path.join(p, "bin")) and os.path.isdir(os.path.join(p, "share", "libception")):
        return p
    # The source tree: harness/ next to build/.
    repo_build = os.path.abspath(os.path.join(here, "..", "..", "build"))
    return repo_build


def receptiond_path():
    p = os.path.join(prefix(), "bin", "receptiond")
    if os.path.exists(p):
        return p
    raise DaemonError(f"receptiond not found at {p}")


# The daemons the harness starts serve programs whose workers change uid
# (nginx's www-data), so they admit every local user; the installed
# daemon's default is narrower (docs/libception-security.md).
HARNESS_ACCESS = "all"


def start(path=None, detached=True, args=(), in_cgroup=None, log=None, env=None, binary=None,
          access=HARNESS_ACCESS):
    """Start receptiond on `path`, admitting `access` (--access; None: the
    daemon's default).

    detached: it daemonizes and this returns once it listens (the pid it
    reports in stats is the daemon's).  Not detached: it runs in the
    foreground as a child; returns the Popen once it listens.
    in_cgroup: a function called with the child's pid in the child itself,
    between fork and exec (e.g. cgroup.MemoryGroup.add), so the daemon and
    everything it forks and reads is charged there from the start; or None.
    Returns the daemon's pid (detached) or the Popen.
    """
    path = socket_path(path)
    # A daemon started here is defined by its flags alone: the service's
    # /etc/libception/receptiond.conf is not its configuration.
    cmd = [binary or receptiond_path(), "--no-config", "--socket", path]
    if log:
        cmd += ["--log", log]
    if access:
        cmd += ["--access", access]
    cmd += list(args)
    if not detached:
        cmd.append("--foreground")
    preexec = (lambda: in_cgroup(os.getpid())) if in_cgroup else None
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL,
                            stderr=subprocess.PIPE if detached else None, preexec_fn=preexec)
    if detached:
        _, err = proc.communicate(timeout=30)
        if proc.returncode != 0:
            raise DaemonError((err or b"").decode(errors="replace").strip()
                              or f"receptiond exited with status {proc.returncode}")
        return stats(path)["pid"]
    deadline = time.monotonic() + 30
    try:
        while not is_listening(path):
            if proc.poll() is not None:
                raise DaemonError(f"receptiond exited with status {proc.returncode}")
            if time.monotonic() > deadline:
                raise DaemonError("receptiond did not start listening in 30 s")
            time.sleep(0.02)
    except BaseException:
        # Until it is returned nobody else can stop it: a SIGTERM to a
        # benchmark in this wait left a watching daemon behind once.
        proc.kill()
        proc.wait()
        raise
    return proc


def stop(path=None, timeout=10.0):
    """Ask the daemon on `path` to exit and wait until it has.  Returns
    False if none was listening."""
    path = socket_path(path)
    try:
        pid = stats(path)["pid"]
    except OSError:
        return False
    request_shutdown(path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid) and not is_listening(path):
            return True
        time.sleep(0.02)
    raise DaemonError(f"receptiond (pid {pid}) did not exit within {timeout:g} s")


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return False
