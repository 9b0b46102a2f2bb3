"""receptiond under systemd, as far as this machine allows without systemd
as PID 1: the units and `libception enable`'s drop-in pass
`systemd-analyze verify` without a word, the daemon takes the socket
systemd passes (systemd-socket-activate) and leaves its file to systemd,
it works with only the two capabilities the unit keeps, and enable/disable
write and remove the drop-in and the group membership in an image."""
import os
import shutil
import subprocess
import time

import pytest

from conftest import BIN, BUILD
from fixtures_daemon import RECEPTIOND, drop_cache, make_cold_file
from libception import daemon as lcd

LIBCEPTION = os.path.join(BIN, "libception")
UNITS = os.path.join(BUILD, "lib", "systemd", "system")
MAN = os.path.join(BUILD, "share", "man")
pytestmark = pytest.mark.skipif(not shutil.which("systemd-analyze"),
                                reason="systemd (systemd-analyze) not installed")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)


def verify(*units):
    """systemd-analyze verify, Documentation=man: pages looked up in the
    build tree; returns what it said (nothing when all is well)."""
    env = dict(os.environ, MANPATH=MAN)
    r = run(["systemd-analyze", "verify"] + list(units), env=env)
    return r.returncode, (r.stdout + r.stderr).strip()


def test_units_verify(tmp_path):
    for name in ("receptiond.socket", "receptiond.service"):
        shutil.copy(os.path.join(UNITS, name), tmp_path / name)
    rc, said = verify(str(tmp_path / "receptiond.socket"), str(tmp_path / "receptiond.service"))
    assert rc == 0 and said == "", said
    text = (tmp_path / "receptiond.service").read_text()
    assert f"ExecStart={BIN}/receptiond --foreground" in text
    assert "CapabilityBoundingSet=CAP_DAC_READ_SEARCH CAP_FOWNER\n" in text


def test_enable_dropin_verifies_and_disable_removes_it(tmp_path):
    root = tmp_path / "root"
    etc = root / "etc"
    etc.mkdir(parents=True)
    for name in ("passwd", "group", "shadow", "gshadow"):
        with open(f"/etc/{name}") as src:
            keep = [line for line in src if line.split(":")[0] in ("root", "www-data")]
        (etc / name).write_text("".join(keep))
    r = run([LIBCEPTION, "enable", "demo", "--root", str(root), "--user", "www-data"])
    assert r.returncode == 1 and "no group libception" in r.stderr
    with open(etc / "group", "a") as f:
        f.write("libception:x:999:\n")
    with open(etc / "gshadow", "a") as f:
        f.write("libception:!::\n")
    r = run([LIBCEPTION, "enable", "demo", "--root", str(root), "--user", "www-data",
             "--prefetch", "4M"])
    assert r.returncode == 0, r.stderr
    assert "libception:x:999:www-data" in (etc / "group").read_text()
    units = root / "etc" / "systemd" / "system"
    dropin = units / "demo.service.d" / "libception.conf"
    text = dropin.read_text()
    assert f'Environment="LD_PRELOAD={BUILD}/lib/libception.so"' in text
    assert 'Environment="LIBCEPTION_SOCKET=/run/libception/receptiond.sock"' in text
    assert 'Environment="LIBCEPTION_PREFETCH=4M"' in text
    # the drop-in beside a unit and the daemon's units: systemd reads it, silently
    (units / "demo.service").write_text("[Service]\nExecStart=/bin/cat\nUser=www-data\n")
    for name in ("receptiond.socket", "receptiond.service"):
        shutil.copy(os.path.join(UNITS, name), units / name)
    rc, said = verify(str(units / "demo.service"))
    assert rc == 0 and said == "", said
    # a mistyped key would have been reported: the check is not blind
    dropin.write_text(text + "Environmentt=X=1\n")
    assert "Unknown key" in verify(str(units / "demo.service"))[1]
    dropin.write_text(text)
    # disable: the drop-in and its directory go, the user leaves the group
    r = run([LIBCEPTION, "disable", "demo.service", "--root", str(root), "--user", "www-data"])
    assert r.returncode == 0, r.stderr
    assert not (units / "demo.service.d").exists()
    assert "libception:x:999:\n" in (etc / "group").read_text()
    r = run([LIBCEPTION, "disable", "demo.service", "--root", str(root)])
    assert r.returncode == 1 and "has no drop-in" in r.stderr
    for bad in ("../x", "nginx.socket", "a b"):
        r = run([LIBCEPTION, "enable", bad, "--root", str(root)])
        assert r.returncode == 1 and "expected a service unit name" in r.stderr, bad


def activate(sock, log, *extra, prefix=()):
    """receptiond started the way systemd starts it: the socket made by
    systemd-socket-activate and passed as fd 3 (LISTEN_FDS/LISTEN_PID)."""
    # --access all: the readers here include nobody; the unit's default
    # (group libception) is test_daemon_access.py's.
    cmd = list(prefix) + ["systemd-socket-activate", *extra, "-l", sock,
                          RECEPTIOND, "--foreground", "--no-config", "--access", "all", "--log", log]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not os.path.exists(sock):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.02)
    return proc


def test_socket_activation(daemon_dir, tmp_path):
    sock = os.path.join(daemon_dir, "act.sock")
    log = str(tmp_path / "rd.log")
    data = make_cold_file(str(tmp_path / "cold"), 8 << 20)
    proc = activate(sock, log, "--seqpacket")
    try:
        # the first client's connection starts nothing: the daemon already
        # holds the socket; the program reads through it
        r = subprocess.run([LIBCEPTION, "run", "--no-daemon", "--socket", sock, "--", "cat", data],
                           capture_output=True, timeout=60)
        assert r.returncode == 0 and r.stdout == open(data, "rb").read()
        st = lcd.stats(sock)
        assert st["pid"] == proc.pid and st["socket"] == sock
        assert sum(d["bytes_read"] for d in st["devices"]) > 0
        assert lcd.stop(sock)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert f"listening on {sock} (from systemd)" in open(log).read()
    # the socket file is systemd's: the daemon left it
    assert os.path.exists(sock)
    os.unlink(sock)


def test_wrong_socket_type_is_refused(daemon_dir, tmp_path):
    sock = os.path.join(daemon_dir, "stream.sock")
    log = str(tmp_path / "rd.log")
    proc = activate(sock, log)          # a stream socket: not what the units declare
    # (systemd-socket-activate waits for a first connection before exec)
    with lcd.socket.socket(lcd.socket.AF_UNIX, lcd.socket.SOCK_STREAM) as s:
        s.connect(sock)
    assert proc.wait(timeout=20) == 1
    assert "not a listening Unix SOCK_SEQPACKET socket" in proc.stderr.read()
    os.unlink(sock)


def read_twice_as_nobody(sock, log, data, caps):
    """receptiond with the bounding set caps reads data for nobody (twice);
    returns its effective capabilities and its device statistics."""
    proc = activate(sock, log, "--seqpacket", prefix=["setpriv", "--bounding-set", caps])
    os.chmod(sock, 0o666)
    try:
        for _ in range(2):
            r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                LIBCEPTION, "run", "--no-daemon", "--socket", sock, "--",
                                "cat", data], capture_output=True, timeout=60)
            assert r.returncode == 0 and len(r.stdout) == os.path.getsize(data), r.stderr
        with open(f"/proc/{proc.pid}/status") as f:
            status = dict(line.split(":\t") for line in f if line.startswith("Cap"))
        dev = next(d for d in lcd.stats(sock)["devices"] if d["requests"] > 0)
        return int(status["CapEff"], 16), dev
    finally:
        proc.kill()
        proc.wait()
        os.unlink(sock)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root, setpriv")
def test_works_with_only_the_units_capabilities(daemon_dir, tmp_path):
    """With the bounding set of receptiond.service (CAP_DAC_READ_SEARCH,
    CAP_FOWNER) root's daemon has those two and no other, and serves a
    file that neither it nor the reader owns: the reader (nobody) may not
    cachestat it, so every call asks the daemon, which may (CAP_FOWNER)
    and answers the second pass from the cache.  Without CAP_FOWNER it
    cannot tell, and reads again."""
    private = os.path.join(daemon_dir, "private")     # daemon_dir: world-enterable
    os.mkdir(private)
    data = make_cold_file(os.path.join(private, "cold"), 8 << 20)
    os.chown(data, 65533, 65534)                       # group nobody may read it
    os.chmod(data, 0o640)
    sock = os.path.join(daemon_dir, "caps.sock")
    log = str(tmp_path / "rd.log")
    caps, dev = read_twice_as_nobody(sock, log, data, "-all,+dac_read_search,+fowner")
    assert caps == (1 << 2) | (1 << 3)                 # CAP_DAC_READ_SEARCH | CAP_FOWNER
    assert dev["errors"] == 0 and dev["reads"] > 0 and dev["hits"] > 0
    drop_cache(data)
    caps, dev = read_twice_as_nobody(sock, log, data, "-all,+dac_read_search")
    assert caps == 1 << 2 and dev["hits"] == 0
